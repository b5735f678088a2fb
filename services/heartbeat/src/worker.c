/* worker.c - the run worker: a thread beside intake that takes heartbeat
 * runs from the durable job stream, asks the model (several at once on one
 * curl multi handle), and commits each run's outcome on its persona record
 * through vigil_runtime_decide, deduplicated by the run id, before the job
 * is acknowledged.
 *
 * A run is never lost and never sent twice (the loop is libshared's,
 * vigil/job_loop.h; what a run is, its call and its commit are this file's
 * hooks):
 *   - after a start, this consumer's own pending jobs come first (a kill -9
 *     mid-run: the model is asked again, the commit happens once);
 *   - jobs of a replica that died are taken over once idle past the lease
 *     (XAUTOCLAIM), and the lease lasts at least one request's budget;
 *   - the commit publishes only if the record still waits for that run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/job_loop.h>
#include <vigil/json.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include <vigil/workers.h>
#include "adapter.h"

/* One run in hand (vigil/job_loop.h holds the slots). */
typedef struct run_slot {
    bool done;
    hb_job job;
    bool ok;
    char *content;
    size_t len;
    int64_t tokens;
    char error[200];
} run_slot;

struct hb_worker {
    vigil_job_worker jw; /* first: the worker is its vigil_job_worker */
    hb_service *svc;
};

static void run_clear(void *arg)
{
    run_slot *s = arg;
    hb_job_clear(&s->job);
    free(s->content);
}

static void answer_in(const vigil_llm_result *res, void *user)
{
    run_slot *s = user;
    s->done = true;
    s->ok = res->status == VIGIL_LLM_OK && res->content;
    s->tokens = res->total_tokens;
    if (s->ok) {
        s->content = malloc(res->content_len + 1);
        if (s->content) {
            memcpy(s->content, res->content, res->content_len);
            s->content[res->content_len] = '\0';
            s->len = res->content_len;
        } else {
            s->ok = false;
            snprintf(s->error, sizeof s->error, "out of memory keeping the answer");
        }
    } else {
        const char *why = res->error ? res->error : "";
        snprintf(s->error, sizeof s->error, "LLM %s: %.*s", vigil_llm_status_name(res->status),
                 (int)vigil_utf8_cut_max(why, 150), why);
    }
}

static int read_run(void *arg, void *sarg, const char *payload, size_t len, char *why,
                    size_t whylen)
{
    run_slot *s = sarg;
    if (hb_job_parse(payload, len, &s->job, why, whylen) == 0)
        return 0;
    hb_job_clear(&s->job);
    return -1;
}

/* The persona's record dedupes runs by run id. */
static void run_ids(const void *sarg, const char **key, const char **job)
{
    const run_slot *s = sarg;
    *key = s->job.persona;
    *job = s->job.run;
}

/* The persona's record opened for a decision; unreadable: err says why. */
static int open_record(hb_state *s, hb_out *out, const char *key, const char *state_json,
                       vigil_error *err)
{
    char why[160];
    if (hb_record_open(s, out, key, state_json, why, sizeof why) != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "record of %s: %s", key, why);
    return 0;
}

typedef struct wanted_arg {
    const char *run;
    bool wanted;
} wanted_arg;

/* Would the answer to this run be used (hb_run_wanted)? */
static int peek_wanted(void *arg, const char *key, const char *state_json)
{
    wanted_arg *a = arg;
    hb_state s;
    hb_out out;
    char why[160];
    if (hb_record_open(&s, &out, key, state_json, why, sizeof why) != 0)
        return -1;
    a->wanted = hb_run_wanted(&s, a->run);
    hb_record_close(&s, &out);
    return 0;
}

/* A run queued before its heartbeat was switched off, configured anew or
 * deleted (its job waited for a slot) is not worth a model call: its
 * answer would be ignored. One read of the record, as step 1 of the job loop reads Redis
 * anyway; a failed read asks the model (the commit decides as before). */
