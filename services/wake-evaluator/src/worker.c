/* worker.c - the job workers: threads beside intake that take jobs from
 * the durable stream, run their LLM calls (many at once on one curl multi
 * handle per worker), interpret the answers in the core, fall back to the
 * rules on any failure, and commit each decision through
 * vigil_runtime_decide before acknowledging the job.
 *
 * The loop is libshared's (vigil/job_loop.h): after a start this
 * consumer's own pending jobs (a restart never drops an evaluation: they
 * are handled again, and the commit's dedupe by job id publishes each
 * decision once), then jobs of other consumers idle longer than the lease
 * (XAUTOCLAIM), then new jobs (XREADGROUP >), blocking briefly only when
 * idle; the LLM transfers driven; what finished committed, then XACK +
 * XDEL. What a job is, its call and its commit are this file's hooks. A
 * job is acknowledged only after its decision is durable (or was already
 * committed, or cannot be parsed at all). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/json.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include <vigil/job_loop.h>
#include <vigil/limits.h>
#include "adapter.h"
#include "llm_reader.h"

#define STATUS_INTERNAL VIGIL_LLM_STATUS__COUNT /* prompt or submit failed */

/* One job in hand (vigil/job_loop.h holds the slots). */
typedef struct slot {
    bool done;
    bool spared; /* not asked: its persona no longer sleeps there */
    wake_job_kind kind;
    wake_job wj;
    wake_ap_job aj;
    /* the LLM result, copied out of the completion callback */
    int status;
    char *content;
    size_t len;
    bool truncated;
    int64_t tokens;
    int64_t latency_ms;
    char error[200];
} slot;

struct wake_worker {
    vigil_job_worker jw; /* first: the worker is its vigil_job_worker */
    wake_service *svc;
    int index;
};

static const char *status_name(int s)
{
    return s == STATUS_INTERNAL ? "internal" : vigil_llm_status_name((vigil_llm_status)s);
}

/* slot NULL: the job could not be read, its kind is unknown. */
static void count_job(const void *sarg, const char *outcome)
{
    const slot *s = sarg;
    const char *kind = !s ? "unknown" : s->kind == WAKE_JOB_WAKE ? "wake" : "autopilot";
    if (s && s->spared && strcmp(outcome, "decided") == 0)
        outcome = "spared";
    char labels[96];
    snprintf(labels, sizeof labels, "kind=\"%s\",outcome=\"%s\"", kind, outcome);
    vigil_counter_add("vigil_wake_jobs_total", "Jobs finished by the workers, by outcome",
                      labels, 1);
}

static void slot_clear(void *arg)
{
    slot *s = arg;
    wake_job_clear(&s->wj);
    wake_ap_job_clear(&s->aj);
    free(s->content);
}

/* Called from vigil_llm_run: copy what we keep, the rest is handled after. */
static void on_done(const vigil_llm_result *res, void *user)
{
    slot *s = user;
    s->done = true;
    s->status = (int)res->status;
    s->truncated = res->truncated;
    s->tokens = res->total_tokens;
    s->latency_ms = res->latency_ms;
    vigil_utf8_copy(s->error, sizeof s->error, res->error); /* published in the reason */
    if (res->status == VIGIL_LLM_OK && res->content) {
        s->content = malloc(res->content_len + 1);
        if (s->content) {
            memcpy(s->content, res->content, res->content_len);
            s->content[res->content_len] = '\0';
            s->len = res->content_len;
        }
    }
}

static void fail_now(slot *s, const char *why)
{
    s->done = true;
    s->status = STATUS_INTERNAL;
    s->tokens = 0;
    snprintf(s->error, sizeof s->error, "%s", why);
}

/* wake_job_wanted on the room's record as it is now. */
static int peek_wanted(void *arg, const char *key, const char *state_json)
{
    slot *s = arg;
    bool corrupt = false;
    wake_room *r = state_json ? wake_room_from_json(key, state_json, &corrupt) : NULL;
    if (state_json && (!r || corrupt)) {
        wake_room_free(r);
        return -1; /* unreadable: asked, the commit starts it afresh as before */
    }
    s->spared = !wake_job_wanted(r, &s->wj);
    wake_room_free(r);
    return 0;
}

