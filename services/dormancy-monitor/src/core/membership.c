/* membership.c - who is in the room: a persona belongs to a room when its
 * persona/{p}/meta lists the room or once it has spoken there (or was
 * directed there by a command). Meta also carries the persona's display
 * name and its DormancyConfig overrides, kept per room entry. */
#include <string.h>
#include <stdio.h>
#include "step.h"

dormancy_persona *step_persona_ensure(dormancy_step *s, const char *id)
{
    dormancy_room *r = s->room;
    dormancy_persona *p = dormancy_persona_find(r, id);
    if (p)
        return p;
    if (r->n_personas >= s->cfg->max_personas) {
        dormancy_action *a = step_event(s, DORMANCY_OUT_LIMIT, id);
        if (a)
            snprintf(a->reason, sizeof a->reason,
                     "room '%s' already tracks %d personas, the most VIGIL_DORMANCY_MAX_PERSONAS "
                     "allows: persona '%s' is not tracked there",
                     r->room, r->n_personas, id);
        return NULL;
    }
    p = room_persona_ensure(r, id, s->now);
    if (!p)
        s->failed = true;
    return p;
}

/* A meta that changes nothing of a persona leaves it untouched, so nothing
 * is written again: a meta published again, or a cleared meta applied a
 * second time (a clear has no id to deduplicate it by), commits nothing. */
void membership_on_meta(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_room *r = s->room;
    bool listed = false;
    for (int i = 0; i < ev->meta.n_rooms; i++)
        if (ev->meta.rooms[i] && strcmp(ev->meta.rooms[i], r->room) == 0)
            listed = true;
    dormancy_persona *p = listed ? step_persona_ensure(s, ev->meta.persona)
                                 : dormancy_persona_find(r, ev->meta.persona);
    if (!p)
        return;
    char name[sizeof p->name] = "";
    if (ev->meta.name && strlen(ev->meta.name) <= DORMANCY_ID_MAX)
        vigil_utf8_copy(name, sizeof name, ev->meta.name);
    if (p->via_meta != listed || strcmp(p->name, name) != 0 ||
        !vigil_dormancy_overrides_equal(&p->ov, &ev->meta.ov)) {
        persona_touch(p);
        p->via_meta = listed;
        p->ov = ev->meta.ov;
        memcpy(p->name, name, sizeof name);
    }
    if (!listed && !p->joined) {
        step_push(s, DORMANCY_OUT_PERSONA_REMOVED, p->id);
        room_persona_remove(r, (int)(p - r->personas));
    }
}
