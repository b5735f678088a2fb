/* test_record_cache.c - parsed records kept by key and exact text: a hit
 * is a private copy (get) or the record itself (take), a changed text or
 * another key misses, the key used longest ago is evicted first, many keys
 * stay found, and everything is freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/record_cache.h"

static int live; /* records alive, to catch leaks and double frees */

static void *rec_new(int v)
{
    int *p = malloc(sizeof *p);
    *p = v;
    live++;
    return p;
}
static void *rec_clone(const void *r) { return rec_new(*(const int *)r); }
static void rec_free(void *r)
{
    live--;
    free(r);
}
static const vigil_record_ops OPS = {rec_clone, rec_free};

static void hit_is_a_private_copy_and_text_must_match(void **state)
{
    (void)state;
    vigil_record_cache *c = vigil_record_cache_new(&OPS, 2);
    assert_non_null(c);
    assert_null(vigil_record_cache_get(c, "a", "{\"v\":1}"));
    void *r1 = rec_new(1);
    assert_int_equal(vigil_record_cache_put(c, "a", strdup("{\"v\":1}"), r1), 0);
    int *hit = vigil_record_cache_get(c, "a", "{\"v\":1}");
    assert_non_null(hit);
    assert_ptr_not_equal(hit, r1);
    assert_int_equal(*hit, 1);
    rec_free(hit);
    assert_null(vigil_record_cache_get(c, "a", "{\"v\":2}")); /* another text */
    assert_null(vigil_record_cache_get(c, "b", "{\"v\":1}")); /* another key */
    assert_null(vigil_record_cache_get(c, "a", NULL));
    /* a new record for the same key replaces the old one */
    assert_int_equal(vigil_record_cache_put(c, "a", strdup("{\"v\":2}"), rec_new(2)), 0);
    assert_null(vigil_record_cache_get(c, "a", "{\"v\":1}"));
    assert_int_equal(live, 1);
    vigil_record_cache_free(c);
    assert_int_equal(live, 0);
}

static void a_full_cache_evicts_one_key(void **state)
{
    (void)state;
    vigil_record_cache *c = vigil_record_cache_new(&OPS, 2);
    vigil_record_cache_put(c, "a", strdup("A"), rec_new(1));
    vigil_record_cache_put(c, "b", strdup("B"), rec_new(2));
    vigil_record_cache_put(c, "c", strdup("C"), rec_new(3)); /* evicts a */
    assert_null(vigil_record_cache_get(c, "a", "A"));
    int *b = vigil_record_cache_get(c, "b", "B");
    assert_non_null(b);
    rec_free(b);
    assert_int_equal(live, 2);
    vigil_record_cache_free(c);
    assert_int_equal(live, 0);
    /* no cache: nothing is taken */
    void *r = rec_new(9);
    char *j = strdup("x");
    assert_int_equal(vigil_record_cache_put(NULL, "a", j, r), -1);
    free(j);
    rec_free(r);
    assert_int_equal(live, 0);
}

static void the_key_used_longest_ago_is_evicted(void **state)
{
    (void)state;
    vigil_record_cache *c = vigil_record_cache_new(&OPS, 2);
    vigil_record_cache_put(c, "a", strdup("A"), rec_new(1));
    vigil_record_cache_put(c, "b", strdup("B"), rec_new(2));
    rec_free(vigil_record_cache_get(c, "a", "A")); /* a is now the newer */
    vigil_record_cache_put(c, "c", strdup("C"), rec_new(3)); /* evicts b */
    assert_null(vigil_record_cache_get(c, "b", "B"));
    int *a = vigil_record_cache_get(c, "a", "A");
    assert_non_null(a);
    rec_free(a);
    assert_int_equal(live, 2);
    vigil_record_cache_free(c);
    assert_int_equal(live, 0);
}

