/* test_job_consumer.c - the order a worker takes jobs in (own pending
 * after a restart, then jobs idle past the lease, then new ones) and the
 * group coming back after the stream vanished, against a real
 * redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_redis.h"
#include "vigil/clock.h"
#include "vigil/job_consumer.h"
#include "vigil/log.h"

#define STREAM "svc:jobs"

static void add_jobs(int n)
{
    for (int i = 0; i < n; i++) {
        redisReply *rep = vigil_redis_command(vt_conn, "XADD %s * m job-%d", STREAM, i);
        assert_non_null(rep);
        vigil_redis_reply_free(rep);
    }
}

static int next(vigil_job_consumer *c, vigil_job_entries *es, vigil_jobs_origin *o)
{
    return vigil_job_consumer_next(c, vt_conn, 10, 0, vigil_mono_ms(), es, o);
}

static void test_order(void **state)
{
    (void)state;
    redisReply *rep = vigil_redis_command(vt_conn, "FLUSHALL");
    vigil_redis_reply_free(rep);
    vigil_job_consumer a;
    vigil_job_consumer_init(&a, STREAM, "workers", "inst-a", 60000);
    vigil_job_entries es;
    vigil_jobs_origin o;
    /* nothing yet: the group is created, no entries */
    assert_int_equal(next(&a, &es, &o), 0);
    assert_int_equal(es.n, 0);
    vigil_job_entries_free(&es);
    add_jobs(3);
    assert_int_equal(next(&a, &es, &o), 0);
    assert_int_equal(o, VIGIL_JOBS_NEW);
    assert_int_equal(es.n, 3);
    assert_string_equal(es.v[0].payload, "job-0");
    vigil_job_entries_free(&es);

    /* "restart" of a (same consumer name): its three unacknowledged jobs
     * come back first */
    vigil_job_consumer a2;
    vigil_job_consumer_init(&a2, STREAM, "workers", "inst-a", 60000);
    assert_int_equal(next(&a2, &es, &o), 0);
    assert_int_equal(o, VIGIL_JOBS_OWN_PENDING);
    assert_int_equal(es.n, 3);
    const char *ids[1] = {es.v[0].id};
    assert_int_equal(vigil_jobs_finish(vt_conn, STREAM, "workers", ids, 1), 0);
    vigil_job_entries_free(&es);
    /* past its pending list: nothing new, nothing idle past 60 s */
    assert_int_equal(next(&a2, &es, &o), 0);
    assert_int_equal(es.n, 0);
    vigil_job_entries_free(&es);

    /* another instance with a short lease takes over the two left */
    vigil_job_consumer b;
    vigil_job_consumer_init(&b, STREAM, "workers", "inst-b", 1);
    usleep(20000);
    assert_int_equal(next(&b, &es, &o), 0);
    assert_int_equal(o, VIGIL_JOBS_RECLAIMED);
    assert_int_equal(es.n, 2);
    assert_string_equal(es.v[0].payload, "job-1");
    vigil_job_entries_free(&es);
}

static void test_group_comes_back(void **state)
{
    (void)state;
    redisReply *rep = vigil_redis_command(vt_conn, "FLUSHALL");
    vigil_redis_reply_free(rep);
    vigil_job_consumer a;
    vigil_job_consumer_init(&a, STREAM, "workers", "inst-a", 60000);
    vigil_job_entries es;
    vigil_jobs_origin o;
    assert_int_equal(next(&a, &es, &o), 0);
    vigil_job_entries_free(&es);
    rep = vigil_redis_command(vt_conn, "DEL %s", STREAM);
    vigil_redis_reply_free(rep);
    assert_int_equal(next(&a, &es, &o), VIGIL_JOBS_ERROR);
    assert_false(a.group_ok);
    add_jobs(1);
    assert_int_equal(next(&a, &es, &o), 0);
    assert_int_equal(es.n, 1);
    vigil_job_entries_free(&es);
}

/* The wait after failed reads doubles from 100 ms to 5 s (jittered in
 * [d/2, d]) and counts the failures (the worker sets the count back to 0
 * after a good read). */
static void in_range(int64_t v, int64_t lo, int64_t hi)
{
    assert_true(v >= lo && v <= hi);
}

static void test_backoff(void **state)
{
    (void)state;
    int errors = 0;
    in_range(vigil_job_backoff(&errors, NULL, "XREADGROUP"), 50, 100);
    in_range(vigil_job_backoff(&errors, NULL, "XREADGROUP"), 100, 200);
    assert_int_equal(errors, 2);
    for (int i = 0; i < 20; i++)
        vigil_job_backoff(&errors, NULL, "XREADGROUP");
    in_range(vigil_job_backoff(&errors, NULL, "XREADGROUP"), 2500, 5000);
    errors = 0;
    in_range(vigil_job_backoff(&errors, NULL, "XREADGROUP"), 50, 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_group_comes_back),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup_conn, vt_redis_group_teardown_conn);
}
