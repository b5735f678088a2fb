/* test_shard_view.c - which keys a replica takes while the shard count
 * changes: the pure ownership rule over every count in use, and the
 * Redis side (advertised counts that expire, the settled count that waits
 * for every index's session) against a real redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/redis_raw.h"
#include "vigil/shard_view.h"
#include "vigil/store.h"

#define NOW 1700000000000LL
#define TTL 10000
#define SESSION 60000

/* Replica i's store (its own shard index) on the group's connection. */
typedef struct fixture {
    vigil_store *s[4];
} fixture;

static int setup(void **state)
{
    if (!vt_redis_exec(vt_srv, "FLUSHALL"))
        return -1;
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    for (int i = 0; i < 4; i++) {
        vigil_store_config cfg = { "vigil:", "svc", i, 0, 0 };
        f->s[i] = vigil_store_new(vt_conn, &cfg);
        if (!f->s[i])
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < 4; i++)
        vigil_store_free(f->s[i]);
    free(f);
    return 0;
}

/* The keys used below, each with its owner under N = 2 and N = 3. */
static const char *const KEYS[] = { "room:a", "room:b", "room:c", "room:d", "room:e", "room:f",
                                    "room:g", "room:h", "room:i", "room:j", NULL };

static void test_one_count_is_plain_sharding(void **state)
{
    (void)state;
    vigil_shard_view v;
    vigil_shard_view_init(&v, 3);
    for (int k = 0; KEYS[k]; k++)
        for (int i = 0; i < 3; i++)
            assert_int_equal(vigil_shard_view_owns(&v, i, KEYS[k]),
                             vigil_shard_of(KEYS[k], 3) == i);
    vigil_shard_view_init(&v, 1);
    assert_true(vigil_shard_view_owns(&v, 0, "room:a"));
}

/* While 2 and 3 are both in use, every key has an owner under each, and
 * every replica takes what it owns under either. */
