/* recent_text.c - the record's recent_dt and recent_kind texts, kept with
 * the room between inputs.
 *
 * recent_dt is "t0,d1,d2,...": the first message time, then each time's
 * difference to the one before (vigil/times_text.h); recent_kind one
 * letter a message ('h' human, 'a' AI). With up to DORMANCY_MAX_RECENT
 * messages, writing them anew was the largest part of writing the record,
 * which happens on every input. The list changes in two ways only, a
 * message appended at the end and messages dropped from the front, and
 * each changes the texts at their ends: the texts are kept and edited
 * there (recent_text_appended, recent_text_dropped). Any other change to
 * the list forgets them (recent_text_forget); they are then written anew
 * the next time a message is recorded. Builds with assertions check the
 * kept texts against a full writing every time the record is written. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/times_text.h>
#include "step.h"

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

void recent_text_forget(dormancy_room *r)
{
    vigil_tlist_free(&r->rtext_dt);
    free(r->rtext_kind.s);
    memset(&r->rtext_kind, 0, sizeof r->rtext_kind);
    r->rtext_ok = false;
}

/* Texts that failed to grow (out of memory) are forgotten, and written
 * anew later, never used cut short. */
static void keep_if_whole(dormancy_room *r)
{
    if (vigil_tlist_count(&r->rtext_dt) != r->n_recent - 1 || r->rtext_kind.oom)
        recent_text_forget(r);
}

void recent_text_appended(dormancy_room *r)
{
    if (!r->rtext_ok) {
        recent_text_forget(r);
        vigil_times_keep(&r->rtext_dt, r->recent_ts, r->n_recent);
        write_kind(r, &r->rtext_kind);
        r->rtext_ok = true;
        keep_if_whole(r);
        return;
    }
    int n = r->n_recent;
    vigil_times_kept_push(&r->rtext_dt, r->recent_ts, n);
    vigil_jtext_ch(&r->rtext_kind, r->recent_human[n - 1] ? 'h' : 'a');
    keep_if_whole(r);
}

void recent_text_dropped(dormancy_room *r, int k)
{
    if (!r->rtext_ok || k <= 0)
        return;
    vigil_jtext *kind = &r->rtext_kind;
    if ((size_t)k > kind->n) {
        recent_text_forget(r);
        return;
    }
    /* the k oldest times take their k differences with them */
    vigil_tlist_drop(&r->rtext_dt, k);
    memmove(kind->s, kind->s + k, kind->n - (size_t)k + 1);
    kind->n -= (size_t)k;
}

void recent_text_write(vigil_jtext *b, const dormancy_room *r)
{
    vigil_jtext_lit(b, ",\"recent_dt\":\"");
    if (r->rtext_ok) {
#ifndef NDEBUG
        vigil_jtext dt = {0}, kept = {0}, kind = {0};
        vigil_times_text(&dt, r->recent_ts, r->n_recent);
        vigil_times_put(&kept, &r->rtext_dt, r->recent_ts, r->n_recent);
        write_kind(r, &kind);
        assert(vigil_tlist_count(&r->rtext_dt) == r->n_recent - 1);
        assert(dt.oom || kept.oom ||
               (dt.n == kept.n && (dt.n == 0 || memcmp(dt.s, kept.s, dt.n) == 0)));
        assert(kind.oom || (kind.n == r->rtext_kind.n &&
                            (kind.n == 0 || memcmp(kind.s, r->rtext_kind.s, kind.n) == 0)));
        free(dt.s);
        free(kept.s);
        free(kind.s);
#endif
        vigil_times_put(b, &r->rtext_dt, r->recent_ts, r->n_recent);
        vigil_jtext_lit(b, "\",\"recent_kind\":\"");
        vigil_jtext_put(b, r->rtext_kind.s ? r->rtext_kind.s : "", r->rtext_kind.n);
    } else {
        vigil_times_text(b, r->recent_ts, r->n_recent);
        vigil_jtext_lit(b, "\",\"recent_kind\":\"");
        write_kind(r, b);
    }
    vigil_jtext_put(b, "\"", 1);
}
