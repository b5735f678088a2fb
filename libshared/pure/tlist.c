/* tlist.c - a list's joined text kept in step with appends at its end and
 * drops from its start (tlist.h).
 *
 * A drop moves nothing: the text's start moves past the dropped entries
 * and their separators. The bytes before it are moved out at the next
 * append once they are at least as many as the live text, so a list of
 * steady length moves each byte about once more than it writes it. */
#include "vigil/tlist.h"

#include <stdlib.h>
#include <string.h>

/* Empty and fresh, joined by sep, its memory kept. */
static void empty(vigil_tlist *l, char sep)
{
    l->sep = sep;
    l->t.n = 0;
    l->t.oom = false;
    if (l->t.s)
        l->t.s[0] = '\0';
    l->start = l->mark = 0;
    l->head = l->n = 0;
    l->fresh = true;
}

void vigil_tlist_init(vigil_tlist *l, char sep)
{
    memset(l, 0, sizeof *l);
    empty(l, sep);
}

void vigil_tlist_free(vigil_tlist *l)
{
    char sep = l->sep;
    free(l->t.s);
    free(l->lens);
    vigil_tlist_init(l, sep);
    l->fresh = false;
}

void vigil_tlist_reset(vigil_tlist *l, char sep)
{
    empty(l, sep);
    l->rewrites++;
}

void vigil_tlist_stale(vigil_tlist *l) { l->fresh = false; }

/* A stale list stays stale until reset: begin/end write nowhere useful
 * but harmlessly into its buffer, which the reset empties. */
vigil_jtext *vigil_tlist_begin(vigil_tlist *l)
{
    if (l->start > 0 && l->start >= l->t.n - l->start) {
        memmove(l->t.s, l->t.s + l->start, l->t.n - l->start + 1);
        l->t.n -= l->start;
        l->start = 0;
    }
    if (l->n > 0)
        vigil_jtext_ch(&l->t, l->sep);
    l->mark = l->t.n;
    return &l->t;
}

void vigil_tlist_end(vigil_tlist *l)
{
    if (!l->fresh)
        return;
    if (l->t.oom || l->t.n - l->mark > UINT32_MAX) {
        l->fresh = false;
        return;
    }
    if (l->n == l->cap) { /* grow the ring, unrolled to start at 0 */
        int cap = l->cap ? l->cap * 2 : 16;
        uint32_t *v = malloc((size_t)cap * sizeof *v);
        if (!v) {
            l->fresh = false;
            return;
        }
        for (int i = 0; i < l->n; i++)
            v[i] = l->lens[(l->head + i) % l->cap];
        free(l->lens);
        l->lens = v;
        l->cap = cap;
        l->head = 0;
    }
    l->lens[(l->head + l->n) % l->cap] = (uint32_t)(l->t.n - l->mark);
    l->n++;
}

void vigil_tlist_drop(vigil_tlist *l, int k)
{
    if (!l->fresh || k <= 0)
        return;
    if (k >= l->n) {
        empty(l, l->sep);
        return;
    }
    size_t bytes = (size_t)k; /* a separator after each dropped entry */
    for (int i = 0; i < k; i++)
        bytes += l->lens[(l->head + i) % l->cap];
    l->start += bytes;
    l->head = (l->head + k) % l->cap;
    l->n -= k;
}

const char *vigil_tlist_text(const vigil_tlist *l, size_t *len)
{
    if (!l->fresh)
        return NULL;
    *len = l->t.n - l->start;
    return l->t.s ? l->t.s + l->start : "";
}

int vigil_tlist_count(const vigil_tlist *l) { return l->fresh ? l->n : -1; }

void vigil_tlist_copy(vigil_tlist *dst, const vigil_tlist *src)
{
    empty(dst, src->sep);
    size_t len;
    const char *s = vigil_tlist_text(src, &len);
    if (!s) {
        dst->fresh = false;
        return;
    }
    vigil_jtext_put(&dst->t, s, len);
    if (dst->t.oom) {
        dst->fresh = false;
        return;
    }
    if (src->n > dst->cap) {
        uint32_t *v = malloc((size_t)src->n * sizeof *v);
        if (!v) {
            dst->fresh = false;
            return;
        }
        free(dst->lens);
        dst->lens = v;
        dst->cap = src->n;
    }
    for (int i = 0; i < src->n; i++)
        dst->lens[i] = src->lens[(src->head + i) % src->cap];
    dst->n = src->n;
}

size_t vigil_tlist_bytes(const vigil_tlist *l)
{
    return l->t.cap + (size_t)l->cap * sizeof *l->lens;
}
