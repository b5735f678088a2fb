/* test_store_commit.c - the commit's two rounds (reads under WATCH, then
 * one MULTI/EXEC): another client's write between them makes EXEC write
 * nothing and the commit is read and decided again; pipelined commits
 * that share a snapshot hash each see the one before; a shard key of
 * another type refuses the whole batch and nothing is written; a commit
 * whose replies a plain command dropped fails alone. Real redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../libshared/src/store_lua.h"
#include "fixture_redis.h"
#include "vigil/effects.h"
#include "vigil/metrics.h"
#include "vigil/redis.h"
#include "vigil/store.h"

#define NOW 1700000000123LL
#define RETRIES "vigil_commit_retries_total"

static vigil_redis *r; /* the test's connection and store (vt_store_fixture) */
static vigil_store *st;

static int setup(void **state)
{
    store_test_between_rounds(NULL, NULL);
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 0 };
    if (vt_store_fixture_setup(state, &cfg) != 0)
        return -1;
    vt_store_fixture *f = *state;
    r = f->r;
    st = f->s;
    return 0;
}

static int teardown(void **state)
{
    store_test_between_rounds(NULL, NULL);
    return vt_store_fixture_teardown(state);
}

/* Keys in the database. */
static long long dbsize(void)
{
    return vt_redis_int(r, "DBSIZE%s", ""); /* "%s" of "": DBSIZE alone */
}

/* A state and one snapshot entry for `room` in persona ann's map. */
static void snap_effects(vigil_effects *fx, const char *room, const char *level)
{
    vigil_effects_init(fx);
    assert_int_equal(vigil_fx_set_state(fx, "{\"n\":1}"), 0);
    char v[64];
    snprintf(v, sizeof v, "{\"level\":\"%s\"}", level);
    assert_int_equal(vigil_fx_snapshot(fx, "persona:ann", room, v, "persona/ann/state",
                                       "{\"persona\":\"ann\"}", "rooms"),
                     0);
}

/* Sends the commits of r1 and r2 (input ids "a", "b", version 0)
 * together and returns their results in res[2]. */
static void commit_pair(vigil_effects *f1, vigil_effects *f2, vigil_commit_result res[2])
{
    vigil_commit c1 = { .key = "r1", .expected_version = 0, .input_id = "a", .fx = f1,
                        .now_ms = NOW };
    vigil_commit c2 = { .key = "r2", .expected_version = 0, .input_id = "b", .fx = f2,
                        .now_ms = NOW };
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    assert_int_equal(vigil_store_commit_send(st, &c2), 0);
    int64_t v = -1;
    char *cur = NULL;
    res[0] = vigil_store_commit_recv(st, &c1, &v, &cur);
    free(cur);
    res[1] = vigil_store_commit_recv(st, &c2, &v, &cur);
    free(cur);
}

/* Commits fx on record r1 (version 0, input "in-1"); *cur as returned. */
static vigil_commit_result commit_r1(vigil_effects *fx, int64_t *v, char **cur)
{
    vigil_commit c = { .key = "r1", .expected_version = 0, .input_id = "in-1", .fx = fx,
                       .now_ms = NOW };
    *v = -1;
    *cur = NULL;
    return vigil_store_commit(st, &c, v, cur);
}

typedef struct writer {
    const char *cmd; /* run before the transaction */
    int left;        /* times still to run it (-1: always) */
    int calls;
} writer;

static void write_between(void *ctx)
{
    writer *w = ctx;
    w->calls++;
    if (w->left == 0)
        return;
    if (w->left > 0)
        w->left--;
    assert_true(vt_redis_exec(vt_srv, w->cmd));
}

/* A snapshot hash written by someone else between the rounds: the commit
 * reads it again, and its retained payload carries that write too. */