/* A wake job that waited for a free slot while its persona was woken (an
 * earlier decision on the same burst, a human, a command) is not worth a
 * model call: it ends without a decision. One read of the room, as step 1
 * of the job loop reads Redis anyway; a failed read asks the model. */
static bool spared(wake_worker *w, slot *s)
{
    if (vigil_runtime_peek(w->jw.conn, s->wj.room, peek_wanted, s) != 0 || !s->spared) {
        s->spared = false;
        return false;
    }
    s->done = true;
    vigil_counter_add("vigil_wake_calls_spared_total",
                      "Wake jobs not sent to the model: the persona was no longer asleep", NULL,
                      1);
    return true;
}

static void submit(void *arg, void *sarg)
{
    wake_worker *w = arg;
    slot *s = sarg;
    const wake_config *c = &w->svc->core;
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    char *prompt;
    req.want_json = true;
    if (s->kind == WAKE_JOB_WAKE && spared(w, s))
        return;
    if (s->kind == WAKE_JOB_WAKE) {
        bool smart = s->wj.tier == WAKE_TIER_SMART;
        prompt = smart ? wake_prompt_smart(&s->wj) : wake_prompt_mid(&s->wj);
        req.tier = smart ? VIGIL_LLM_TIER_SMART : VIGIL_LLM_TIER_MID;
        req.max_tokens = smart ? c->smart_max_tokens : c->mid_max_tokens;
        req.temperature = smart ? 0.2 : 0.1; /* as specified */
        if (w->svc->persona_model && s->wj.model[0])
            req.model = s->wj.model;
    } else {
        /* the autopilot is meant for a small model (llama3.2:3b) */
        prompt = wake_prompt_autopilot(&s->aj);
        req.tier = VIGIL_LLM_TIER_FAST;
        req.max_tokens = c->autopilot_max_tokens;
    }
    if (!prompt) {
        fail_now(s, "out of memory building the prompt");
        return;
    }
    req.user = prompt;
    if (vigil_llm_submit(vigil_job_loop_llm(w->jw.loop), &req, s) != 0)
        fail_now(s, "the LLM client refused the request");
    free(prompt);
}

static int parse(void *arg, void *sarg, const char *payload, size_t len, char *why, size_t whylen)
{
    slot *s = sarg;
    return wake_job_parse(payload, len, &s->kind, &s->wj, &s->aj, why, whylen);
}

/* The room's record dedupes both kinds of job by job id. */
static void ids(const void *sarg, const char **key, const char **job)
{
    const slot *s = sarg;
    *key = s->kind == WAKE_JOB_WAKE ? s->wj.room : s->aj.room;
    *job = s->kind == WAKE_JOB_WAKE ? s->wj.job : s->aj.job;
}

static bool ready(void *arg, void *sarg)
{
    const slot *s = sarg;
    return s->done;
}

static void llm_note(const slot *s, char *out, size_t outlen)
{
    if (s->status == VIGIL_LLM_OK)
        snprintf(out, outlen, "LLM answer unusable");
    else
        snprintf(out, outlen, "LLM %s: %.*s", status_name(s->status),
                 (int)vigil_utf8_cut_max(s->error, 150), s->error);
}

/* Reports the call's outcome to the core, which chooses between the
 * model's answer and the rules (wake_decide_after_llm), then commits. */
static vigil_decide_result finish_wake(wake_worker *w, slot *s, int64_t now)
{
    wake_decision d;
    wake_llm_answer a = {s->status == VIGIL_LLM_OK, status_name(s->status), s->error,
                         s->content, s->len, s->truncated, s->tokens, s->latency_ms};
    wake_decide_after_llm(&WAKE_LLM_READER, &s->wj, &a, now, &d);
    vigil_decide_result r = wake_commit_decision(w->svc, w->jw.conn, &d, now);
    if (r == VIGIL_DECIDE_DONE) {
        char labels[96];
        snprintf(labels, sizeof labels, "tier=\"%s\",via=\"%s\",wake=\"%s\"",
                 wake_tier_name(d.tier), wake_via_name(d.via), d.should_wake ? "true" : "false");
        vigil_counter_add("vigil_wake_decisions_total", "Wake decisions published", labels, 1);
        if (s->tokens > 0)
            vigil_counter_add("vigil_wake_tokens_spent_total", "LLM tokens spent (usage)",
                              "kind=\"wake\"", (double)s->tokens);
        vigil_histogram_observe("vigil_wake_decision_seconds",
                                "Message intake to committed LLM-tier decision", NULL,
                                (double)d.latency_ms / 1000.0);
        if (d.via == WAKE_VIA_FALLBACK)
            vigil_log_kv(VIGIL_LOG_INFO, "wake decided by the rules (fallback)", "job", d.id,
                         "why", d.reason, NULL);
    }
    return r;
}

