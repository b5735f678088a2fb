/* snapshot.c - the retained views: each persona's entry in
 * persona/{p}/state and the room's room/{r}/state are republished only
 * when their content changed, detected by a digest kept in the record.
 * A level change clears the persona's digest itself (levels.c), so the
 * reason, which only changes with the level, is not hashed here. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/jtext.h>
#include <vigil/str.h>
#include "step.h"

static uint64_t nonzero(uint64_t d)
{
    return d ? d : 1; /* 0 means "never published" */
}

/* The digest of the fields persona/{p}/state shows, hashed from their
 * decimal text joined by '|' (as records hold it), written with
 * vigil_i64_text (a snprintf per persona was an eighth of an input's CPU at
 * 1,000 personas). The last field (answered_human, added later) joins the
 * text only when set, so records written before it keep their digests and
 * an upgrade does not republish every persona. */
static uint64_t persona_digest(const int64_t v[DORMANCY_SNAP_FIELDS])
{
    char buf[DORMANCY_SNAP_FIELDS * (VIGIL_I64_TEXT_MAX + 1)];
    size_t n = 0;
    size_t fields = v[DORMANCY_SNAP_FIELDS - 1] ? DORMANCY_SNAP_FIELDS : DORMANCY_SNAP_FIELDS - 1;
    for (size_t i = 0; i < fields; i++) {
        if (i > 0)
            buf[n++] = '|';
        n += vigil_i64_text(buf + n, v[i]);
    }
    return nonzero(vigil_hash64(buf, n));
}

/* The digest of persona i's fields, taken from the memo when they are those
 * it was last computed from: every persona is looked at on every input, and
 * hashing each again was a tenth of an input at 1,000 personas. The memo is
 * a pure function of the fields, so which persona sits at index i does not
 * matter. 0 when out of memory. */
static uint64_t persona_digest_memo(dormancy_room *r, int i, const int64_t v[DORMANCY_SNAP_FIELDS])
{
    if (i >= r->cap_memo) {
        int cap = r->cap_memo ? r->cap_memo : 8;
        while (cap <= i)
            cap *= 2;
        dormancy_snap_memo *m = realloc(r->memo, (size_t)cap * sizeof *m);
        if (!m)
            return 0;
        memset(m + r->cap_memo, 0, (size_t)(cap - r->cap_memo) * sizeof *m);
        r->memo = m;
        r->cap_memo = cap;
    }
    dormancy_snap_memo *m = &r->memo[i];
    if (m->digest && memcmp(m->v, v, sizeof m->v) == 0) {
        assert(m->digest == persona_digest(v));
        return m->digest;
    }
    memcpy(m->v, v, sizeof m->v);
    m->digest = persona_digest(v);
    return m->digest;
}

static uint64_t hash_str(uint64_t h, const char *v)
{
    return vigil_hash64_more(h, v, strlen(v) + 1); /* with its NUL: a separator */
}

/* One persona's share of the roster digest. */
static uint64_t roster_term(const char *id, dormancy_level level)
{
    return hash_str(hash_str(VIGIL_HASH64_INIT, id), dormancy_level_name(level));
}

static uint64_t roster_hash(const dormancy_room *r)
{
    uint64_t h = 0;
    for (int i = 0; i < r->n_personas; i++)
        h += roster_term(r->personas[i].id, r->personas[i].level);
    return h;
}

void snapshot_roster_update(dormancy_room *r, const char *id, dormancy_level level, int sign)
{
    if (r->roster_known)
        r->roster_hash += (sign > 0 ? 1 : (uint64_t)-1) * roster_term(id, level);
}

/* The personas and their levels as room/{r}/state lists them: a sum of one
 * term per persona, kept up to date as personas join, leave and change
 * level (snapshot_roster_update), so an input costs one term, not a hash
 * of 1,000 ids. The order does not count: personas are listed in arrival
 * order, which only a leave and a join (each counted) change. Computed
 * whole after a read and after a room delete (roster_known cleared). */
static uint64_t roster_digest(dormancy_room *r)
{
    if (!r->roster_known) {
        r->roster_hash = roster_hash(r);
        r->roster_known = true;
    }
    assert(r->roster_hash == roster_hash(r));
    return r->roster_hash;
}

/* A digest of everything room/{r}/state says but its ts, in its order:
 * it changes exactly when the payload does. Hashed from the record
 * directly: building and printing the payload on every input to compare
 * it cost as much as the rest of the input at 1,000 personas. */
