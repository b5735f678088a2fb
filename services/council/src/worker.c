/* worker.c - the job workers: threads beside intake that take loop jobs
 * from the durable stream, ask Polaris, Aurora, Vega and Sol at once (four
 * requests on one curl multi handle per worker), delegate a `research:`
 * proposal over A2A when configured, and commit the loop through
 * vigil_runtime_decide before acknowledging the job.
 *
 * Order of work in one worker loop:
 *   1. take jobs in libshared's order (vigil/job_consumer.h): after a
 *      start this consumer's own pending jobs first -- a kill -9 never
 *      drops a loop: it is run again, and the commit's dedupe by job id
 *      acts once -- then jobs idle past the lease, then new ones;
 *   2. drive the LLM transfers; 3. commit what finished, then XACK + XDEL.
 * A job is acknowledged only after its loop is durable (or was already
 * committed, or cannot be parsed at all). The A2A call runs on the worker's
 * delegation thread (delegate.c), so the other loops' calls go on meanwhile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/job_consumer.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include <vigil/job_acks.h>
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

typedef struct slot {
    bool used;
    char entry[48];
    council_job job;
    call calls[COUNCIL_PERSONAS];
    a2a_step a2a;
    council_a2a_reply *reply; /* research: delegated (A2A_PENDING, A2A_DONE) */
    atomic_int a2a_done;      /* set by the delegation thread */
} slot;

struct council_worker {
    council_service *svc;
    int index;
    vigil_runtime_conn *conn;
    vigil_llm_client *llm;
    vigil_job_consumer jobs;
    council_delegator *delegator;
    int a2a_pending;
    slot *slots;
    int cap, used;
    vigil_job_acks acks; /* finished entries not yet acknowledged */
    int errors;
    int64_t next_read; /* monotonic ms: backoff after a Redis error */
};

static bool stopping(const council_worker *w)
{
    return atomic_load(&w->svc->stop) || vigil_runtime_stopping(w->svc->rt);
}

static void count_job(const char *outcome)
{
    char labels[64];
    snprintf(labels, sizeof labels, "outcome=\"%s\"", outcome);
    vigil_counter_add("vigil_council_jobs_total", "Loop jobs finished by the workers, by outcome",
                      labels, 1);
}

static void slot_release(council_worker *w, slot *s)
{
    council_job_clear(&s->job);
    free(s->reply);
    for (int p = 0; p < COUNCIL_PERSONAS; p++)
        free(s->calls[p].content);
    memset(s, 0, sizeof *s);
    w->used--;
}

static bool in_flight(const council_worker *w, const char *entry)
{
    for (int i = 0; i < w->cap; i++)
        if (w->slots[i].used && strcmp(w->slots[i].entry, entry) == 0)
            return true;
    return false;
}

/* Acknowledgements are batched (vigil/job_acks.h): one XACK + XDEL round
 * trip per loop turn. */
static void flush_acks(council_worker *w)
{
    vigil_job_acks_flush(&w->acks, vigil_runtime_conn_redis(w->conn), w->jobs.stream,
                         COUNCIL_GROUP);
}

static void finish_entry(council_worker *w, const char *entry)
{
    vigil_job_acks_add(&w->acks, vigil_runtime_conn_redis(w->conn), w->jobs.stream, COUNCIL_GROUP,
                       entry);
}

static void backoff(council_worker *w, const char *what)
{
    w->next_read =
        vigil_mono_ms() + vigil_job_backoff(&w->errors, vigil_runtime_conn_redis(w->conn), what);
}

static void on_done(const vigil_llm_result *res, void *user)
{
    call *c = user;
    c->done = true;
    c->status = (int)res->status;
    c->tokens = res->total_tokens;
    snprintf(c->error, sizeof c->error, "%s%s%s", vigil_llm_status_name(res->status),
             res->error && res->error[0] ? ": " : "", res->error ? res->error : "");
    if (res->status == VIGIL_LLM_OK && res->content) {
        c->content = malloc(res->content_len + 1);
        if (c->content) {
            memcpy(c->content, res->content, res->content_len);
            c->content[res->content_len] = '\0';
        }
    }
}

