/* worker.c - the run worker: a thread beside intake that takes heartbeat
 * runs from the durable job stream, asks the model (several at once on one
 * curl multi handle), and commits each run's outcome on its persona record
 * through vigil_runtime_decide, deduplicated by the run id, before the job
 * is acknowledged.
 *
 * A run is never lost and never sent twice:
 *   - after a start, this consumer's own pending jobs come first (a kill -9
 *     mid-run: the model is asked again, the commit happens once);
 *   - jobs of a replica that died are taken over once idle past the lease
 *     (XAUTOCLAIM), and the lease lasts at least one request's budget;
 *   - the commit publishes only if the record still waits for that run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/job_consumer.h>
#include <vigil/jobs.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

typedef struct run_slot {
    bool used, done;
    char entry[48];
    hb_job job;
    bool ok;
    char *content;
    size_t len;
    int64_t tokens;
    char error[200];
} run_slot;

struct hb_worker {
    hb_service *svc;
    pthread_t thread;
    bool started;
    vigil_runtime_conn *conn;
    vigil_llm_client *llm;
    vigil_job_consumer jobs; /* own pending, then abandoned past the lease, then new */
    int64_t next_read;        /* monotonic ms: backoff after a Redis error */
    int errors;
    run_slot *slots;
    int cap, used;
};

static bool stopping(const hb_worker *w)
{
    return atomic_load(&w->svc->stop) || vigil_runtime_stopping(w->svc->rt);
}

static void finish_entries(hb_worker *w, const char *entry)
{
    const char *ids[1] = {entry};
    if (vigil_jobs_finish(vigil_runtime_conn_redis(w->conn), w->jobs.stream, HB_GROUP, ids, 1) != 0)
        vigil_log_kv(VIGIL_LOG_WARN, "run job not acknowledged (looked at again, decided once)",
                     "entry", entry, NULL);
}

static void release(hb_worker *w, run_slot *s)
{
    hb_job_clear(&s->job);
    free(s->content);
    memset(s, 0, sizeof *s);
    w->used--;
}

static void on_done(const vigil_llm_result *res, void *user)
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
        snprintf(s->error, sizeof s->error, "LLM %s: %.150s", vigil_llm_status_name(res->status),
                 res->error ? res->error : "");
    }
}

/* Has the persona's record already taken this run's outcome (a restart
 * between the commit and the acknowledgement)? Then no second model call. */
static int already_decided(hb_worker *w, const hb_job *j)
{
    char suffix[VIGIL_KEY_MAX + 8], key[2 * VIGIL_KEY_MAX + 64];
    snprintf(suffix, sizeof suffix, "ids:%s", j->persona);
    vigil_runtime_key(w->svc->rt, suffix, key, sizeof key);
    return vigil_jobs_decided(vigil_runtime_conn_redis(w->conn), key, j->run);
}

static void start_entry(hb_worker *w, const vigil_job_entry *e, bool fresh)
{
    if (!e->payload) {
        finish_entries(w, e->id);
        return;
    }
    for (int i = 0; i < w->cap; i++)
        if (w->slots[i].used && strcmp(w->slots[i].entry, e->id) == 0)
            return; /* already in hand */
    run_slot *s = NULL;
    for (int i = 0; i < w->cap && !s; i++)
        if (!w->slots[i].used)
            s = &w->slots[i];
    if (!s)
        return; /* stays pending: read again later */
    char why[160];
    if (hb_job_parse(e->payload, e->len, &s->job, why, sizeof why) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "run job unreadable: dropped", "entry", e->id, "detail", why,
                     NULL);
        hb_job_clear(&s->job);
        finish_entries(w, e->id);
        return;
    }
    s->used = true;
    w->used++;
    snprintf(s->entry, sizeof s->entry, "%s", e->id);
    if (!fresh && already_decided(w, &s->job) == 1) {
        finish_entries(w, e->id);
        release(w, s);
        return;
    }
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.tier = VIGIL_LLM_TIER_FAST; /* the seed: the "fast" engine, to save cost */
    req.model = s->job.model[0] ? s->job.model : NULL;
    req.max_tokens = s->job.max_tokens > 0 ? s->job.max_tokens : w->svc->core.max_tokens;
    req.user = s->job.prompt;
    if (vigil_llm_submit(w->llm, &req, s) != 0) {
        s->done = true;
        s->ok = false;
        snprintf(s->error, sizeof s->error, "the LLM client refused the request");
    }
}

typedef struct result_arg {
    hb_service *svc;
    const hb_run_result *r;
    char outcome[32];
} result_arg;

static int decide_result(void *arg, const char *key, const char *state_json, int64_t now_ms,
                         vigil_effects *fx, vigil_error *err)
{
    result_arg *a = arg;
    hb_state s;
    hb_out out;
    char why[160];
    if (hb_state_load(&s, key, state_json, why, sizeof why) != 0) {
        hb_state_free(&s);
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "record of %s: %s", key, why);
    }
    hb_out_init(&out);
    int rc = 0;
    if (hb_on_result(&s, &a->svc->core, a->r, now_ms, &out) != HB_OK ||
        hb_out_to_fx(a->svc, key, &s, &out, fx) != 0)
        rc = vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory committing %s", a->r->run);
    snprintf(a->outcome, sizeof a->outcome, "stale");
    for (int i = 0; i < out.n_msg; i++) {
        const char *o = strstr(out.msg[i].payload, "\"outcome\":\"");
        if (o && strstr(out.msg[i].topic, "/run")) {
            o += 11;
            snprintf(a->outcome, sizeof a->outcome, "%.*s", (int)strcspn(o, "\""), o);
        }
    }
    hb_out_clear(&out);
    hb_state_free(&s);
    return rc;
}

