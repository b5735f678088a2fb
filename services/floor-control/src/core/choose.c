/* choose.c - the floor decision for one message: mentions first (always,
 * known to the view or not), then K more: domain/role matches (by
 * confidence), then the least recently spoken; dormant personas never
 * unless mentioned or woken with the message by dormancy-monitor's rule 3
 * (libshared's vigil_human_wake_apply, the code dormancy-monitor runs).
 * Deterministic: every tie ends on the persona id. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/human_wake.h>
#include <vigil/text.h>
#include "floor.h"

enum { TIER_MENTION = 0, TIER_MATCH = 1, TIER_OTHER = 2, TIER_UNABLE = 3 };

typedef struct cand {
    int index, tier;
    floor_why why; /* for TIER_UNABLE: the held reason */
    double score;
    const char *matched; /* domain or role */
    int woken;           /* 0, or 1 + vigil_wake_why: rule 3 wakes it with this message */
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

/* The persona's dormancy cause for rule 3: what persona/{p}/state said, or,
 * from a dormancy-monitor older than that field, absence when its trigger
 * is one of c->wake_triggers and choice otherwise. */
static vigil_cause cause_of(const floor_persona *p, const floor_config *c)
{
    if (p->cause != FLOOR_UNKNOWN)
        return (vigil_cause)p->cause;
    if (p->level == FLOOR_ACTIVE)
        return VIGIL_CAUSE_NONE;
    for (int i = 0; i < c->n_wake_triggers; i++)
        if (p->trigger[0] && strcmp(p->trigger, c->wake_triggers[i]) == 0)
            return VIGIL_CAUSE_ABSENCE;
    return VIGIL_CAUSE_CHOICE;
}

/* What one message means to the view before any choice: who it mentions,
 * and whom dormancy-monitor's rule 3 wakes with it (0, or 1 + vigil_wake_why),
 * by view index; `rank` lists view indexes in dormancy-monitor's room order
 * (the arrival order persona/{p}/state gave, then the rest in view order). */
typedef struct prep {
    const floor_room *r;
    const floor_config *c;
    bool *mentioned;
    unsigned char *woken;
    int *rank;
} prep;

static void prep_free(prep *x)
{
    free(x->mentioned);
    free(x->woken);
    free(x->rank);
}

/* A persona's place in dormancy-monitor's room order: its arrival order
 * there when known (unknown ones after), then its place in the view. */
typedef struct place {
    int64_t order;
    int index;
} place;

static int by_place(const void *a, const void *b)
{
    const place *x = a, *y = b;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return x->index - y->index;
}

static void wake_view(void *ctx, int i, vigil_wake_view *out)
{
    const prep *x = ctx;
    int at = x->rank[i];
    const floor_persona *p = &x->r->personas[at];
    *out = (vigil_wake_view){
        .level = x->woken[at] ? VIGIL_LEVEL_ACTIVE : (vigil_level)p->level,
        .cause = x->woken[at] ? VIGIL_CAUSE_NONE : cause_of(p, x->c),
        .auto_wake = p->auto_wake != FLOOR_UNKNOWN ? p->auto_wake != 0 : x->c->wake.auto_wake,
        .mentioned = x->mentioned[at],
        .answered_human = p->answered_human};
}

static void wake_mark(void *ctx, int i, vigil_wake_why why)
{
    const prep *x = ctx;
    x->woken[x->rank[i]] = (unsigned char)(1 + why);
}

/* Fills x for message m: -1 when memory runs out. Only a human message
 * wakes anyone. */
static int prepare(prep *x, const floor_room *r, const floor_config *c, const floor_message *m)
{
    *x = (prep){.r = r, .c = c};
    x->mentioned = calloc((size_t)r->n + 1, sizeof *x->mentioned);
    x->woken = calloc((size_t)r->n + 1, sizeof *x->woken);
    x->rank = calloc((size_t)r->n + 1, sizeof *x->rank);
    if (!x->mentioned || !x->woken || !x->rank) {
        prep_free(x);
        return -1;
    }
    for (int i = 0; i < r->n; i++) {
        x->mentioned[i] = mentioned(&r->personas[i], m);
        x->rank[i] = i;
    }
    if (m->sender_type != FLOOR_SENDER_HUMAN)
        return 0;
    place *pl = calloc((size_t)r->n + 1, sizeof *pl);
    if (!pl) {
        prep_free(x);
        return -1;
    }
    for (int i = 0; i < r->n; i++) {
        int64_t o = r->personas[i].order;
        pl[i] = (place){.order = o != FLOOR_UNKNOWN ? o : INT64_MAX, .index = i};
    }
    qsort(pl, (size_t)r->n, sizeof *pl, by_place);
    for (int i = 0; i < r->n; i++)
        x->rank[i] = pl[i].index;
    free(pl);
    vigil_wake_room room = {.n = r->n, .view = wake_view, .wake = wake_mark, .ctx = x};
    vigil_human_wake_apply(&room, &c->wake);
    return 0;
}

/* Where persona p stands for message m: its tier, and why it is held when
 * it cannot answer. */
