/* test_times_text.c - lists of times as "t0,d1,d2,...": read back as
 * written (the extremes included, differences wrapping), the kept text of
 * the differences equal to the list written afresh through appends and
 * drops, and a malformed text read up to its fault. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/times_text.h"

static char *text_of(const int64_t *t, int n)
{
    vigil_jtext b = {0};
    vigil_jtext_put(&b, "", 0);
    vigil_times_text(&b, t, n);
    return vigil_jtext_take(&b);
}

static void lists_read_back_as_written(void **u)
{
    (void)u;
    const int64_t t[] = { 1700000000000, 1700000000005, 1699999999000, 0, INT64_MAX, INT64_MIN,
                          -1, 42 };
    int n = (int)(sizeof t / sizeof t[0]);
    char *s = text_of(t, n);
    assert_string_equal(s, "1700000000000,5,-1005,-1699999999000,9223372036854775807,1,"
                           "9223372036854775807,43");
    int64_t back[16];
    assert_int_equal(vigil_times_parse(s, back, 16), n);
    assert_memory_equal(back, t, sizeof t);
    assert_int_equal(vigil_times_parse(s, back, 3), 3); /* at most max */
    free(s);
    s = text_of(t, 0);
    assert_string_equal(s, "");
    assert_int_equal(vigil_times_parse(s, back, 16), 0);
    free(s);
}

static void a_malformed_list_is_read_up_to_its_fault(void **u)
{
    (void)u;
    int64_t t[8];
    assert_int_equal(vigil_times_parse("100,5,x,7", t, 8), 2);
    assert_true(t[0] == 100 && t[1] == 105);
    assert_int_equal(vigil_times_parse("100,5y,7", t, 8), 1);
    assert_int_equal(vigil_times_parse("100,99999999999999999999", t, 8), 1); /* out of range */
    assert_int_equal(vigil_times_parse(",1", t, 8), 0);
}

/* Appends and drops of a bounded list, times going back now and then:
 * the text from the kept differences equals the list written afresh, and
 * the kept text is never rewritten. */
static void kept_differences_follow_the_list(void **u)
{
    (void)u;
    enum { MAX = 300 };
    int64_t t[MAX];
    int n = 0;
    int64_t now = 1700000000000;
    vigil_tlist l;
    vigil_tlist_init(&l, ',');
    vigil_times_keep(&l, t, 0);
    unsigned rewrites = l.rewrites;
    unsigned seed = 7;
    for (int step = 0; step < 5000; step++) {
        seed = seed * 1103515245u + 12345u;
        now += (seed >> 16) % 7 == 0 ? -30 : (int64_t)((seed >> 8) % 5000);
        int k = (seed >> 20) % 17 == 0 ? 1 + (int)((seed >> 4) % 40) : n == MAX ? 1 : 0;
        if (k > n)
            k = n;
        if (k > 0) {
            memmove(t, t + k, (size_t)(n - k) * sizeof t[0]);
            n -= k;
            vigil_tlist_drop(&l, k);
        }
        t[n++] = now;
        vigil_times_kept_push(&l, t, n);
        vigil_jtext kept = {0};
        vigil_jtext_put(&kept, "", 0);
        vigil_times_put(&kept, &l, t, n);
        char *want = text_of(t, n);
        char *got = vigil_jtext_take(&kept);
        assert_string_equal(got, want);
        assert_int_equal(vigil_tlist_count(&l), n - 1);
        free(want);
        free(got);
    }
    assert_int_equal(l.rewrites, rewrites);
    /* a stale or out-of-step list: written time by time */
    vigil_tlist_stale(&l);
    vigil_jtext b = {0};
    vigil_jtext_put(&b, "", 0);
    vigil_times_put(&b, &l, t, n);
    char *got = vigil_jtext_take(&b), *want = text_of(t, n);
    assert_string_equal(got, want);
    free(got);
    vigil_times_keep(&l, t, n - 1); /* one short of t */
    b = (vigil_jtext){0};
    vigil_jtext_put(&b, "", 0);
    vigil_times_put(&b, &l, t, n);
    got = vigil_jtext_take(&b);
    assert_string_equal(got, want);
    free(got);
    free(want);
    vigil_tlist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_read_back_as_written),
        cmocka_unit_test(a_malformed_list_is_read_up_to_its_fault),
        cmocka_unit_test(kept_differences_follow_the_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