static void take_hands_over_the_record_and_forgets_the_key(void **state)
{
    (void)state;
    vigil_record_cache *c = vigil_record_cache_new(&OPS, 4);
    void *r1 = rec_new(1);
    vigil_record_cache_put(c, "a", strdup("A1"), r1);
    assert_ptr_equal(vigil_record_cache_take(c, "a", "A1"), r1); /* no copy */
    assert_int_equal(live, 1);
    assert_null(vigil_record_cache_take(c, "a", "A1")); /* forgotten */
    vigil_record_cache_put(c, "a", strdup("A2"), r1);
    assert_null(vigil_record_cache_take(c, "a", "A1")); /* stale: dropped */
    assert_int_equal(live, 0);
    assert_null(vigil_record_cache_take(c, "a", "A2"));
    vigil_record_cache_free(c);
}

static void many_keys_are_all_found(void **state)
{
    (void)state;
    enum { N = 1000 };
    vigil_record_cache *c = vigil_record_cache_new(&OPS, N);
    char key[16], text[16];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "room-%d", i);
        snprintf(text, sizeof text, "{\"n\":%d}", i);
        assert_int_equal(vigil_record_cache_put(c, key, strdup(text), rec_new(i)), 0);
    }
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "room-%d", i);
        snprintf(text, sizeof text, "{\"n\":%d}", i);
        int *r = vigil_record_cache_take(c, key, text);
        assert_non_null(r);
        assert_int_equal(*r, i);
        rec_free(r);
    }
    assert_int_equal(live, 0);
    vigil_record_cache_free(c);
}

static void the_memory_bound_evicts_and_refuses(void **state)
{
    (void)state;
    vigil_record_cache *c = vigil_record_cache_new_bounded(&OPS, 100, 3000);
    assert_int_equal(vigil_record_cache_put_sized(c, "a", strdup("A"), rec_new(1), 1000), 0);
    assert_int_equal(vigil_record_cache_put_sized(c, "b", strdup("B"), rec_new(2), 1000), 0);
    /* a third of 1000 does not fit beside both: the oldest (a) goes */
    assert_int_equal(vigil_record_cache_put_sized(c, "c", strdup("C"), rec_new(3), 1000), 0);
    assert_null(vigil_record_cache_take(c, "a", "A"));
    int *b = vigil_record_cache_take(c, "b", "B");
    assert_non_null(b);
    rec_free(b);
    /* larger than the whole bound: refused, the caller keeps both */
    void *big = rec_new(4);
    char *j = strdup("D");
    assert_int_equal(vigil_record_cache_put_sized(c, "d", j, big, 5000), -1);
    free(j);
    rec_free(big);
    assert_int_equal(live, 1); /* c */
    vigil_record_cache_free(c);
    assert_int_equal(live, 0);
}

/* A shared cache is made once, at its first use, and then always found;
 * a NULL cache (what an allocation failure gives) never hits nor keeps. */
static void a_shared_cache_is_made_once(void **state)
{
    (void)state;
    static vigil_record_cache *_Atomic slot;
    vigil_record_cache *c = vigil_record_cache_shared(&slot, &OPS, 4, 0);
    assert_non_null(c);
    assert_ptr_equal(vigil_record_cache_shared(&slot, &OPS, 4, 0), c);
    assert_int_equal(vigil_record_cache_put(c, "a", strdup("A"), rec_new(1)), 0);
    int *a = vigil_record_cache_take(vigil_record_cache_shared(&slot, &OPS, 4, 0), "a", "A");
    assert_non_null(a);
    rec_free(a);
    vigil_record_cache_free(c);
    assert_null(vigil_record_cache_take(NULL, "a", "A"));
    void *r = rec_new(2);
    char *j = strdup("B");
    assert_int_equal(vigil_record_cache_put_sized(NULL, "b", j, r, 0), -1);
    free(j);
    rec_free(r);
    assert_int_equal(live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hit_is_a_private_copy_and_text_must_match),
        cmocka_unit_test(the_key_used_longest_ago_is_evicted),
        cmocka_unit_test(take_hands_over_the_record_and_forgets_the_key),
        cmocka_unit_test(many_keys_are_all_found),
        cmocka_unit_test(the_memory_bound_evicts_and_refuses),
        cmocka_unit_test(a_full_cache_evicts_one_key),
        cmocka_unit_test(a_shared_cache_is_made_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