static void submit(council_worker *w, slot *s)
{
    for (int p = 0; p < COUNCIL_PERSONAS; p++) {
        call *c = &s->calls[p];
        c->slot = s;
        vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
        req.tier = VIGIL_LLM_TIER_SMART;
        req.user = s->job.prompts[p];
        req.max_tokens = w->svc->max_tokens;
        req.temperature = 0.7;
        if (vigil_llm_submit(w->llm, &req, c) != 0) {
            c->done = true;
            c->status = VIGIL_LLM_STATUS__COUNT;
            snprintf(c->error, sizeof c->error, "the LLM client refused the request");
        }
    }
}

/* Has the user's record already committed this loop (a restart after the
 * commit but before the XACK)? Then the personas need not be asked again. */
static int already_decided(council_worker *w, const char *user, const char *job)
{
    char suffix[VIGIL_KEY_MAX + 8], key[2 * VIGIL_KEY_MAX + 64];
    snprintf(suffix, sizeof suffix, "ids:%s", user);
    vigil_runtime_key(w->svc->rt, suffix, key, sizeof key);
    return vigil_jobs_decided(vigil_runtime_conn_redis(w->conn), key, job);
}

static slot *free_slot(council_worker *w)
{
    for (int i = 0; i < w->cap; i++)
        if (!w->slots[i].used)
            return &w->slots[i];
    return NULL;
}

static void start_entry(council_worker *w, const vigil_job_entry *e, bool fresh)
{
    if (!e->payload) {
        finish_entry(w, e->id);
        return;
    }
    if (in_flight(w, e->id))
        return;
    slot *s = free_slot(w);
    if (!s)
        return; /* stays pending: read again later */
    char why[200];
    if (council_job_parse(e->payload, e->len, &s->job, why, sizeof why) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "job unreadable: dropped", "entry", e->id, "detail", why,
                     NULL);
        count_job("invalid");
        finish_entry(w, e->id);
        return;
    }
    s->used = true;
    w->used++;
    snprintf(s->entry, sizeof s->entry, "%s", e->id);
    if (!fresh && already_decided(w, s->job.user, s->job.job) == 1) {
        count_job("duplicate");
        finish_entry(w, e->id);
        slot_release(w, s);
        return;
    }
    submit(w, s);
}

