/* learn.c - what floor control learns from topics it does not own: a
 * persona's meta (rooms, name, role, expertise domains, confidence,
 * dormancy.enableAutoWake), its dormancy level, cause, arrival order and
 * last answer to a human from the retained persona/{p}/state (forgotten in a
 * room the state no longer lists, or when it is cleared), and who spoke when
 * from the room's AI messages. What does not fit in the view's fixed
 * sizes is not kept, and noted on the room (the shell says it). */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "floor.h"

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

/* The confidence of one domain from meta's confidence_levels; unset when
 * not listed or not in 0..1 (the shell rejects such meta first). A domain
 * matches the message's words whatever their case, so its confidence key
 * is found whatever its case too ("Kubernetes" and "kubernetes" are one
 * domain); a key spelled exactly as the domain wins over another case. */
static double confidence_of(const floor_meta *m, const char *domain)
{
    int found = -1;
    for (int i = 0; i < m->n_conf; i++) {
        if (!m->conf_domains[i])
            continue;
        if (strcmp(m->conf_domains[i], domain) == 0) {
            found = i;
            break;
        }
        if (found < 0 && strcasecmp(m->conf_domains[i], domain) == 0)
            found = i;
    }
    if (found < 0)
        return FLOOR_CONFIDENCE_UNSET;
    double v = m->conf_values[found];
    return v >= 0.0 && v <= 1.0 ? v : FLOOR_CONFIDENCE_UNSET;
}

static bool listed(const floor_meta *m, const char *room)
{
    for (int i = 0; i < m->n_rooms; i++)
        if (m->rooms[i] && strcmp(m->rooms[i], room) == 0)
            return true;
    return false;
}

/* A meta's name or role into dst when it fits; else dst is cleared and the
 * refusal noted, saying what the persona loses (lost). */
static void keep_word(floor_room *r, const char *persona, const char *field, const char *limit,
                      const char *lost, char *dst, const char *src)
{
    size_t len = src ? strlen(src) : 0;
    if (len <= FLOOR_WORD_MAX) {
        copy(dst, FLOOR_WORD_MAX + 1, src);
        return;
    }
    dst[0] = '\0';
    floor_note_add(r, limit,
                   "persona '%s' in room '%s': its %s of %zu bytes is longer than the %d "
                   "floor-control keeps (compile time) and is not kept: %s",
                   persona, r->room, field, len, FLOOR_WORD_MAX, lost);
}

/* Whether name is one of the first n names of list (any case: a domain
 * matches the message's words whatever their case). */
static bool named(const char *const *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (list[i] && strcasecmp(list[i], name) == 0)
            return true;
    return false;
}

/* The persona's domains: its expertise_domains, then each confidence_levels
 * key they do not name (the autopilot finds a domain's experts by their
 * confidence in it: a persona may give confidence_levels alone), each with
 * its confidence; the first FLOOR_MAX_DOMAINS of them, the rest noted. */
static void keep_domains(floor_room *r, floor_persona *p, const floor_meta *m)
{
    int total = 0;
    const char *first_lost = NULL;
    p->n_domains = 0;
    for (int i = 0; i < m->n_domains + m->n_conf; i++) {
        bool key = i >= m->n_domains;
        const char *d = key ? m->conf_domains[i - m->n_domains] : m->domains[i];
        if (!d || !d[0] || strlen(d) > FLOOR_WORD_MAX)
            continue; /* the shell rejects such meta first */
        if (key && (named(m->domains, m->n_domains, d) ||
                    named(m->conf_domains, i - m->n_domains, d)))
            continue; /* the confidence of a domain already listed */
        total++;
        if (p->n_domains == FLOOR_MAX_DOMAINS) {
            first_lost = first_lost ? first_lost : d;
            continue;
        }
        copy(p->domains[p->n_domains], sizeof p->domains[0], d);
        p->confidence[p->n_domains] = confidence_of(m, d);
        p->n_domains++;
    }
    if (first_lost)
        floor_note_add(r, "domains_per_persona",
                       "persona '%s' in room '%s' lists %d expertise domains, more than the %d "
                       "floor-control keeps (compile time): the %d from '%s' on never match a "
                       "message and are not shown to the LLM",
                       p->id, r->room, total, FLOOR_MAX_DOMAINS, total - FLOOR_MAX_DOMAINS,
                       first_lost);
}

/* The meta's profile (the persona's own, whichever rooms it lists). */
static void learn_profile(floor_room *r, floor_persona *p, const floor_meta *m)
{
    p->auto_wake = m->has_auto_wake ? m->auto_wake : FLOOR_UNKNOWN;
    keep_word(r, p->id, "display name", "name_bytes",
              "@mentions by that name do not reach it (by its id they do)", p->name, m->name);
    keep_word(r, p->id, "role", "role_bytes", "its role never matches a message", p->role, m->role);
    keep_domains(r, p, m);
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
        if (!p)
            return false;
        /* left the room by its meta: forget it unless it spoke here; if it
         * stays, its profile is still the meta's */
        if (p->in_meta && p->last_spoke == 0) {
            floor_room_remove(r, m->persona);
            if (left)
                *left = true;
            return true;
        }
        floor_persona before = *p;
        p->in_meta = false;
        learn_profile(r, p, m);
        return memcmp(&before, p, sizeof before) != 0;
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
    learn_profile(r, p, m);
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
                       const floor_state_entry *e, int64_t now, bool *joined)
{
    floor_persona *p = member(r, c, persona, now, joined);
    if (!p)
        return false;
    const char *trigger = e->trigger;
    p->level = e->level;
    p->cause = e->cause;
    p->answered_human = e->answered_human;
    p->order = e->order;
    size_t len = trigger ? strlen(trigger) : 0;
    if (len < FLOOR_TRIGGER_MAX) {
        copy(p->trigger, sizeof p->trigger, trigger);
        return true;
    }
    p->trigger[0] = '\0';
    floor_note_add(r, "trigger_bytes",
                   "persona '%s' in room '%s': its dormancy trigger of %zu bytes is longer than "
                   "the %d floor-control keeps (compile time) and is not kept: without a cause "
                   "its level never counts as human absence (VIGIL_FLOOR_WAKE_TRIGGERS), "
                   "reasons say 'manual'",
                   persona, r->room, len, FLOOR_TRIGGER_MAX - 1);
    return true;
}

bool floor_forget_level(floor_room *r, const char *persona, bool *left)
{
    if (left)
        *left = false;
    floor_persona *p = floor_room_find(r, persona);
    if (!p)
        return false;
    if (!p->in_meta && p->last_spoke == 0) { /* known only from its states */
        floor_room_remove(r, persona);
        if (left)
            *left = true;
        return true;
    }
    bool known = p->level != FLOOR_ACTIVE || p->trigger[0] || p->cause != FLOOR_UNKNOWN ||
                 p->answered_human != 0 || p->order != FLOOR_UNKNOWN;
    p->level = FLOOR_ACTIVE;
    p->trigger[0] = '\0';
    p->cause = p->order = FLOOR_UNKNOWN;
    p->answered_human = 0;
    return known;
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
