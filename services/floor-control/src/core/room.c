/* room.c - the bounded room view: personas by id, added on first sight,
 * the least recently seen one dropped when the room is full (and said:
 * noted as a refusal); the notes of what bounds refused. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/names.h>
#include "floor.h"

_Static_assert(FLOOR_ACTIVE == (int)VIGIL_LEVEL_ACTIVE && FLOOR_SLEEP == (int)VIGIL_LEVEL_SLEEP &&
                   FLOOR_SLEEP + 1 == (int)VIGIL_LEVEL__COUNT,
               "floor_level is the contract's vigil_level");

const char *floor_level_name(floor_level l)
{
    return vigil_level_name((vigil_level)l);
}

int floor_level_parse(const char *s)
{
    return vigil_name_index(vigil_level_names, s);
}

floor_room *floor_room_new(const char *room)
{
    floor_room *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->room, sizeof r->room, "%s", room ? room : "");
    return r;
}

void floor_room_free(floor_room *r)
{
    if (!r)
        return;
    free(r->personas);
    free(r->pending);
    free(r->dropped);
    free(r);
}

floor_persona *floor_room_find(floor_room *r, const char *id)
{
    for (int i = 0; id && i < r->n; i++)
        if (strcmp(r->personas[i].id, id) == 0)
            return &r->personas[i];
    return NULL;
}

void floor_room_remove(floor_room *r, const char *id)
{
    floor_persona *p = floor_room_find(r, id);
    if (!p)
        return;
    int i = (int)(p - r->personas);
    memmove(&r->personas[i], &r->personas[i + 1], (size_t)(r->n - i - 1) * sizeof *p);
    r->n--;
}

const floor_note *floor_note_add(floor_room *r, const char *limit, const char *fmt, ...)
{
    floor_note *n = &r->notes[r->n_notes < FLOOR_MAX_NOTES ? r->n_notes++ : FLOOR_MAX_NOTES - 1];
    n->limit = limit;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->detail, sizeof n->detail, fmt, ap);
    va_end(ap);
    return n;
}

/* Full room: the persona learned about longest ago goes (ties: the first
 * in the record, so the choice is deterministic), listed in r->dropped so
 * that its member set can follow. -1 when memory runs out. */
static int drop_stalest(floor_room *r)
{
    int worst = 0;
    for (int i = 1; i < r->n; i++)
        if (r->personas[i].seen < r->personas[worst].seen)
            worst = i;
    char(*v)[FLOOR_ID_MAX + 1] = realloc(r->dropped, (size_t)(r->n_dropped + 1) * sizeof *v);
    if (!v)
        return -1;
    r->dropped = v;
    snprintf(v[r->n_dropped++], sizeof v[0], "%s", r->personas[worst].id);
    floor_room_remove(r, r->personas[worst].id);
    return 0;
}

/* Drops the stalest personas until one more fits, and says so: usually one
 * goes, several only when max_personas was lowered since the record was
 * written. -1 when memory runs out. */
static int make_room(floor_room *r, const char *id, int max_personas)
{
    int first = r->n_dropped;
    while (r->n >= max_personas && r->n > 0)
        if (drop_stalest(r) != 0)
            return -1;
    int n = r->n_dropped - first;
    if (n == 0)
        return 0;
    char more[48] = "";
    if (n > 1)
        snprintf(more, sizeof more, " and %d more", n - 1);
    floor_note_add(r, "personas_per_room",
                   "room '%s' keeps at most %d personas (VIGIL_FLOOR_MAX_PERSONAS): '%s'%s, "
                   "learned about longest ago, %s dropped from it to make room for '%s' and "
                   "%s no floor there until heard of again",
                   r->room, max_personas, r->dropped[first], more, n > 1 ? "are" : "is", id,
                   n > 1 ? "get" : "gets");
    return 0;
}

floor_persona *floor_room_ensure(floor_room *r, const char *id, int max_personas, int64_t now)
{
    floor_persona *p = floor_room_find(r, id);
    if (p)
        return p;
    if (max_personas < 1)
        max_personas = 1;
    if (make_room(r, id, max_personas) != 0)
        return NULL;
    return floor_room_append(r, id, now);
}

floor_persona *floor_room_append(floor_room *r, const char *id, int64_t now)
{
    floor_persona *p;
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 8;
        floor_persona *v = realloc(r->personas, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        r->personas = v;
        r->cap = cap;
    }
    p = &r->personas[r->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    p->level = FLOOR_ACTIVE;
    p->seen = now;
    p->cause = p->order = p->auto_wake = FLOOR_UNKNOWN;
    for (int i = 0; i < FLOOR_MAX_DOMAINS; i++)
        p->confidence[i] = FLOOR_CONFIDENCE_UNSET;
    return p;
}