static uint64_t room_digest(dormancy_step *s)
{
    const dormancy_room *r = s->room;
    char buf[96];
    uint64_t h = hash_str(VIGIL_HASH64_INIT, r->room);
    dormancy_metrics m = dormancy_room_metrics(r, s->cfg, s->now);
    s->room_metrics = m;
    char vel[32], ratio[32] = "null";
    room_rounded(m.velocity_per_min, vel, sizeof vel);
    if (m.humans > 0)
        room_rounded(m.ai_to_human_ratio, ratio, sizeof ratio);
    /* what "%lld|%lld|%s|%s|%d" writes, without snprintf (every input) */
    char lh[VIGIL_I64_TEXT_MAX + 1], ao[VIGIL_I64_TEXT_MAX + 1];
    vigil_i64_text(lh, r->last_human);
    vigil_i64_text(ao, r->ai_only_since);
    size_t n = vigil_concat(buf, sizeof buf, lh, "|", ao, "|", vel, "|", ratio, "|",
                            r->paused ? "1" : "0", (const char *)NULL);
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    h = vigil_hash64_more(h, buf, n + 1);
    for (int i = 0; i < r->n_sessions; i++)
        if (room_session_listed(r, i, s->cfg, s->now))
            h = hash_str(h, r->sessions[i].user);
    h = vigil_hash64_more(h, "\x01", 1); /* users end, personas begin */
    uint64_t roster = roster_digest(s->room);
    return nonzero(vigil_hash64_more(h, &roster, sizeof roster));
}

void snapshot_sync(dormancy_step *s)
{
    dormancy_room *r = s->room;
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_persona *p = &r->personas[i];
        int64_t snoozed = p->snoozed_until > s->now ? p->snoozed_until : 0;
        /* shown only while it cannot answer: an active persona answering
         * humans would otherwise republish its state on every answer. The
         * cause and the order are shown while dormant too, and change only
         * with `since` (or never), so they need no place in the digest. */
        int64_t answered = persona_can_answer(p) ? 0 : p->answered_human;
        const int64_t v[DORMANCY_SNAP_FIELDS] = {(int)p->level, p->since, (int)p->trigger,
                                                 snoozed, p->until, (int)p->sugg.kind,
                                                 p->sugg.default_at, answered};
        uint64_t d = persona_digest_memo(r, i, v);
        if (d == 0) {
            s->failed = true;
            return;
        }
        if (d == p->snap_digest)
            continue;
        dormancy_action *a = step_push(s, DORMANCY_OUT_PERSONA_STATE, p->id);
        if (!a)
            return;
        a->level = p->level;
        a->since = p->since;
        a->trigger = p->trigger;
        a->snoozed_until = snoozed;
        a->until = p->until;
        if (p->level != DORMANCY_ACTIVE) {
            a->cause = p->cause;
            a->answered_human = answered;
            a->order = p->ord;
            a->dormant = true;
        }
        vigil_utf8_copy(a->reason, sizeof a->reason, p->reason);
        if (p->sugg.kind != DORMANCY_SUGGEST_NONE) {
            a->suggest = p->sugg.kind;
            a->pending_expires = p->sugg.default_at;
            vigil_utf8_copy(a->pending_reason, sizeof a->pending_reason, p->sugg.reason);
            vigil_utf8_copy(a->text, sizeof a->text, p->sugg.text);
            if (p->sugg.kind == DORMANCY_SUGGEST_NO_HUMAN) { /* its snooze option's length */
                dormancy_config cb;
                a->snooze_ms = step_cfg(s, p, &cb)->snooze_ms;
            }
        }
        persona_touch(p);
        p->snap_digest = d;
    }
    if (s->room_state_now) {
        /* counting the window is the costliest part of rendering the
         * state (up to DORMANCY_MAX_RECENT times per input): the digest's
         * count, made on the same room at the same time, goes with it */
        dormancy_action *a = step_push(s, DORMANCY_OUT_ROOM_STATE, NULL);
        if (a) {
            a->has_metrics = true;
            a->metrics_at = s->now;
            a->metrics = s->room_metrics;
        }
    }
    if (s->room_state_now || s->room_cleared)
        r->room_digest = s->room_digest;
}

/* room/{r}/state lists every persona, so a room of 1,000 sends 25 KB to
 * the store and the broker each time it changes, and its velocity changes
 * on every message. A room of more than cfg->big_room personas therefore
 * publishes at once only when it has not published for big_room_state_ms;
 * otherwise the change waits for a deadline at the end of that gap, which
 * publishes the room as it is then (every change meanwhile in one
 * message). Smaller rooms publish every change at once. */
void snapshot_room_decide(dormancy_step *s)
{
    dormancy_room *r = s->room;
    s->room_digest = room_digest(s);
    s->room_state_now = false;
    if (s->room_digest == 0) {
        s->failed = true;
        return;
    }
    if (s->room_cleared || s->room_digest == r->room_digest) {
        r->room_state_due = 0;
        return;
    }
    int64_t gap = r->n_personas > s->cfg->big_room ? s->cfg->big_room_state_ms : 0;
    if (gap == 0 || r->room_state_at == 0 || s->now >= r->room_state_at + gap ||
        s->now < r->room_state_at) {
        s->room_state_now = true;
        r->room_state_at = gap ? s->now : 0;
        r->room_state_due = 0;
    } else {
        r->room_state_due = r->room_state_at + gap;
    }
}

void snapshot_want(const dormancy_step *s, dormancy_want *w)
{
    if (s->room->room_state_due)
        want_add(w, "roomstate", s->room->room_state_due);
}
