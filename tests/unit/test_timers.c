/* test_timers.c - timers set and cancelled by commits, claimed with a
 * lease, against a real redis-server. Time is always an explicit `now`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/log.h"
#include "vigil/redis_raw.h"
#include "vigil/store.h"
#include "vigil/timers.h"

#define T0 1700000000000LL

typedef vt_store_fixture fixture;

static int setup(void **state)
{
    vigil_store_config cfg = { "vigil:", "svc", 1, 0, 0 };
    return vt_store_fixture_setup(state, &cfg);
}

/* Sets (due > 0) or cancels (due == VIGIL_TIMER_CANCEL) one timer of key
 * through a commit without input id or state, as a service would. */
static void timer(fixture *f, const char *key, const char *name, int64_t due)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    if (due == VIGIL_TIMER_CANCEL)
        assert_int_equal(vigil_fx_timer_cancel(&fx, name), 0);
    else
        assert_int_equal(vigil_fx_timer_set(&fx, name, due), 0);
    vigil_commit c = { .key = key, .expected_version = 0, .fx = &fx, .now_ms = T0 };
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
}

static void test_empty_set(void **state)
{
    fixture *f = *state;
    vigil_timer_claim cl[2];
    assert_int_equal(vigil_timers_count(f->s), 0);
    assert_true(vigil_timers_next_due(f->s) == INT64_MAX);
    assert_int_equal(vigil_timers_claim(f->s, T0, 1000, 2, cl), 0);
}

static void test_set_count_next_due_and_replace(void **state)
{
    fixture *f = *state;
    timer(f, "k", "a", T0 + 3000);
    timer(f, "k", "b", T0 + 1000);
    timer(f, "k2", "a", T0 + 2000);
    assert_int_equal(vigil_timers_count(f->s), 3);
    assert_true(vigil_timers_next_due(f->s) == T0 + 1000);
    /* setting the same timer again moves it, it does not add one */
    timer(f, "k", "b", T0 + 9000);
    assert_int_equal(vigil_timers_count(f->s), 3);
    assert_true(vigil_timers_next_due(f->s) == T0 + 2000);
    /* stored in the shard's set as "<key>|<name>" */
    redisReply *rep = vigil_redis_command(f->r, "ZSCORE vigil:svc:timers:1 %s", "k|b");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "1700000009000");
    vigil_redis_reply_free(rep);
}

static void test_cancel(void **state)
{
    fixture *f = *state;
    timer(f, "k", "a", T0 + 1);
    timer(f, "k", "b", T0 + 2);
    timer(f, "k", "a", VIGIL_TIMER_CANCEL);
    assert_int_equal(vigil_timers_count(f->s), 1);
    assert_true(vigil_timers_next_due(f->s) == T0 + 2);
    timer(f, "k", "never-set", VIGIL_TIMER_CANCEL); /* harmless */
    timer(f, "other", "b", VIGIL_TIMER_CANCEL);     /* other key's b: not ours */
    assert_int_equal(vigil_timers_count(f->s), 1);
}

static void test_claim_only_due_oldest_first(void **state)
{
    fixture *f = *state;
    timer(f, "k1", "z", T0 + 300);
    timer(f, "k2", "y", T0 + 200);
    timer(f, "k1", "x", T0 + 100);
    timer(f, "k3", "later", T0 + 5000);
    vigil_timer_claim cl[10];
    int n = vigil_timers_claim(f->s, T0 + 300, 1000, 10, cl);
    assert_int_equal(n, 3);
    assert_string_equal(cl[0].member, "k1|x");
    assert_string_equal(cl[0].key, "k1");
    assert_string_equal(cl[0].name, "x");
    assert_true(cl[0].due_ms == T0 + 100);
    assert_string_equal(cl[1].member, "k2|y");
    assert_true(cl[1].due_ms == T0 + 200);
    assert_string_equal(cl[2].member, "k1|z");
    assert_true(cl[2].due_ms == T0 + 300);
    for (int i = 0; i < n; i++)
        assert_true(cl[i].lease_score == T0 + 1300);
    /* claimed timers stay in the set (leased), the later one untouched */
    assert_int_equal(vigil_timers_count(f->s), 4);
    assert_true(vigil_timers_next_due(f->s) == T0 + 1300);
}

static void test_claim_respects_max(void **state)
{
    fixture *f = *state;
    timer(f, "k", "c", T0 + 3);
    timer(f, "k", "a", T0 + 1);
    timer(f, "k", "b", T0 + 2);
    vigil_timer_claim cl[3];
    assert_int_equal(vigil_timers_claim(f->s, T0 + 10, 1000, 2, cl), 2);
    assert_string_equal(cl[0].name, "a");
    assert_string_equal(cl[1].name, "b");
    assert_int_equal(vigil_timers_claim(f->s, T0 + 10, 1000, 0, cl), 0);
    /* the third is still due and claimable */
    assert_int_equal(vigil_timers_claim(f->s, T0 + 10, 1000, 3, cl), 1);
    assert_string_equal(cl[0].name, "c");
}

/* Two claimants of one timer (the first outlived its lease): both see the
 * original deadline, so both derive the same firing id; the first commit
 * applies, the second is a DUPLICATE that still completes its lease, and
 * the deadline bookkeeping is gone with the timer. */
