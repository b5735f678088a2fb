/* worker.c - the job workers: threads beside intake that take loop jobs
 * from the durable stream and run a loop's two stages: PLAN asks the three
 * advisors (Polaris, Aurora, Vega) at once (three requests on one curl
 * multi handle per worker), then ACT asks Sol with the SENSE context plus
 * their answers and the user's availability; then delegate a `research:`
 * proposal over A2A when configured, and commit the loop through
 * vigil_runtime_decide before acknowledging the job.
 *
 * Both stages run inside the one job attempt and nothing of the first is
 * committed on its own: a kill -9 anywhere before the commit leaves the
 * job pending, so the next attempt asks the advisors and Sol again and the
 * commit (deduplicated by the job id) acts once; a kill after the commit
 * finds the job decided and only acknowledges it. The lease must
 * therefore cover two model round trips (and a delegation).
 *
 * The loop is libshared's (vigil/job_loop.h): jobs taken in
 * vigil/job_consumer.h's order -- after a start this consumer's own pending
 * jobs first (a kill -9 never drops a loop: it is run again, and the
 * commit's dedupe by job id acts once), then jobs idle past the lease, then
 * new ones -- the LLM transfers driven, what finished committed, then XACK +
 * XDEL. What a loop job is, its four calls, its delegation and its commit
 * are this file's hooks. A job is acknowledged only after its loop is
 * durable (or was already committed, or cannot be parsed at all). The A2A
 * call runs on the worker's delegation thread (delegate.c), so the other
 * loops' calls go on meanwhile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/job_loop.h>
#include <vigil/json.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"
#include "delegate.h"

typedef struct call {
    struct slot *slot;
    bool done;
    int status;
    char *content;
    char error[200];
    int64_t tokens;
} call;

typedef enum { A2A_UNDECIDED = 0, A2A_NONE, A2A_PENDING, A2A_DONE } a2a_step;

/* One loop in hand (vigil/job_loop.h holds the slots). */
typedef struct slot {
    council_job job;
    call calls[COUNCIL_PERSONAS];
    bool sol_asked;           /* ACT: Sol's call submitted (after the advisors') */
    char *sol_prompt;         /* Sol's whole prompt (council_sol_prompt) */
    a2a_step a2a;
    council_a2a_reply *reply; /* research: delegated (A2A_PENDING, A2A_DONE) */
    atomic_int a2a_done;      /* set by the delegation thread */
} slot;

struct council_worker {
    vigil_job_worker jw; /* first: the worker is its vigil_job_worker */
    council_service *svc;
    int index;
    council_delegator *delegator;
    int a2a_pending;
};

static void count_loop(const void *s, const char *outcome)
{
    char labels[64];
    snprintf(labels, sizeof labels, "outcome=\"%s\"", outcome);
    vigil_counter_add("vigil_council_jobs_total", "Loop jobs finished by the workers, by outcome",
                      labels, 1);
}

static void loop_clear(void *arg)
{
    slot *s = arg;
    council_job_clear(&s->job);
    free(s->sol_prompt);
    free(s->reply);
    for (int p = 0; p < COUNCIL_PERSONAS; p++)
        free(s->calls[p].content);
}

static void call_done(const vigil_llm_result *res, void *user)
{
    call *c = user;
    c->done = true;
    c->status = (int)res->status;
    c->tokens = res->total_tokens;
    vigil_utf8_snprintf(c->error, sizeof c->error, "%s%s%s", vigil_llm_status_name(res->status),
             res->error && res->error[0] ? ": " : "", res->error ? res->error : "");
    if (res->status == VIGIL_LLM_OK && res->content) {
        c->content = malloc(res->content_len + 1);
        if (c->content) {
            memcpy(c->content, res->content, res->content_len);
            c->content[res->content_len] = '\0';
        }
    }
}

static void ask(council_worker *w, slot *s, council_persona p, const char *prompt)
{
    call *c = &s->calls[p];
    c->slot = s;
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.tier = VIGIL_LLM_TIER_SMART;
    req.user = prompt;
    req.max_tokens = w->svc->max_tokens;
    req.temperature = 0.7;
    if (!prompt || vigil_llm_submit(vigil_job_loop_llm(w->jw.loop), &req, c) != 0) {
        c->done = true;
        c->status = VIGIL_LLM_STATUS__COUNT;
        snprintf(c->error, sizeof c->error,
                 prompt ? "the LLM client refused the request" : "out of memory building the prompt");
    }
}

