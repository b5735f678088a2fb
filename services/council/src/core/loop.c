/* loop.c - one SENSE -> PLAN -> ACT loop as a state machine on the
 * session: phase idle --(loop timer, start, resume, answer)--> SENSE and
 * PLAN (the persona prompts go out as one durable job; phase plan: the
 * worker asks the three advisors, then Sol with their answers)
 * --(the job's outcome)--> ACT (Sol's proposal routed and handled, the
 * circuit breaker consulted; phase idle, next loop scheduled). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "internal.h"

/* The first max bytes of s for "%.*s", cut between characters: texts from
 * the model, the A2A agent or the user go into JSON. Evaluates s twice. */
#define CUT(s, max) (int)vigil_utf8_cut_max((s), (max)), (s)

static json_object *jstr(const char *s, size_t len, size_t max)
{
    char *b = malloc(max + 1);
    if (!b)
        return NULL;
    vigil_utf8_copy_n(b, max + 1, s, len);
    json_object *o = json_object_new_string(b);
    free(b);
    return o;
}

int council_loop_begin(council_emit *e, council_user *u, const council_config *c, int64_t now)
{
    council_session *s = &u->s;
    if (!c->enabled) /* switched off since it started: no further loop runs */
        return council_session_end(e, u, COUNCIL_DISABLED_REASON, now);
    if (s->loop >= c->max_loops)
        return council_session_end(e, u, "loop limit reached (VIGIL_COUNCIL_MAX_LOOPS)", now);
    council_questions_expire(&s->questions, now);
    s->loop++;
    s->phase = COUNCIL_PHASE_PLAN;
    s->next_loop_at = 0;
    s->last_progress = now;
    s->sensed_at = now;
    s->sensed_available = council_user_available(u, c, now);
    s->sensed_presence = u->presence;
    snprintf(s->job, sizeof s->job, "%s.L%d", s->id, s->loop);

    /* SENSE */
    int idx[COUNCIL_QUESTIONS_MAX];
    json_object *ctx = json_object_new_object();
    int msg_idx[COUNCIL_MSGS_MAX]; /* the same messages the prompts below carry */
    json_object_object_add(ctx, "messages",
                           json_object_new_int(council_sense_messages(u, c, msg_idx,
                                                                      COUNCIL_MSGS_MAX)));
    json_object_object_add(ctx, "open_questions",
                           json_object_new_int(council_questions_pending(&s->questions, idx,
                                                                         COUNCIL_QUESTIONS_MAX)));
    int answered = council_questions_answered(&s->questions, idx, COUNCIL_QUESTIONS_MAX);
    json_object_object_add(ctx, "answered_questions", json_object_new_int(answered));
    json_object *answers = json_object_new_array();
    for (int i = 0; i < answered; i++)
        json_object_array_add(answers, json_object_new_string(s->questions.v[idx[i]].answer));
    json_object_object_add(ctx, "answers", answers);
    json_object_object_add(ctx, "notes", json_object_new_int(s->n_notes));
    json_object_object_add(ctx, "user_available", json_object_new_boolean(s->sensed_available));
    json_object_object_add(ctx, "presence",
                           json_object_new_string(council_presence_name(s->sensed_presence)));
    int rc = council_event_phase(e, u, "sense", "👁 Sensing: the user's recent messages, "
                                 "questions and notes.", ctx, now);

    /* PLAN: the prompts, one job (Sol's completed by the worker with the
     * advisors' answers: council_sol_prompt) */
    char *context = council_sense_context(u, c, now);
    json_object *job = json_object_new_object(), *prompts = json_object_new_object();
    bool ok = context && job && prompts;
    for (int p = 0; ok && p < COUNCIL_PERSONAS; p++) {
        char *pr = council_prompt((council_persona)p, context);
        ok = pr != NULL;
        if (ok)
            json_object_object_add(prompts, COUNCIL_PERSONA_DEFS[p].key, json_object_new_string(pr));
        free(pr);
    }
    free(context);
    if (!ok) {
        json_object_put(job);
        json_object_put(prompts);
        return -1;
    }
    json_object_object_add(job, "job", json_object_new_string(s->job));
    json_object_object_add(job, "user", json_object_new_string(u->user));
    json_object_object_add(job, "session", json_object_new_string(s->id));
    json_object_object_add(job, "loop", json_object_new_int(s->loop));
    json_object_object_add(job, "enqueued", json_object_new_int64(now));
    json_object_object_add(job, "user_available", json_object_new_boolean(s->sensed_available));
    json_object_object_add(job, "presence",
                           json_object_new_string(council_presence_name(s->sensed_presence)));
    json_object_object_add(job, "prompts", prompts);
    rc |= council_event_phase(e, u, "plan", "🧭 The council deliberates: Polaris, Aurora and "
                              "Vega are asked, then Sol with their answers.", NULL, now);
    rc |= e->sink->job(e->sink->ctx, job);
    json_object_put(job);
    return rc;
}

