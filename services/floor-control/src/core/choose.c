/* choose.c - the floor decision for one message: mentions first (always),
 * then domain/role matches (at most K, by confidence), then the least
 * recently spoken (while fewer than K hold the floor); dormant personas
 * never unless mentioned. Deterministic: every tie ends on the persona id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/text.h>
#include "floor.h"

enum { TIER_MENTION = 0, TIER_MATCH = 1, TIER_OTHER = 2, TIER_UNABLE = 3 };

typedef struct cand {
    int index, tier;
    floor_why why; /* for TIER_UNABLE: the held reason */
    double score;
    const char *matched; /* domain or role */
    bool woken;          /* dormant from absence: woken by this human message */
    int rank;            /* FLOOR_WHY_LLM: position in the LLM's list (1 = best) */
    int64_t last_spoke;
    const char *id;
} cand;

static bool mentioned(const floor_persona *p, const floor_message *m)
{
    for (int i = 0; i < m->n_mentions; i++)
        if (m->mentions[i] && strcasecmp(m->mentions[i], p->id) == 0)
            return true;
    if (!m->text)
        return false;
    return vigil_text_mentions(m->text, p->id) || (p->name[0] && vigil_text_mentions(m->text, p->name));
}

static bool wakes_on_human(const floor_persona *p, const floor_config *c)
{
    for (int i = 0; i < c->n_wake_triggers; i++)
        if (p->trigger[0] && strcmp(p->trigger, c->wake_triggers[i]) == 0)
            return true;
    return false;
}

/* Where persona p stands for message m: its tier, and why it is held when
 * it cannot answer. */
static void classify(const floor_persona *p, const floor_config *c, const floor_message *m, cand *x)
{
    if (mentioned(p, m)) {
        x->tier = TIER_MENTION;
        x->why = FLOOR_WHY_MENTION;
        return;
    }
    floor_level lvl = p->level;
    if (lvl != FLOOR_ACTIVE && m->sender_type == FLOOR_SENDER_HUMAN && wakes_on_human(p, c)) {
        lvl = FLOOR_ACTIVE;
        x->woken = true;
    }
    x->tier = TIER_UNABLE;
    if (lvl == FLOOR_SLEEP) {
        x->why = FLOOR_HELD_SLEEP;
        return;
    }
    if (lvl == FLOOR_MENTION_ONLY) {
        x->why = FLOOR_HELD_MENTION_ONLY;
        return;
    }
    if (lvl == FLOOR_HUMAN_ONLY && m->sender_type != FLOOR_SENDER_HUMAN) {
        x->why = FLOOR_HELD_HUMAN_ONLY;
        return;
    }
    if (m->ranked) {
        for (int i = 0; i < m->n_relevant; i++)
            if (m->relevant[i] && strcmp(m->relevant[i], p->id) == 0) {
                x->tier = TIER_MATCH;
                x->why = FLOOR_WHY_LLM;
                x->score = 1.0 - i / 1000.0; /* the LLM's order */
                x->rank = i + 1;
                return;
            }
        x->tier = TIER_OTHER;
        x->why = FLOOR_WHY_RECENCY;
        return;
    }
    int w = floor_match(p, m->text, &x->matched, &x->score);
    if (w >= 0) {
        x->tier = TIER_MATCH;
        x->why = (floor_why)w;
    } else {
        x->tier = TIER_OTHER;
        x->why = FLOOR_WHY_RECENCY;
    }
}

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->tier != y->tier)
        return x->tier < y->tier ? -1 : 1;
    if (x->tier == TIER_MATCH && x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->tier == TIER_MATCH || x->tier == TIER_OTHER)
        if (x->last_spoke != y->last_spoke)
            return x->last_spoke < y->last_spoke ? -1 : 1;
    return strcmp(x->id, y->id);
}

