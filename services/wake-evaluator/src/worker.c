/* worker.c - the job workers: threads beside intake that take jobs from
 * the durable stream, run their LLM calls (many at once on one curl multi
 * handle per worker), interpret the answers in the core, fall back to the
 * rules on any failure, and commit each decision through
 * vigil_runtime_decide before acknowledging the job.
 *
 * Order of work in one worker loop:
 *   1. after a start, this consumer's own pending jobs (a restart never
 *      drops an evaluation: they are handled again, and the commit's dedupe
 *      by job id publishes each decision once);
 *   2. jobs of other consumers idle longer than the lease (XAUTOCLAIM);
 *   3. new jobs (XREADGROUP >), blocking briefly only when idle;
 *   4. drive the LLM transfers; 5. commit what finished, then XACK + XDEL.
 * A job is acknowledged only after its decision is durable (or was already
 * committed, or cannot be parsed at all). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"
#include <vigil/job_consumer.h>
#include <vigil/jobs.h>
#include "llm_reader.h"

#define STATUS_INTERNAL VIGIL_LLM_STATUS__COUNT /* prompt or submit failed */

typedef struct slot {
    bool used, done;
    char entry[48];
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
    wake_service *svc;
    int index;
    pthread_t thread;
    bool started;
    vigil_runtime_conn *conn;
    vigil_llm_client *llm;
    slot *slots;
    int cap, used;
    vigil_job_consumer jobs; /* own pending, then abandoned past the lease, then new */
    int64_t next_read;    /* monotonic ms: backoff after a Redis error */
    char (*acks)[48];     /* finished entries not yet acknowledged */
    const char **ack_ptrs;
    int n_acks;
    int errors;
    char labels[32];
};

static bool stopping(const wake_worker *w)
{
    return atomic_load(&w->svc->stop) || vigil_runtime_stopping(w->svc->rt);
}

static const char *status_name(int s)
{
    return s == STATUS_INTERNAL ? "internal" : vigil_llm_status_name((vigil_llm_status)s);
}

static void count_job(const char *kind, const char *outcome)
{
    char labels[96];
    snprintf(labels, sizeof labels, "kind=\"%s\",outcome=\"%s\"", kind, outcome);
    vigil_counter_add("vigil_wake_jobs_total", "Jobs finished by the workers, by outcome",
                      labels, 1);
}

static void slot_release(wake_worker *w, slot *s)
{
    wake_job_clear(&s->wj);
    wake_ap_job_clear(&s->aj);
    free(s->content);
    memset(s, 0, sizeof *s);
    w->used--;
    vigil_gauge_set("vigil_wake_jobs_in_flight", "Jobs a worker holds (LLM call or commit)",
                    w->labels, (double)w->used);
}

static bool in_flight(const wake_worker *w, const char *entry)
{
    for (int i = 0; i < w->cap; i++)
        if (w->slots[i].used && strcmp(w->slots[i].entry, entry) == 0)
            return true;
    return false;
}

static void backoff(wake_worker *w, const char *what)
{
    int64_t d = vigil_backoff_ms(w->errors++, 100, 5000);
    if (w->errors == 1 || w->errors % 20 == 0)
        vigil_log_kv(VIGIL_LOG_WARN, "job stream unavailable, retrying", "what", what, "error",
                     vigil_redis_last_error(vigil_runtime_conn_redis(w->conn)), NULL);
    w->next_read = vigil_mono_ms() + d;
}

/* Acknowledgements are batched: one XACK + XDEL round trip per loop turn
 * (a crash before it only means the job is looked at again and found
 * decided). */
static void flush_acks(wake_worker *w)
{
    if (w->n_acks == 0)
        return;
    for (int i = 0; i < w->n_acks; i++)
        w->ack_ptrs[i] = w->acks[i];
    if (vigil_jobs_finish(vigil_runtime_conn_redis(w->conn), w->jobs.stream, WAKE_GROUP, w->ack_ptrs,
                           w->n_acks) != 0)
        vigil_log_kv(VIGIL_LOG_WARN,
                     "jobs not acknowledged (they will be looked at again, decided once)", "first",
                     w->acks[0], NULL);
    w->n_acks = 0;
}

