/* learn.c - what floor control learns from topics it does not own: a
 * persona's meta (rooms, name, role, expertise domains, confidence), its
 * dormancy level from the retained persona/{p}/state, and who spoke when
 * from the room's AI messages. */
#include <stdio.h>
#include <string.h>
#include "floor.h"

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

/* The confidence of one domain from meta's confidence_levels; unset when
 * not listed or not in 0..1 (the shell rejects such meta first). */
static double confidence_of(const floor_meta *m, const char *domain)
{
    for (int i = 0; i < m->n_conf; i++)
        if (m->conf_domains[i] && strcmp(m->conf_domains[i], domain) == 0)
            return m->conf_values[i] >= 0.0 && m->conf_values[i] <= 1.0 ? m->conf_values[i]
                                                                       : FLOOR_CONFIDENCE_UNSET;
    return FLOOR_CONFIDENCE_UNSET;
}

static bool listed(const floor_meta *m, const char *room)
{
    for (int i = 0; i < m->n_rooms; i++)
        if (m->rooms[i] && strcmp(m->rooms[i], room) == 0)
            return true;
    return false;
}

bool floor_learn_meta(floor_room *r, const floor_config *c, const floor_meta *m, int64_t now,
                      bool *joined, bool *left)
{
    if (joined)
        *joined = false;
    if (left)
        *left = false;
    floor_persona *p = floor_room_find(r, m->persona);
    if (!listed(m, r->room)) {
        if (!p || !p->in_meta)
            return false;
        /* left the room by its meta: forget it unless it spoke here */
        if (p->last_spoke == 0) {
            floor_room_remove(r, m->persona);
            if (left)
                *left = true;
        } else {
            p->in_meta = false;
        }
        return true;
    }
    if (!p) {
        p = floor_room_ensure(r, m->persona, c->max_personas, now);
        if (!p)
            return false;
        if (joined)
            *joined = true;
    }
    p->in_meta = true;
    p->seen = now;
    copy(p->name, sizeof p->name, m->name && strlen(m->name) <= FLOOR_WORD_MAX ? m->name : "");
    copy(p->role, sizeof p->role, m->role && strlen(m->role) <= FLOOR_WORD_MAX ? m->role : "");
    p->n_domains = 0;
    for (int i = 0; i < m->n_domains && p->n_domains < FLOOR_MAX_DOMAINS; i++) {
        const char *d = m->domains[i];
        if (!d || !d[0] || strlen(d) > FLOOR_WORD_MAX)
            continue;
        copy(p->domains[p->n_domains], sizeof p->domains[0], d);
        p->confidence[p->n_domains] = confidence_of(m, d);
        p->n_domains++;
    }
    return true;
}

void floor_learn_message(floor_room *r, int64_t now)
{
    if (now > r->last_message)
        r->last_message = now;
}

bool floor_may_forget(const floor_room *r, int64_t if_inactive_since)
{
    return !(if_inactive_since > 0 && r->last_message >= if_inactive_since);
}

void floor_forget(floor_room *r)
{
    r->n = 0;
}

/* The persona's entry, added if missing (*joined says so). */
static floor_persona *member(floor_room *r, const floor_config *c, const char *persona, int64_t now,
                             bool *joined)
{
    floor_persona *p = floor_room_find(r, persona);
    if (joined)
        *joined = false;
    if (!p) {
        p = floor_room_ensure(r, persona, c->max_personas, now);
        if (p && joined)
            *joined = true;
    }
    if (p)
        p->seen = now;
    return p;
}

bool floor_learn_level(floor_room *r, const floor_config *c, const char *persona,
                       floor_level level, const char *trigger, int64_t now, bool *joined)
{
    floor_persona *p = member(r, c, persona, now, joined);
    if (!p)
        return false;
    p->level = level;
    copy(p->trigger, sizeof p->trigger,
         trigger && strlen(trigger) < FLOOR_TRIGGER_MAX ? trigger : "");
    return true;
}

bool floor_learn_spoke(floor_room *r, const floor_config *c, const char *persona, int64_t now,
                       bool *joined)
{
    floor_persona *p = member(r, c, persona, now, joined);
    if (!p)
        return false;
    p->last_spoke = now;
    return true;
}