static void finish_slot(hb_worker *w, run_slot *s)
{
    hb_run_result r = {s->job.run, s->ok, s->content, s->len, s->error, s->tokens};
    result_arg a = {w->svc, &r, ""};
    vigil_error err = {0};
    vigil_decide_result d = vigil_runtime_decide(w->svc->rt, w->conn, s->job.persona, s->job.run,
                                                 vigil_now_ms(), decide_result, &a, &err);
    char labels[64];
    switch (d) {
    case VIGIL_DECIDE_DONE:
        snprintf(labels, sizeof labels, "outcome=\"%s\"", a.outcome);
        vigil_counter_add("vigil_heartbeat_runs_total", "Runs the model answered, by outcome",
                          labels, 1);
        if (s->tokens > 0)
            vigil_counter_add("vigil_heartbeat_tokens_total", "LLM tokens spent on heartbeat runs",
                              NULL, (double)s->tokens);
        finish_entries(w, s->entry);
        break;
    case VIGIL_DECIDE_DUPLICATE:
        finish_entries(w, s->entry);
        break;
    case VIGIL_DECIDE_REJECTED:
        vigil_log_kv(VIGIL_LOG_ERROR, "run outcome not committed", "run", s->job.run, "detail",
                     err.detail, NULL);
        finish_entries(w, s->entry);
        break;
    case VIGIL_DECIDE_GAVE_UP:
    default:
        break; /* shutting down with Redis away: the job stays pending */
    }
    release(w, s);
}

static void backoff(hb_worker *w)
{
    int64_t d = vigil_backoff_ms(w->errors++, 100, 5000);
    if (w->errors == 1 || w->errors % 20 == 0)
        vigil_log_kv(VIGIL_LOG_WARN, "run stream unavailable, retrying", "stream", w->jobs.stream,
                     "error", vigil_redis_last_error(vigil_runtime_conn_redis(w->conn)), NULL);
    w->next_read = vigil_mono_ms() + d;
}

/* Fills free slots from the stream in libshared's order (own pending jobs
 * first, then those of dead replicas, then new ones). */
static void fill(hb_worker *w)
{
    int room = w->cap - w->used;
    int64_t mono = vigil_mono_ms();
    if (room <= 0 || mono < w->next_read)
        return;
    vigil_job_entries es = {0};
    vigil_jobs_origin origin;
    if (vigil_job_consumer_next(&w->jobs, vigil_runtime_conn_redis(w->conn), room,
                                w->used == 0 ? 200 : 0, mono, &es, &origin) != 0) {
        backoff(w);
        return;
    }
    w->errors = 0;
    if (es.n > 0 && origin == VIGIL_JOBS_RECLAIMED)
        vigil_counter_add("vigil_heartbeat_runs_reclaimed_total",
                          "Runs taken over from a replica idle past the lease", NULL, es.n);
    for (int i = 0; i < es.n && !stopping(w); i++)
        start_entry(w, &es.v[i], origin == VIGIL_JOBS_NEW);
    vigil_job_entries_free(&es);
}

static void *worker_main(void *arg)
{
    hb_worker *w = arg;
    while (!stopping(w)) {
        fill(w);
        if (vigil_llm_pending(w->llm) > 0) {
            if (vigil_llm_run(w->llm, 50, on_done) < 0)
                vigil_log(VIGIL_LOG_ERROR, "LLM client: internal curl error");
        } else if (w->used == 0 && vigil_mono_ms() < w->next_read) {
            vigil_sleep_ms(50, NULL);
        }
        for (int i = 0; i < w->cap && !stopping(w); i++)
            if (w->slots[i].used && w->slots[i].done)
                finish_slot(w, &w->slots[i]);
    }
    return NULL;
}

static void worker_free(hb_worker *w)
{
    if (!w)
        return;
    vigil_llm_client_free(w->llm); /* calls in flight are abandoned: their jobs stay pending */
    for (int i = 0; w->slots && i < w->cap; i++) {
        hb_job_clear(&w->slots[i].job);
        free(w->slots[i].content);
    }
    free(w->slots);
    vigil_runtime_conn_close(w->conn);
    free(w);
}

int hb_start(void *ctx, vigil_runtime *rt)
{
    hb_service *svc = ctx;
    svc->rt = rt;
    hb_worker *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->svc = svc;
    w->cap = svc->llm.concurrency > 0 ? svc->llm.concurrency : 1;
    w->slots = calloc((size_t)w->cap, sizeof *w->slots);
    w->conn = vigil_runtime_conn_open(rt);
    w->llm = vigil_llm_client_new(&svc->llm);
    if (!w->slots || !w->conn || !w->llm) {
        worker_free(w);
        return -1;
    }
    char stream[256];
    vigil_runtime_key(rt, svc->stream, stream, sizeof stream);
    vigil_job_consumer_init(&w->jobs, stream, HB_GROUP, svc->instance, svc->lease_ms);
    svc->worker = w;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
        return -1;
    w->started = true;
    vigil_log_kv(VIGIL_LOG_INFO, "run worker started", "llm",
                 svc->core.llm_enabled ? svc->llm.url : "(none: every run skips with no-llm)", NULL);
    return 0;
}

void hb_stop(void *ctx)
{
    hb_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    hb_worker *w = svc->worker;
    if (!w)
        return;
    if (w->started) {
        vigil_llm_wakeup(w->llm);
        pthread_join(w->thread, NULL);
    }
    worker_free(w);
    svc->worker = NULL;
}
