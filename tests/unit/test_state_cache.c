/* Unit tests of the replica's state cache (state_cache.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/state_cache.h"

static void miss_then_hit_returns_a_copy(void **unused)
{
    (void)unused;
    vigil_state_cache *c = vigil_state_cache_new(10);
    int64_t v = -1;
    char *s = NULL;
    assert_false(vigil_state_cache_get(c, "general", &v, &s));
    vigil_state_cache_put(c, "general", 3, "{\"a\":1}");
    assert_true(vigil_state_cache_get(c, "general", &v, &s));
    assert_int_equal(v, 3);
    assert_string_equal(s, "{\"a\":1}");
    s[0] = 'X'; /* the caller owns a copy */
    free(s);
    assert_true(vigil_state_cache_get(c, "general", &v, &s));
    assert_string_equal(s, "{\"a\":1}");
    free(s);
    vigil_state_cache_free(c);
}

static void absent_record_is_cached_as_null(void **unused)
{
    (void)unused;
    vigil_state_cache *c = vigil_state_cache_new(10);
    vigil_state_cache_put(c, "empty", 0, NULL);
    int64_t v = -1;
    char *s = (char *)"sentinel";
    assert_true(vigil_state_cache_get(c, "empty", &v, &s));
    assert_int_equal(v, 0);
    assert_null(s);
    vigil_state_cache_free(c);
}

/* The cache holds key at version want_v with text want. */
static void expect_text(vigil_state_cache *c, const char *key, int64_t want_v, const char *want)
{
    int64_t v;
    char *s;
    assert_true(vigil_state_cache_get(c, key, &v, &s));
    assert_int_equal(v, want_v);
    assert_string_equal(s, want);
    free(s);
}

static void put_replaces_and_drop_forgets(void **unused)
{
    (void)unused;
    vigil_state_cache *c = vigil_state_cache_new(10);
    vigil_state_cache_put(c, "r", 1, "one");
    vigil_state_cache_put(c, "r", 2, "two");
    assert_int_equal(vigil_state_cache_size(c), 1);
    expect_text(c, "r", 2, "two");
    vigil_state_cache_drop(c, "r");
    int64_t v;
    char *s;
    assert_false(vigil_state_cache_get(c, "r", &v, &s));
    assert_int_equal(vigil_state_cache_size(c), 0);
    vigil_state_cache_drop(c, "never-there");
    vigil_state_cache_free(c);
}

/* put_owned keeps the very text it is given (no copy) and frees the one it
 * replaces; ASan reports a leak or a double free if either is wrong. */
static void put_owned_takes_the_text(void **unused)
{
    (void)unused;
    vigil_state_cache *c = vigil_state_cache_new(10);
    vigil_state_cache_put_owned(c, "r", 1, strdup("one"));
    vigil_state_cache_put_owned(c, "r", 2, strdup("two"));
    vigil_state_cache_put_owned(c, "gone", 0, NULL);
    expect_text(c, "r", 2, "two");
    int64_t v;
    char *s;
    assert_true(vigil_state_cache_get(c, "gone", &v, &s));
    assert_null(s);
    vigil_state_cache_free(c);
}

static void stays_within_its_bound(void **unused)
{
    (void)unused;
    vigil_state_cache *c = vigil_state_cache_new(100);
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "room-%d", i);
        vigil_state_cache_put(c, key, i, "{}");
        assert_true(vigil_state_cache_size(c) <= 100);
    }
    /* the newest entry is always present after a put */
    int64_t v;
    char *s;
    assert_true(vigil_state_cache_get(c, "room-999", &v, &s));
    assert_int_equal(v, 999);
    free(s);
    vigil_state_cache_free(c);
}

/* take moves the text out: no copy, and the entry misses (get and take)
 * until it is put or given back; a text given back after the entry was
 * put or dropped meanwhile is freed, not restored; a record known not to
 * exist is not taken away; nothing is freed twice. */
static void take_moves_the_text_out_until_put_back(void **unused)
{
    (void)unused;
    vigil_state_cache *c = vigil_state_cache_new(10);
    int64_t v = -1;
    char *s = NULL, *t = NULL;
    assert_false(vigil_state_cache_take(c, "general", &v, &s));
    char *text = strdup("{\"a\":1}");
    vigil_state_cache_put_owned(c, "general", 4, text);
    assert_true(vigil_state_cache_take(c, "general", &v, &s));
    assert_ptr_equal(s, text); /* the cache's own text */
    assert_int_equal(v, 4);
    assert_false(vigil_state_cache_get(c, "general", &v, &t));
    assert_false(vigil_state_cache_take(c, "general", &v, &t));
    assert_int_equal(vigil_state_cache_size(c), 1);
    vigil_state_cache_give_back(c, "general", 4, s); /* back as it was */
    assert_true(vigil_state_cache_get(c, "general", &v, &t));
    assert_string_equal(t, "{\"a\":1}");
    free(t);

    /* out again, and a plain put (another thread's load) ends that: the
     * taken text, given back, is older and is freed (ASan: no leak) */
    assert_true(vigil_state_cache_take(c, "general", &v, &s));
    vigil_state_cache_put(c, "general", 5, "{\"a\":2}");
    vigil_state_cache_give_back(c, "general", 4, s);
    assert_true(vigil_state_cache_get(c, "general", &v, &t));
    assert_int_equal(v, 5);
    assert_string_equal(t, "{\"a\":2}");
    free(t);

    /* "no record" stays a hit for everyone */
    vigil_state_cache_put(c, "empty", 0, NULL);
    assert_true(vigil_state_cache_take(c, "empty", &v, &s));
    assert_null(s);
    assert_true(vigil_state_cache_get(c, "empty", &v, &s));
    assert_null(s);

    /* dropped while out: the cache does not free the taker's text, and
     * giving it back then makes no entry */
    assert_true(vigil_state_cache_take(c, "general", &v, &s));
    vigil_state_cache_drop(c, "general");
    assert_false(vigil_state_cache_get(c, "general", &v, &t));
    assert_string_equal(s, "{\"a\":2}");
    vigil_state_cache_give_back(c, "general", 5, s);
    assert_false(vigil_state_cache_get(c, "general", &v, &t));
    vigil_state_cache_give_back(c, "empty", 0, NULL); /* "no record" was never out */
    assert_true(vigil_state_cache_get(c, "empty", &v, &t));
    assert_null(t);
    vigil_state_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(miss_then_hit_returns_a_copy),
        cmocka_unit_test(absent_record_is_cached_as_null),
        cmocka_unit_test(put_replaces_and_drop_forgets),
        cmocka_unit_test(stays_within_its_bound),
        cmocka_unit_test(put_owned_takes_the_text),
        cmocka_unit_test(take_moves_the_text_out_until_put_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
