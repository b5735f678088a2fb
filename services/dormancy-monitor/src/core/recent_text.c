/* recent_text.c - the record's recent_dt and recent_kind texts, kept with
 * the room between inputs.
 *
 * recent_dt is "t0,d1,d2,...": the first message time, then each time's
 * difference to the one before; recent_kind one letter a message ('h'
 * human, 'a' AI). With up to DORMANCY_MAX_RECENT messages, writing them
 * anew was the largest part of writing the record, which happens on every
 * input. The list changes in two ways only, a message appended at the end
 * and messages dropped from the front, and each changes the texts at their
 * ends: the texts are kept and edited there (recent_text_appended,
 * recent_text_dropped). Any other change to the list forgets them
 * (recent_text_forget); they are then written anew the next time a message
 * is recorded. Builds with assertions check the kept texts against a full
 * writing every time the record is written. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"

/* recent_dt from the list, appended to dt (one reservation for all). */
static void write_dt(const dormancy_room *r, vigil_jtext *dt)
{
    size_t n = (size_t)r->n_recent;
    char *p = vigil_jtext_room(dt, n * (VIGIL_I64_TEXT_MAX + 1));
    if (!p)
        return;
    char *at = p;
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            *at++ = ',';
        at += vigil_i64_text(at, i == 0 ? r->recent_ts[0] : r->recent_ts[i] - r->recent_ts[i - 1]);
    }
    vigil_jtext_advance(dt, (size_t)(at - p));
}

/* recent_kind from the list, appended to kind. */
static void write_kind(const dormancy_room *r, vigil_jtext *kind)
{
    size_t n = (size_t)r->n_recent;
    char *p = vigil_jtext_room(kind, n);
    if (!p)
        return;
    for (size_t i = 0; i < n; i++)
        p[i] = r->recent_human[i] ? 'h' : 'a';
    vigil_jtext_advance(kind, n);
}

static void clear(vigil_jtext *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

void recent_text_forget(dormancy_room *r)
{
    clear(&r->rtext_dt);
    clear(&r->rtext_kind);
    r->rtext_ok = false;
}

/* Texts that failed to grow (out of memory) are forgotten, and written
 * anew later, never used cut short. */
static void keep_if_whole(dormancy_room *r)
{
    if (r->rtext_dt.oom || r->rtext_kind.oom)
        recent_text_forget(r);
}

void recent_text_appended(dormancy_room *r)
{
    if (!r->rtext_ok) {
        recent_text_forget(r);
        write_dt(r, &r->rtext_dt);
        write_kind(r, &r->rtext_kind);
        r->rtext_ok = true;
        keep_if_whole(r);
        return;
    }
    int n = r->n_recent;
    if (n > 1)
        vigil_jtext_ch(&r->rtext_dt, ',');
    vigil_jtext_i64(&r->rtext_dt, n == 1 ? r->recent_ts[0] : r->recent_ts[n - 1] - r->recent_ts[n - 2]);
    vigil_jtext_ch(&r->rtext_kind, r->recent_human[n - 1] ? 'h' : 'a');
    keep_if_whole(r);
}

void recent_text_dropped(dormancy_room *r, int k)
{
    if (!r->rtext_ok || k <= 0)
        return;
    vigil_jtext *dt = &r->rtext_dt, *kind = &r->rtext_kind;
    if (r->n_recent == 0 || (size_t)k > kind->n) {
        recent_text_forget(r);
        if (r->n_recent == 0)
            r->rtext_ok = true; /* empty, and exactly so */
        return;
    }
    /* The entries left are the old ones from index k on: the old tokens
     * after the (k+1)-th comma stay as they are (differences), and the
     * first becomes a time again. */
    size_t commas = 0, i = 0;
    while (i < dt->n && commas < (size_t)k + 1)
        if (dt->s[i++] == ',')
            commas++;
    size_t rest = commas == (size_t)k + 1 ? i : dt->n; /* start of what is kept */
    size_t rest_len = dt->n - rest;
    char first[VIGIL_I64_TEXT_MAX + 1];
    size_t flen = vigil_i64_text(first, r->recent_ts[0]);
    size_t head = flen + (rest_len > 0 ? 1 : 0);
    if (head > rest && !vigil_jtext_room(dt, head - rest)) {
        recent_text_forget(r);
        return;
    }
    memmove(dt->s + head, dt->s + rest, rest_len + 1); /* with the NUL */
    memcpy(dt->s, first, flen);
    if (rest_len > 0)
        dt->s[flen] = ',';
    dt->n = head + rest_len;
    memmove(kind->s, kind->s + k, kind->n - (size_t)k + 1);
    kind->n -= (size_t)k;
}

void recent_text_write(vigil_jtext *b, const dormancy_room *r)
{
    vigil_jtext_lit(b, ",\"recent_dt\":\"");
    if (r->rtext_ok) {
#ifndef NDEBUG
        vigil_jtext dt = {0}, kind = {0};
        write_dt(r, &dt);
        write_kind(r, &kind);
        assert(dt.oom || (dt.n == r->rtext_dt.n && memcmp(dt.s, r->rtext_dt.s, dt.n) == 0));
        assert(kind.oom || (kind.n == r->rtext_kind.n && memcmp(kind.s, r->rtext_kind.s, kind.n) == 0));
        free(dt.s);
        free(kind.s);
#endif
        vigil_jtext_put(b, r->rtext_dt.s ? r->rtext_dt.s : "", r->rtext_dt.n);
        vigil_jtext_lit(b, "\",\"recent_kind\":\"");
        vigil_jtext_put(b, r->rtext_kind.s ? r->rtext_kind.s : "", r->rtext_kind.n);
    } else {
        write_dt(r, b);
        vigil_jtext_lit(b, "\",\"recent_kind\":\"");
        write_kind(r, b);
    }
    vigil_jtext_put(b, "\"", 1);
}