static void test_union_during_a_change(void **state)
{
    (void)state;
    vigil_shard_view v;
    vigil_shard_view_init(&v, 3);
    assert_true(vigil_shard_view_add(&v, 2));
    assert_true(vigil_shard_view_add(&v, 2)); /* present: no change */
    assert_int_equal(v.n, 2);
    for (int k = 0; KEYS[k]; k++) {
        int o2 = vigil_shard_of(KEYS[k], 2), o3 = vigil_shard_of(KEYS[k], 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(vigil_shard_view_owns(&v, i, KEYS[k]), i == o2 || i == o3);
    }
}

/* A draining replica (index >= its own N) owns nothing under that N. */
static void test_draining_index(void **state)
{
    (void)state;
    vigil_shard_view v;
    vigil_shard_view_init(&v, 1);
    for (int k = 0; KEYS[k]; k++)
        assert_false(vigil_shard_view_owns(&v, 2, KEYS[k]));
    assert_true(vigil_shard_view_add(&v, 3)); /* the old count still in use */
    for (int k = 0; KEYS[k]; k++)
        assert_int_equal(vigil_shard_view_owns(&v, 2, KEYS[k]), vigil_shard_of(KEYS[k], 3) == 2);
}

static void test_full_view_and_format(void **state)
{
    (void)state;
    vigil_shard_view v, w;
    vigil_shard_view_init(&v, 1);
    for (int c = 2; c <= VIGIL_SHARD_VIEW_MAX; c++)
        assert_true(vigil_shard_view_add(&v, c));
    assert_false(vigil_shard_view_add(&v, 99));
    assert_true(vigil_shard_view_add(&v, 0)); /* not a count: ignored */
    assert_int_equal(v.n, VIGIL_SHARD_VIEW_MAX);
    char buf[64];
    vigil_shard_view_format(&v, buf, sizeof buf);
    assert_string_equal(buf, "1,2,3,4");
    vigil_shard_view_init(&w, 4);
    vigil_shard_view_add(&w, 3);
    vigil_shard_view_add(&w, 2);
    vigil_shard_view_add(&w, 1);
    assert_true(vigil_shard_view_equal(&v, &w));
    vigil_shard_view_init(&w, 4);
    assert_false(vigil_shard_view_equal(&v, &w));
}

/* GET key: a copy of the value, or NULL when there is none. */
static char *get(fixture *f, const char *key)
{
    (void)f;
    const char *argv[] = { "GET", key };
    redisReply *rep = vigil_redis_commandv(vt_conn, 2, argv, NULL);
    assert_non_null(rep);
    char *v = rep->type == REDIS_REPLY_STRING ? strdup(rep->str) : NULL;
    vigil_redis_reply_free(rep);
    return v;
}

static void expect_counts(const vigil_shard_view *v, const char *want)
{
    char buf[64];
    vigil_shard_view_format(v, buf, sizeof buf);
    assert_string_equal(buf, want);
}

/* Growing 2 -> 3: the new count joins the view as soon as a replica
 * advertises it; the old one stays while an old replica lives and, after
 * the last one is gone, until index 2's session exists (settled). */
static void test_growth_keeps_old_count_until_settled(void **state)
{
    fixture *f = *state;
    vigil_shard_view v;
    /* steady state under 2: both sessions exist, 2 is settled */
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 2, true, NOW, TTL, SESSION, &v, NULL, NULL), 0);
    assert_int_equal(vigil_shard_view_refresh(f->s[1], 1, 2, true, NOW, TTL, SESSION, &v, NULL, NULL), 0);
    expect_counts(&v, "2");
    /* replica 1 restarts as 1/3; replica 2 has not connected yet */
    assert_int_equal(vigil_shard_view_refresh(f->s[1], 1, 3, true, NOW + 1000, TTL, SESSION, &v, NULL, NULL), 0);
    expect_counts(&v, "3,2");
    /* replica 0 restarts as 0/3; the old advertisements have expired */
    int64_t later = NOW + 1000 + TTL + 1;
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 3, true, later, TTL, SESSION, &v, NULL, NULL), 0);
    expect_counts(&v, "3,2"); /* 2 stays: index 2 has no session yet */
    /* replica 2 connects: 3 settles; index 2's session is new, so it
     * holds nothing from before and its view is 3 alone */
    assert_int_equal(vigil_shard_view_refresh(f->s[2], 2, 3, true, later + 10, TTL, SESSION, &v, NULL, NULL), 0);
    expect_counts(&v, "3");
    /* index 0's session was consumed under 2: 2 stays held until the
     * replica releases it (its fence came back) */
    vigil_shard_view held;
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 3, true, later + 20, TTL, SESSION, &v, &held, NULL), 0);
    expect_counts(&v, "3,2");
    expect_counts(&held, "2");
    assert_int_equal(vigil_shard_view_release(f->s[0], 0, &held), 0);
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 3, true, later + 30, TTL, SESSION, &v, &held, NULL), 0);
    expect_counts(&v, "3");
    assert_int_equal(held.n, 0);
}

/* The failure the held counts close: index 0 stalls under 2 with a
 * backlog; N grows to 3 while it is away and every advertisement of 2
 * expires. Restarted as 0/3 long after, it must still take the backlog's
 * keys under 2: nobody else has them (index 2's session is newer). */
