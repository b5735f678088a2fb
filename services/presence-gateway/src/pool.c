/* pool.c - Redis connections for HTTP request threads (a vigil_redis is
 * one thread's at a time): taken for one request, then kept for the next;
 * only connected ones are handed out (NULL = Redis unreachable: 503). */
#include "adapter.h"

#include <vigil/clock.h>

#define GW_COMMIT_ATTEMPTS 3

/* A commit for an HTTP caller tries Redis three times in about 150 ms
 * (the first error may be a connection that Redis' restart left dead),
 * then gives up: the caller hears 503 rather than waiting out the outage
 * in the commit's retry loop, which a pooled connection, connected when
 * taken, would otherwise do. */
static bool answer_soon(void *ctx, int attempt, int64_t ms)
{
    (void)ctx;
    if (attempt >= GW_COMMIT_ATTEMPTS - 1)
        return false;
    vigil_sleep_ms(ms < 100 ? ms : 100, NULL);
    return true;
}

vigil_runtime_conn *gw_pool_take(gateway *g)
{
    vigil_runtime *rt = atomic_load(&g->rt);
    if (!rt)
        return NULL;
    pthread_mutex_lock(&g->pool.mu);
    vigil_runtime_conn *c = g->pool.nfree ? g->pool.free[--g->pool.nfree] : NULL;
    pthread_mutex_unlock(&g->pool.mu);
    if (!c) {
        c = vigil_runtime_conn_open(rt);
        if (c)
            vigil_runtime_conn_set_wait(c, answer_soon, NULL);
    }
    /* An HTTP caller should hear "503, try again" during a Redis outage
     * rather than wait in the commit's retry loop until Redis is back. */
    if (c && !vigil_redis_ensure(vigil_runtime_conn_redis(c))) {
        vigil_runtime_conn_close(c);
        c = NULL;
    }
    return c;
}

void gw_pool_put(gateway *g, vigil_runtime_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->pool.mu);
    int n = (int)(sizeof g->pool.free / sizeof g->pool.free[0]);
    if (!g->pool.closed && g->pool.nfree < n) {
        g->pool.free[g->pool.nfree++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&g->pool.mu);
    if (c)
        vigil_runtime_conn_close(c);
}

void gw_pool_close(gw_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->closed = true;
    while (p->nfree)
        vigil_runtime_conn_close(p->free[--p->nfree]);
    pthread_mutex_unlock(&p->mu);
}