static vigil_decide_result finish_autopilot(wake_worker *w, slot *s, int64_t now)
{
    char note[300];
    llm_note(s, note, sizeof note);
    bool ok = s->status == VIGIL_LLM_OK && s->content;
    wake_ap_outcome o = {s->aj.job, s->aj.room, ok ? s->content : NULL, ok ? s->len : 0,
                         ok ? NULL : note,
                         s->tokens > 0 ? s->tokens : (s->status == VIGIL_LLM_OK ? 0 : -1)};
    vigil_decide_result r = wake_commit_autopilot(w->svc, w->jw.conn, &o, now);
    if (r == VIGIL_DECIDE_DONE && s->tokens > 0)
        vigil_counter_add("vigil_wake_tokens_spent_total", "LLM tokens spent (usage)",
                          "kind=\"autopilot\"", (double)s->tokens);
    return r;
}

static vigil_decide_result commit(void *arg, void *sarg)
{
    wake_worker *w = arg;
    slot *s = sarg;
    if (s->spared)
        return VIGIL_DECIDE_DONE; /* nothing to commit: no decision */
    int64_t now = vigil_now_ms(), t0 = vigil_mono_ms();
    vigil_decide_result r =
        s->kind == WAKE_JOB_WAKE ? finish_wake(w, s, now) : finish_autopilot(w, s, now);
    vigil_histogram_observe("vigil_wake_commit_seconds", "Time to commit one finished job", NULL,
                            (double)(vigil_mono_ms() - t0) / 1000.0);
    return r;
}

static const vigil_job_loop_ops LOOP_OPS = {
    .slot_size = sizeof(slot),
    .parse = parse,
    .ids = ids,
    .submit = submit,
    .ready = ready,
    .commit = commit,
    .clear = slot_clear,
    .count = count_job,
    .on_done = on_done,
    .done_outcome = "decided",
    .resumed_metric = "vigil_wake_jobs_resumed_total",
    .resumed_help = "Own pending jobs handled again after a restart",
    .reclaimed_metric = "vigil_wake_jobs_reclaimed_total",
    .reclaimed_help = "Jobs taken over from a consumer idle past the lease",
    .in_flight_metric = "vigil_wake_jobs_in_flight",
    .in_flight_help = "Jobs a worker holds (LLM call or commit)",
};

static void *worker_new(void *ctx, vigil_runtime *rt, int index)
{
    wake_service *svc = ctx;
    wake_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    w->index = index;
    char consumer[200];
    snprintf(consumer, sizeof consumer, "%s-w%d", svc->instance, index);
    vigil_job_loop_config lc = {.stop = &svc->stop, .llm = &svc->llm, .group = WAKE_GROUP,
                                .consumer = consumer, .lease_ms = svc->lease_ms,
                                .cap = svc->max_inflight, .block_ms = (int)svc->block_ms,
                                .index = index};
    if (vigil_job_worker_open(&w->jw, rt, &LOOP_OPS, w, WAKE_STREAM, &lc) != 0) {
        vigil_job_worker_drop(w);
        return NULL;
    }
    return w;
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = vigil_job_worker_run, .wake = vigil_job_worker_wake,
    .drop = vigil_job_worker_drop};

int wake_start(void *ctx, vigil_runtime *rt)
{
    wake_service *svc = ctx;
    svc->rt = rt;
    vigil_stream_trim_declare(WAKE_STREAM);
    if (vigil_workers_start(&svc->pool, &WORKER_OPS, svc->workers, svc, rt) < 0)
        return -1;
    vigil_log_kv(VIGIL_LOG_INFO, "job workers started", "llm",
                 svc->core.llm_enabled ? svc->llm.url : "(none: rules only)", NULL);
    return 0;
}

void wake_stop(void *ctx)
{
    wake_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    vigil_workers_stop(&svc->pool);
}