static bool run_wanted(hb_worker *w, const run_slot *s)
{
    wanted_arg a = {s->job.run, true};
    return vigil_runtime_peek(w->jw.conn, s->job.persona, peek_wanted, &a) != 0 || a.wanted;
}

static void ask_model(void *arg, void *sarg)
{
    hb_worker *w = arg;
    run_slot *s = sarg;
    if (!run_wanted(w, s)) {
        s->done = true;
        s->ok = false;
        snprintf(s->error, sizeof s->error, "not asked: the heartbeat is off or deleted");
        vigil_counter_add("vigil_heartbeat_calls_spared_total",
                          "Runs not sent to the model: switched off or deleted while queued",
                          NULL, 1);
        return;
    }
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.tier = VIGIL_LLM_TIER_FAST; /* the "fast" engine, to save cost */
    req.model = s->job.model[0] ? s->job.model : NULL;
    req.max_tokens = s->job.max_tokens > 0 ? s->job.max_tokens : w->svc->core.max_tokens;
    req.user = s->job.prompt;
    if (vigil_llm_submit(vigil_job_loop_llm(w->jw.loop), &req, s) != 0) {
        s->done = true;
        s->ok = false;
        snprintf(s->error, sizeof s->error, "the LLM client refused the request");
    }
}

static bool run_answered(void *arg, void *sarg)
{
    const run_slot *s = sarg;
    return s->done;
}

typedef struct result_arg {
    hb_service *svc;
    const hb_run_result *r;
    hb_run_note run;         /* what the last decision's run event said */
    const char *limit;       /* a bound the core reached (hb_out.limit), NULL none */
    char limit_detail[HB_LIMIT_DETAIL_MAX];
} result_arg;

static int decide_result(void *arg, const char *key, const char *state_json, int64_t now_ms,
                         vigil_effects *fx, vigil_error *err)
{
    result_arg *a = arg;
    hb_state s;
    hb_out out;
    if (open_record(&s, &out, key, state_json, err) != 0)
        return -1;
    int rc = 0;
    if (hb_on_result(&s, &a->svc->core, a->r, now_ms, &out) != HB_OK ||
        hb_out_to_fx(a->svc, key, &s, &out, fx) != 0)
        rc = vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory committing %s", a->r->run);
    a->limit = out.limit;
    snprintf(a->limit_detail, sizeof a->limit_detail, "%s", out.limit_detail);
    a->run = out.run; /* a decision retried on a conflict: the last one's */
    hb_record_close(&s, &out);
    return rc;
}

/* The log lines of a committed run: "heartbeat: no action needed" with
 * the consecutive skips, "heartbeat: proactive message sent", "heartbeat:
 * VoI blocked message" with the score and its reasoning, "heartbeat:
 * sandbox blocked proactive message" (info), and "heartbeat run failed"
 * (error: the model call failed or its answer was unusable). Written after
 * the commit, so a decision retried on a conflict logs once; other outcomes
 * are in the run event and the metrics. */
static void log_run(const char *persona, const hb_run_note *n)
{
    char num[32];
    if (strcmp(n->outcome, "ok") == 0) {
        snprintf(num, sizeof num, "%d", n->consecutive_skips);
        vigil_log_kv(VIGIL_LOG_INFO, "heartbeat: no action needed", "persona", persona, "run",
                     n->run, "consecutive_skips", num, NULL);
    } else if (strcmp(n->outcome, "sent") == 0) {
        snprintf(num, sizeof num, "%zu", n->message_bytes);
        vigil_log_kv(VIGIL_LOG_INFO, "heartbeat: proactive message sent", "persona", persona,
                     "run", n->run, "length", num, NULL);
    } else if (strcmp(n->outcome, "voi-blocked") == 0) {
        vigil_log_kv(VIGIL_LOG_INFO, "heartbeat: VoI blocked message", "persona", persona, "run",
                     n->run, "score", n->voi, "reasoning", n->detail, NULL);
    } else if (strcmp(n->outcome, "permission-blocked") == 0) {
        vigil_log_kv(VIGIL_LOG_INFO, "heartbeat: sandbox blocked proactive message", "persona",
                     persona, "run", n->run, "detail", n->detail, NULL);
    } else if (strcmp(n->outcome, "error") == 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "heartbeat run failed", "persona", persona, "run", n->run,
                     "reason", n->reason ? n->reason : "", "detail", n->detail, NULL);
    }
}

