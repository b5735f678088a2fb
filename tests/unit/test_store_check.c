/* test_store_check.c - the commit checks every key's type before its
 * first write: with a key of the wrong type planted anywhere the commit
 * touches, the commit is refused as BAD_DATA and nothing at all was
 * written (Redis runs the rest of a transaction whose command fails, so
 * the check has to come first). Real redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/effects.h"
#include "vigil/log.h"
#include "vigil/redis.h"
#include "vigil/store.h"

#define NOW 1700000000123LL

static vigil_redis *r;
static vigil_store *st;

static int group_setup(void **state)
{
    if (vt_redis_group_setup(state) != 0)
        return -1;
    r = vt_redis_connect();
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 0 };
    st = vigil_store_new(r, &cfg);
    return r && st ? 0 : -1;
}

static int group_teardown(void **state)
{
    vigil_store_free(st);
    vigil_redis_free(r);
    return vt_redis_group_teardown(state);
}

/* Keys in the database. */
static long long dbsize(void)
{
    return vt_redis_int(r, "DBSIZE%s", ""); /* "%s" of "": DBSIZE alone */
}

/* Effects touching every kind of key the commit writes. */
static void full_effects(vigil_effects *fx)
{
    vigil_effects_init(fx);
    assert_int_equal(vigil_fx_set_state(fx, "{\"n\":1}"), 0);
    assert_int_equal(vigil_fx_publish(fx, "room/r1/state", "{\"a\":1}", true), 0);
    assert_int_equal(vigil_fx_timer_set(fx, "quiet", NOW + 1000), 0);
    assert_int_equal(vigil_fx_snapshot(fx, "persona:ann", "r1", "{\"level\":\"sleep\"}",
                                       "persona/ann/state", "{\"persona\":\"ann\"}", "rooms"),
                     0);
    assert_int_equal(vigil_fx_stream_add(fx, "log:r1", "hello", 100, 0), 0);
    assert_int_equal(vigil_fx_set_add(fx, "rooms", "r1"), 0);
    assert_int_equal(vigil_fx_queue_push(fx, "queue:r1", "room/r1/x", "{}", false), 0);
}

/* Plants `cmd` (one wrong-typed key), commits, and checks that the
 * commit was refused and that the planted key is the only key there is. */
static void refused_with_nothing_written(const char *plant)
{
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    assert_true(vt_redis_exec(vt_srv, plant));
    assert_int_equal(dbsize(), 1);
    vigil_effects fx;
    full_effects(&fx);
    vigil_commit c = { .key = "r1", .expected_version = 0, .input_id = "in-1", .fx = &fx,
                       .now_ms = NOW };
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(st, &c, &v, &cur), VIGIL_COMMIT_BAD_DATA);
    assert_null(cur);
    assert_int_equal(dbsize(), 1); /* nothing written: no state, id, outbox, timer, ... */
    vigil_effects_free(&fx);
}

static void test_wrong_type_state(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:state:r1 x"); }
static void test_wrong_type_ids(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:ids:r1 x"); }
static void test_wrong_type_outbox(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:outbox:0 x"); }
static void test_wrong_type_timers(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:timers:0 x"); }
static void test_wrong_type_snapshot(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:persona:ann x"); }
static void test_wrong_type_stream(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:log:r1 x"); }
static void test_wrong_type_set(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:rooms x"); }
static void test_wrong_type_queue(void **s) { (void)s; refused_with_nothing_written("SADD vigil:svc:queue:r1 x"); }
static void test_wrong_type_dues(void **s) { (void)s; refused_with_nothing_written("SET vigil:svc:timers:0:due x"); }

/* The same effects on clean keys commit, and load sees the record. */
static void test_clean_keys_commit(void **s)
{
    (void)s;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_effects fx;
    full_effects(&fx);
    vigil_commit c = { .key = "r1", .expected_version = 0, .input_id = "in-1", .fx = &fx,
                       .now_ms = NOW };
    int64_t v = 0;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(st, &c, &v, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(v, 1);
    assert_true(dbsize() >= 7);
    vigil_effects_free(&fx);
}

/* A wrong-typed state record makes load report a data error, not an
 * outage (which would be retried for ever). */
static void test_load_wrong_type(void **s)
{
    (void)s;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    assert_true(vt_redis_exec(vt_srv, "SET vigil:svc:state:r1 x"));
    int seen = 0;
    int64_t v = 0;
    char *state = NULL;
    assert_int_equal(vigil_store_load(st, "r1", "in-1", &seen, &v, &state), VIGIL_STORE_BAD_DATA);
    assert_null(state);
}

/* vigil_store_check: OK on clean keys, BAD_DATA on a planted key,
 * CONFLICT on a stale version, and never a write. */
static void test_check_only_writes_nothing(void **s)
{
    (void)s;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_effects fx;
    full_effects(&fx);
    vigil_commit c = { .key = "r1", .expected_version = 0, .input_id = "in-1", .fx = &fx,
                       .now_ms = NOW };
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_check(st, &c, &v, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(dbsize(), 0);
    c.expected_version = 3;
    assert_int_equal(vigil_store_check(st, &c, &v, &cur), VIGIL_COMMIT_CONFLICT);
    assert_int_equal(v, 0);
    assert_null(cur);
    c.expected_version = 0;
    assert_true(vt_redis_exec(vt_srv, "SET vigil:svc:rooms x"));
    assert_int_equal(vigil_store_check(st, &c, &v, &cur), VIGIL_COMMIT_BAD_DATA);
    assert_int_equal(dbsize(), 1);
    vigil_effects_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrong_type_state),
        cmocka_unit_test(test_wrong_type_ids),
        cmocka_unit_test(test_wrong_type_outbox),
        cmocka_unit_test(test_wrong_type_timers),
        cmocka_unit_test(test_wrong_type_snapshot),
        cmocka_unit_test(test_wrong_type_stream),
        cmocka_unit_test(test_wrong_type_set),
        cmocka_unit_test(test_wrong_type_queue),
        cmocka_unit_test(test_wrong_type_dues),
        cmocka_unit_test(test_clean_keys_commit),
        cmocka_unit_test(test_load_wrong_type),
        cmocka_unit_test(test_check_only_writes_nothing),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
