/* intake.c - a room message: which sleeping personas to evaluate and how.
 *
 * A persona is evaluated when its level is "sleep", it did not send the
 * message, and no rule already wakes it (dormancy-monitor wakes a sleeper
 * on its own @mention, and on a human message while auto-wake is on --
 * for every sleeper with VIGIL_DORMANCY_HUMAN_WAKES=all, else for sleep
 * caused by absence, trigger no-human/ai-only). Basic tier, LLM wake
 * decisions switched off, or no LLM configured: the rules decide here and
 * now. Smart and mid tiers: one durable job per (message, persona).
 * The context a job carries is the room before this message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include <vigil/event_id.h>
#include <vigil/str.h>

const char *wake_display_name(const wake_persona *p)
{
    return p->name[0] ? p->name : p->id;
}

bool wake_persona_auto_wake(const wake_persona *p, const wake_config *c)
{
    return p->auto_wake_ov >= 0 ? p->auto_wake_ov != 0 : c->auto_wake;
}

bool wake_persona_llm_wake(const wake_persona *p, const wake_config *c)
{
    return p->llm_wake_ov >= 0 ? p->llm_wake_ov != 0 : c->llm_wake;
}

double wake_persona_threshold(const wake_persona *p, const wake_config *c)
{
    return p->wake_conf_ov >= 0 ? p->wake_conf_ov : c->wake_confidence;
}

bool wake_room_managed(const wake_room *r)
{
    for (int i = 0; i < r->n_personas; i++)
        if (r->personas[i].has_meta || r->personas[i].level != WAKE_LEVEL_UNKNOWN)
            return true;
    return false;
}

/* Active for the prompt's "Other active AIs": reported active, or a member
 * dormancy-monitor has not reported on yet (personas join active). */
static bool counts_as_active(const wake_persona *p)
{
    return p->level == WAKE_LEVEL_ACTIVE || (p->level == WAKE_LEVEL_UNKNOWN && p->member);
}

int wake_context_build(const wake_room *r, int64_t now, wake_context *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->recent_count = wake_room_count(r, now, WAKE_RECENT_MS, -1);
    ctx->has_human = r->has_human;
    if (r->has_human) {
        ctx->human_text = r->last_human.text;
        wake_format_ago(now - r->last_human.ts, ctx->since_human, sizeof ctx->since_human);
    } else {
        snprintf(ctx->since_human, sizeof ctx->since_human, "no human message yet");
    }
    size_t cap = 1, len = 0;
    for (int i = 0; i < r->n_personas; i++)
        if (counts_as_active(&r->personas[i]))
            cap += strlen(wake_display_name(&r->personas[i])) + 2;
    ctx->active_ais = malloc(cap);
    if (!ctx->active_ais)
        return -1;
    ctx->active_ais[0] = '\0';
    for (int i = 0; i < r->n_personas; i++) {
        if (!counts_as_active(&r->personas[i]))
            continue;
        const char *n = wake_display_name(&r->personas[i]);
        len += (size_t)snprintf(ctx->active_ais + len, cap - len, "%s%s", len ? ", " : "", n);
    }
    return 0;
}

void wake_context_clear(wake_context *ctx)
{
    free(ctx->active_ais);
    ctx->active_ais = NULL;
}

static bool absence_trigger(const char *t)
{
    return strcmp(t, "ai-only") == 0 || strcmp(t, "no-human") == 0;
}

/* One place builds what the rules see, so the rule wakes skipped here, the
 * decisions made at intake and the verdict a job carries all read the
 * same (whole) message. */
wake_rules_in wake_rules_input(const wake_persona *p, const wake_message *m)
{
    wake_rules_in in = {p->id, p->name, m->text ? m->text : "", m->type, m->mentions,
                        m->n_mentions};
    return in;
}

bool wake_persona_human_wakes(const wake_persona *p, const wake_config *c)
{
    return wake_persona_auto_wake(p, c) && (c->human_wakes_all || absence_trigger(p->trigger));
}

/* True when a rule of dormancy-monitor already wakes p for m. */
static bool woken_by_rule(const wake_persona *p, const wake_config *c, const wake_message *m)
{
    wake_rules_in in = wake_rules_input(p, m);
    if (wake_rules_mentioned(&in))
        return true;
    return m->type == WAKE_SENDER_HUMAN && wake_persona_human_wakes(p, c);
}

static int decide_now(wake_room *r, const wake_persona *p, const wake_message *m,
                      const char *id, wake_via via, const char *note, int64_t now,
                      const wake_sink *sink)
{
    wake_decision d;
    memset(&d, 0, sizeof d);
    wake_rules_in in = wake_rules_input(p, m);
    char why[WAKE_REASON_MAX];
    wake_rules_decide(&in, &d.should_wake, why, sizeof why);
    /* copies without snprintf's format parsing: six per decision */
    vigil_concat(d.id, sizeof d.id, id, (const char *)NULL);
    vigil_concat(d.persona, sizeof d.persona, p->id, (const char *)NULL);
    vigil_concat(d.room, sizeof d.room, r->id, (const char *)NULL);
    vigil_concat(d.message_id, sizeof d.message_id, m->id ? m->id : "", (const char *)NULL);
    d.confidence = 1.0;
    d.tier = wake_persona_tier(p);
    d.via = via;
    if (note)
        snprintf(d.reason, sizeof d.reason, "%.*s; %.*s", (int)vigil_utf8_cut_max(note, 200),
                 note, (int)vigil_utf8_cut_max(why, 300), why);
    else
        vigil_concat(d.reason, sizeof d.reason, why, (const char *)NULL);
    d.latency_ms = 0;
    d.llm_latency_ms = -1;
    d.tokens = -1;
    char *json = wake_decision_json(&d, now);
    char topic[WAKE_ID_MAX + 32];
    vigil_concat(topic, sizeof topic, "persona/", p->id, "/wake", (const char *)NULL);
    int rc = json ? sink->publish(sink->ctx, topic, json, false) : -1;
    free(json);
    if (rc == 0 && sink->decided)
        sink->decided(sink->ctx, &d);
    r->evaluations++;
    return rc;
}

