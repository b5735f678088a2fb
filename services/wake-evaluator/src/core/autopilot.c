/* autopilot.c - the DormancyAutopilotAgent: the model's list of
 * actions read tolerantly, then the specified guards applied in C whatever
 * the model said (see wake.h), then published on room/{r}/autopilot.
 *
 * Domain detection: a domain (from any persona's expertise_domains or
 * confidence_levels) is "being discussed" when it appears as a whole word
 * (case-insensitive) in a message of the last 10 minutes; the last human
 * message is "in" a domain when the domain appears in it and the human
 * wrote within human_present_ms. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

/* ---- reading the model's actions ----------------------------------- */

static int action_from_text(const char *s, wake_ap_action *out)
{
    static const struct { const char *name; wake_ap_action a; } SPELLINGS[] = {
        {"suggest-mention-only", WAKE_AP_SUGGEST_MENTION_ONLY},
        {"mention-only", WAKE_AP_SUGGEST_MENTION_ONLY},
        {"suggest-mention", WAKE_AP_SUGGEST_MENTION_ONLY},
        {"auto-sleep", WAKE_AP_AUTO_SLEEP},
        {"autosleep", WAKE_AP_AUTO_SLEEP},
        {"sleep", WAKE_AP_AUTO_SLEEP},
        {"wake", WAKE_AP_WAKE},
        {"wake-up", WAKE_AP_WAKE},
        {"awake", WAKE_AP_WAKE},
        {"keep", WAKE_AP_KEEP},
        {"keep-active", WAKE_AP_KEEP},
        {"no-change", WAKE_AP_KEEP},
        {"none", WAKE_AP_KEEP},
    };
    char norm[32];
    size_t n = 0;
    for (; s[n] && n + 1 < sizeof norm; n++) {
        char ch = (char)tolower((unsigned char)s[n]);
        norm[n] = (ch == '_' || ch == ' ') ? '-' : ch;
    }
    norm[n] = '\0';
    if (s[n])
        return -1;
    for (size_t i = 0; i < sizeof SPELLINGS / sizeof SPELLINGS[0]; i++)
        if (strcmp(norm, SPELLINGS[i].name) == 0) {
            *out = SPELLINGS[i].a;
            return 0;
        }
    return -1;
}

static const wake_persona *persona_named(const wake_room *r, const char *s)
{
    const wake_persona *p = wake_room_find_const(r, s);
    for (int i = 0; !p && i < r->n_personas; i++)
        if (strcasecmp(r->personas[i].id, s) == 0 ||
            (r->personas[i].name[0] && strcasecmp(r->personas[i].name, s) == 0))
            p = &r->personas[i];
    return p;
}

static int list_find(const wake_ap_list *l, const char *persona)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].persona, persona) == 0)
            return i;
    return -1;
}

