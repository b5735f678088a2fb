/* test_workers.c - the pool of job worker threads (vigil/workers.h): every
 * worker made runs on its own thread, stop wakes each started one, joins
 * it and frees them all; a worker that cannot be made fails start, and
 * what did start is still stopped and freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>

#include "vigil/workers.h"

typedef struct pool_ctx {
    atomic_int ran, woken, dropped;
    int fail_at; /* make() fails for this index (-1: never) */
} pool_ctx;

typedef struct worker {
    pool_ctx *ctx;
    atomic_int wake;
} worker;

static void *make(void *ctx, vigil_runtime *rt, int index)
{
    (void)rt;
    pool_ctx *c = ctx;
    if (index == c->fail_at)
        return NULL;
    worker *w = calloc(1, sizeof *w);
    if (w)
        w->ctx = c;
    return w;
}

/* Waits until woken: stop must wake it, or the join would hang. */
static void *run(void *arg)
{
    worker *w = arg;
    atomic_fetch_add(&w->ctx->ran, 1);
    while (!atomic_load(&w->wake))
        ;
    return NULL;
}

static void wake(void *arg)
{
    worker *w = arg;
    atomic_fetch_add(&w->ctx->woken, 1);
    atomic_store(&w->wake, 1);
}

static void drop(void *arg)
{
    worker *w = arg;
    atomic_fetch_add(&w->ctx->dropped, 1);
    free(w);
}

static const vigil_worker_ops OPS = {.make = make, .run = run, .wake = wake, .drop = drop};

static void starts_wakes_joins_frees(void **state)
{
    (void)state;
    pool_ctx c = {.fail_at = -1};
    vigil_workers ws;
    assert_int_equal(vigil_workers_start(&ws, &OPS, 3, &c, NULL), 0);
    assert_int_equal(ws.n, 3);
    vigil_workers_stop(&ws);
    assert_int_equal(atomic_load(&c.ran), 3);
    assert_int_equal(atomic_load(&c.woken), 3);
    assert_int_equal(atomic_load(&c.dropped), 3);
    assert_int_equal(ws.n, 0);
    vigil_workers_stop(&ws); /* idempotent */
    assert_int_equal(atomic_load(&c.dropped), 3);
}

static void a_failed_make_fails_start_and_stop_cleans_up(void **state)
{
    (void)state;
    pool_ctx c = {.fail_at = 1};
    vigil_workers ws;
    assert_int_equal(vigil_workers_start(&ws, &OPS, 3, &c, NULL), -1);
    vigil_workers_stop(&ws);
    assert_int_equal(atomic_load(&c.woken), 1);
    assert_int_equal(atomic_load(&c.dropped), 1);
}

static void count_is_clamped(void **state)
{
    (void)state;
    pool_ctx c = {.fail_at = -1};
    vigil_workers ws;
    assert_int_equal(vigil_workers_start(&ws, &OPS, 0, &c, NULL), 0);
    assert_int_equal(ws.n, 1);
    vigil_workers_stop(&ws);
    assert_int_equal(atomic_load(&c.dropped), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(starts_wakes_joins_frees),
        cmocka_unit_test(a_failed_make_fails_start_and_stop_cleans_up),
        cmocka_unit_test(count_is_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
