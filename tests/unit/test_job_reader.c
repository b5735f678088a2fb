/* test_job_reader.c - the reading order of a job worker (own pending jobs
 * after a restart, then jobs abandoned past the lease, then new ones),
 * against a real redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_server.h"
#include "vigil/clock.h"
#include "vigil/job_reader.h"
#include "vigil/log.h"

#define STREAM "t:jobs"
#define GROUP "workers"

static vt_redis *srv;

typedef struct seen {
    char payload[16][32];
    bool fresh[16];
    int n;
} seen;

static void take(void *arg, const vigil_job_entry *e, bool fresh)
{
    seen *s = arg;
    if (s->n < 16) {
        snprintf(s->payload[s->n], sizeof s->payload[0], "%s", e->payload ? e->payload : "(deleted)");
        s->fresh[s->n++] = fresh;
    }
}

static int group_setup(void **state)
{
    (void)state;
    vigil_log_init("test_job_reader", "test", VIGIL_LOG_ERROR);
    srv = vt_redis_start();
    return srv ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    vt_redis_stop(srv);
    return 0;
}

static vigil_redis *connect_fresh(void)
{
    assert_true(vt_redis_exec(srv, "FLUSHALL"));
    vigil_redis_addr a = vt_redis_addr(srv);
    vigil_redis *r = vigil_redis_new(&a, 2000);
    assert_non_null(r);
    return r;
}

static void add(const char *payload)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "XADD " STREAM " * m %s", payload);
    assert_true(vt_redis_exec(srv, cmd));
}

static void new_jobs_are_fresh_and_read_once(void **state)
{
    (void)state;
    vigil_redis *r = connect_fresh();
    vigil_job_reader rd;
    vigil_job_reader_init(&rd, STREAM, GROUP, "a", 1000);
    rd.block_ms = 10;
    seen s = {0};
    assert_int_equal(vigil_job_reader_fill(&rd, r, 8, true, take, &s), 0); /* creates the group */
    add("one");
    add("two");
    for (int i = 0; i < 5 && s.n < 2; i++)
        assert_int_equal(vigil_job_reader_fill(&rd, r, 8, true, take, &s), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.payload[0], "one");
    assert_true(s.fresh[0] && s.fresh[1]);
    assert_int_equal(vigil_job_reader_fill(&rd, r, 8, true, take, &s), 0);
    assert_int_equal(s.n, 2); /* nothing new, nothing twice */
    vigil_redis_free(r);
}

static void a_restart_reads_its_own_pending_first_and_others_take_them_after_the_lease(void **state)
{
    (void)state;
    vigil_redis *r = connect_fresh();
    vigil_job_reader a;
    vigil_job_reader_init(&a, STREAM, GROUP, "a", 300);
    a.block_ms = 10;
    seen s = {0};
    vigil_job_reader_fill(&a, r, 8, true, take, &s);
    add("job");
    for (int i = 0; i < 5 && s.n < 1; i++)
        vigil_job_reader_fill(&a, r, 8, true, take, &s);
    assert_int_equal(s.n, 1); /* read by "a", never acknowledged: a dies */
    /* "a" again after a restart: its own pending job first, not fresh */
    vigil_job_reader a2;
    vigil_job_reader_init(&a2, STREAM, GROUP, "a", 300);
    seen s2 = {0};
    vigil_job_reader_fill(&a2, r, 8, true, take, &s2);
    assert_int_equal(s2.n, 1);
    assert_string_equal(s2.payload[0], "job");
    assert_false(s2.fresh[0]);
    assert_int_equal(a2.resumed, 1);
    /* another consumer takes it once idle past the lease */
    vigil_job_reader b;
    vigil_job_reader_init(&b, STREAM, GROUP, "b", 300);
    b.block_ms = 10;
    seen s3 = {0};
    vigil_job_reader_fill(&b, r, 8, true, take, &s3); /* own: none */
    vigil_job_reader_fill(&b, r, 8, true, take, &s3); /* too early to claim */
    assert_int_equal(s3.n, 0);
    vigil_sleep_ms(400, NULL);
    vigil_job_reader_fill(&b, r, 8, true, take, &s3);
    assert_int_equal(s3.n, 1);
    assert_false(s3.fresh[0]);
    assert_int_equal(b.reclaimed, 1);
    vigil_redis_free(r);
}

static void a_lost_group_is_created_again(void **state)
{
    (void)state;
    vigil_redis *r = connect_fresh();
    vigil_job_reader rd;
    vigil_job_reader_init(&rd, STREAM, GROUP, "a", 1000);
    rd.block_ms = 10;
    seen s = {0};
    assert_int_equal(vigil_job_reader_fill(&rd, r, 8, true, take, &s), 0);
    assert_true(vt_redis_exec(srv, "DEL " STREAM));
    /* the next read fails (NOGROUP), backs off, then creates the group */
    int rc = vigil_job_reader_fill(&rd, r, 8, true, take, &s);
    for (int i = 0; i < 5 && rc == 0; i++)
        rc = vigil_job_reader_fill(&rd, r, 8, true, take, &s);
    assert_int_equal(rc, -1);
    assert_true(vigil_job_reader_backing_off(&rd));
    assert_false(rd.group_ok);
    vigil_sleep_ms(200, NULL);
    for (int i = 0; i < 20 && vigil_job_reader_backing_off(&rd); i++)
        vigil_sleep_ms(50, NULL);
    assert_int_equal(vigil_job_reader_fill(&rd, r, 8, true, take, &s), 0);
    assert_true(rd.group_ok);
    add("after");
    for (int i = 0; i < 5 && s.n < 1; i++)
        vigil_job_reader_fill(&rd, r, 8, true, take, &s);
    assert_int_equal(s.n, 1);
    vigil_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_jobs_are_fresh_and_read_once),
        cmocka_unit_test(a_restart_reads_its_own_pending_first_and_others_take_them_after_the_lease),
        cmocka_unit_test(a_lost_group_is_created_again),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