static void classify(const prep *pr, int at, const floor_message *m, cand *x)
{
    const floor_persona *p = &pr->r->personas[at];
    if (pr->mentioned[at]) {
        x->tier = TIER_MENTION;
        x->why = FLOOR_WHY_MENTION;
        return;
    }
    floor_level lvl = p->level;
    if (pr->woken[at]) {
        lvl = FLOOR_ACTIVE;
        x->woken = pr->woken[at];
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

/* The pick's reason; p is NULL for a mentioned persona outside the view. */
static void explain(floor_pick *pk, const cand *x, const floor_persona *p, const floor_config *c)
{
    int k = c->k;
    char woken[FLOOR_TRIGGER_MAX + 80] = "";
    if (x->woken == 1 + VIGIL_WAKE_ABSENCE)
        snprintf(woken, sizeof woken, "; %s since %s, woken by this human message",
                 floor_level_name(p->level), p->trigger[0] ? p->trigger : "manual");
    else if (x->woken == 1 + VIGIL_WAKE_MIN_AWAKE)
        snprintf(woken, sizeof woken,
                 "; %s since %s, woken by this human message (min awake %d)",
                 floor_level_name(p->level), p->trigger[0] ? p->trigger : "manual",
                 c->wake.min_awake);
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

/* Whether a name the message mentions is a persona of the view: its id or
 * display name, or the first word of a mentioned display name ("@Helper AI"
 * reads as the mention "helper" too). */
static bool in_view(const prep *pr, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < pr->r->n; i++) {
        const floor_persona *p = &pr->r->personas[i];
        if (strcasecmp(p->id, name) == 0 || strcasecmp(p->name, name) == 0)
            return true;
        if (pr->mentioned[i] && strncasecmp(p->name, name, len) == 0 && p->name[len] == ' ')
            return true;
    }
    return false;
}

/* The mentioned personas the view does not know (never seen in the room),
 * found as chat-router finds whom to notify: into out, at most max. */
static int unknown_mentions(const prep *pr, const floor_message *m,
                            char (*out)[VIGIL_MENTION_NAME_MAX + 1], int max)
{
    const char *self = m->sender_type == FLOOR_SENDER_AI ? m->sender : NULL;
    char (*all)[VIGIL_MENTION_NAME_MAX + 1] = calloc((size_t)FLOOR_MAX_NAMES, sizeof *all);
    if (!all)
        return -1;
    int n = vigil_mentions_collect(m->text, m->mentions, m->n_mentions, self, all,
                                   FLOOR_MAX_NAMES);
    int k = 0;
    for (int i = 0; i < n && k < max; i++) {
        if (in_view(pr, all[i]) || (m->sender && strcasecmp(all[i], m->sender) == 0) ||
            strlen(all[i]) > FLOOR_ID_MAX)
            continue;
        memcpy(out[k++], all[i], sizeof all[i]);
    }
    free(all);
    return k;
}

floor_result floor_choose(const floor_room *r, const floor_config *cfg, const floor_message *m,
                          floor_decision *out)
{
    memset(out, 0, sizeof *out);
    if (cfg->k <= 0 || m->sender_type == FLOOR_SENDER_SYSTEM ||
        (m->sender_type == FLOOR_SENDER_AI && !cfg->on_ai))
        return FLOOR_NO_DECISION;
    prep pr;
    if (prepare(&pr, r, cfg, m) != 0)
        return FLOOR_NOMEM;
    char (*extra)[VIGIL_MENTION_NAME_MAX + 1] = calloc(FLOOR_MAX_NAMES, sizeof *extra);
    int n_extra = extra ? unknown_mentions(&pr, m, extra, FLOOR_MAX_NAMES) : -1;
    size_t cap = (size_t)r->n + (size_t)(n_extra > 0 ? n_extra : 0) + 1;
    cand *cs = calloc(cap, sizeof *cs);
    out->v = calloc(cap, sizeof *out->v);
    if (n_extra < 0 || !cs || !out->v) {
        free(cs);
        free(extra);
        prep_free(&pr);
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
        classify(&pr, i, m, x);
    }
    for (int i = 0; i < n_extra; i++) /* chat-router notifies them: they get the floor too */
        cs[n++] = (cand){.index = -1, .id = extra[i], .tier = TIER_MENTION,
                         .why = FLOOR_WHY_MENTION};
    qsort(cs, (size_t)n, sizeof *cs, cmp_cand);

    /* K counts the personas granted besides the mentioned ones, in both
     * steps: a match and a recency pick take one of the same K places */
    int besides = 0;
    for (int j = 0; j < n; j++) {
        cand *x = &cs[j];
        floor_pick *pk = &out->v[j];
        pk->index = x->index;
        snprintf(pk->id, sizeof pk->id, "%s", x->id);
        pk->score = x->score;
        pk->why = x->why;
        switch (x->tier) {
        case TIER_MENTION:
            pk->granted = true;
            break;
        case TIER_MATCH:
        case TIER_OTHER:
            pk->granted = besides < cfg->k;
            besides += pk->granted;
            break;
        default:
            break;
        }
        if (!pk->granted && x->tier != TIER_UNABLE)
            pk->why = FLOOR_HELD_FULL;
        out->n_granted += pk->granted;
        explain(pk, x, x->index >= 0 ? &r->personas[x->index] : NULL, cfg);
    }
    out->n = n;
    free(cs);
    free(extra);
    prep_free(&pr);
    /* granted first, keeping the choice order within each group */
    int g = 0;
    floor_pick *sorted = calloc((size_t)n + 1, sizeof *sorted);
    if (!sorted) {
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
    return FLOOR_DECIDED;
}

int floor_rankable(const floor_room *r, const floor_config *cfg, const floor_message *m,
                   bool *rankable)
{
    floor_message plain = *m;
    plain.ranked = false;
    prep pr;
    if (prepare(&pr, r, cfg, &plain) != 0)
        return -1;
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        const floor_persona *p = &r->personas[i];
        bool yes = false;
        if (!(m->sender && strcmp(p->id, m->sender) == 0)) {
            cand x = {0};
            classify(&pr, i, &plain, &x);
            yes = x.tier == TIER_MATCH || x.tier == TIER_OTHER;
        }
        if (rankable)
            rankable[i] = yes;
        n += yes;
    }
    prep_free(&pr);
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
