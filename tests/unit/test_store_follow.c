/* test_store_follow.c - a pipelined commit that follows the batch's earlier
 * commit of the same record (vigil_commit.follows): both go in one
 * transaction and apply in order; the follower is applied only if the one
 * it follows is (a CONFLICT even on a version someone else wrote that
 * happens to be its expected one); the same input id twice is a DUPLICATE;
 * its snapshot publication shows what the transaction's earlier commits
 * wrote to the same hash; their timers cost one command for both; a
 * follower that cannot join is not sent at all.
 * Real redis-server. */
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
#include "vigil/redis.h"
#include "vigil/redis_raw.h"
#include "vigil/store.h"

#define NOW 1700000000123LL

static vigil_redis *r; /* the test's connection and store (vt_store_fixture) */
static vigil_store *st;

static int setup(void **state)
{
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

static long long outbox_len(void)
{
    return vt_redis_int(r, "LLEN %s", "vigil:svc:outbox:0");
}

/* Record r1 as stored: its version and state (malloc'd), and whether
 * input id was processed for it. */
static void load_r1(const char *id, int64_t *v, char **state, int *seen)
{
    *seen = 0;
    assert_int_equal(vigil_store_load(st, "r1", id, seen, v, state), 0);
}

static vigil_commit on_r1(const vigil_effects *fx, int64_t expected, const char *id, bool follows)
{
    return (vigil_commit){ .key = "r1", .expected_version = expected, .input_id = id, .fx = fx,
                           .now_ms = NOW, .follows = follows };
}

/* Sends c1 then c2 and reads both results into res (versions into v). */
static void send_two(vigil_commit *c1, vigil_commit *c2, vigil_commit_result res[2],
                     int64_t v[2])
{
    assert_int_equal(vigil_store_commit_send(st, c1), 0);
    assert_int_equal(vigil_store_commit_send(st, c2), 0);
    char *cur = NULL;
    res[0] = vigil_store_commit_recv(st, c1, &v[0], &cur);
    free(cur);
    cur = NULL;
    res[1] = vigil_store_commit_recv(st, c2, &v[1], &cur);
    free(cur);
}

static void state_fx(vigil_effects *fx, const char *state)
{
    vigil_effects_init(fx);
    assert_int_equal(vigil_fx_set_state(fx, state), 0);
}

/* fx's snapshot entry field = {"level": level} in persona's map (hash
 * persona:<persona>, published on persona/<persona>/state). */
static void level_snap(vigil_effects *fx, const char *persona, const char *field,
                       const char *level)
{
    char hash[64], topic[64], env[64], v[64];
    snprintf(hash, sizeof hash, "persona:%s", persona);
    snprintf(topic, sizeof topic, "persona/%s/state", persona);
    snprintf(env, sizeof env, "{\"persona\":\"%s\"}", persona);
    snprintf(v, sizeof v, "{\"level\":\"%s\"}", level);
    assert_int_equal(vigil_fx_snapshot(fx, hash, field, v, topic, env, "rooms"), 0);
}

/* f1 (state n 1, ann's room "other" asleep) and f2 (state n 2, ann's r1
 * deep): a commit and its follower writing persona ann's hash. */
static void ann_pair(vigil_effects *f1, vigil_effects *f2)
{
    state_fx(f1, "{\"n\":1}");
    state_fx(f2, "{\"n\":2}");
    level_snap(f1, "ann", "other", "sleep");
    level_snap(f2, "ann", "r1", "deep");
}

/* Sends ann_pair's commits, c1 (input "a", version 0) and its follower c2
 * (input "b"), and reads both results and versions. */
static void send_ann_pair(vigil_commit_result res[2], int64_t v[2])
{
    vigil_effects f1, f2;
    ann_pair(&f1, &f2);
    vigil_commit c1 = on_r1(&f1, 0, "a", false), c2 = on_r1(&f2, 1, "b", true);
    send_two(&c1, &c2, res, v);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

/* The outbox's entry i must be want. */
static void assert_outbox_at(int i, const char *want)
{
    char *e = vt_redis_lindex(r, "vigil:svc:outbox:0", i);
    assert_string_equal(e, want);
    free(e);
}

/* Field f of snapshot hash h must hold want. */
static void assert_hget(const char *h, const char *f, const char *want)
{
    const char *argv[] = { "HGET", h, f };
    redisReply *rep = vigil_redis_commandv(r, 3, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, want);
    vigil_redis_reply_free(rep);
}

/* c1 (input "a", state n 1, version 0) and its follower c2 (input id2,
 * state n 2) sent together: their results. */
static void follow_pair(const char *id2, vigil_commit_result res[2])
{
    vigil_effects f1, f2;
    state_fx(&f1, "{\"n\":1}");
    state_fx(&f2, "{\"n\":2}");
    vigil_commit c1 = on_r1(&f1, 0, "a", false), c2 = on_r1(&f2, 1, id2, true);
    int64_t v[2] = { -1, -1 };
    send_two(&c1, &c2, res, v);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

/* Record r1 as stored must be version ver with state want (NULL: none),
 * and input id processed or not. */
static void assert_r1(int64_t ver, const char *want, const char *id, bool seen)
{
    int64_t v = -1;
    char *s = NULL;
    int was = -1;
    load_r1(id, &v, &s, &was);
    assert_int_equal(v, ver);
    if (want)
        assert_string_equal(s, want);
    else
        assert_null(s);
    assert_int_equal(was != 0, seen);
    free(s);
}

/* Two commits of one record in one transaction: the second, decided on
 * what the first writes, lands on top of it (version 2, its state, both
 * ids processed), and its snapshot of persona ann shows the first one's
 * other field as the hash holds it. */
static void test_a_follower_applies_after_the_one_it_follows(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    vigil_commit_result res[2];
    int64_t v[2] = { -1, -1 };
    send_ann_pair(res, v);
    assert_int_equal(res[0], VIGIL_COMMIT_OK);
    assert_int_equal(res[1], VIGIL_COMMIT_OK);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 2);
    assert_int_equal(vt_redis_calls(r, "exec"), 1); /* one transaction for both */
    assert_r1(2, "{\"n\":2}", "a", true);
    assert_r1(2, "{\"n\":2}", "b", true);
    assert_int_equal(outbox_len(), 2);
    assert_outbox_at(1, "1persona/ann/state\n{\"persona\":\"ann\",\"rooms\":{\"other\":"
                        "{\"level\":\"sleep\"},\"r1\":{\"level\":\"deep\"}},"
                        "\"ts\":1700000000123}");
}

/* The first commit meets a record someone else wrote (version 1): it is a
 * CONFLICT, and so is its follower, although version 1 is the one the
 * follower expects: it was decided on the first one's state, not on that
 * one. Nothing of either is written. */
static void test_a_follower_of_a_conflict_conflicts(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "HSET vigil:svc:state:r1 v 1 s {\"n\":\"theirs\"}"));
    vigil_commit_result res[2];
    follow_pair("b", res);
    assert_int_equal(res[0], VIGIL_COMMIT_CONFLICT);
    assert_int_equal(res[1], VIGIL_COMMIT_CONFLICT);
    assert_r1(1, "{\"n\":\"theirs\"}", "b", false);
    assert_int_equal(outbox_len(), 0);
}

