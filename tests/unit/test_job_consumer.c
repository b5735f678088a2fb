/* test_job_consumer.c - a worker's reading of a durable job queue
 * (vigil/job_consumer.h) against a real redis-server: new jobs are handed
 * fresh; a consumer that restarts without acknowledging gets its own
 * pending jobs again (not fresh); another consumer takes over jobs idle
 * past the lease; acknowledged jobs are gone. Also kv.h's typed reads. */
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
#include "vigil/job_consumer.h"
#include "vigil/kv.h"
#include "vigil/log.h"

static vt_redis *srv;

typedef struct got {
    char ids[16][48];
    char payloads[16][32];
    bool fresh[16];
    int n;
} got;

static void take(void *ctx, const vigil_job_entry *e, bool fresh)
{
    got *g = ctx;
    snprintf(g->ids[g->n], sizeof g->ids[0], "%s", e->id);
    snprintf(g->payloads[g->n], sizeof g->payloads[0], "%s", e->payload ? e->payload : "(null)");
    g->fresh[g->n++] = fresh;
}

static int group_setup(void **state)
{
    (void)state;
    vigil_log_init("test_job_consumer", "test", VIGIL_LOG_ERROR);
    srv = vt_redis_start();
    return srv ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    vt_redis_stop(srv);
    return 0;
}

static vigil_redis *connect_redis(void)
{
    vigil_redis_addr a = vt_redis_addr(srv);
    return vigil_redis_new(&a, 2000);
}

static vigil_job_consumer *consumer(vigil_redis *r, const char *name, int64_t lease)
{
    vigil_job_consumer_config c = {"t:jobs", "workers", name, lease, 0, 4, "vigil_test_jobs"};
    return vigil_job_consumer_new(r, &c);
}

static void add_job(const char *payload)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "XADD t:jobs * m %s", payload);
    assert_true(vt_redis_exec(srv, cmd));
}

static void fresh_then_own_pending_after_restart(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(srv, "FLUSHALL"));
    vigil_redis *r = connect_redis();
    vigil_job_consumer *c = consumer(r, "w0", 60000);
    got g = {0};
    assert_int_equal(vigil_job_consumer_fill(c, 4, false, take, &g), 0); /* creates the group */
    add_job("a");
    add_job("b");
    add_job("c");
    assert_int_equal(vigil_job_consumer_fill(c, 2, false, take, &g), 2);
    assert_string_equal(g.payloads[0], "a");
    assert_true(g.fresh[0] && g.fresh[1]);
    vigil_job_consumer_ack(c, g.ids[0]);
    vigil_job_consumer_flush(c);
    /* "restart": a new consumer with the same name; b was never acknowledged */
    vigil_job_consumer_free(c);
    c = consumer(r, "w0", 60000);
    got h = {0};
    assert_int_equal(vigil_job_consumer_fill(c, 4, false, take, &h), 1);
    assert_string_equal(h.payloads[0], "b");
    assert_false(h.fresh[0]);
    /* then the pending list is done and c comes fresh */
    assert_int_equal(vigil_job_consumer_fill(c, 4, false, take, &h), 1);
    assert_string_equal(h.payloads[1], "c");
    assert_true(h.fresh[1]);
    vigil_job_consumer_ack(c, h.ids[0]);
    vigil_job_consumer_ack(c, h.ids[1]);
    vigil_job_consumer_flush(c);
    assert_true(vt_redis_exec(srv, "XLEN t:jobs")); /* acknowledged entries are deleted */
    redisReply *len = vigil_redis_command(r, "XLEN t:jobs");
    assert_int_equal(len->integer, 0);
    freeReplyObject(len);
    vigil_job_consumer_free(c);
    vigil_redis_free(r);
}

static void another_consumer_takes_over_after_the_lease(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(srv, "FLUSHALL"));
    vigil_redis *r = connect_redis();
    vigil_job_consumer *dead = consumer(r, "dead", 100), *alive = consumer(r, "alive", 100);
    got g = {0}, h = {0};
    vigil_job_consumer_fill(dead, 4, false, take, &g);
    add_job("x");
    assert_int_equal(vigil_job_consumer_fill(dead, 4, false, take, &g), 1);
    vigil_sleep_ms(250, NULL);
    /* alive: its own pending list is empty, then it claims x */
    vigil_job_consumer_fill(alive, 4, false, take, &h);
    vigil_job_consumer_fill(alive, 4, false, take, &h);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.payloads[0], "x");
    assert_false(h.fresh[0]);
    vigil_job_consumer_free(dead);
    vigil_job_consumer_free(alive);
    vigil_redis_free(r);
}

static int count_entries(void *ctx, const char *id, const char *value, size_t len)
{
    (void)id;
    (void)len;
    int *n = ctx;
    (*n)++;
    return strcmp(value, "stop") == 0;
}

static void kv_reads(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(srv, "FLUSHALL"));
    vigil_redis *r = connect_redis();
    assert_true(vt_redis_exec(srv, "SET k hello"));
    char *v = NULL;
    size_t len = 0;
    assert_int_equal(vigil_kv_get(r, "k", &v, &len), 1);
    assert_string_equal(v, "hello");
    assert_int_equal(len, 5);
    free(v);
    assert_int_equal(vigil_kv_get(r, "missing", &v, NULL), 0);
    assert_null(v);
    assert_true(vt_redis_exec(srv, "RPUSH l a"));
    assert_int_equal(vigil_kv_get(r, "l", &v, NULL), -1);
    add_job("one");
    add_job("stop");
    add_job("three");
    int n = 0;
    assert_int_equal(vigil_kv_stream_range(r, "t:jobs", 0, 10, count_entries, &n), 2);
    n = 0;
    assert_int_equal(vigil_kv_stream_range(r, "t:jobs", 1, 10, count_entries, &n), 2);
    n = 0;
    assert_int_equal(vigil_kv_stream_range(r, "nothing", 1, 10, count_entries, &n), 0);
    vigil_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fresh_then_own_pending_after_restart),
        cmocka_unit_test(another_consumer_takes_over_after_the_lease),
        cmocka_unit_test(kv_reads),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