static void clean_reason(char *out, size_t outlen, const char *s)
{
    vigil_utf8_copy(out, outlen, s && s[0] ? s : "(no reason given)");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

int wake_autopilot_parse(const wake_reader *rd, const wake_room *r, const char *content,
                         size_t len, wake_ap_list *out, char *why, size_t whylen)
{
    char ewhy[200] = "";
    out->n = 0;
    json_object *a = rd->extract_array(content, len, ewhy, sizeof ewhy);
    if (!a) {
        snprintf(why, whylen, "no JSON array of actions in the answer (%s)", ewhy);
        return -1;
    }
    size_t n = json_object_array_length(a);
    for (size_t i = 0; i < n && out->n < WAKE_AP_MAX; i++) {
        json_object *e = json_object_array_get_idx(a, i);
        const char *who = NULL, *act = NULL, *reason = NULL;
        wake_ap_action action;
        if (!e || !json_object_is_type(e, json_type_object) ||
            rd->read_string(e, "persona", &who) != 0 || !who ||
            rd->read_string(e, "action", &act) != 0 || !act || action_from_text(act, &action) != 0)
            continue;
        const wake_persona *p = persona_named(r, who);
        if (!p || list_find(out, p->id) >= 0)
            continue;
        if (rd->read_string(e, "reason", &reason) != 0)
            reason = NULL;
        wake_ap_decision *d = &out->v[out->n++];
        snprintf(d->persona, sizeof d->persona, "%s", p->id);
        d->action = action;
        clean_reason(d->reason, sizeof d->reason, reason);
    }
    json_object_put(a);
    return 0;
}

/* ---- the guards ---------------------------------------------------- */

static double conf_of(const wake_persona *p, const char *domain)
{
    for (int i = 0; i < p->n_conf; i++)
        if (strcasecmp(p->conf_domain[i], domain) == 0)
            return p->conf[i];
    return -1;
}

static bool domain_discussed(const wake_room *r, const char *domain, int64_t now)
{
    for (int i = 0; i < r->n_texts; i++) {
        const wake_msg *m = wake_room_text(r, i);
        if (m->ts > now - WAKE_RECENT_MS && wake_text_has_domain(m->text, domain))
            return true;
    }
    return false;
}

/* Calls fn for every distinct domain named by any persona. */
static void each_domain(const wake_room *r, void (*fn)(const char *, void *), void *arg)
{
    for (int i = 0; i < r->n_personas; i++) {
        const wake_persona *p = &r->personas[i];
        for (int k = 0; k < p->n_domains + p->n_conf; k++) {
            const char *d = k < p->n_domains ? p->domains[k] : p->conf_domain[k - p->n_domains];
            bool seen = false;
            for (int j = 0; j < i && !seen; j++) {
                const wake_persona *q = &r->personas[j];
                for (int m = 0; m < q->n_domains && !seen; m++)
                    seen = strcasecmp(q->domains[m], d) == 0;
                for (int m = 0; m < q->n_conf && !seen; m++)
                    seen = strcasecmp(q->conf_domain[m], d) == 0;
            }
            for (int m = 0; m < k && !seen; m++) {
                const char *e = m < p->n_domains ? p->domains[m] : p->conf_domain[m - p->n_domains];
                seen = strcasecmp(e, d) == 0;
            }
            if (!seen)
                fn(d, arg);
        }
    }
}

static void set_action(wake_ap_list *l, const char *persona, wake_ap_action a, const char *reason)
{
    int i = list_find(l, persona);
    if (i < 0) {
        if (l->n >= WAKE_AP_MAX)
            return;
        i = l->n++;
        snprintf(l->v[i].persona, sizeof l->v[i].persona, "%s", persona);
    }
    l->v[i].action = a;
    snprintf(l->v[i].reason, sizeof l->v[i].reason, "%s", reason);
}

static int action_of(const wake_ap_list *l, const char *persona)
{
    int i = list_find(l, persona);
    return i < 0 ? -1 : (int)l->v[i].action;
}

typedef struct guard_ctx {
    const wake_room *r;
    const wake_config *c;
    int64_t now;
    wake_ap_list *l;
    bool *protected_; /* per persona: guard B applies */
    double *human_conf; /* per persona: best confidence in the human's domains */
    bool human_in_window;
} guard_ctx;

/* A: the only expert (> expert_only) on a domain being discussed is not
 * made dormant: neither put to sleep nor asked to step back to
 * mention-only (the specified guard drops every dormancy proposal for it,
 * and an unanswered suggestion defaults to yes). Guard C may still ask a
 * dominating expert to let others speak, as the specified order does. */
static void guard_only_expert(const char *domain, void *arg)
{
    guard_ctx *g = arg;
    if (!domain_discussed(g->r, domain, g->now))
        return;
    int only = -1, count = 0;
    for (int i = 0; i < g->r->n_personas; i++)
        if (conf_of(&g->r->personas[i], domain) > g->c->expert_only) {
            only = i;
            count++;
        }
    if (count != 1)
        return;
    const char *id = g->r->personas[only].id;
    int a = action_of(g->l, id);
    if (a == WAKE_AP_AUTO_SLEEP || a == WAKE_AP_SUGGEST_MENTION_ONLY) {
        char reason[WAKE_REASON_MAX];
        snprintf(reason, sizeof reason,
                 "guard: the only confident expert on '%s', which is being discussed: %s",
                 domain, a == WAKE_AP_AUTO_SLEEP ? "not put to sleep" : "not asked to step back");
        set_action(g->l, id, WAKE_AP_KEEP, reason);
    }
}

/* B: experts (> expert_keep) in the domain of the last human message. */
static void guard_human_domain(const char *domain, void *arg)
{
    guard_ctx *g = arg;
    if (!g->human_in_window || !wake_text_has_domain(g->r->last_human.text, domain))
        return;
    for (int i = 0; i < g->r->n_personas; i++) {
        const wake_persona *p = &g->r->personas[i];
        double cf = conf_of(p, domain);
        if (cf > g->human_conf[i])
            g->human_conf[i] = cf;
        if (!(cf > g->c->expert_keep) || g->protected_[i])
            continue;
        g->protected_[i] = true;
        char reason[WAKE_REASON_MAX];
        int a = action_of(g->l, p->id);
        if (p->level == WAKE_LEVEL_SLEEP && a != WAKE_AP_WAKE) {
            snprintf(reason, sizeof reason,
                     "guard: expert in '%s' (confidence %.2f), the domain of the last human "
                     "message: woken",
                     domain, cf);
            set_action(g->l, p->id, WAKE_AP_WAKE, reason);
        } else if (a == WAKE_AP_AUTO_SLEEP || a == WAKE_AP_SUGGEST_MENTION_ONLY) {
            snprintf(reason, sizeof reason,
                     "guard: expert in '%s' (confidence %.2f), the domain of the last human "
                     "message: kept awake",
                     domain, cf);
            set_action(g->l, p->id, WAKE_AP_KEEP, reason);
        }
    }
}

/* Unable to answer the present human after this run. A persona asleep
 * for lack of humans is not: the human's next message wakes it by rule 3
 * (and an autopilot auto-sleep leaves a sleeper's cause as it is), so
 * guard D never undoes the AI-only hard stop, which a human who wrote just
 * before the AI-only stretch would otherwise do while still "present". */
static bool asleep_after(const wake_persona *p, const wake_config *c, int action)
{
    if (p->level == WAKE_LEVEL_SLEEP && wake_persona_human_wakes(p, c))
        return false;
    if (action == WAKE_AP_AUTO_SLEEP)
        return true;
    return p->level == WAKE_LEVEL_SLEEP && action != WAKE_AP_WAKE;
}

static int64_t last_spoke(const wake_persona *p)
{
    return p->n_msgs > 0 ? p->msg_ts[p->n_msgs - 1] : 0;
}

static bool tired(const wake_persona *p)
{
    return strcasecmp(p->mood, "tired") == 0;
}

/* D: the persona kept or woken so a present human is not left alone: the
 * most confident in the human's domain, then one not "tired" (as specified:
 * tired personas are more likely to sleep), then the most available, then
 * the last to speak. */
static bool better(const guard_ctx *g, int i, int b)
{
    const wake_persona *p = &g->r->personas[i], *q = &g->r->personas[b];
    if (g->human_conf[i] != g->human_conf[b])
        return g->human_conf[i] > g->human_conf[b];
    if (tired(p) != tired(q))
        return !tired(p);
    if (p->availability != q->availability)
        return p->availability > q->availability;
    return last_spoke(p) > last_spoke(q);
}

static int best_candidate(const guard_ctx *g)
{
    int best = -1;
    for (int i = 0; i < g->r->n_personas; i++)
        if (best < 0 || better(g, i, best))
            best = i;
    return best;
}

void wake_autopilot_guard(const wake_room *r, const wake_config *c, int64_t now,
                          wake_ap_list *l)
{
    int n = r->n_personas;
    if (n == 0) {
        l->n = 0;
        return;
    }
    bool *prot = calloc((size_t)n, sizeof *prot);
    double *hconf = malloc((size_t)n * sizeof *hconf);
    if (!prot || !hconf) {
        free(prot);
        free(hconf);
        return;
    }
    for (int i = 0; i < n; i++)
        hconf[i] = -1;
    guard_ctx g = {r, c, now, l, prot, hconf, wake_room_human_present(r, c, now)};
    each_domain(r, guard_only_expert, &g);
    each_domain(r, guard_human_domain, &g);

    /* C: dominating personas */
    for (int i = 0; i < n; i++) {
        const wake_persona *p = &r->personas[i];
        int count = wake_messages_last_hour(p, now);
        bool active = p->level == WAKE_LEVEL_ACTIVE || p->level == WAKE_LEVEL_UNKNOWN;
        int a = action_of(l, p->id);
        if (count > c->dominating_per_hour && active && !prot[i] && a != WAKE_AP_AUTO_SLEEP &&
            a != WAKE_AP_SUGGEST_MENTION_ONLY)
            set_action(l, p->id, WAKE_AP_SUGGEST_MENTION_ONLY,
                       "High participation rate (10+ messages/hour), letting others contribute");
    }

    /* D: a present human never meets a room where everyone is asleep */
    if (g.human_in_window) {
        bool all = true;
        for (int i = 0; i < n && all; i++)
            all = asleep_after(&r->personas[i], c, action_of(l, r->personas[i].id));
        int b = all ? best_candidate(&g) : -1;
        if (b >= 0) {
            const wake_persona *p = &r->personas[b];
            set_action(l, p->id, p->level == WAKE_LEVEL_SLEEP ? WAKE_AP_WAKE : WAKE_AP_KEEP,
                       "guard: a human is present and every persona would be asleep");
        }
    }
    free(prot);
    free(hconf);
}

/* ---- committing a run ---------------------------------------------- */

int wake_on_autopilot(wake_room *r, const wake_config *c, const wake_ap_result *res, int64_t now,
                      const wake_sink *sink)
{
    wake_ap_list *l = calloc(1, sizeof *l);
    if (!l)
        return -1;
    if (res->proposals) {
        /* proposals were read against the room at call time: keep those
         * still in the room */
        for (int i = 0; i < res->proposals->n; i++)
            if (wake_room_find_const(r, res->proposals->v[i].persona))
                l->v[l->n++] = res->proposals->v[i];
    }
    wake_autopilot_guard(r, c, now, l);

    json_object *o = json_object_new_object();
    if (res->id)
        json_object_object_add(o, "id", json_object_new_string(res->id));
    json_object_object_add(o, "room", json_object_new_string(r->id));
    json_object *ds = json_object_new_array();
    for (int i = 0; i < l->n; i++) {
        json_object *d = json_object_new_object();
        json_object_object_add(d, "persona", json_object_new_string(l->v[i].persona));
        json_object_object_add(d, "action",
                               json_object_new_string(wake_ap_action_name(l->v[i].action)));
        json_object_object_add(d, "reason", json_object_new_string(l->v[i].reason));
        json_object_array_add(ds, d);
    }
    json_object_object_add(o, "decisions", ds);
    json_object_object_add(o, "source", json_object_new_string(res->from_llm ? "llm" : "rules"));
    if (res->fallback)
        json_object_object_add(o, "fallback", json_object_new_string(res->fallback));
    if (res->tokens >= 0)
        json_object_object_add(o, "tokens", json_object_new_int64(res->tokens));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    free(l);
    char topic[WAKE_ID_MAX + 32];
    snprintf(topic, sizeof topic, "room/%s/autopilot", r->id);
    if (wake_publish_obj(sink, topic, o, false) != 0)
        return -1;
    r->autopilot_runs++;
    if (res->tokens > 0)
        r->tokens_autopilot += res->tokens;
    return wake_publish_economics(r, now, sink);
}
