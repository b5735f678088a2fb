/* worker.c - the resume worker: a thread beside intake that takes resume
 * jobs from the durable stream and carries each out (commit.c) before
 * acknowledging it. Claims are Redis round trips, not slow calls, so one
 * thread handles jobs one after the other.
 *
 * Jobs come in libshared's order (vigil/job_consumer.h): own pending ones
 * after a start (a kill -9 between taking a job and acknowledging it never
 * drops the resume: the job is carried out again, and the claim and the
 * commit are idempotent), then jobs idle past the lease, then new ones. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/job_consumer.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

#define BATCH 16
#define BLOCK_MS 500

struct stall_worker {
    stall_service *svc;
    vigil_runtime_conn *conn;
    vigil_job_consumer jobs;
    int errors;
};

static bool stopping(const stall_worker *w)
{
    return atomic_load(&w->svc->stop) || vigil_runtime_stopping(w->svc->rt);
}

static void count_job(const char *outcome)
{
    char labels[64];
    snprintf(labels, sizeof labels, "outcome=\"%s\"", outcome);
    vigil_counter_add("vigil_stall_jobs_total", "Resume jobs finished, by outcome", labels, 1);
}

static void backoff(stall_worker *w, const char *what)
{
    int64_t d = vigil_job_backoff(&w->errors, vigil_runtime_conn_redis(w->conn), what);
    for (int64_t t = 0; t < d && !stopping(w); t += 50)
        vigil_sleep_ms(50, NULL);
}

/* Carries out one entry; true when it may be acknowledged. */
static bool handle(stall_worker *w, const vigil_job_entry *e)
{
    if (!e->payload)
        return true; /* deleted meanwhile */
    stall_job job;
    char why[120];
    if (stall_job_parse(e->payload, e->len, &job, why, sizeof why) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "resume job unreadable: dropped", "entry", e->id, "detail",
                     why, NULL);
        count_job("invalid");
        return true;
    }
    bool skipped = false;
    vigil_decide_result r = stall_commit_resume(w->svc, w->conn, &job, vigil_now_ms(), &skipped);
    switch (r) {
    case VIGIL_DECIDE_DONE: count_job(skipped ? "skipped" : "done"); return true;
    case VIGIL_DECIDE_DUPLICATE: count_job("duplicate"); return true;
    case VIGIL_DECIDE_REJECTED: count_job("rejected"); return true;
    case VIGIL_DECIDE_GAVE_UP:
    default: count_job("deferred"); return false; /* stays pending */
    }
}

static void take(stall_worker *w, vigil_job_entries *es)
{
    const char *ids[BATCH];
    int n = 0;
    for (int i = 0; i < es->n && !stopping(w); i++)
        if (handle(w, &es->v[i]) && n < BATCH)
            ids[n++] = es->v[i].id;
    if (n > 0 && vigil_jobs_finish(vigil_runtime_conn_redis(w->conn), w->jobs.stream, STALL_GROUP,
                                   ids, n) != 0)
        vigil_log_kv(VIGIL_LOG_WARN, "resume jobs not acknowledged (looked at again, sent once)",
                     "first", ids[0], NULL);
    vigil_job_entries_free(es);
}

static void turn(stall_worker *w)
{
    vigil_job_entries es = {0};
    vigil_jobs_origin origin;
    if (vigil_job_consumer_next(&w->jobs, vigil_runtime_conn_redis(w->conn), BATCH, BLOCK_MS,
                                vigil_mono_ms(), &es, &origin) != 0) {
        backoff(w, "XREADGROUP");
        return;
    }
    w->errors = 0;
    if (es.n > 0 && origin == VIGIL_JOBS_OWN_PENDING)
        vigil_counter_add("vigil_stall_jobs_resumed_total",
                          "Own pending resume jobs handled again after a restart", NULL, es.n);
    else if (es.n > 0 && origin == VIGIL_JOBS_RECLAIMED)
        vigil_counter_add("vigil_stall_jobs_reclaimed_total",
                          "Resume jobs taken over from a consumer idle past the lease", NULL, es.n);
    take(w, &es);
}

static void *worker_main(void *arg)
{
    stall_worker *w = arg;
    while (!stopping(w))
        turn(w);
    return NULL;
}

/* One worker: its own connection, and a consumer name stable per
 * instance, so a restarted instance finds its own pending jobs. */
static void *worker_new(void *ctx, vigil_runtime *rt, int index)
{
    stall_service *svc = ctx;
    stall_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    w->conn = vigil_runtime_conn_open(rt);
    if (!w->conn) {
        free(w);
        return NULL;
    }
    char consumer[200], stream[256];
    snprintf(consumer, sizeof consumer, "%s-w%d", svc->instance, index);
    vigil_runtime_key(rt, STALL_STREAM, stream, sizeof stream);
    vigil_job_consumer_init(&w->jobs, stream, STALL_GROUP, consumer, svc->lease_ms);
    return w;
}

static void worker_free(void *arg)
{
    stall_worker *w = arg;
    if (!w)
        return;
    vigil_runtime_conn_close(w->conn);
    free(w);
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = worker_main, .wake = NULL, .drop = worker_free};

int stall_start(void *ctx, vigil_runtime *rt)
{
    stall_service *svc = ctx;
    svc->rt = rt;
    vigil_stream_trim_declare(STALL_STREAM);
    return vigil_workers_start(&svc->pool, &WORKER_OPS, 1, svc, rt);
}

void stall_stop(void *ctx)
{
    stall_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    vigil_workers_stop(&svc->pool);
}