static void test_snapshot_changed_between_rounds_is_read_again(void **state)
{
    (void)state;
    writer w = { "HSET vigil:svc:persona:ann r9 {\"level\":\"awake\"}", 1, 0 };
    store_test_between_rounds(write_between, &w);
    double before = vigil_metric_value(RETRIES, NULL);
    vigil_effects fx;
    snap_effects(&fx, "r1", "sleep");
    int64_t v;
    char *cur;
    assert_int_equal(commit_r1(&fx, &v, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(v, 1);
    assert_int_equal(w.calls, 2);
    assert_true(vigil_metric_value(RETRIES, NULL) == before + 1);
    char *e = vt_redis_lindex(r, "vigil:svc:outbox:0", 0);
    assert_string_equal(e, "1persona/ann/state\n{\"persona\":\"ann\",\"rooms\":{\"r1\":{\"level\":"
                           "\"sleep\"},\"r9\":{\"level\":\"awake\"}},\"ts\":1700000000123}");
    free(e);
    redisReply *n = vigil_redis_command(r, "LLEN vigil:svc:outbox:0");
    assert_int_equal(n->integer, 1); /* written once */
    vigil_redis_reply_free(n);
    vigil_effects_free(&fx);
}

/* The record written by another replica between the rounds: read again,
 * the commit is a CONFLICT with that record, and nothing of it is
 * written (no processed id, no outbox entry). */
static void test_record_changed_between_rounds_conflicts(void **state)
{
    (void)state;
    writer w = { "HSET vigil:svc:state:r1 v 5 s {\"other\":1}", 1, 0 };
    store_test_between_rounds(write_between, &w);
    vigil_effects fx;
    snap_effects(&fx, "r1", "sleep");
    int64_t v;
    char *cur;
    assert_int_equal(commit_r1(&fx, &v, &cur), VIGIL_COMMIT_CONFLICT);
    assert_int_equal(v, 5);
    assert_string_equal(cur, "{\"other\":1}");
    free(cur);
    assert_int_equal(dbsize(), 1); /* the other replica's record alone */
    vigil_effects_free(&fx);
}

/* Watched keys that change before every transaction: after five rounds
 * the commit gives up as a CONFLICT without a record (the caller loads
 * it), having written nothing. */
static void test_endless_changes_end_as_a_conflict(void **state)
{
    (void)state;
    writer w = { "HINCRBY vigil:svc:persona:ann n 1", -1, 0 };
    store_test_between_rounds(write_between, &w);
    vigil_effects fx;
    snap_effects(&fx, "r1", "sleep");
    int64_t v;
    char *cur;
    assert_int_equal(commit_r1(&fx, &v, &cur), VIGIL_COMMIT_CONFLICT);
    assert_null(cur);
    assert_int_equal(w.calls, 5);
    assert_int_equal(dbsize(), 1); /* the writer's hash alone */
    store_test_between_rounds(NULL, NULL);
    assert_int_equal(commit_r1(&fx, &v, &cur), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
}

/* Two records' commits sent together that update one snapshot hash: the
 * second waits for the first, so its payload carries both rooms. */
static void test_pipelined_commits_sharing_a_snapshot(void **state)
{
    (void)state;
    vigil_effects f1, f2;
    snap_effects(&f1, "r1", "sleep");
    snap_effects(&f2, "r2", "deep");
    vigil_commit_result res[2];
    commit_pair(&f1, &f2, res);
    assert_int_equal(res[0], VIGIL_COMMIT_OK);
    assert_int_equal(res[1], VIGIL_COMMIT_OK);
    char *e1 = vt_redis_lindex(r, "vigil:svc:outbox:0", 0);
    char *e2 = vt_redis_lindex(r, "vigil:svc:outbox:0", 1);
    assert_string_equal(e1, "1persona/ann/state\n{\"persona\":\"ann\",\"rooms\":{\"r1\":{\"level\":"
                            "\"sleep\"}},\"ts\":1700000000123}");
    assert_string_equal(e2, "1persona/ann/state\n{\"persona\":\"ann\",\"rooms\":{\"r1\":{\"level\":"
                            "\"sleep\"},\"r2\":{\"level\":\"deep\"}},\"ts\":1700000000123}");
    free(e1);
    free(e2);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

/* The shard's outbox of another type refuses every commit of a batch
 * (each would write to it), and nothing at all is written. */
static void test_wrong_typed_outbox_refuses_the_batch(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "SET vigil:svc:outbox:0 x"));
    vigil_effects f1, f2;
    snap_effects(&f1, "r1", "sleep");
    snap_effects(&f2, "r2", "deep");
    vigil_fx_snapshot(&f2, "persona:bo", "r2", "{}", "persona/bo/state", "{}", "rooms");
    vigil_commit_result res[2];
    commit_pair(&f1, &f2, res);
    assert_int_equal(res[0], VIGIL_COMMIT_BAD_DATA);
    assert_int_equal(res[1], VIGIL_COMMIT_BAD_DATA);
    assert_int_equal(dbsize(), 1);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

/* A queue flushed by the commit moves its entries to the outbox before
 * the commit's own outputs, in order, and is gone afterwards. */
static void test_queue_flush_moves_entries_first(void **state)
{
    (void)state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_queue_push(&fx, "queue:r1", "t/1", "one", false), 0);
    assert_int_equal(vigil_fx_queue_push(&fx, "queue:r1", "t/2", "two", true), 0);
    vigil_commit c = { .key = "r1", .expected_version = 0, .input_id = "a", .fx = &fx,
                       .now_ms = NOW };
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(st, &c, &v, &cur), VIGIL_COMMIT_OK);
    vigil_effects_reset(&fx);
    assert_int_equal(vigil_fx_publish(&fx, "t/3", "three", false), 0);
    assert_int_equal(vigil_fx_queue_flush(&fx, "queue:r1"), 0);
    c.input_id = "b";
    assert_int_equal(vigil_store_commit(st, &c, &v, &cur), VIGIL_COMMIT_OK);
    const char *want[] = { "0t/1\none", "1t/2\ntwo", "0t/3\nthree" };
    for (int i = 0; i < 3; i++) {
        char *e = vt_redis_lindex(r, "vigil:svc:outbox:0", i);
        assert_string_equal(e, want[i]);
        free(e);
    }
    redisReply *n = vigil_redis_command(r, "EXISTS vigil:svc:queue:r1");
    assert_int_equal(n->integer, 0);
    vigil_redis_reply_free(n);
    vigil_effects_free(&fx);
}

/* A plain command between two pipelined commits reads and drops the
 * first one's owed replies: that commit fails (it is done again one at a
 * time by its caller) and writes nothing, instead of reading the second
 * one's replies as its own; the second starts a batch of its own. */
static void test_replies_dropped_between_sends_fail_that_commit_alone(void **state)
{
    (void)state;
    vigil_effects f1, f2; /* no key in common: the two share a batch */
    vigil_effects_init(&f1);
    vigil_effects_init(&f2);
    assert_int_equal(vigil_fx_set_state(&f1, "{\"n\":1}"), 0);
    assert_int_equal(vigil_fx_publish(&f1, "t/r1", "\"r1\"", false), 0);
    assert_int_equal(vigil_fx_set_state(&f2, "{\"n\":2}"), 0);
    assert_int_equal(vigil_fx_publish(&f2, "t/r2", "\"r2\"", false), 0);
    vigil_commit c1 = { .key = "r1", .expected_version = 0, .input_id = "a", .fx = &f1,
                        .now_ms = NOW };
    vigil_commit c2 = { .key = "r2", .expected_version = 0, .input_id = "b", .fx = &f2,
                        .now_ms = NOW };
    double lost = vigil_metric_value("vigil_commit_replies_lost_total", NULL);
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    redisReply *pong = vigil_redis_command(r, "PING");
    assert_non_null(pong);
    assert_string_equal(pong->str, "PONG");
    vigil_redis_reply_free(pong);
    assert_int_equal(vigil_store_commit_send(st, &c2), 0);
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit_recv(st, &c1, &v, &cur), VIGIL_COMMIT_ERROR);
    assert_true(vigil_metric_value("vigil_commit_replies_lost_total", NULL) == lost + 1);
    free(cur);
    cur = NULL;
    assert_int_equal(vigil_store_commit_recv(st, &c2, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    assert_int_equal(vt_redis_int(r, "EXISTS %s", "vigil:svc:state:r1"), 0);
    assert_int_equal(vt_redis_int(r, "EXISTS %s", "vigil:svc:state:r2"), 1);
    char *e = vt_redis_lindex(r, "vigil:svc:outbox:0", 0);
    assert_non_null(strstr(e, "\"r2\""));
    assert_null(strstr(e, "\"r1\""));
    free(e);
    /* the connection is in step: the first commit done again applies */
    assert_int_equal(vigil_store_commit(st, &c1, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

/* Three pipelined commits on three records share one transaction: their
 * timers, claimed deadlines and outbox entries go out as one ZADD, ZREM,
 * HDEL and RPUSH for the batch, with every commit's effect as if written
 * one after another (outbox entries in commit order). */
static void test_a_batch_writes_the_shard_keys_once(void **state)
{
    (void)state;
    const char *keys[] = { "r1", "r2", "r3" }, *ids[] = { "a", "b", "c" };
    char topic[16], member[16];
    assert_true(vt_redis_exec(vt_srv, "ZADD vigil:svc:timers:0 5 r1|old 5 r2|old 5 r3|old"));
    assert_true(vt_redis_exec(vt_srv, "HSET vigil:svc:timers:0:due r2|t 7 r2|old 7 keep 7"));
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    vigil_effects fx[3];
    vigil_commit c[3];
    for (int i = 0; i < 3; i++) {
        vigil_effects_init(&fx[i]);
        assert_int_equal(vigil_fx_set_state(&fx[i], "{\"n\":1}"), 0);
        assert_int_equal(vigil_fx_timer_set(&fx[i], "t", NOW + 1000 + i), 0);
        assert_int_equal(vigil_fx_timer_cancel(&fx[i], "old"), 0);
        snprintf(topic, sizeof topic, "t/%d", i);
        assert_int_equal(vigil_fx_publish(&fx[i], topic, ids[i], false), 0);
        c[i] = (vigil_commit){ .key = keys[i], .expected_version = 0, .input_id = ids[i],
                               .fx = &fx[i], .now_ms = NOW };
        assert_int_equal(vigil_store_commit_send(st, &c[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        int64_t v = -1;
        char *cur = NULL;
        assert_int_equal(vigil_store_commit_recv(st, &c[i], &v, &cur), VIGIL_COMMIT_OK);
        assert_int_equal(v, 1);
        free(cur);
        vigil_effects_free(&fx[i]);
    }
    assert_int_equal(vt_redis_calls(r, "exec"), 1);
    assert_int_equal(vt_redis_calls(r, "rpush"), 1);
    assert_int_equal(vt_redis_calls(r, "zrem"), 1);
    assert_int_equal(vt_redis_calls(r, "hdel"), 1);
    /* the timers, and each record's processed id */
    assert_int_equal(vt_redis_calls(r, "zadd"), 1 + 3);
    for (int i = 0; i < 3; i++) {
        snprintf(member, sizeof member, "%s|t", keys[i]);
        assert_int_equal(vt_redis_zscore(r, "vigil:svc:timers:0", member), NOW + 1000 + i);
        snprintf(member, sizeof member, "%s|old", keys[i]);
        assert_int_equal(vt_redis_zscore(r, "vigil:svc:timers:0", member), -1);
        char *e = vt_redis_lindex(r, "vigil:svc:outbox:0", i), want[32];
        snprintf(want, sizeof want, "0t/%d\n%s", i, ids[i]);
        assert_string_equal(e, want);
        free(e);
    }
    assert_int_equal(vt_redis_int(r, "HLEN %s", "vigil:svc:timers:0:due"), 1); /* "keep" */
}

/* Two commits of one transaction naming the same timer member: r1 sets
 * its timer "t" again, then r2's commit completes a lease it holds on
 * that member (the lease read matches the score before the batch). One
 * after another, the completion comes last and the member is gone; the
 * batch keeps that order rather than sending removals before additions. */
static void test_a_timer_named_by_two_commits_keeps_their_order(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "ZADD vigil:svc:timers:0 5 r1|t"));
    vigil_effects f1, f2;
    vigil_effects_init(&f1);
    vigil_effects_init(&f2);
    assert_int_equal(vigil_fx_set_state(&f1, "{}"), 0);
    assert_int_equal(vigil_fx_set_state(&f2, "{}"), 0);
    assert_int_equal(vigil_fx_timer_set(&f1, "t", NOW + 5), 0);
    vigil_commit c1 = { .key = "r1", .expected_version = 0, .input_id = "a", .fx = &f1,
                        .now_ms = NOW };
    vigil_commit c2 = { .key = "r2", .expected_version = 0, .input_id = "b", .fx = &f2,
                        .now_ms = NOW, .leased_timer = "r1|t", .leased_score = 5 };
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    assert_int_equal(vigil_store_commit_send(st, &c2), 0);
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit_recv(st, &c1, &v, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_store_commit_recv(st, &c2, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    assert_int_equal(vt_redis_calls(r, "exec"), 1); /* one transaction */
    assert_int_equal(vt_redis_zscore(r, "vigil:svc:timers:0", "r1|t"), -1);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_snapshot_changed_between_rounds_is_read_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_changed_between_rounds_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_endless_changes_end_as_a_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_commits_sharing_a_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_typed_outbox_refuses_the_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_flush_moves_entries_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replies_dropped_between_sends_fail_that_commit_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_batch_writes_the_shard_keys_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_timer_named_by_two_commits_keeps_their_order, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup, vt_redis_group_teardown);
}
