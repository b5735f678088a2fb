/* test_job_acks.c - a worker's batched acknowledgements (vigil/job_acks.h)
 * against a real redis-server: entries are acknowledged and deleted only at
 * a flush, a full batch flushes before it takes one more, and a flush of
 * an empty batch does nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "fixture_redis.h"
#include "vigil/job_acks.h"
#include "vigil/log.h"
#include "vigil/redis_raw.h"

static long long xlen(vigil_redis *r)
{
    redisReply *rep = vigil_redis_command(r, "XLEN s");
    long long n = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep)
        vigil_redis_reply_free(rep);
    return n;
}

static void batches_then_flushes(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    assert_non_null(r);
    assert_true(vt_redis_exec(vt_srv, "XGROUP CREATE s g $ MKSTREAM"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 1-1 m a"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 1-2 m b"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 1-3 m c"));
    assert_true(vt_redis_exec(vt_srv, "XREADGROUP GROUP g c1 COUNT 10 STREAMS s >"));
    vigil_job_acks a;
    assert_int_equal(vigil_job_acks_init(&a, 2), 0);
    vigil_job_acks_flush(&a, r, "s", "g"); /* empty: nothing */
    vigil_job_acks_add(&a, r, "s", "g", "1-1");
    vigil_job_acks_add(&a, r, "s", "g", "1-2");
    assert_int_equal(xlen(r), 3); /* batched, not yet sent */
    vigil_job_acks_add(&a, r, "s", "g", "1-3"); /* full: the first two go */
    assert_int_equal(xlen(r), 1);
    assert_int_equal(a.n, 1);
    vigil_job_acks_flush(&a, r, "s", "g");
    assert_int_equal(xlen(r), 0);
    assert_int_equal(a.n, 0);
    redisReply *rep = vigil_redis_command(r, "XPENDING s g");
    assert_non_null(rep);
    assert_int_equal(rep->element[0]->integer, 0); /* acknowledged too */
    vigil_redis_reply_free(rep);
    vigil_job_acks_free(&a);
    vigil_job_acks_free(&a); /* safe twice */
    vigil_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batches_then_flushes),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup, vt_redis_group_teardown);
}