/* PLAN: the three advisors at once; Sol waits for their answers. */
static void ask_advisors(void *arg, void *sarg)
{
    council_worker *w = arg;
    slot *s = sarg;
    for (int p = 0; p < COUNCIL_SOL; p++)
        ask(w, s, (council_persona)p, s->job.prompts[p]);
}

/* ACT: Sol asked with the job's context plus what the advisors answered
 * (a failed one as its "(no answer: ...)" text) and the user's
 * availability. Called from loop_ready once the three are in: the job
 * loop drives Sol's transfer on its next turns. */
static void ask_sol(council_worker *w, slot *s)
{
    const char *answers[COUNCIL_PERSONAS] = {0}, *errors[COUNCIL_PERSONAS] = {0};
    for (int p = 0; p < COUNCIL_SOL; p++) {
        answers[p] = s->calls[p].status == VIGIL_LLM_OK ? s->calls[p].content : NULL;
        errors[p] = s->calls[p].error;
    }
    s->sol_prompt = council_sol_prompt(s->job.prompts[COUNCIL_SOL], answers, errors,
                                       s->job.available, s->job.presence);
    s->sol_asked = true;
    ask(w, s, COUNCIL_SOL, s->sol_prompt);
}

static int read_loop_job(void *arg, void *sarg, const char *payload, size_t len, char *why,
                         size_t whylen)
{
    slot *s = sarg;
    return council_job_parse(payload, len, &s->job, why, whylen);
}

/* The user's record dedupes loops by job id. */
static void loop_ids(const void *sarg, const char **key, const char **job)
{
    const slot *s = sarg;
    *key = s->job.user;
    *job = s->job.job;
}

/* Are calls [from, to) all in? */
static bool calls_done(const slot *s, int from, int to)
{
    for (int p = from; p < to; p++)
        if (!s->calls[p].done)
            return false;
    return true;
}

/* Sol proposed research: and an endpoint is configured: hand the
 * delegation to the delegation thread, so the artifact is committed with
 * the loop; otherwise the loop can be committed now. */
static void delegation_start(council_worker *w, slot *s)
{
    const council_service *svc = w->svc;
    council_routed r;
    council_route(s->calls[COUNCIL_SOL].content, &r);
    s->a2a = A2A_NONE;
    if (!svc->core.a2a_enabled || r.action != COUNCIL_ACT_RESEARCH || !s->calls[COUNCIL_SOL].content)
        return;
    s->reply = calloc(1, sizeof *s->reply);
    char *topic = strndup(r.content, r.content_len);
    char *body = topic ? council_a2a_request(svc->a2a_method, s->job.job, topic) : NULL;
    free(topic);
    if (!s->reply || !body) {
        free(body);
        if (s->reply) {
            snprintf(s->reply->error, sizeof s->reply->error, "out of memory building the request");
            s->a2a = A2A_DONE;
        }
        return;
    }
    atomic_store(&s->a2a_done, 0);
    if (council_delegator_submit(w->delegator, s->job.job, body, s->reply, &s->a2a_done) != 0) {
        free(body);
        snprintf(s->reply->error, sizeof s->reply->error, "delegation queue full");
        s->a2a = A2A_DONE;
        return;
    }
    s->a2a = A2A_PENDING;
    w->a2a_pending++;
}

/* A loop is ready once its advisors have answered, then Sol, and its
 * delegation (if any) is over: each step starts when the one before is
 * in. */
static bool loop_ready(void *arg, void *sarg)
{
    council_worker *w = arg;
    slot *s = sarg;
    if (!calls_done(s, 0, COUNCIL_SOL))
        return false;
    if (!s->sol_asked)
        ask_sol(w, s);
    if (!calls_done(s, COUNCIL_SOL, COUNCIL_PERSONAS))
        return false;
    if (s->a2a == A2A_UNDECIDED)
        delegation_start(w, s);
    if (s->a2a == A2A_PENDING && atomic_load(&s->a2a_done)) {
        s->a2a = A2A_DONE;
        w->a2a_pending--;
    }
    return s->a2a == A2A_NONE || s->a2a == A2A_DONE;
}

