/* Unit tests of str.h: vigil_vformat (stack buffer or exact-size heap
 * string), vigil_asprintf on top of it, vigil_concat, vigil_hex64,
 * vigil_hex_digit and vigil_hash_mem. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
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

/* vigil_concat writes what snprintf("%s%s...") writes, cut the same way,
 * and returns the same length. */
static void concat_is_snprintf_of_strings(void **state)
{
    (void)state;
    const size_t caps[] = { 1, 2, 5, 9, 10, 11, 64 };
    for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
        char got[64], want[64];
        memset(got, 'x', sizeof got);
        size_t n = vigil_concat(got, caps[i], "persona/", "ann", "", "/state", (const char *)NULL);
        int w = snprintf(want, caps[i], "%s%s%s%s", "persona/", "ann", "", "/state");
        assert_int_equal(n, (size_t)w);
        assert_string_equal(got, want);
    }
    char one = 'x';
    assert_int_equal(vigil_concat(&one, 0, "abc", (const char *)NULL), 3);
    assert_int_equal(one, 'x'); /* cap 0: nothing written */
    char e[4];
    assert_int_equal(vigil_concat(e, sizeof e, (const char *)NULL), 0);
    assert_string_equal(e, "");
}

static void hex64_is_printf_016_x(void **state)
{
    (void)state;
    const uint64_t v[] = { 0, 1, 0xabcdefull, 0x0123456789abcdefull, UINT64_MAX };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char got[17], want[17];
        vigil_hex64(got, v[i]);
        snprintf(want, sizeof want, "%016" PRIx64, v[i]);
        assert_string_equal(got, want);
    }
}

/* A hex digit in either case is its value; every other byte, the ones
 * just outside each range included, is -1. */
static void hex_digit_reads_both_cases_and_nothing_else(void **state)
{
    (void)state;
    for (int ch = -1; ch < 256; ch++) {
        int want = ch >= '0' && ch <= '9' ? ch - '0'
                   : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                   : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                            : -1;
        assert_int_equal(vigil_hex_digit(ch), want);
    }
    assert_int_equal(vigil_hex_digit('F'), 15);
    assert_int_equal(vigil_hex_digit('g'), -1);
    assert_int_equal(vigil_hex_digit('/'), -1);
    assert_int_equal(vigil_hex_digit(':'), -1);
}

/* Every byte counts, at every length across the word and half-word
 * reads, and nothing outside the n bytes is read (each string has its own
 * allocation of exactly n bytes, which ASan guards). */
static void hash_mem_reads_every_byte_and_no_other(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 40; n++) {
        unsigned char *a = malloc(n ? n : 1);
        assert_non_null(a);
        for (size_t i = 0; i < n; i++)
            a[i] = (unsigned char)('a' + i % 26);
        uint64_t h = vigil_hash_mem(a, n);
        assert_int_equal(h, vigil_hash_mem(a, n));
        for (size_t i = 0; i < n; i++) {
            for (int bit = 0; bit < 8; bit++) {
                a[i] ^= (unsigned char)(1u << bit);
                assert_true(vigil_hash_mem(a, n) != h);
                a[i] ^= (unsigned char)(1u << bit);
            }
        }
        free(a);
    }
    /* a prefix, and the same bytes with a NUL more, hash apart */
    assert_true(vigil_hash_mem("abc", 3) != vigil_hash_mem("abc", 4));
    assert_true(vigil_hash_mem("", 0) != vigil_hash_mem("", 1));
}

/* Keys that differ in a counter spread evenly over a table's low bits: no
 * bucket of 1,024 holds more than twice its share of 102,400 keys. */
static void hash_mem_spreads_similar_keys(void **state)
{
    (void)state;
    enum { BUCKETS = 1024, KEYS = 100 * BUCKETS };
    static unsigned load[BUCKETS];
    char key[64];
    for (int i = 0; i < KEYS; i++) {
        int n = snprintf(key, sizeof key, "vigil:dormancy-monitor:room:r%d", i);
        load[vigil_hash_mem(key, (size_t)n) & (BUCKETS - 1)]++;
    }
    unsigned most = 0, least = KEYS;
    for (int b = 0; b < BUCKETS; b++) {
        most = load[b] > most ? load[b] : most;
        least = load[b] < least ? load[b] : least;
    }
    assert_true(most < 2 * KEYS / BUCKETS);
    assert_true(least > KEYS / BUCKETS / 2);
}

/* Minutes from a minute up, cut down; seconds below, with a tenth when it
 * is not whole and under ten. */
static void span_text_reads_in_minutes_or_seconds(void **state)
{
    (void)state;
    struct {
        int64_t ms;
        const char *want;
    } cases[] = {{-5, "0 s"},        {0, "0 s"},          {999, "0.9 s"},
                 {1500, "1.5 s"},    {4000, "4 s"},       {9999, "9.9 s"},
                 {10500, "10 s"},    {59999, "59 s"},     {60000, "1 min"},
                 {119999, "1 min"},  {7200000, "120 min"}};
    char out[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vigil_span_text(cases[i].ms, out, sizeof out);
        assert_string_equal(out, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vformat_short_text_stays_in_the_buffer),
        cmocka_unit_test(vformat_long_text_gets_its_own_string),
        cmocka_unit_test(asprintf_short_and_long),
        cmocka_unit_test(concat_is_snprintf_of_strings),
        cmocka_unit_test(hex64_is_printf_016_x),
        cmocka_unit_test(span_text_reads_in_minutes_or_seconds),
        cmocka_unit_test(hex_digit_reads_both_cases_and_nothing_else),
        cmocka_unit_test(hash_mem_reads_every_byte_and_no_other),
        cmocka_unit_test(hash_mem_spreads_similar_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
