/* Unit tests of str.h: vigil_vformat (stack buffer or exact-size heap
 * string) and vigil_asprintf on top of it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/str.h"

static int format(char *buf, size_t cap, char **out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int format(char *buf, size_t cap, char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vigil_vformat(buf, cap, out, fmt, ap);
    va_end(ap);
    return n;
}

static void vformat_short_text_stays_in_the_buffer(void **u)
{
    (void)u;
    char buf[8], *s = NULL;
    assert_int_equal(format(buf, sizeof buf, &s, "%s-%d", "ab", 42), 5);
    assert_ptr_equal(s, buf);
    assert_string_equal(buf, "ab-42");
    /* exactly cap - 1 characters still fit */
    assert_int_equal(format(buf, sizeof buf, &s, "%s", "1234567"), 7);
    assert_ptr_equal(s, buf);
    assert_string_equal(buf, "1234567");
}

static void vformat_long_text_gets_its_own_string(void **u)
{
    (void)u;
    char buf[8], *s = NULL;
    assert_int_equal(format(buf, sizeof buf, &s, "%s|%d", "12345678", 9), 10);
    assert_non_null(s);
    assert_ptr_not_equal(s, buf);
    assert_string_equal(s, "12345678|9");
    assert_string_equal(buf, "1234567"); /* the cut text */
    free(s);
}

static void asprintf_short_and_long(void **u)
{
    (void)u;
    char *s = vigil_asprintf("%s:%s", "vigil", "key");
    assert_string_equal(s, "vigil:key");
    free(s);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    s = vigil_asprintf("<%s>", big);
    assert_int_equal(strlen(s), sizeof big + 1);
    assert_int_equal(s[0], '<');
    assert_int_equal(s[sizeof big], '>');
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vformat_short_text_stays_in_the_buffer),
        cmocka_unit_test(vformat_long_text_gets_its_own_string),
        cmocka_unit_test(asprintf_short_and_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