static void finish_entry(wake_worker *w, const char *entry)
{
    if (w->n_acks == w->cap)
        flush_acks(w);
    snprintf(w->acks[w->n_acks++], sizeof w->acks[0], "%s", entry);
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
    snprintf(s->error, sizeof s->error, "%s", res->error ? res->error : "");
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

static void submit(wake_worker *w, slot *s)
{
    const wake_config *c = &w->svc->core;
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    char *prompt;
    req.want_json = true;
    if (s->kind == WAKE_JOB_WAKE) {
        bool smart = s->wj.tier == WAKE_TIER_SMART;
        prompt = smart ? wake_prompt_smart(&s->wj) : wake_prompt_mid(&s->wj);
        req.tier = smart ? VIGIL_LLM_TIER_SMART : VIGIL_LLM_TIER_MID;
        req.max_tokens = smart ? c->smart_max_tokens : c->mid_max_tokens;
        req.temperature = smart ? 0.2 : 0.1; /* the seed's */
        if (w->svc->persona_model && s->wj.model[0])
            req.model = s->wj.model;
    } else {
        /* the seed runs the autopilot on a small model (llama3.2:3b) */
        prompt = wake_prompt_autopilot(&s->aj);
        req.tier = VIGIL_LLM_TIER_FAST;
        req.max_tokens = c->autopilot_max_tokens;
    }
    if (!prompt) {
        fail_now(s, "out of memory building the prompt");
        return;
    }
    req.user = prompt;
    if (vigil_llm_submit(w->llm, &req, s) != 0)
        fail_now(s, "the LLM client refused the request");
    free(prompt);
}

static slot *free_slot(wake_worker *w)
{
    for (int i = 0; i < w->cap; i++)
        if (!w->slots[i].used)
            return &w->slots[i];
    return NULL;
}

/* Has the room already committed this job (a restart after the commit but
 * before the XACK)? Then the LLM need not be asked again. */
static int already_decided(wake_worker *w, const char *room, const char *job)
{
    char suffix[VIGIL_KEY_MAX + 8], key[2 * VIGIL_KEY_MAX + 64];
    snprintf(suffix, sizeof suffix, "ids:%s", room);
    vigil_runtime_key(w->svc->rt, suffix, key, sizeof key);
    return vigil_jobs_decided(vigil_runtime_conn_redis(w->conn), key, job);
}

static void start_entry(wake_worker *w, const vigil_job_entry *e, bool fresh)
{
    if (!e->payload) { /* deleted meanwhile (trimmed): nothing to do */
        finish_entry(w, e->id);
        return;
    }
    if (in_flight(w, e->id))
        return;
    slot *s = free_slot(w);
    if (!s)
        return; /* stays pending for this consumer: read again after a restart */
    char why[200];
    if (wake_job_parse(e->payload, e->len, &s->kind, &s->wj, &s->aj, why, sizeof why) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "job unreadable: dropped", "entry", e->id, "detail", why,
                     NULL);
        count_job("unknown", "invalid");
        finish_entry(w, e->id);
        return;
    }
    s->used = true;
    w->used++;
    snprintf(s->entry, sizeof s->entry, "%s", e->id);
    const char *room = s->kind == WAKE_JOB_WAKE ? s->wj.room : s->aj.room;
    const char *job = s->kind == WAKE_JOB_WAKE ? s->wj.job : s->aj.job;
    if (!fresh && already_decided(w, room, job) == 1) {
        count_job(s->kind == WAKE_JOB_WAKE ? "wake" : "autopilot", "duplicate");
        finish_entry(w, e->id);
        slot_release(w, s);
        return;
    }
    vigil_gauge_set("vigil_wake_jobs_in_flight", "Jobs a worker holds (LLM call or commit)",
                    w->labels, (double)w->used);
    submit(w, s);
}

static void llm_note(const slot *s, char *out, size_t outlen)
{
    if (s->status == VIGIL_LLM_OK)
        snprintf(out, outlen, "LLM answer unusable");
    else
        snprintf(out, outlen, "LLM %s: %.150s", status_name(s->status), s->error);
}

/* Reports the call's outcome to the core, which chooses between the
 * model's answer and the rules (wake_decide_after_llm), then commits. */
static vigil_decide_result finish_wake(wake_worker *w, slot *s, int64_t now)
{
    wake_decision d;
    wake_llm_answer a = {s->status == VIGIL_LLM_OK, status_name(s->status), s->error,
                         s->content, s->len, s->truncated, s->tokens, s->latency_ms};
    wake_decide_after_llm(&WAKE_LLM_READER, &s->wj, &a, now, &d);
    vigil_decide_result r = wake_commit_decision(w->svc, w->conn, &d, now);
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
    vigil_decide_result r = wake_commit_autopilot(w->svc, w->conn, &o, now);
    if (r == VIGIL_DECIDE_DONE && s->tokens > 0)
        vigil_counter_add("vigil_wake_tokens_spent_total", "LLM tokens spent (usage)",
                          "kind=\"autopilot\"", (double)s->tokens);
    return r;
}

static void finish_slot(wake_worker *w, slot *s)
{
    int64_t now = vigil_now_ms(), t0 = vigil_mono_ms();
    bool wake = s->kind == WAKE_JOB_WAKE;
    vigil_decide_result r = wake ? finish_wake(w, s, now) : finish_autopilot(w, s, now);
    vigil_histogram_observe("vigil_wake_commit_seconds", "Time to commit one finished job", NULL,
                            (double)(vigil_mono_ms() - t0) / 1000.0);
    const char *kind = wake ? "wake" : "autopilot";
    switch (r) {
    case VIGIL_DECIDE_DONE:
        count_job(kind, "decided");
        finish_entry(w, s->entry);
        break;
    case VIGIL_DECIDE_DUPLICATE:
        count_job(kind, "duplicate");
        finish_entry(w, s->entry);
        break;
    case VIGIL_DECIDE_REJECTED:
        count_job(kind, "rejected");
        finish_entry(w, s->entry);
        break;
    case VIGIL_DECIDE_GAVE_UP:
    default:
        /* shutting down with Redis away: the job stays pending */
        count_job(kind, "deferred");
        break;
    }
    slot_release(w, s);
}