static void explain(floor_pick *pk, const cand *x, const floor_persona *p, int k)
{
    char woken[FLOOR_TRIGGER_MAX + 64] = "";
    if (x->woken)
        snprintf(woken, sizeof woken, "; %s since %s, woken by this human message",
                 floor_level_name(p->level), p->trigger);
    switch (pk->why) {
    case FLOOR_WHY_MENTION:
        snprintf(pk->reason, sizeof pk->reason, "@mentioned");
        break;
    case FLOOR_WHY_DOMAIN:
        snprintf(pk->reason, sizeof pk->reason, "expertise '%s' (confidence %.2f) in the message%s",
                 x->matched, x->score, woken);
        break;
    case FLOOR_WHY_ROLE:
        snprintf(pk->reason, sizeof pk->reason, "role '%s' in the message%s", x->matched, woken);
        break;
    case FLOOR_WHY_LLM:
        snprintf(pk->reason, sizeof pk->reason, "relevant to the message (LLM, rank %d)%s", x->rank,
                 woken);
        break;
    case FLOOR_WHY_RECENCY:
        snprintf(pk->reason, sizeof pk->reason, "%s%s",
                 p->last_spoke ? "spoke least recently in the room"
                               : "has not spoken in the room yet",
                 woken);
        break;
    case FLOOR_HELD_FULL:
        snprintf(pk->reason, sizeof pk->reason, "floor full (K=%d)%s%s", k,
                 x->tier == TIER_MATCH ? ": matched, with lower confidence or spoke more recently" : "",
                 woken);
        break;
    case FLOOR_HELD_SLEEP:
        snprintf(pk->reason, sizeof pk->reason, "asleep (%s)", p->trigger[0] ? p->trigger : "manual");
        break;
    case FLOOR_HELD_MENTION_ONLY:
        snprintf(pk->reason, sizeof pk->reason, "mention-only (%s) and not mentioned",
                 p->trigger[0] ? p->trigger : "manual");
        break;
    case FLOOR_HELD_HUMAN_ONLY:
        snprintf(pk->reason, sizeof pk->reason, "human-only and the message is an AI's");
        break;
    }
}

floor_result floor_choose(const floor_room *r, const floor_config *cfg, const floor_message *m,
                          floor_decision *out)
{
    memset(out, 0, sizeof *out);
    if (cfg->k <= 0 || m->sender_type == FLOOR_SENDER_SYSTEM ||
        (m->sender_type == FLOOR_SENDER_AI && !cfg->on_ai))
        return FLOOR_NO_DECISION;
    cand *cs = calloc((size_t)r->n + 1, sizeof *cs);
    out->v = calloc((size_t)r->n + 1, sizeof *out->v);
    if (!cs || !out->v) {
        free(cs);
        floor_decision_free(out);
        return FLOOR_NOMEM;
    }
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        const floor_persona *p = &r->personas[i];
        if (m->sender && strcmp(p->id, m->sender) == 0)
            continue; /* nobody answers themselves */
        cand *x = &cs[n++];
        x->index = i;
        x->id = p->id;
        x->last_spoke = p->last_spoke;
        classify(p, cfg, m, x);
    }
    qsort(cs, (size_t)n, sizeof *cs, cmp_cand);

    int matched = 0;
    for (int j = 0; j < n; j++) {
        cand *x = &cs[j];
        floor_pick *pk = &out->v[j];
        pk->index = x->index;
        pk->score = x->score;
        pk->why = x->why;
        switch (x->tier) {
        case TIER_MENTION:
            pk->granted = true;
            break;
        case TIER_MATCH:
            pk->granted = matched < cfg->k;
            matched += pk->granted;
            break;
        case TIER_OTHER:
            pk->granted = out->n_granted < cfg->k;
            break;
        default:
            break;
        }
        if (!pk->granted && x->tier != TIER_UNABLE)
            pk->why = FLOOR_HELD_FULL;
        out->n_granted += pk->granted;
        explain(pk, x, &r->personas[x->index], cfg->k);
    }
    out->n = n;
    /* granted first, keeping the choice order within each group */
    int g = 0;
    floor_pick *sorted = calloc((size_t)n + 1, sizeof *sorted);
    if (!sorted) {
        free(cs);
        floor_decision_free(out);
        return FLOOR_NOMEM;
    }
    for (int j = 0; j < n; j++)
        if (out->v[j].granted)
            sorted[g++] = out->v[j];
    for (int j = 0; j < n; j++)
        if (!out->v[j].granted)
            sorted[g++] = out->v[j];
    free(out->v);
    out->v = sorted;
    free(cs);
    return FLOOR_DECIDED;
}

int floor_rankable(const floor_room *r, const floor_config *cfg, const floor_message *m)
{
    floor_message plain = *m;
    plain.ranked = false;
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        const floor_persona *p = &r->personas[i];
        if (m->sender && strcmp(p->id, m->sender) == 0)
            continue;
        cand x = {0};
        classify(p, cfg, &plain, &x);
        n += x.tier == TIER_MATCH || x.tier == TIER_OTHER;
    }
    return n;
}

void floor_decision_free(floor_decision *d)
{
    if (!d)
        return;
    free(d->v);
    d->v = NULL;
    d->n = d->n_granted = 0;
}