/* An answer that came while the loop was in PLAN was not in its SENSE: it
 * still starts the next loop at once (not after the loop interval or a
 * sleep:), as an answer to an idle session does. A record written before
 * the SENSE time was kept (sensed_at 0) says nothing either way. */
static bool answered_since_sense(const council_session *s)
{
    if (s->sensed_at <= 0)
        return false;
    for (int i = 0; i < s->questions.n; i++)
        if (s->questions.v[i].status == COUNCIL_Q_ANSWERED &&
            s->questions.v[i].answered_at > s->sensed_at)
            return true;
    return false;
}

static void add_note(council_session *s, const char *text, size_t len, int64_t now)
{
    if (s->n_notes == COUNCIL_NOTES_MAX) {
        memmove(s->notes, s->notes + 1, sizeof s->notes[0] * (COUNCIL_NOTES_MAX - 1));
        s->n_notes--;
    }
    council_note *n = &s->notes[s->n_notes++];
    vigil_utf8_copy_n(n->text, COUNCIL_TEXT_MAX + 1, text, len);
    n->loop = s->loop;
    n->ts = now;
}

/* search: and schedule: go out as requests for outside tools. */
static int tool_request(council_emit *e, const council_user *u, const char *kind,
                        const char *content, size_t len, int64_t now, char *result, size_t cap)
{
    char topic[160], id[COUNCIL_EVID_MAX + 1];
    snprintf(topic, sizeof topic, "council/%s/request", u->s.id);
    council_emit_id(e, u, id, sizeof id);
    json_object *r = json_object_new_object();
    if (!r)
        return -1;
    json_object_object_add(r, "id", json_object_new_string(id));
    json_object_object_add(r, "session", json_object_new_string(u->s.id));
    json_object_object_add(r, "user", json_object_new_string(u->user));
    json_object_object_add(r, "kind", json_object_new_string(kind));
    json_object_object_add(r, "query", jstr(content, len, COUNCIL_TEXT_MAX));
    json_object_object_add(r, "loop", json_object_new_int(u->s.loop));
    if (u->s.room[0])
        json_object_object_add(r, "room", json_object_new_string(u->s.room));
    json_object_object_add(r, "ts", json_object_new_int64(now));
    int rc = e->sink->publish(e->sink->ctx, topic, r, false);
    json_object_put(r);
    snprintf(result, cap, "%s request published on %s", kind, topic);
    return rc;
}

/* A `question` event: a question queued (status pending), or one that
 * ended without an answer before its time (status expired, expires_at the
 * time it ended, with the reason), which Theater Mode and presence-gateway's
 * snapshot then stop showing. */
static int question_event(council_emit *e, const council_user *u, const council_question *q,
                          const char *reason, int64_t now)
{
    json_object *qe = council_event(e, u, "question", now);
    if (!qe)
        return -1;
    json_object_object_add(qe, "question_id", json_object_new_string(q->id));
    json_object_object_add(qe, "question", json_object_new_string(q->text));
    json_object_object_add(qe, "priority", json_object_new_int(q->priority));
    json_object_object_add(qe, "expires_at", json_object_new_int64(q->expires_at));
    json_object_object_add(qe, "status", json_object_new_string(council_qstatus_name(q->status)));
    if (reason)
        json_object_object_add(qe, "reason", json_object_new_string(reason));
    return council_event_send(e, u, qe);
}

bool council_outcome_current(const council_user *u, const council_outcome *o)
{
    const council_session *s = &u->s;
    return u->has_session && strcmp(s->id, o->session) == 0 && s->status == COUNCIL_ACTIVE &&
           s->phase == COUNCIL_PHASE_PLAN && strcmp(s->job, o->job) == 0;
}