static vigil_decide_result commit_loop(void *arg, void *sarg)
{
    council_worker *w = arg;
    slot *s = sarg;
    council_outcome o = {0};
    o.job = s->job.job;
    o.session = s->job.session;
    o.loop = s->job.loop;
    int64_t tokens = 0;
    for (int p = 0; p < COUNCIL_PERSONAS; p++) {
        call *c = &s->calls[p];
        o.answers[p] = c->status == VIGIL_LLM_OK ? c->content : NULL;
        o.errors[p] = c->error;
        tokens += c->tokens > 0 ? c->tokens : 0;
    }
    if (s->a2a == A2A_DONE && s->reply) {
        o.a2a_tried = true;
        o.a2a = s->reply;
    }
    vigil_decide_result r =
        council_commit_outcome(w->svc, w->jw.conn, s->job.user, &o, vigil_now_ms());
    if (r == VIGIL_DECIDE_DONE && tokens > 0)
        vigil_counter_add("vigil_council_tokens_total", "LLM tokens spent (usage)", NULL,
                          (double)tokens);
    return r;
}

/* Only delegations in flight: do not spin. */
static void wait_for_delegations(void *arg)
{
    council_worker *w = arg;
    if (vigil_llm_pending(vigil_job_loop_llm(w->jw.loop)) == 0 && w->a2a_pending > 0)
        vigil_sleep_ms(20, NULL);
}

static const vigil_job_loop_ops LOOP_OPS = {
    .slot_size = sizeof(slot),
    .parse = read_loop_job,
    .ids = loop_ids,
    .submit = ask_advisors,
    .ready = loop_ready,
    .commit = commit_loop,
    .clear = loop_clear,
    .count = count_loop,
    .after_llm = wait_for_delegations,
    .on_done = call_done,
    .done_outcome = "committed",
    .resumed_metric = "vigil_council_jobs_resumed_total",
    .resumed_help = "Own pending loop jobs run again after a restart",
    .reclaimed_metric = "vigil_council_jobs_reclaimed_total",
    .reclaimed_help = "Loop jobs taken over from a consumer idle past the lease",
};

static void worker_free(void *arg)
{
    council_worker *w = arg;
    if (!w)
        return;
    council_delegator_free(w->delegator); /* first: it writes into the slots */
    vigil_job_worker_drop(w);
}

static void *worker_new(void *ctx, vigil_runtime *rt, int index)
{
    council_service *svc = ctx;
    council_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    w->index = index;
    int cap = council_loops_per_worker(svc->llm.concurrency);
    char consumer[200];
    snprintf(consumer, sizeof consumer, "%s-w%d", svc->instance, index);
    vigil_job_loop_config lc = {.stop = &svc->stop, .llm = &svc->llm, .group = COUNCIL_GROUP,
                                .consumer = consumer, .lease_ms = svc->lease_ms, .cap = cap,
                                .block_ms = (int)svc->block_ms, .index = index};
    int rc = vigil_job_worker_open(&w->jw, rt, &LOOP_OPS, w, COUNCIL_STREAM, &lc);
    /* the delegation thread wakes the worker when a reply is in */
    if (rc == 0 && svc->core.a2a_enabled)
        w->delegator = council_delegator_new(svc, cap, vigil_job_worker_wake, w);
    if (rc != 0 || (svc->core.a2a_enabled && !w->delegator)) {
        worker_free(w);
        return NULL;
    }
    return w;
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = vigil_job_worker_run, .wake = vigil_job_worker_wake,
    .drop = worker_free};

int council_start(void *ctx, vigil_runtime *rt)
{
    council_service *svc = ctx;
    svc->rt = rt;
    vigil_stream_trim_declare(COUNCIL_STREAM);
    if (vigil_workers_start(&svc->pool, &WORKER_OPS, svc->workers, svc, rt) < 0)
        return -1;
    vigil_log_kv(VIGIL_LOG_INFO, "job workers started", "llm",
                 svc->core.llm_enabled ? svc->llm.url : "(none: sessions do not start)", "a2a",
                 svc->core.a2a_enabled ? svc->a2a_url : "(none: research is not delegated)", NULL);
    return 0;
}

void council_stop(void *ctx)
{
    council_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    vigil_workers_stop(&svc->pool);
}
