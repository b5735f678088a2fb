/* room.c - the bounded room view: personas by id, added on first sight,
 * the least recently seen one dropped when the room is full. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "floor.h"

static const char *const LEVEL_NAMES[] = {"active", "mention-only", "human-only", "sleep"};

const char *floor_level_name(floor_level l)
{
    return (unsigned)l < 4 ? LEVEL_NAMES[l] : "active";
}

int floor_level_parse(const char *s)
{
    for (int i = 0; s && i < 4; i++)
        if (strcmp(s, LEVEL_NAMES[i]) == 0)
            return i;
    return -1;
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

/* Full room: the persona learned about longest ago goes (ties: the first
 * in the record, so the choice is deterministic). */
static void drop_stalest(floor_room *r)
{
    int worst = 0;
    for (int i = 1; i < r->n; i++)
        if (r->personas[i].seen < r->personas[worst].seen)
            worst = i;
    floor_room_remove(r, r->personas[worst].id);
}

floor_persona *floor_room_ensure(floor_room *r, const char *id, int max_personas, int64_t now)
{
    floor_persona *p = floor_room_find(r, id);
    if (p)
        return p;
    if (max_personas < 1)
        max_personas = 1;
    while (r->n >= max_personas && r->n > 0)
        drop_stalest(r);
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
    for (int i = 0; i < FLOOR_MAX_DOMAINS; i++)
        p->confidence[i] = FLOOR_CONFIDENCE_UNSET;
    return p;
}