static void test_restart_after_the_old_count_expired_keeps_it_held(void **state)
{
    fixture *f = *state;
    vigil_shard_view v, held;
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 2, true, NOW, TTL, SESSION, &v, &held, NULL), 0);
    assert_int_equal(held.n, 0);
    assert_int_equal(vigil_shard_view_refresh(f->s[1], 1, 2, true, NOW, TTL, SESSION, &v, NULL, NULL), 0);
    int64_t later = NOW + 10 * TTL;
    assert_int_equal(vigil_shard_view_refresh(f->s[2], 2, 3, true, later, TTL, SESSION, &v, NULL, NULL), 0);
    expect_counts(&v, "3");
    /* index 1 also ran under 2: held */
    assert_int_equal(vigil_shard_view_refresh(f->s[1], 1, 3, true, later, TTL, SESSION, &v, NULL, NULL), 0);
    expect_counts(&v, "3,2");
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 3, true, later + 10 * TTL, TTL, SESSION, &v, &held, NULL), 0);
    expect_counts(&v, "3,2");
    expect_counts(&held, "2");
    /* forgetting an adopted index's session forgets what it ran under */
    assert_int_equal(vigil_shard_view_forget_session(f->s[0], 1), 0);
    const char *argv[] = { "EXISTS", "vigil:svc:shard:ran:1" };
    redisReply *rep = vigil_redis_commandv(vt_conn, 2, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 0);
    vigil_redis_reply_free(rep);
}

/* A replica not yet connected advertises its count but marks no session. */
static void test_session_marked_only_when_connected(void **state)
{
    fixture *f = *state;
    vigil_shard_view v;
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 1, false, NOW, TTL, SESSION, &v, NULL, NULL), 0);
    assert_null(get(f, "vigil:svc:shard:settled"));
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 1, true, NOW, TTL, SESSION, &v, NULL, NULL), 0);
    char *settled = get(f, "vigil:svc:shard:settled");
    assert_non_null(settled);
    assert_string_equal(settled, "1");
    free(settled);
}

/* The set of indexes that had a session: what a survivor may adopt once
 * an index is removed; forgotten after the adoption. */
static void test_sessions_listed_alive_and_forgotten(void **state)
{
    fixture *f = *state;
    vigil_shard_view v;
    vigil_shard_sessions ss;
    for (int i = 0; i < 3; i++)
        assert_int_equal(vigil_shard_view_refresh(f->s[i], i, 3, true, NOW, TTL, SESSION, &v, NULL, NULL), 0);
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 1, true, NOW + 1, TTL, SESSION, &v, NULL, &ss), 0);
    assert_int_equal(ss.n, 3);
    int seen = 0;
    for (int k = 0; k < ss.n; k++)
        seen |= 1 << ss.index[k];
    assert_int_equal(seen, 7);
    assert_int_equal(vigil_shard_view_alive(f->s[0], 2), 0);
    assert_true(vt_redis_exec(vt_srv, "SET vigil:svc:alive:2 x"));
    assert_int_equal(vigil_shard_view_alive(f->s[0], 2), 1);
    assert_int_equal(vigil_shard_view_forget_session(f->s[0], 2), 0);
    assert_null(get(f, "vigil:svc:shard:session:2"));
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 1, true, NOW + 2, TTL, SESSION, &v, NULL, &ss), 0);
    assert_int_equal(ss.n, 2);
}

/* A key of the wrong type fails the refresh before any write. */
static void test_bad_data_writes_nothing(void **state)
{
    fixture *f = *state;
    assert_true(vt_redis_exec(vt_srv, "SET vigil:svc:shard:counts x"));
    vigil_shard_view v;
    assert_int_equal(vigil_shard_view_refresh(f->s[0], 0, 2, true, NOW, TTL, SESSION, &v, NULL, NULL), -1);
    expect_counts(&v, "2");
    assert_null(get(f, "vigil:svc:shard:session:0"));
    assert_null(get(f, "vigil:svc:shard:settled"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_count_is_plain_sharding),
        cmocka_unit_test(test_union_during_a_change),
        cmocka_unit_test(test_draining_index),
        cmocka_unit_test(test_full_view_and_format),
        cmocka_unit_test_setup_teardown(test_growth_keeps_old_count_until_settled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_after_the_old_count_expired_keeps_it_held,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_marked_only_when_connected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sessions_listed_alive_and_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_data_writes_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup_conn, vt_redis_group_teardown_conn);
}