council_rc council_on_outcome(council_user *u, const council_config *c, const council_outcome *o,
                              int64_t now, const council_sink *sink)
{
    council_session *s = &u->s;
    if (!council_outcome_current(u, o))
        return COUNCIL_OK; /* superseded: paused, ended or another loop */
    council_emit e;
    council_emit_init(&e, sink, o->job);
    int rc = 0;

    council_routed r;
    council_route(o->answers[COUNCIL_SOL], &r);
    char decision[COUNCIL_TEXT_MAX + 64];
    char content[COUNCIL_TEXT_MAX + 1];
    vigil_utf8_copy_n(content, COUNCIL_TEXT_MAX + 1, r.content, r.content_len);
    snprintf(decision, sizeof decision, "%s %s", council_action_prefix(r.action), content);

    /* the deliberation: all four inputs and the decision */
    json_object *ev = council_event(&e, u, "deliberation", now);
    json_object *rec = json_object_new_object();
    if (!ev || !rec) {
        json_object_put(ev);
        json_object_put(rec);
        return COUNCIL_FAILED;
    }
    for (int p = 0; p < COUNCIL_PERSONAS; p++) {
        char failed[COUNCIL_REASON_MAX + 32];
        const char *a = council_answer_text(o->answers[p], o->errors[p], failed, sizeof failed);
        json_object_object_add(ev, COUNCIL_PERSONA_DEFS[p].key,
                               jstr(a, strlen(a), COUNCIL_ANSWER_MAX));
        json_object_object_add(rec, COUNCIL_PERSONA_DEFS[p].key,
                               jstr(a, strlen(a), COUNCIL_ANSWER_MAX));
    }
    json_object_object_add(ev, "decision", json_object_new_string(decision));
    /* the phase the council deliberated in (its record says it too) */
    json_object_object_add(ev, "phase", json_object_new_string("plan"));
    rc |= council_event_send(&e, u, ev);

    /* ACT */
    /* the user's availability as Sol weighed it: this loop's SENSE, not a
     * report that came in while the council deliberated */
    json_object *avail = json_object_new_object();
    json_object_object_add(avail, "user_available", json_object_new_boolean(s->sensed_available));
    json_object_object_add(avail, "presence",
                           json_object_new_string(council_presence_name(s->sensed_presence)));
    rc |= council_event_phase(&e, u, "act", "⚡ Sol acts on the council's decision.", avail, now);
    char result[COUNCIL_RESULT_MAX + 200] = "";
    char warning[2 * COUNCIL_REASON_MAX] = "";
    if (r.unknown)
        snprintf(warning, sizeof warning, "%s", r.warning);
    if (!o->answers[COUNCIL_SOL])
        snprintf(warning, sizeof warning, "Sol did not answer (%.*s): recorded as reflect:",
                 CUT(o->errors[COUNCIL_SOL] ? o->errors[COUNCIL_SOL] : "LLM call failed", 180));
    int64_t next = c->loop_ms;
    bool answered = answered_since_sense(s); /* the next loop starts at once */
    json_object *extra = json_object_new_object();
    switch (r.action) {
    case COUNCIL_ACT_NOTE:
        add_note(s, r.content, r.content_len, now);
        snprintf(result, sizeof result, "noted");
        break;
    case COUNCIL_ACT_ASK: {
        const char *rest;
        int prio = council_question_priority(content, &rest);
        char qid[COUNCIL_EVID_MAX + 1];
        snprintf(qid, sizeof qid, "%s.q", s->job);
        /* the list is full of pending questions: the oldest ends unanswered,
         * said as its question event with status expired */
        int victim = council_questions_victim(&s->questions);
        if (victim >= 0 && s->questions.v[victim].status == COUNCIL_Q_PENDING) {
            council_question gone = s->questions.v[victim];
            gone.status = COUNCIL_Q_EXPIRED;
            gone.expires_at = now;
            rc |= question_event(&e, u, &gone, COUNCIL_QUESTION_DROPPED_REASON, now);
            u->questions_dropped++;
        }
        council_question *q = council_questions_add(&s->questions, qid, rest, strlen(rest), prio,
                                                    s->loop, now, c->question_ttl_ms);
        rc |= question_event(&e, u, q, NULL, now);
        json_object_object_add(extra, "question_id", json_object_new_string(q->id));
        snprintf(result, sizeof result, "question %s queued (priority %d)", q->id, q->priority);
        break;
    }
    case COUNCIL_ACT_SEARCH:
    case COUNCIL_ACT_SCHEDULE:
        rc |= tool_request(&e, u, r.action == COUNCIL_ACT_SEARCH ? "search" : "schedule",
                           r.content, r.content_len, now, result, sizeof result);
        break;
    case COUNCIL_ACT_RESEARCH:
        if (!c->a2a_enabled) {
            snprintf(result, sizeof result,
                     "not delegated: no A2A endpoint (VIGIL_COUNCIL_A2A_URL is empty)");
            json_object_object_add(extra, "delegated", json_object_new_boolean(0));
        } else if (o->a2a_tried && o->a2a && o->a2a->ok) {
            snprintf(result, sizeof result, "%s", o->a2a->text);
            json_object_object_add(extra, "delegated", json_object_new_boolean(1));
            json_object_object_add(extra, "a2a_task_id", json_object_new_string(o->a2a->task_id));
            json_object_object_add(extra, "a2a_state", json_object_new_string(o->a2a->state));
            add_note(s, o->a2a->text, strlen(o->a2a->text), now);
        } else {
            snprintf(result, sizeof result, "delegation failed");
            snprintf(warning, sizeof warning, "A2A delegation failed: %.*s",
                     CUT(o->a2a_tried && o->a2a ? o->a2a->error : "not attempted", 200));
            json_object_object_add(extra, "delegated", json_object_new_boolean(0));
        }
        break;
    case COUNCIL_ACT_SLEEP: {
        /* the router read the duration (a sleep: it cannot read is a reflect).
         * At most the idle timeout; at least the loop interval, the wait
         * after any other action: a sleep: 0 (or 10ms) would otherwise
         * start the next loop at once, a faster pace than not sleeping,
         * held back only by the circuit breaker. The result says which
         * bound applied: with a loop interval longer than the idle timeout
         * a long sleep is cut to the interval, not to the idle timeout. */
        int64_t d = r.sleep_ms < c->max_sleep_ms ? r.sleep_ms : c->max_sleep_ms;
        if (d < c->loop_ms)
            d = c->loop_ms;
        char capped[128] = "";
        if (d < r.sleep_ms && d > c->max_sleep_ms)
            snprintf(capped, sizeof capped,
                     " (%" PRId64 " ms asked: at most the loop interval, longer than the idle "
                     "timeout)",
                     r.sleep_ms);
        else if (d < r.sleep_ms)
            snprintf(capped, sizeof capped, " (%" PRId64 " ms asked: at most the idle timeout)",
                     r.sleep_ms);
        else if (d > r.sleep_ms)
            snprintf(capped, sizeof capped,
                     " (%" PRId64 " ms asked: at least the loop interval)", r.sleep_ms);
        next = answered ? 0 : d;
        json_object_object_add(extra, "until", json_object_new_int64(now + next));
        if (answered)
            snprintf(result, sizeof result, "not sleeping %" PRId64 " ms%s: the user answered a "
                     "question meanwhile, the next loop starts at once", d, capped);
        else
            snprintf(result, sizeof result, "sleeping %" PRId64 " ms%s", d, capped);
        break;
    }
    case COUNCIL_ACT_REFLECT:
    default:
        snprintf(result, sizeof result, "recorded");
        break;
    }
    json_object *ae = council_event(&e, u, "action", now);
    if (!ae) {
        json_object_put(extra);
        json_object_put(rec);
        return COUNCIL_FAILED;
    }
    json_object_object_add(ae, "action", json_object_new_string(council_action_name(r.action)));
    json_object_object_add(ae, "content", json_object_new_string(content));
    if (result[0])
        json_object_object_add(ae, "result", jstr(result, strlen(result), COUNCIL_RESULT_MAX));
    if (warning[0])
        json_object_object_add(ae, "warning", json_object_new_string(warning));
    json_object_object_foreach(extra, k, v) json_object_object_add(ae, k, json_object_get(v));
    json_object_put(extra);
    rc |= council_event_send(&e, u, ae);

    /* the durable deliberation record */
    char name[96];
    snprintf(name, sizeof name, "delib:%s", s->id);
    json_object_object_add(rec, "loop", json_object_new_int(s->loop));
    json_object_object_add(rec, "phase", json_object_new_string("plan"));
    json_object_object_add(rec, "decision", json_object_new_string(decision));
    json_object_object_add(rec, "action", json_object_new_string(council_action_name(r.action)));
    json_object_object_add(rec, "result", jstr(result, strlen(result), COUNCIL_RESULT_MAX));
    if (warning[0])
        json_object_object_add(rec, "warning", json_object_new_string(warning));
    json_object_object_add(rec, "ts", json_object_new_int64(now));
    rc |= sink->append(sink->ctx, name, rec, 1000);
    json_object_put(rec);

    s->actions++;
    s->phase = COUNCIL_PHASE_IDLE;
    s->job[0] = '\0';
    s->last_progress = now;
    /* The loop limit comes first: after the last loop nothing would spin
     * on, and a pause saying "resume to continue" would only end it. */
    bool spinning = council_breaker_record(&s->breaker, r.action);
    if (s->loop >= c->max_loops) {
        rc |= council_session_end(&e, u, "loop limit reached (VIGIL_COUNCIL_MAX_LOOPS)", now);
    } else if (spinning) {
        char why[COUNCIL_REASON_MAX];
        snprintf(why, sizeof why,
                 "spinning: %d '%s' actions in a row (circuit breaker); resume to continue",
                 COUNCIL_BREAKER_REPEATS, council_action_prefix(r.action));
        rc |= council_session_pause(&e, u, COUNCIL_PAUSE_SPINNING, why, now);
    } else {
        s->next_loop_at = answered ? now : now + next;
    }
    rc |= council_sync(&e, u, c, now);
    return rc == 0 ? COUNCIL_OK : COUNCIL_FAILED;
}