static bool slot_done(const slot *s)
{
    for (int p = 0; p < COUNCIL_PERSONAS; p++)
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

static void finish_slot(council_worker *w, slot *s)
{
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
    vigil_decide_result r = council_commit_outcome(w->svc, w->conn, s->job.user, &o, vigil_now_ms());
    switch (r) {
    case VIGIL_DECIDE_DONE:
        count_job("committed");
        if (tokens > 0)
            vigil_counter_add("vigil_council_tokens_total", "LLM tokens spent (usage)", NULL,
                              (double)tokens);
        finish_entry(w, s->entry);
        break;
    case VIGIL_DECIDE_DUPLICATE:
        count_job("duplicate");
        finish_entry(w, s->entry);
        break;
    case VIGIL_DECIDE_REJECTED:
        count_job("rejected");
        finish_entry(w, s->entry);
        break;
    case VIGIL_DECIDE_GAVE_UP:
    default:
        count_job("deferred"); /* shutting down with Redis away: stays pending */
        break;
    }
    slot_release(w, s);
}

/* Takes at most the free slots' worth of jobs, in libshared's order (own
 * pending after a restart, then jobs idle past the lease, then new ones,
 * blocking briefly only when idle). */
static void fill(council_worker *w)
{
    int64_t mono = vigil_mono_ms();
    int room = w->cap - w->used;
    if (room <= 0 || mono < w->next_read)
        return;
    bool idle = w->used == 0 && vigil_llm_pending(w->llm) == 0;
    vigil_job_entries es = {0};
    vigil_jobs_origin origin;
    if (vigil_job_consumer_next(&w->jobs, vigil_runtime_conn_redis(w->conn), room,
                                idle ? (int)w->svc->block_ms : 0, mono, &es, &origin) != 0) {
        backoff(w, "XREADGROUP");
        return;
    }
    w->errors = 0;
    if (es.n > 0 && origin == VIGIL_JOBS_OWN_PENDING)
        vigil_counter_add("vigil_council_jobs_resumed_total",
                          "Own pending loop jobs run again after a restart", NULL, es.n);
    else if (es.n > 0 && origin == VIGIL_JOBS_RECLAIMED)
        vigil_counter_add("vigil_council_jobs_reclaimed_total",
                          "Loop jobs taken over from a consumer idle past the lease", NULL, es.n);
    for (int i = 0; i < es.n && !stopping(w); i++)
        start_entry(w, &es.v[i], origin == VIGIL_JOBS_NEW);
    vigil_job_entries_free(&es);
}

static void *worker_main(void *arg)
{
    council_worker *w = arg;
    while (!stopping(w)) {
        fill(w);
        if (vigil_llm_pending(w->llm) > 0) {
            if (vigil_llm_run(w->llm, w->used < w->cap ? 20 : 100, on_done) < 0)
                vigil_log(VIGIL_LOG_ERROR, "LLM client: internal curl error");
        } else if (w->used == 0 && vigil_mono_ms() < w->next_read) {
            vigil_sleep_ms(50, NULL);
        }
        if (vigil_llm_pending(w->llm) == 0 && w->a2a_pending > 0)
            vigil_sleep_ms(20, NULL); /* only delegations in flight: do not spin */
        for (int i = 0; i < w->cap && !stopping(w); i++) {
            slot *s = &w->slots[i];
            if (!s->used || !slot_done(s))
                continue;
            if (s->a2a == A2A_UNDECIDED)
                delegation_start(w, s);
            if (s->a2a == A2A_PENDING && atomic_load(&s->a2a_done)) {
                s->a2a = A2A_DONE;
                w->a2a_pending--;
            }
            if (s->a2a == A2A_NONE || s->a2a == A2A_DONE)
                finish_slot(w, s);
        }
        flush_acks(w);
    }
    flush_acks(w);
    return NULL;
}

static void worker_free(void *arg)
{
    council_worker *w = arg;
    if (!w)
        return;
    council_delegator_free(w->delegator); /* first: it writes into the slots */
    vigil_llm_client_free(w->llm); /* abandons calls in flight: their jobs stay pending */
    for (int i = 0; w->slots && i < w->cap; i++) {
        council_job_clear(&w->slots[i].job);
        free(w->slots[i].reply);
        for (int p = 0; p < COUNCIL_PERSONAS; p++)
            free(w->slots[i].calls[p].content);
    }
    free(w->slots);
    vigil_job_acks_free(&w->acks);
    vigil_runtime_conn_close(w->conn);
    free(w);
}

/* Called by the delegation thread: a reply is in. */
static void wake_worker(void *arg)
{
    council_worker *w = arg;
    vigil_llm_wakeup(w->llm);
}

static void *worker_new(void *ctx, vigil_runtime *rt, int index)
{
    council_service *svc = ctx;
    council_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    w->index = index;
    /* four calls per loop: hold as many loops as the client runs calls */
    w->cap = svc->llm.concurrency / COUNCIL_PERSONAS;
    if (w->cap < 1)
        w->cap = 1;
    w->slots = calloc((size_t)w->cap, sizeof *w->slots);
    int acks_ok = vigil_job_acks_init(&w->acks, w->cap) == 0;
    w->conn = vigil_runtime_conn_open(rt);
    w->llm = vigil_llm_client_new(&svc->llm);
    if (w->slots && w->llm && svc->core.a2a_enabled)
        w->delegator = council_delegator_new(svc, w->cap, wake_worker, w);
    if (!w->slots || !acks_ok || !w->conn || !w->llm ||
        (svc->core.a2a_enabled && !w->delegator)) {
        worker_free(w);
        return NULL;
    }
    char consumer[200], stream[256];
    snprintf(consumer, sizeof consumer, "%s-w%d", svc->instance, index);
    vigil_runtime_key(rt, COUNCIL_STREAM, stream, sizeof stream);
    vigil_job_consumer_init(&w->jobs, stream, COUNCIL_GROUP, consumer, svc->lease_ms);
    return w;
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = worker_main, .wake = wake_worker, .drop = worker_free};

int council_start(void *ctx, vigil_runtime *rt)
{
    council_service *svc = ctx;
    svc->rt = rt;
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