static void take(wake_worker *w, vigil_job_entries *es, bool fresh)
{
    for (int i = 0; i < es->n && !stopping(w); i++)
        start_entry(w, &es->v[i], fresh);
    vigil_job_entries_free(es);
}

/* Steps 1-3 of the loop: fill free slots from the stream, in libshared's
 * order (vigil/job_consumer.h). */
static void fill(wake_worker *w)
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
        vigil_counter_add("vigil_wake_jobs_resumed_total",
                          "Own pending jobs handled again after a restart", NULL, es.n);
    else if (es.n > 0 && origin == VIGIL_JOBS_RECLAIMED)
        vigil_counter_add("vigil_wake_jobs_reclaimed_total",
                          "Jobs taken over from a consumer idle past the lease", NULL, es.n);
    take(w, &es, origin == VIGIL_JOBS_NEW);
}

static void *worker_main(void *arg)
{
    wake_worker *w = arg;
    while (!stopping(w)) {
        fill(w);
        if (vigil_llm_pending(w->llm) > 0) {
            int wait = w->used < w->cap ? 20 : 100;
            if (vigil_llm_run(w->llm, wait, on_done) < 0)
                vigil_log(VIGIL_LOG_ERROR, "LLM client: internal curl error");
        } else if (w->used == 0 && vigil_mono_ms() < w->next_read) {
            vigil_sleep_ms(50, NULL);
        }
        for (int i = 0; i < w->cap && !stopping(w); i++)
            if (w->slots[i].used && w->slots[i].done)
                finish_slot(w, &w->slots[i]);
        flush_acks(w);
    }
    flush_acks(w);
    return NULL;
}

static void worker_free(wake_worker *w)
{
    if (!w)
        return;
    vigil_llm_client_free(w->llm); /* abandons calls in flight: their jobs stay pending */
    for (int i = 0; w->slots && i < w->cap; i++) {
        wake_job_clear(&w->slots[i].wj);
        wake_ap_job_clear(&w->slots[i].aj);
        free(w->slots[i].content);
    }
    free(w->slots);
    free(w->acks);
    free(w->ack_ptrs);
    vigil_runtime_conn_close(w->conn);
    free(w);
}

static wake_worker *worker_new(wake_service *svc, vigil_runtime *rt, int index)
{
    wake_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    w->index = index;
    w->cap = svc->max_inflight > 0 ? svc->max_inflight : 1;
    w->slots = calloc((size_t)w->cap, sizeof *w->slots);
    w->acks = calloc((size_t)w->cap, sizeof *w->acks);
    w->ack_ptrs = calloc((size_t)w->cap, sizeof *w->ack_ptrs);
    w->conn = vigil_runtime_conn_open(rt);
    w->llm = vigil_llm_client_new(&svc->llm);
    if (!w->slots || !w->acks || !w->ack_ptrs || !w->conn || !w->llm) {
        worker_free(w);
        return NULL;
    }
    char consumer[200], stream[256];
    snprintf(consumer, sizeof consumer, "%s-w%d", svc->instance, index);
    vigil_runtime_key(rt, WAKE_STREAM, stream, sizeof stream);
    vigil_job_consumer_init(&w->jobs, stream, WAKE_GROUP, consumer, svc->lease_ms);
    snprintf(w->labels, sizeof w->labels, "worker=\"%d\"", index);
    return w;
}

int wake_start(void *ctx, vigil_runtime *rt)
{
    wake_service *svc = ctx;
    svc->rt = rt;
    for (int i = 0; i < svc->workers; i++) {
        wake_worker *w = worker_new(svc, rt, i);
        if (!w)
            return -1;
        svc->w[svc->n_workers++] = w;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            return -1;
        w->started = true;
    }
    vigil_log_kv(VIGIL_LOG_INFO, "job workers started", "llm",
                 svc->core.llm_enabled ? svc->llm.url : "(none: rules only)", NULL);
    return 0;
}

void wake_stop(void *ctx)
{
    wake_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    for (int i = 0; i < svc->n_workers; i++)
        if (svc->w[i]->started)
            vigil_llm_wakeup(svc->w[i]->llm);
    for (int i = 0; i < svc->n_workers; i++) {
        if (svc->w[i]->started)
            pthread_join(svc->w[i]->thread, NULL);
        worker_free(svc->w[i]);
        svc->w[i] = NULL;
    }
    svc->n_workers = 0;
}
