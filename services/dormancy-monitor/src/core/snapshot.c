/* snapshot.c - the retained views: each persona's entry in
 * persona/{p}/state and the room's room/{r}/state are republished only
 * when their content changed, detected by a digest kept in the record.
 * A level change clears the persona's digest itself (levels.c), so the
 * reason, which only changes with the level, is not hashed here. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include "step.h"

static uint64_t nonzero(uint64_t d)
{
    return d ? d : 1; /* 0 means "never published" */
}

static uint64_t persona_digest(const dormancy_persona *p, int64_t snoozed)
{
    char buf[160];
    int n = snprintf(buf, sizeof buf, "%d|%" PRId64 "|%d|%" PRId64 "|%" PRId64 "|%d|%" PRId64,
                     (int)p->level, p->since, (int)p->trigger, snoozed, p->until,
                     (int)p->sugg.kind, p->sugg.default_at);
    return nonzero(vigil_hash64(buf, (size_t)n));
}

static uint64_t room_digest(const dormancy_step *s)
{
    json_object *o = dormancy_room_state_json(s->room, s->cfg, s->now);
    if (!o)
        return 0;
    json_object_object_del(o, "ts");
    const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    uint64_t d = nonzero(vigil_hash64(txt, strlen(txt)));
    json_object_put(o);
    return d;
}

void snapshot_sync(dormancy_step *s)
{
    dormancy_room *r = s->room;
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_persona *p = &r->personas[i];
        int64_t snoozed = p->snoozed_until > s->now ? p->snoozed_until : 0;
        uint64_t d = persona_digest(p, snoozed);
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
        dm_copy(a->reason, sizeof a->reason, p->reason);
        if (p->sugg.kind != DORMANCY_SUGGEST_NONE) {
            a->suggest = p->sugg.kind;
            a->pending_expires = p->sugg.default_at;
            dm_copy(a->pending_reason, sizeof a->pending_reason, p->sugg.reason);
        }
        p->snap_digest = d;
    }
    uint64_t d = room_digest(s);
    if (d == 0) {
        s->failed = true;
        return;
    }
    if (d != r->room_digest && !s->room_cleared)
        step_push(s, DORMANCY_OUT_ROOM_STATE, NULL);
    r->room_digest = d;
}