/* ctx is built by the first job (*have_ctx): a decision by the rules needs
 * none, and nothing it reads changes before the message is recorded. */
static int evaluate(wake_room *r, const wake_config *c, const wake_persona *p,
                    const wake_message *m, wake_context *ctx, bool *have_ctx, int64_t now,
                    const wake_sink *sink, bool *decided)
{
    /* "<message id>:<room>:wake:<persona>": a message id is unique only
     * within its room, and consumers dedupe wake events (and the worker
     * its jobs) by this id across rooms */
    char id[WAKE_EVID_MAX + 1], key[WAKE_ID_MAX + 8];
    vigil_concat(key, sizeof key, "wake:", p->id, (const char *)NULL);
    vigil_event_id_in(id, sizeof id, m->id, r->id, key);
    wake_tier tier = wake_persona_tier(p);
    if (tier == WAKE_TIER_BASIC) {
        *decided = true;
        return decide_now(r, p, m, id, WAKE_VIA_RULES, NULL, now, sink);
    }
    if (!wake_persona_llm_wake(p, c)) {
        *decided = true;
        return decide_now(r, p, m, id, WAKE_VIA_RULES, "LLM wake decisions are switched off",
                          now, sink);
    }
    if (!c->llm_enabled) {
        *decided = true;
        return decide_now(r, p, m, id, WAKE_VIA_FALLBACK,
                          "no LLM configured (VIGIL_LLM_URL is empty)", now, sink);
    }
    if (!*have_ctx) {
        if (wake_context_build(r, now, ctx) != 0)
            return -1;
        *have_ctx = true;
    }
    char *job = wake_job_build(r, p, m, ctx, id, wake_persona_threshold(p, c), now);
    int rc = job ? sink->enqueue(sink->ctx, job) : -1;
    free(job);
    return rc;
}

/* A jump: velocity or the AI-to-human ratio at least jump_factor times
 * what it was at the last run, and above the "high noise" marks
 * (5 msg/min, ratio 3). */
static bool jumped(const wake_room *r, const wake_config *c, int64_t now)
{
    double v = wake_room_velocity(r, now), q = wake_room_ai_ratio(r, now);
    return (v >= c->jump_velocity && v >= c->jump_factor * r->ap_velocity) ||
           (q > c->jump_ratio && q >= c->jump_factor * r->ap_ratio);
}

static int schedule_autopilot(wake_room *r, const wake_config *c, int64_t now,
                              const wake_sink *sink)
{
    if (!c->autopilot || !wake_room_managed(r))
        return 0;
    /* not armed, or armed long ago and lost (e.g. timers flushed) */
    if (r->ap_due == 0 || r->ap_due < now - c->autopilot_interval_ms) {
        r->ap_due = now + c->autopilot_interval_ms;
        return sink->timer(sink->ctx, WAKE_TIMER_AUTOPILOT, r->ap_due);
    }
    if (r->ap_due > now && now - r->ap_last >= c->autopilot_min_gap_ms && jumped(r, c, now)) {
        r->ap_due = now; /* run at the next tick */
        return sink->timer(sink->ctx, WAKE_TIMER_AUTOPILOT, now);
    }
    return 0;
}

int wake_on_message(wake_room *r, const wake_config *c, const wake_message *m, int64_t now,
                    const wake_sink *sink)
{
    wake_context ctx = {0};
    bool decided = false, have_ctx = false;
    int rc = 0;
    if (m->type != WAKE_SENDER_SYSTEM || c->evaluate_system) {
        for (int i = 0; i < r->n_personas && rc == 0; i++) {
            const wake_persona *p = &r->personas[i];
            if (p->level != WAKE_LEVEL_SLEEP || strcmp(p->id, m->sender) == 0 ||
                woken_by_rule(p, c, m))
                continue;
            rc = evaluate(r, c, p, m, &ctx, &have_ctx, now, sink, &decided);
        }
    }
    wake_context_clear(&ctx);
    if (rc != 0)
        return rc;
    /* an AI speaking in the room is one of its personas */
    if (m->type == WAKE_SENDER_AI && !wake_room_find(r, m->sender)) {
        if (wake_room_join(r, c, m->sender, sink) &&
            sink->member(sink->ctx, m->sender, true) != 0)
            return -1;
    }
    wake_room_record(r, m->id, m->sender, m->type, m->text, now);
    if (schedule_autopilot(r, c, now, sink) != 0)
        return -1;
    return decided ? wake_publish_economics(r, now, sink) : 0;
}
