/* test_shard_fence.c - the fence that says a replica's session delivered
 * what it queued under the counts it holds (shard_fence.h), with the
 * clock passed in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vigil/shard_fence.h"

#define RETRY 10000

static vigil_shard_view counts(int a, int b)
{
    vigil_shard_view v;
    memset(&v, 0, sizeof v);
    vigil_shard_view_add(&v, a);
    vigil_shard_view_add(&v, b);
    return v;
}

static void test_topic_and_payload(void **state)
{
    (void)state;
    vigil_shard_fence f;
    vigil_shard_fence_init(&f, "wake-evaluator", 1, 3);
    assert_string_equal(f.topic, "sys/wake-evaluator/fence/1");
    assert_true(vigil_shard_fence_is_fence_topic("wake-evaluator", f.topic));
    assert_true(vigil_shard_fence_is_fence_topic("wake-evaluator", "sys/wake-evaluator/fence/7"));
    assert_false(vigil_shard_fence_is_fence_topic("wake-evaluator", "sys/wake-evaluator/error"));
    assert_false(vigil_shard_fence_is_fence_topic("wake", "sys/wake-evaluator/fence/1"));
    assert_false(vigil_shard_fence_is_fence_topic("wake-evaluator", "room/r/message"));
    vigil_shard_view held = counts(2, 0);
    char p[VIGIL_FENCE_PAYLOAD_MAX];
    assert_true(vigil_shard_fence_due(&f, &held, 1000, RETRY, p, sizeof p));
    char want[VIGIL_FENCE_PAYLOAD_MAX];
    snprintf(want, sizeof want, "{\"shard\":\"1/3\",\"nonce\":\"%s\",\"seq\":1,\"held\":[2]}",
             f.nonce);
    assert_string_equal(p, want);
    assert_int_equal(strlen(f.nonce), 32);
    vigil_shard_fence_destroy(&f);
}

/* Nothing held: nothing sent. Held: one fence, not another until it is
 * answered or retry passes; its return releases what was held when it
 * was sent. */
static void test_send_wait_retry_release(void **state)
{
    (void)state;
    vigil_shard_fence f;
    vigil_shard_fence_init(&f, "svc", 0, 3);
    char p1[VIGIL_FENCE_PAYLOAD_MAX], p2[VIGIL_FENCE_PAYLOAD_MAX], x[VIGIL_FENCE_PAYLOAD_MAX];
    vigil_shard_view none = counts(0, 0), held = counts(2, 4), rel;
    assert_false(vigil_shard_fence_due(&f, &none, 0, RETRY, x, sizeof x));
    assert_true(vigil_shard_fence_due(&f, &held, 100, RETRY, p1, sizeof p1));
    assert_false(vigil_shard_fence_due(&f, &held, 2100, RETRY, x, sizeof x));
    assert_false(vigil_shard_fence_due(&f, &held, 100 + RETRY - 1, RETRY, x, sizeof x));
    assert_true(vigil_shard_fence_due(&f, &held, 100 + RETRY, RETRY, p2, sizeof p2));
    assert_non_null(strstr(p2, "\"seq\":2"));
    /* the retry's fence (p2) comes back first: it proves as much */
    assert_int_equal(1, vigil_shard_fence_arrived(&f, p2, strlen(p2), &rel));
    assert_int_equal(rel.n, 2);
    assert_int_equal(rel.counts[0], 2);
    assert_int_equal(rel.counts[1], 4);
    /* the first one, late, releases nothing more */
    assert_int_equal(0, vigil_shard_fence_arrived(&f, p1, strlen(p1), &rel));
    vigil_shard_fence_destroy(&f);
}

/* A fence of an earlier process of the same index (left in the session's
 * queue) says nothing about this process's backlog; nor does garbage, or
 * a fence answered before anything was held. */
static void test_foreign_and_bad_fences_release_nothing(void **state)
{
    (void)state;
    vigil_shard_fence old, f;
    vigil_shard_fence_init(&old, "svc", 0, 2);
    vigil_shard_fence_init(&f, "svc", 0, 3);
    assert_string_not_equal(old.nonce, f.nonce);
    vigil_shard_view held = counts(2, 0), rel;
    char po[VIGIL_FENCE_PAYLOAD_MAX], pf[VIGIL_FENCE_PAYLOAD_MAX];
    assert_true(vigil_shard_fence_due(&old, &held, 0, RETRY, po, sizeof po));
    assert_int_equal(-1, vigil_shard_fence_arrived(&f, pf, 0, &rel)); /* empty */
    assert_true(vigil_shard_fence_due(&f, &held, 0, RETRY, pf, sizeof pf));
    assert_int_equal(0, vigil_shard_fence_arrived(&f, po, strlen(po), &rel));
    static const char *bad[] = {
        "not json", "[]", "{}", "{\"nonce\":5,\"seq\":1}", "{\"nonce\":\"abc\",\"seq\":1}",
        NULL,
    };
    for (int i = 0; bad[i]; i++)
        assert_int_equal(-1, vigil_shard_fence_arrived(&f, bad[i], strlen(bad[i]), &rel));
    /* a sequence number this process never sent */
    char forged[VIGIL_FENCE_PAYLOAD_MAX];
    snprintf(forged, sizeof forged, "{\"nonce\":\"%s\",\"seq\":99}", f.nonce);
    assert_int_equal(0, vigil_shard_fence_arrived(&f, forged, strlen(forged), &rel));
    assert_int_equal(1, vigil_shard_fence_arrived(&f, pf, strlen(pf), &rel));
    /* answered: the same fence again releases nothing */
    assert_int_equal(0, vigil_shard_fence_arrived(&f, pf, strlen(pf), &rel));
    vigil_shard_fence_destroy(&old);
    vigil_shard_fence_destroy(&f);
}

/* When the held counts went away meanwhile (released by an earlier
 * fence), the outstanding one is forgotten; a new hold starts afresh. */
static void test_nothing_held_forgets_the_outstanding_fence(void **state)
{
    (void)state;
    vigil_shard_fence f;
    vigil_shard_fence_init(&f, "svc", 0, 3);
    vigil_shard_view held = counts(2, 0), none = counts(0, 0), rel;
    char p[VIGIL_FENCE_PAYLOAD_MAX], q[VIGIL_FENCE_PAYLOAD_MAX];
    assert_true(vigil_shard_fence_due(&f, &held, 0, RETRY, p, sizeof p));
    assert_false(vigil_shard_fence_due(&f, &none, 10, RETRY, q, sizeof q));
    assert_int_equal(0, vigil_shard_fence_arrived(&f, p, strlen(p), &rel));
    assert_true(vigil_shard_fence_due(&f, &held, 20, RETRY, q, sizeof q));
    assert_int_equal(1, vigil_shard_fence_arrived(&f, q, strlen(q), &rel));
    vigil_shard_fence_destroy(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topic_and_payload),
        cmocka_unit_test(test_send_wait_retry_release),
        cmocka_unit_test(test_foreign_and_bad_fences_release_nothing),
        cmocka_unit_test(test_nothing_held_forgets_the_outstanding_fence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
