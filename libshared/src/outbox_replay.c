/* outbox_replay.c - a ring of recently acknowledged outbox entries (see
 * outbox_replay.h). It grows by doubling up to its bound, so an idle
 * service holds a few slots, not the bound. */
#include "outbox_replay.h"

#include <stdlib.h>
#include <string.h>

#define REPLAY_INITIAL 64

typedef struct replay_entry {
    vigil_outbox_raw raw;
    int64_t acked_ms;
} replay_entry;

struct vigil_replay {
    int64_t window_ms;
    size_t max;
    replay_entry *e;
    size_t cap, head, n; /* e[(head + i) % cap] is the i-th oldest */
    unsigned long long overflowed;
};

vigil_replay *vigil_replay_new(int64_t window_ms, size_t max)
{
    if (window_ms <= 0 || max == 0)
        return NULL;
    vigil_replay *r = calloc(1, sizeof *r);
    if (r) {
        r->window_ms = window_ms;
        r->max = max;
    }
    return r;
}

void vigil_replay_free(vigil_replay *r)
{
    if (!r)
        return;
    vigil_replay_drop(r, r->n);
    free(r->e);
    free(r);
}

/* Doubles the ring (up to max), keeping the order. False when it cannot. */
static int grow(vigil_replay *r)
{
    size_t cap = r->cap ? r->cap * 2 : REPLAY_INITIAL;
    if (cap > r->max)
        cap = r->max;
    if (cap <= r->cap)
        return 0;
    replay_entry *e = malloc(cap * sizeof *e);
    if (!e)
        return 0;
    for (size_t i = 0; i < r->n; i++)
        e[i] = r->e[(r->head + i) % r->cap];
    free(r->e);
    r->e = e;
    r->cap = cap;
    r->head = 0;
    return 1;
}

void vigil_replay_add(vigil_replay *r, vigil_outbox_raw *raw, int64_t acked_ms)
{
    if (!r || !raw)
        return;
    if (r->n == r->cap && !grow(r)) {
        if (r->n == 0) { /* no memory for even one: it cannot be kept */
            vigil_outbox_raw_free(raw, 1);
            r->overflowed++;
            return;
        }
        vigil_replay_drop(r, 1);
        r->overflowed++;
    }
    replay_entry *slot = &r->e[(r->head + r->n) % r->cap];
    slot->raw = *raw;
    slot->acked_ms = acked_ms;
    r->n++;
    memset(raw, 0, sizeof *raw);
}

void vigil_replay_expire(vigil_replay *r, int64_t until_ms)
{
    if (!r)
        return;
    size_t k = 0;
    while (k < r->n && r->e[(r->head + k) % r->cap].acked_ms < until_ms - r->window_ms)
        k++;
    vigil_replay_drop(r, k);
    if (r->n == 0 && r->cap > REPLAY_INITIAL) { /* give a burst's memory back */
        free(r->e);
        r->e = NULL;
        r->cap = r->head = 0;
    }
}

size_t vigil_replay_count(const vigil_replay *r)
{
    return r ? r->n : 0;
}

const vigil_outbox_raw *vigil_replay_at(const vigil_replay *r, size_t i)
{
    if (!r || i >= r->n)
        return NULL;
    return &r->e[(r->head + i) % r->cap].raw;
}

void vigil_replay_drop(vigil_replay *r, size_t n)
{
    if (!r)
        return;
    if (n > r->n)
        n = r->n;
    for (size_t i = 0; i < n; i++) {
        vigil_outbox_raw_free(&r->e[r->head].raw, 1);
        r->head = (r->head + 1) % r->cap;
    }
    r->n -= n;
    if (r->n == 0)
        r->head = 0;
}

unsigned long long vigil_replay_overflowed(const vigil_replay *r)
{
    return r ? r->overflowed : 0;
}
