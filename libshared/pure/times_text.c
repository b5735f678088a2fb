/* times_text.c - lists of times as "t0,d1,d2,..." (times_text.h). */
#include "vigil/times_text.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int64_t diff(const int64_t *t, int i)
{
    return (int64_t)((uint64_t)t[i] - (uint64_t)t[i - 1]);
}

int vigil_times_parse(const char *s, int64_t *t, int max)
{
    int n = 0;
    uint64_t at = 0;
    const char *p = s;
    while (*p && n < max) {
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || errno != 0 || (*end != ',' && *end != '\0'))
            break;
        at = n == 0 ? (uint64_t)d : at + (uint64_t)d; /* wraps as the writer's subtraction */
        t[n++] = (int64_t)at;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* One reservation for the whole list, each number written in place: a
 * list is up to thousands of numbers. */
void vigil_times_text(vigil_jtext *b, const int64_t *t, int n)
{
    if (n <= 0)
        return;
    char *p = vigil_jtext_room(b, (size_t)n * (VIGIL_I64_TEXT_MAX + 1));
    if (!p)
        return;
    char *at = p;
    at += vigil_i64_text(at, t[0]);
    for (int i = 1; i < n; i++) {
        *at++ = ',';
        at += vigil_i64_text(at, diff(t, i));
    }
    vigil_jtext_advance(b, (size_t)(at - p));
}

void vigil_times_keep(vigil_tlist *l, const int64_t *t, int n)
{
    vigil_tlist_reset(l, ',');
    for (int i = 1; i < n; i++) {
        vigil_jtext_i64(vigil_tlist_begin(l), diff(t, i));
        vigil_tlist_end(l);
    }
}

void vigil_times_kept_push(vigil_tlist *l, const int64_t *t, int n)
{
    if (n < 2)
        return; /* the first time is written apart: it has no difference */
    vigil_jtext_i64(vigil_tlist_begin(l), diff(t, n - 1));
    vigil_tlist_end(l);
}

void vigil_times_put(vigil_jtext *b, const vigil_tlist *l, const int64_t *t, int n)
{
    size_t len = 0;
    const char *s = l ? vigil_tlist_text(l, &len) : NULL;
    if (n <= 0)
        return;
    if (!s || vigil_tlist_count(l) != n - 1) {
        vigil_times_text(b, t, n);
        return;
    }
    char *p = vigil_jtext_room(b, VIGIL_I64_TEXT_MAX + 1 + len);
    if (!p)
        return;
    size_t w = vigil_i64_text(p, t[0]);
    if (len > 0) {
        p[w++] = ',';
        memcpy(p + w, s, len);
        w += len;
    }
#ifndef NDEBUG
    /* debug builds (the tests' sanitizer build) check every kept text
     * against the list written afresh */
    vigil_jtext whole = {0};
    vigil_times_text(&whole, t, n);
    assert(whole.oom || (whole.n == w && memcmp(whole.s, p, w) == 0));
    free(whole.s);
#endif
    vigil_jtext_advance(b, w);
}