static vigil_decide_result commit_run(void *arg, void *sarg)
{
    hb_worker *w = arg;
    run_slot *s = sarg;
    hb_run_result r = {s->job.run, s->ok, s->content, s->len, s->error, s->tokens};
    result_arg a = {.svc = w->svc, .r = &r};
    vigil_error err = {0};
    vigil_decide_result d = vigil_runtime_decide(w->svc->rt, w->jw.conn, s->job.persona, s->job.run,
                                                 vigil_now_ms(), decide_result, &a, &err);
    if (d == VIGIL_DECIDE_DONE) {
        char labels[64];
        snprintf(labels, sizeof labels, "outcome=\"%s\"", a.run.outcome ? a.run.outcome : "stale");
        if (a.run.outcome)
            log_run(s->job.persona, &a.run);
        vigil_counter_add("vigil_heartbeat_runs_total", "Runs the model answered, by outcome",
                          labels, 1);
        if (s->tokens > 0)
            vigil_counter_add("vigil_heartbeat_tokens_total", "LLM tokens spent on heartbeat runs",
                              NULL, (double)s->tokens);
        /* a job's commit has no input to answer on sys/heartbeat/error:
         * the run's detail says it, and the log line and count here */
        if (a.limit)
            vigil_limit_note(a.limit, a.limit_detail);
    } else if (d == VIGIL_DECIDE_REJECTED) {
        vigil_log_kv(VIGIL_LOG_ERROR, "run outcome not committed", "run", s->job.run, "detail",
                     err.detail, NULL);
    }
    return d;
}

static const vigil_job_loop_ops LOOP_OPS = {
    .slot_size = sizeof(run_slot),
    .parse = read_run,
    .ids = run_ids,
    .submit = ask_model,
    .ready = run_answered,
    .commit = commit_run,
    .clear = run_clear,
    /* no .count: runs are counted by their outcome at the commit */
    .on_done = answer_in,
    .done_outcome = "committed",
    .reclaimed_metric = "vigil_heartbeat_runs_reclaimed_total",
    .reclaimed_help = "Runs taken over from a replica idle past the lease",
};

/* One worker, consumer name the instance's (its pending runs are found
 * again after a restart); as many runs in hand as the LLM client runs. */
static void *worker_new(void *ctx, vigil_runtime *rt, int index)
{
    hb_service *svc = ctx;
    hb_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    vigil_job_loop_config lc = {.stop = &svc->stop, .llm = &svc->llm, .group = HB_GROUP,
                                .consumer = svc->instance, .lease_ms = svc->lease_ms,
                                .cap = svc->llm.concurrency, .block_ms = 200, .index = index};
    if (vigil_job_worker_open(&w->jw, rt, &LOOP_OPS, w, svc->stream, &lc) != 0) {
        vigil_job_worker_drop(w);
        return NULL;
    }
    return w;
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = vigil_job_worker_run, .wake = vigil_job_worker_wake,
    .drop = vigil_job_worker_drop};

int hb_start(void *ctx, vigil_runtime *rt)
{
    hb_service *svc = ctx;
    svc->rt = rt;
    vigil_stream_trim_declare(HB_STREAM_LABEL);
    if (vigil_workers_start(&svc->pool, &WORKER_OPS, 1, svc, rt) < 0)
        return -1;
    vigil_log_kv(VIGIL_LOG_INFO, "run worker started", "llm",
                 svc->core.llm_enabled ? svc->llm.url : "(none: every run skips with no-llm)", NULL);
    return 0;
}

void hb_stop(void *ctx)
{
    hb_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    vigil_workers_stop(&svc->pool);
}