static void test_firing_applied_once_across_claims(void **state)
{
    fixture *f = *state;
    timer(f, "k", "t", T0);
    vigil_timer_claim a[1], b[1];
    assert_int_equal(vigil_timers_claim(f->s, T0, 1000, 1, a), 1);
    assert_int_equal(vigil_timers_claim(f->s, T0 + 1000, 1000, 1, b), 1);
    assert_true(a[0].due_ms == T0 && b[0].due_ms == T0);
    char id[80];
    snprintf(id, sizeof id, "timer:%s:%lld", a[0].name, (long long)a[0].due_ms);
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_set_state(&fx, "{\"fired\":1}"), 0);
    int64_t nv = 0;
    char *cur = NULL;
    vigil_commit ca = { .key = "k", .expected_version = 0, .input_id = id, .fx = &fx,
                        .now_ms = T0 + 1500, .leased_timer = a[0].member,
                        .leased_score = a[0].lease_score };
    assert_int_equal(vigil_store_commit(f->s, &ca, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 1); /* b's lease still holds it */
    vigil_commit cb = ca;
    cb.expected_version = 1;
    cb.leased_score = b[0].lease_score;
    assert_int_equal(vigil_store_commit(f->s, &cb, &nv, &cur), VIGIL_COMMIT_DUPLICATE);
    assert_int_equal(vigil_timers_count(f->s), 0);
    redisReply *rep = vigil_redis_command(f->r, "EXISTS vigil:svc:timers:1:due");
    assert_non_null(rep);
    assert_int_equal(rep->integer, 0);
    vigil_redis_reply_free(rep);
    vigil_effects_free(&fx);
}

static void test_lease_hides_then_returns(void **state)
{
    fixture *f = *state;
    timer(f, "k", "t", T0);
    vigil_timer_claim cl[2];
    assert_int_equal(vigil_timers_claim(f->s, T0, 5000, 2, cl), 1);
    assert_true(cl[0].lease_score == T0 + 5000);
    /* not claimed again while the lease runs (the claimer may be acting) */
    assert_int_equal(vigil_timers_claim(f->s, T0 + 1, 5000, 2, cl), 0);
    assert_int_equal(vigil_timers_claim(f->s, T0 + 4999, 5000, 2, cl), 0);
    /* the claimer died: when the lease ends another replica gets it */
    assert_int_equal(vigil_timers_claim(f->s, T0 + 5000, 5000, 2, cl), 1);
    assert_string_equal(cl[0].member, "k|t");
    assert_true(cl[0].due_ms == T0); /* the deadline it was set for, not the lease */
    assert_true(cl[0].lease_score == T0 + 10000);
    /* completing with the first (expired) lease no longer removes it */
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_commit c = { .key = "k", .fx = &fx, .now_ms = T0 + 5001,
                       .leased_timer = "k|t", .leased_score = T0 + 5000 };
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 1);
    /* the current holder completes it */
    c.leased_score = cl[0].lease_score;
    assert_int_equal(vigil_store_commit(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 0);
    vigil_effects_free(&fx);
}

static void test_member_split_at_last_bar(void **state)
{
    fixture *f = *state;
    timer(f, "room:a:b", "sugg:ann:42", T0);
    vigil_timer_claim cl[1];
    assert_int_equal(vigil_timers_claim(f->s, T0, 10, 1, cl), 1);
    assert_string_equal(cl[0].key, "room:a:b");
    assert_string_equal(cl[0].name, "sugg:ann:42");
    assert_string_equal(cl[0].member, "room:a:b|sugg:ann:42");
}

static void test_malformed_member_skipped(void **state)
{
    fixture *f = *state;
    redisReply *rep = vigil_redis_command(f->r, "ZADD vigil:svc:timers:1 1 nobar 2 %s", "k|ok");
    vigil_redis_reply_free(rep);
    vigil_timer_claim cl[4];
    assert_int_equal(vigil_timers_claim(f->s, 5, 10, 4, cl), 1);
    assert_string_equal(cl[0].member, "k|ok");
}

static void test_shards_are_separate(void **state)
{
    fixture *f = *state;
    timer(f, "k", "t", T0);
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 0 };
    vigil_store *s0 = vigil_store_new(f->r, &cfg);
    assert_int_equal(vigil_timers_count(s0), 0);
    vigil_timer_claim cl[1];
    assert_int_equal(vigil_timers_claim(s0, T0, 10, 1, cl), 0);
    assert_int_equal(vigil_timers_count(f->s), 1);
    vigil_store_free(s0);
}

static void test_errors_when_unreachable(void **state)
{
    vigil_redis_addr a = vt_redis_addr(vt_srv);
    a.port = 1;
    vigil_redis *r = vigil_redis_new(&a, 300);
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 0 };
    vigil_store *s = vigil_store_new(r, &cfg);
    vigil_timer_claim cl[1];
    assert_int_equal(vigil_timers_claim(s, T0, 10, 1, cl), -1);
    assert_true(vigil_timers_next_due(s) == -1);
    assert_true(vigil_timers_count(s) == -1);
    vigil_store_free(s);
    vigil_redis_free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, vt_store_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_empty_set),
        T(test_set_count_next_due_and_replace),
        T(test_cancel),
        T(test_claim_only_due_oldest_first),
        T(test_claim_respects_max),
        T(test_firing_applied_once_across_claims),
        T(test_lease_hides_then_returns),
        T(test_member_split_at_last_bar),
        T(test_malformed_member_skipped),
        T(test_shards_are_separate),
        cmocka_unit_test(test_errors_when_unreachable),
    };
#undef T
    return cmocka_run_group_tests_name("timers", tests, vt_redis_group_setup, vt_redis_group_teardown);
}