/* The first commit is a redelivery (its id was processed): a DUPLICATE
 * writes nothing, so its follower, decided on a state never written,
 * conflicts. */
static void test_a_follower_of_a_duplicate_conflicts(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "ZADD vigil:svc:ids:r1 1 a"));
    vigil_commit_result res[2];
    follow_pair("b", res);
    assert_int_equal(res[0], VIGIL_COMMIT_DUPLICATE);
    assert_int_equal(res[1], VIGIL_COMMIT_CONFLICT);
    assert_r1(0, NULL, "b", false);
}

/* The same input twice in one read: the second, following the first, is
 * a DUPLICATE and writes nothing; the record is the first one's. */
static void test_the_same_id_following_itself_is_a_duplicate(void **state)
{
    (void)state;
    vigil_commit_result res[2];
    follow_pair("a", res);
    assert_int_equal(res[0], VIGIL_COMMIT_OK);
    assert_int_equal(res[1], VIGIL_COMMIT_DUPLICATE);
    assert_r1(1, "{\"n\":1}", "a", true);
}

/* A follower writes to a snapshot hash another record's commit of the
 * transaction (between the two) also writes: its publication shows that
 * commit's field too, as the hash will hold it. */
static void test_a_follower_sees_the_transactions_earlier_writes_to_a_hash(void **state)
{
    (void)state;
    vigil_effects f1, f0, f2;
    state_fx(&f1, "{\"n\":1}");
    state_fx(&f0, "{\"m\":1}");
    state_fx(&f2, "{\"n\":2}");
    level_snap(&f0, "bob", "r2", "deep");
    level_snap(&f2, "bob", "r1", "awake");
    vigil_commit c1 = on_r1(&f1, 0, "a", false), c2 = on_r1(&f2, 1, "b", true);
    vigil_commit c0 = { .key = "r2", .expected_version = 0, .input_id = "z", .fx = &f0,
                        .now_ms = NOW };
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    assert_int_equal(vigil_store_commit_send(st, &c0), 0);
    assert_int_equal(vigil_store_commit_send(st, &c2), 0);
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit_recv(st, &c1, &v, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_store_commit_recv(st, &c0, &v, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_store_commit_recv(st, &c2, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    assert_int_equal(vt_redis_calls(r, "exec"), 1);
    assert_int_equal(outbox_len(), 2);
    char *e = vt_redis_lindex(r, "vigil:svc:outbox:0", 1);
    assert_string_equal(e, "1persona/bob/state\n{\"persona\":\"bob\",\"rooms\":{\"r1\":"
                           "{\"level\":\"awake\"},\"r2\":{\"level\":\"deep\"}},"
                           "\"ts\":1700000000123}");
    free(e);
    vigil_effects_free(&f1);
    vigil_effects_free(&f0);
    vigil_effects_free(&f2);
}

/* A follower that cannot join is not sent (-1) and the batch is not
 * disturbed: no earlier commit of its record in the batch, a version
 * that does not follow, or a reset of the record's parts. */
static void test_a_follower_that_cannot_join_is_not_sent(void **state)
{
    (void)state;
    vigil_effects f1, f2, f3;
    state_fx(&f1, "{\"n\":1}");
    state_fx(&f2, "{\"n\":2}");
    state_fx(&f3, "{\"n\":3}");
    vigil_fx_state_parts_reset(&f3);
    vigil_commit alone = on_r1(&f2, 1, "b", true);
    assert_int_equal(vigil_store_commit_send(st, &alone), -1); /* nothing to follow */
    vigil_commit c1 = on_r1(&f1, 0, "a", false);
    vigil_commit skew = on_r1(&f2, 5, "b", true), reset = on_r1(&f3, 1, "c", true);
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    assert_int_equal(vigil_store_commit_send(st, &skew), -1);  /* 5 does not follow 0 */
    assert_int_equal(vigil_store_commit_send(st, &reset), -1); /* resets the parts */
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit_recv(st, &c1, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    assert_int_equal(v, 1);
    assert_r1(1, "{\"n\":1}", "b", false);
    assert_int_equal(outbox_len(), 0);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
    vigil_effects_free(&f3);
}

/* vigil_store_can_follow says yes only while a follower of the key could
 * join: its record's latest commit in the batch being sent, with room left
 * (32 commits). A batch that filled up went out, and r1's commit with it,
 * so r1 has nothing left to follow; another key, or one r1 is the start
 * of, never had. */
static void test_can_follow_only_a_key_of_the_open_batch(void **state)
{
    (void)state;
    enum { OTHERS = 32 };
    vigil_effects f1;
    state_fx(&f1, "{\"n\":1}");
    assert_false(vigil_store_can_follow(st, "r1")); /* nothing sent */
    vigil_commit c1 = on_r1(&f1, 0, "a", false);
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    assert_true(vigil_store_can_follow(st, "r1"));
    assert_false(vigil_store_can_follow(st, "r10"));
    assert_false(vigil_store_can_follow(st, "r"));
    char keys[OTHERS][8];
    vigil_commit others[OTHERS];
    for (int i = 0; i < OTHERS; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        others[i] = (vigil_commit){ .key = keys[i], .input_id = "x", .fx = &f1, .now_ms = NOW };
        assert_int_equal(vigil_store_commit_send(st, &others[i]), 0);
        /* r1 and 31 others fill the batch; the 32nd other starts the next */
        assert_int_equal(vigil_store_can_follow(st, "r1"), i < OTHERS - 2);
    }
    assert_true(vigil_store_can_follow(st, keys[OTHERS - 1]));
    int64_t v = -1;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit_recv(st, &c1, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    for (int i = 0; i < OTHERS; i++) {
        cur = NULL;
        assert_int_equal(vigil_store_commit_recv(st, &others[i], &v, &cur), VIGIL_COMMIT_OK);
        free(cur);
    }
    assert_false(vigil_store_can_follow(st, keys[OTHERS - 1])); /* all received */
    vigil_effects_free(&f1);
}

/* A follower moves the timers the commit before it set: the transaction
 * sends one ZADD and one ZREM for both (not a pair each), and each timer
 * ends as the later commit left it (t moved, u cancelled, v set by the
 * first alone). */
static void test_followers_timers_keep_the_last_change_in_one_command(void **state)
{
    (void)state;
    vigil_effects f1, f2;
    state_fx(&f1, "{\"n\":1}");
    state_fx(&f2, "{\"n\":2}");
    assert_int_equal(vigil_fx_timer_set(&f1, "t", NOW + 5), 0);
    assert_int_equal(vigil_fx_timer_set(&f1, "u", NOW + 6), 0);
    assert_int_equal(vigil_fx_timer_set(&f1, "v", NOW + 7), 0);
    assert_int_equal(vigil_fx_timer_set(&f2, "t", NOW + 9), 0);
    assert_int_equal(vigil_fx_timer_cancel(&f2, "u"), 0);
    vigil_commit c1 = on_r1(&f1, 0, "a", false), c2 = on_r1(&f2, 1, "b", true);
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    vigil_commit_result res[2];
    int64_t v[2] = { -1, -1 };
    send_two(&c1, &c2, res, v);
    assert_int_equal(res[0], VIGIL_COMMIT_OK);
    assert_int_equal(res[1], VIGIL_COMMIT_OK);
    assert_int_equal(vt_redis_calls(r, "zadd"), 1 + 2); /* the timers, and the two input ids */
    assert_int_equal(vt_redis_calls(r, "zrem"), 1);
    assert_int_equal(vt_redis_zscore(r, "vigil:svc:timers:0", "r1|t"), NOW + 9);
    assert_int_equal(vt_redis_zscore(r, "vigil:svc:timers:0", "r1|u"), -1);
    assert_int_equal(vt_redis_zscore(r, "vigil:svc:timers:0", "r1|v"), NOW + 7);
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
}

/* Followers read only what the batch does not read already: c2 and c3
 * follow c1 on r1 and write persona ann's hash as c1 does (c2 also bob's):
 * one WATCH for c1's keys and one for bob's, the version read once, ann's
 * hash read once and bob's once, each input id looked up. A write the
 * follower makes again is left out of the one before. What they write
 * and publish is what they did when each read and wrote everything. */
static void test_followers_share_the_reads_of_the_commits_they_follow(void **state)
{
    (void)state;
    vigil_effects f1, f2, f3;
    state_fx(&f1, "{\"n\":1}");
    state_fx(&f2, "{\"n\":2}");
    state_fx(&f3, "{\"n\":3}");
    level_snap(&f1, "ann", "other", "sleep");
    level_snap(&f2, "ann", "r1", "deep");
    level_snap(&f2, "bob", "r1", "awake");
    level_snap(&f3, "ann", "r1", "awake");
    vigil_commit c1 = on_r1(&f1, 0, "a", false), c2 = on_r1(&f2, 1, "b", true),
                 c3 = on_r1(&f3, 2, "c", true);
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    assert_int_equal(vigil_store_commit_send(st, &c1), 0);
    assert_int_equal(vigil_store_commit_send(st, &c2), 0);
    assert_int_equal(vigil_store_commit_send(st, &c3), 0);
    vigil_commit *cs[] = { &c1, &c2, &c3 };
    for (int i = 0; i < 3; i++) {
        int64_t v = -1;
        char *cur = NULL;
        assert_int_equal(vigil_store_commit_recv(st, cs[i], &v, &cur), VIGIL_COMMIT_OK);
        assert_int_equal(v, i + 1);
        free(cur);
    }
    assert_int_equal(vt_redis_calls(r, "watch"), 2);
    assert_int_equal(vt_redis_calls(r, "hget"), 1);
    assert_int_equal(vt_redis_calls(r, "hgetall"), 2);
    assert_int_equal(vt_redis_calls(r, "zscore"), 3);
    assert_int_equal(vt_redis_calls(r, "exec"), 1);
    /* what a follower sets again is written once: the record by c3, ann's
     * r1 by c3; ann's "other" by c1, bob's r1 by c2 */
    assert_int_equal(vt_redis_calls(r, "hset"), 4);
    assert_int_equal(vt_redis_int(r, "HLEN %s", "vigil:svc:persona:ann"), 2);
    assert_hget("vigil:svc:persona:ann", "other", "{\"level\":\"sleep\"}");
    assert_hget("vigil:svc:persona:ann", "r1", "{\"level\":\"awake\"}");
    assert_hget("vigil:svc:persona:bob", "r1", "{\"level\":\"awake\"}");
    assert_r1(3, "{\"n\":3}", "c", true);
    assert_r1(3, "{\"n\":3}", "b", true);
    assert_int_equal(outbox_len(), 4);
    assert_outbox_at(2, "1persona/bob/state\n{\"persona\":\"bob\",\"rooms\":{\"r1\":"
                        "{\"level\":\"awake\"}},\"ts\":1700000000123}");
    assert_outbox_at(3, "1persona/ann/state\n{\"persona\":\"ann\",\"rooms\":{\"other\":"
                        "{\"level\":\"sleep\"},\"r1\":{\"level\":\"awake\"}},"
                        "\"ts\":1700000000123}");
    vigil_effects_free(&f1);
    vigil_effects_free(&f2);
    vigil_effects_free(&f3);
}

static void hset_between(void *ctx)
{
    int *left = ctx;
    if (*left > 0 && (*left)--)
        assert_true(vt_redis_exec(vt_srv, "HSET vigil:svc:persona:ann r9 {\"level\":\"x\"}"));
}

/* A hash a follower shares, written by someone else between the rounds:
 * the transaction writes nothing, the batch reads again, and the
 * follower's publication shows that write too. */
static void test_a_shared_hash_changed_between_rounds_is_read_again(void **state)
{
    (void)state;
    int left = 1;
    store_test_between_rounds(hset_between, &left);
    assert_true(vt_redis_exec(vt_srv, "CONFIG RESETSTAT"));
    vigil_commit_result res[2];
    int64_t v[2] = { -1, -1 };
    send_ann_pair(res, v);
    assert_int_equal(res[0], VIGIL_COMMIT_OK);
    assert_int_equal(res[1], VIGIL_COMMIT_OK);
    assert_int_equal(left, 0);
    assert_int_equal(vt_redis_calls(r, "exec"), 2); /* the first one aborted */
    assert_int_equal(outbox_len(), 2);
    assert_outbox_at(1, "1persona/ann/state\n{\"persona\":\"ann\",\"rooms\":{\"other\":"
                        "{\"level\":\"sleep\"},\"r1\":{\"level\":\"deep\"},\"r9\":"
                        "{\"level\":\"x\"}},\"ts\":1700000000123}");
}

/* A follower's record or hash of another type: the commit it follows is
 * refused (BAD_DATA) and the follower is not applied; nothing is written. */
static void test_a_follower_of_bad_data_writes_nothing(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "SET vigil:svc:persona:ann oops"));
    vigil_commit_result res[2];
    int64_t v[2] = { -1, -1 };
    send_ann_pair(res, v);
    assert_int_equal(res[0], VIGIL_COMMIT_BAD_DATA);
    assert_true(res[1] == VIGIL_COMMIT_BAD_DATA || res[1] == VIGIL_COMMIT_CONFLICT);
    assert_r1(0, NULL, "b", false);
    assert_r1(0, NULL, "a", false);
    assert_int_equal(outbox_len(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_follower_applies_after_the_one_it_follows, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_follower_of_a_conflict_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_follower_of_a_duplicate_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_same_id_following_itself_is_a_duplicate, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_follower_sees_the_transactions_earlier_writes_to_a_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_follower_that_cannot_join_is_not_sent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_followers_timers_keep_the_last_change_in_one_command,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_can_follow_only_a_key_of_the_open_batch, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_followers_share_the_reads_of_the_commits_they_follow,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_shared_hash_changed_between_rounds_is_read_again,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_follower_of_bad_data_writes_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup, vt_redis_group_teardown);
}
