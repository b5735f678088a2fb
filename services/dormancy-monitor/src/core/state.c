/* state.c - the room record: creation, membership, names of levels and
 * triggers. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "step.h"

_Static_assert(DORMANCY_ACTIVE == (int)VIGIL_LEVEL_ACTIVE &&
                   DORMANCY_MENTION_ONLY == (int)VIGIL_LEVEL_MENTION_ONLY &&
                   DORMANCY_HUMAN_ONLY == (int)VIGIL_LEVEL_HUMAN_ONLY &&
                   DORMANCY_SLEEP == (int)VIGIL_LEVEL_SLEEP &&
                   DORMANCY_LEVEL__COUNT == (int)VIGIL_LEVEL__COUNT,
               "dormancy levels are libshared's (names.h)");

/* Index 0 (no trigger) has no name; NULL-terminated after the last. */
static const char *const TRIGGER_NAMES[DORMANCY_TRIGGER__COUNT + 1] = {
    NULL, "manual", "timed-end", "mention", "no-human", "ai-only", "human-reentry",
    "redundant", "autopilot", "wake-decision", "suggestion-default", NULL};

const char *dormancy_level_name(dormancy_level l)
{
    return vigil_level_name((vigil_level)l);
}

int dormancy_level_parse(const char *s, dormancy_level *out)
{
    vigil_level l;
    if (vigil_level_parse(s, &l) != 0)
        return -1;
    *out = (dormancy_level)l;
    return 0;
}

const char *dormancy_trigger_name(dormancy_trigger t)
{
    return (t > 0 && t < DORMANCY_TRIGGER__COUNT) ? TRIGGER_NAMES[t] : NULL;
}

int dormancy_trigger_parse(const char *s, dormancy_trigger *out)
{
    int i = vigil_name_index(TRIGGER_NAMES + 1, s);
    if (i < 0)
        return -1;
    *out = (dormancy_trigger)(i + 1);
    return 0;
}

/* The trigger a suggestion's accepted "yes" carries: the rule that made it. */
const char *dormancy_suggest_trigger_name(dormancy_suggest_kind k)
{
    switch (k) {
    case DORMANCY_SUGGEST_NO_HUMAN: return "no-human";
    case DORMANCY_SUGGEST_REDUNDANT: return "redundant";
    case DORMANCY_SUGGEST_AUTOPILOT: return "autopilot";
    default: return NULL;
    }
}

dormancy_room *dormancy_room_new(const char *room_id)
{
    dormancy_room *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->texts = dormancy_texts_new();
    if (!r->texts) {
        free(r);
        return NULL;
    }
    vigil_utf8_copy(r->room, sizeof r->room, room_id);
    return r;
}

void dormancy_room_free(dormancy_room *r)
{
    if (!r)
        return;
    free(r->personas);
    free(r->timers);
    free(r->memo);
    dormancy_texts_free(r->texts);
    vigil_tlist_free(&r->rtext_dt);
    free(r->rtext_kind.s);
    free(r);
}

size_t dormancy_room_bytes(const dormancy_room *r)
{
    return sizeof *r + (size_t)r->cap_personas * sizeof *r->personas +
           (size_t)r->cap_timers * sizeof *r->timers + (size_t)r->cap_memo * sizeof *r->memo +
           dormancy_texts_bytes(r->texts) + vigil_tlist_bytes(&r->rtext_dt) +
           r->rtext_kind.cap;
}

dormancy_room *dormancy_room_clone(const dormancy_room *r)
{
    dormancy_room *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *r;
    c->personas = NULL;
    c->timers = NULL;
    c->memo = NULL;
    c->cap_memo = 0;
    c->rtext_ok = false; /* the texts stay with r */
    memset(&c->rtext_dt, 0, sizeof c->rtext_dt);
    memset(&c->rtext_kind, 0, sizeof c->rtext_kind);
    c->texts = dormancy_texts_new();
    if (!c->texts) {
        free(c);
        return NULL;
    }
    c->cap_personas = r->n_personas;
    c->cap_timers = r->n_timers;
    if (r->n_personas) {
        c->personas = malloc((size_t)r->n_personas * sizeof *c->personas);
        if (!c->personas)
            goto oom;
        memcpy(c->personas, r->personas, (size_t)r->n_personas * sizeof *c->personas);
    }
    if (r->n_timers) {
        c->timers = malloc((size_t)r->n_timers * sizeof *c->timers);
        if (!c->timers)
            goto oom;
        memcpy(c->timers, r->timers, (size_t)r->n_timers * sizeof *c->timers);
    }
    return c;
oom:
    dormancy_room_free(c);
    return NULL;
}

bool dormancy_room_blank(const dormancy_room *r)
{
    return r->n_personas == 0 && r->first_seen == 0 && r->n_sessions == 0 && !r->paused &&
           r->n_timers == 0;
}

int64_t dormancy_quiet_since(const dormancy_room *r)
{
    return r->last_human ? r->last_human : r->first_seen;
}

dormancy_persona *dormancy_persona_find(dormancy_room *r, const char *id)
{
    for (int i = 0; id && i < r->n_personas; i++)
        if (strcmp(r->personas[i].id, id) == 0)
            return &r->personas[i];
    return NULL;
}

/* A persona joins as active with no trigger; its first snapshot is
 * published by snapshot_sync because its digest is still 0. The rules add
 * members through step_persona_ensure, which applies (and reports) the
 * configured bound; this hard bound only guards a record read back. */
dormancy_persona *room_persona_ensure(dormancy_room *r, const char *id, int64_t now)
{
    dormancy_persona *p = dormancy_persona_find(r, id);
    return p ? p : room_persona_append(r, id, now);
}

dormancy_persona *room_persona_append(dormancy_room *r, const char *id, int64_t now)
{
    dormancy_persona *p;
    if (r->n_personas >= DORMANCY_MAX_PERSONAS_LIMIT)
        return NULL;
    if (r->n_personas == r->cap_personas) {
        int cap = r->cap_personas ? r->cap_personas * 2 : 8;
        dormancy_persona *v = realloc(r->personas, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        r->personas = v;
        r->cap_personas = cap;
    }
    p = &r->personas[r->n_personas++];
    memset(p, 0, sizeof *p);
    vigil_utf8_copy(p->id, sizeof p->id, id);
    p->level = DORMANCY_ACTIVE;
    p->since = now;
    p->ord = r->next_ord++;
    r->members_changed = true;
    snapshot_roster_update(r, p->id, p->level, 1);
    return p;
}

void room_persona_remove(dormancy_room *r, int index)
{
    if (index < 0 || index >= r->n_personas)
        return;
    snapshot_roster_update(r, r->personas[index].id, r->personas[index].level, -1);
    memmove(&r->personas[index], &r->personas[index + 1],
            (size_t)(r->n_personas - index - 1) * sizeof r->personas[0]);
    r->n_personas--;
    r->members_changed = true;
}
