/* rate.c - token buckets: the per-token rate limit (VIGIL_GATEWAY_RATE
 * requests a second, bursts of as many) and the limit on failed
 * authentications per client address (VIGIL_GATEWAY_AUTH_FAIL_RATE a
 * second, bursts of GW_FAIL_BURST), which throttles token guessing. A
 * bucket is refilled continuously, so a burst passes and a steady flood
 * is held to the rate. */
#include <stdlib.h>
#include <string.h>
#include "gateway.h"

bool gw_bucket_take(gw_bucket *b, double rate, double burst, int64_t now,
                    int64_t *retry_after_ms)
{
    if (rate <= 0)
        return true;
    if (!b->init) {
        b->tokens = burst;
        b->last_ms = now;
        b->init = true;
    }
    if (now > b->last_ms) {
        b->tokens += (double)(now - b->last_ms) * rate / 1000.0;
        if (b->tokens > burst)
            b->tokens = burst;
        b->last_ms = now;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return true;
    }
    if (retry_after_ms) {
        double need = (1.0 - b->tokens) * 1000.0 / rate;
        *retry_after_ms = (int64_t)need + 1;
    }
    return false;
}

/* The burst is the rate, but never less than one request: a bucket that
 * holds less than one never lets a request through, so a rate below one a
 * second (0.5: one every 2 s) refused every request of every token. */
bool gw_rate_take(gw_bucket *b, double rate, int64_t now, int64_t *retry_after_ms)
{
    return gw_bucket_take(b, rate, rate < 1.0 ? 1.0 : rate, now, retry_after_ms);
}

int gw_fail_table_init(gw_fail_table *t, int cap)
{
    t->n = 0;
    t->cap = cap > 0 ? cap : 1;
    t->v = calloc((size_t)t->cap, sizeof *t->v);
    return t->v ? 0 : -1;
}

void gw_fail_table_free(gw_fail_table *t)
{
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

/* The entry of addr, or a fresh one: appended while there is room, else
 * the least recently seen is taken over. A linear scan: the table is
 * small, and only requests that fail authentication come here. */
static gw_fail_entry *fail_entry(gw_fail_table *t, const unsigned char addr[16])
{
    gw_fail_entry *oldest = NULL;
    for (int i = 0; i < t->n; i++) {
        if (memcmp(t->v[i].addr, addr, 16) == 0)
            return &t->v[i];
        if (!oldest || t->v[i].seen < oldest->seen)
            oldest = &t->v[i];
    }
    gw_fail_entry *e = t->n < t->cap ? &t->v[t->n++] : oldest;
    memset(e, 0, sizeof *e);
    memcpy(e->addr, addr, 16);
    return e;
}

bool gw_fail_take(gw_fail_table *t, const unsigned char addr[16], double rate, int64_t now,
                  int64_t *retry_after_ms)
{
    if (rate <= 0 || !t->v)
        return true;
    gw_fail_entry *e = fail_entry(t, addr);
    e->seen = now;
    return gw_bucket_take(&e->b, rate, GW_FAIL_BURST, now, retry_after_ms);
}
