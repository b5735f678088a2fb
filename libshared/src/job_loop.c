/* job_loop.c - a job worker's loop with the service's hooks (job_loop.h). */
#include "vigil/job_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/clock.h"
#include "vigil/job_acks.h"
#include "vigil/job_consumer.h"
#include "vigil/jobs.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

typedef struct slot_head {
    bool used;
    bool lost; /* another consumer holds the job (counted once) */
    char entry[VIGIL_JOB_ACK_ID_MAX];
} slot_head;

#define LOST_METRIC "vigil_job_leases_lost_total"
#define LOST_HELP "Jobs taken over by another consumer while this one still worked on them"

struct vigil_job_loop {
    vigil_job_loop_ops ops;
    void *owner;
    vigil_redis *redis;
    const vigil_runtime *rt;
    const atomic_int *stop;
    vigil_llm_client *llm;
    vigil_job_consumer jobs;
    vigil_job_acks acks; /* finished entries not yet acknowledged */
    char group[64];
    char ids_prefix[256];
    int block_ms;
    slot_head *heads;
    unsigned char *slots; /* cap slots of ops.slot_size bytes */
    int cap, used;
    int errors;
    int64_t next_read; /* monotonic ms: backoff after a Redis error */
    int64_t renew_every, next_renew; /* ms; monotonic ms */
    int renew_errors;
    const char **renew_ids; /* cap entries: the held jobs of one renewal */
    int *renew_slot;
    bool *renew_lost;
    char labels[32];
};

static void *slot_at(vigil_job_loop *l, int i) { return l->slots + (size_t)i * l->ops.slot_size; }

bool vigil_job_loop_stopping(const vigil_job_loop *l)
{
    return atomic_load(l->stop) || (l->rt && vigil_runtime_stopping(l->rt));
}

vigil_llm_client *vigil_job_loop_llm(vigil_job_loop *l) { return l->llm; }

void vigil_job_loop_wakeup(vigil_job_loop *l) { vigil_llm_wakeup(l->llm); }

int vigil_job_loop_used(const vigil_job_loop *l) { return l->used; }

static void count(vigil_job_loop *l, const void *slot, const char *outcome)
{
    if (l->ops.count)
        l->ops.count(slot, outcome);
}

static void set_in_flight(vigil_job_loop *l)
{
    if (l->ops.in_flight_metric)
        vigil_gauge_set(l->ops.in_flight_metric, l->ops.in_flight_help, l->labels,
                        (double)l->used);
}

static void release(vigil_job_loop *l, int i)
{
    void *s = slot_at(l, i);
    l->ops.clear(s);
    memset(s, 0, l->ops.slot_size);
    memset(&l->heads[i], 0, sizeof l->heads[i]);
    l->used--;
    set_in_flight(l);
}

static void finish_entry(vigil_job_loop *l, const char *entry)
{
    vigil_job_acks_add(&l->acks, l->redis, l->jobs.stream, l->group, entry);
}

static void flush_acks(vigil_job_loop *l)
{
    vigil_job_acks_flush(&l->acks, l->redis, l->jobs.stream, l->group);
}

static bool in_flight(const vigil_job_loop *l, const char *entry)
{
    for (int i = 0; i < l->cap; i++)
        if (l->heads[i].used && strcmp(l->heads[i].entry, entry) == 0)
            return true;
    return false;
}

static int free_slot(const vigil_job_loop *l)
{
    for (int i = 0; i < l->cap; i++)
        if (!l->heads[i].used)
            return i;
    return -1;
}

/* Has the record already committed this job (a restart after the commit
 * but before the acknowledgement)? Then its work need not be done again. */
static int already_decided(vigil_job_loop *l, const void *s)
{
    if (!l->ops.ids)
        return 0; /* the commit itself finds out */
    const char *key = NULL, *job = NULL;
    l->ops.ids(s, &key, &job);
    char ids_key[2 * VIGIL_KEY_MAX + 64];
    snprintf(ids_key, sizeof ids_key, "%s%s", l->ids_prefix, key);
    return vigil_jobs_decided(l->redis, ids_key, job);
}

static void start_entry(vigil_job_loop *l, const vigil_job_entry *e, bool fresh)
{
    if (!e->payload) { /* deleted meanwhile (trimmed): nothing to do */
        finish_entry(l, e->id);
        return;
    }
    if (in_flight(l, e->id))
        return;
    int i = free_slot(l);
    if (i < 0)
        return; /* stays pending for this consumer: read again later */
    void *s = slot_at(l, i);
    char why[200];
    if (l->ops.parse(l->owner, s, e->payload, e->len, why, sizeof why) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "job unreadable: dropped", "entry", e->id, "detail", why,
                     NULL);
        count(l, NULL, "invalid");
        finish_entry(l, e->id);
        return;
    }
    l->heads[i].used = true;
    l->used++;
    snprintf(l->heads[i].entry, sizeof l->heads[i].entry, "%s", e->id);
    if (!fresh && already_decided(l, s) == 1) {
        count(l, s, "duplicate");
        finish_entry(l, e->id);
        release(l, i);
        return;
    }
    set_in_flight(l);
    l->ops.submit(l->owner, s);
}

static void finish_slot(vigil_job_loop *l, int i)
{
    void *s = slot_at(l, i);
    switch (l->ops.commit(l->owner, s)) {
    case VIGIL_DECIDE_DONE:
        count(l, s, l->ops.done_outcome);
        finish_entry(l, l->heads[i].entry);
        break;
    case VIGIL_DECIDE_DUPLICATE:
        count(l, s, "duplicate");
        finish_entry(l, l->heads[i].entry);
        break;
    case VIGIL_DECIDE_REJECTED:
        count(l, s, "rejected");
        finish_entry(l, l->heads[i].entry);
        break;
    case VIGIL_DECIDE_GAVE_UP:
    default:
        count(l, s, "deferred"); /* shutting down with Redis away: stays pending */
        break;
    }
    release(l, i);
}

static void count_taken(const char *metric, const char *help, int n)
{
    if (metric && n > 0)
        vigil_counter_add(metric, help, NULL, n);
}

/* Takes at most the free slots' worth of jobs, in job_consumer.h's order,
 * blocking briefly only when idle. */
static void fill(vigil_job_loop *l)
{
    int64_t mono = vigil_mono_ms();
    int room = l->cap - l->used;
    if (room <= 0 || mono < l->next_read)
        return;
    bool idle = l->used == 0 && vigil_llm_pending(l->llm) == 0;
    vigil_job_entries es = {0};
    vigil_jobs_origin origin;
    if (vigil_job_consumer_next(&l->jobs, l->redis, room, idle ? l->block_ms : 0, mono, &es,
                                &origin) != 0) {
        l->next_read = vigil_mono_ms() + vigil_job_backoff(&l->errors, l->redis, "XREADGROUP");
        return;
    }
    l->errors = 0;
    if (origin == VIGIL_JOBS_OWN_PENDING)
        count_taken(l->ops.resumed_metric, l->ops.resumed_help, es.n);
    else if (origin == VIGIL_JOBS_RECLAIMED)
        count_taken(l->ops.reclaimed_metric, l->ops.reclaimed_help, es.n);
    for (int i = 0; i < es.n && !vigil_job_loop_stopping(l); i++)
        start_entry(l, &es.v[i], origin == VIGIL_JOBS_NEW);
    vigil_job_entries_free(&es);
}

/* A job held past its lease would be taken over by another replica
 * (XAUTOCLAIM) and its slow work done twice: every third of the lease the
 * held jobs' leases are renewed in one script (vigil_jobs_renew). One that
 * another consumer took over meanwhile (this thread stalled past the
 * lease, a Redis outage) is not taken back (the script renews only this
 * consumer's), counted once; its slot still commits, which
 * is safe: the commit is deduplicated by the job's input id (ids hook) or
 * finds its work no longer wanted (floor-control's message no longer
 * waits), so the first commit in decides and the other changes nothing. */
static void renew(vigil_job_loop *l)
{
    int64_t mono = vigil_mono_ms();
    if (l->used == 0 || mono < l->next_renew)
        return;
    int n = 0;
    for (int i = 0; i < l->cap; i++)
        if (l->heads[i].used) {
            l->renew_ids[n] = l->heads[i].entry;
            l->renew_slot[n++] = i;
        }
    int lost = vigil_jobs_renew(l->redis, l->jobs.stream, l->group, l->jobs.consumer,
                                l->renew_ids, n, l->renew_lost);
    if (lost < 0) { /* try again soon: the lease is running out */
        if (l->renew_errors++ % 20 == 0)
            vigil_log_kv(VIGIL_LOG_WARN, "job leases not renewed, retrying", "stream",
                         l->jobs.stream, "error", vigil_redis_last_error(l->redis), NULL);
        l->next_renew = mono + (l->renew_every < 250 ? l->renew_every : 250);
        return;
    }
    l->renew_errors = 0;
    l->next_renew = mono + l->renew_every;
    for (int k = 0; k < n; k++) {
        slot_head *h = &l->heads[l->renew_slot[k]];
        bool was = h->lost;
        h->lost = l->renew_lost[k]; /* ours again: this consumer's XAUTOCLAIM took it back */
        if (!h->lost || was)
            continue;
        vigil_counter_add(LOST_METRIC, LOST_HELP, NULL, 1);
        vigil_log_kv(VIGIL_LOG_WARN,
                     "job taken over by another consumer while in flight (its commit is "
                     "deduplicated)",
                     "stream", l->jobs.stream, "entry", h->entry, NULL);
    }
}

void vigil_job_loop_turn(vigil_job_loop *l)
{
    renew(l);
    fill(l);
    if (vigil_llm_pending(l->llm) > 0) {
        if (vigil_llm_run(l->llm, l->used < l->cap ? 20 : 100, l->ops.on_done) < 0)
            vigil_log(VIGIL_LOG_ERROR, "LLM client: internal curl error");
    } else if (l->used == 0 && vigil_mono_ms() < l->next_read) {
        vigil_sleep_ms(50, NULL);
    }
    if (l->ops.after_llm)
        l->ops.after_llm(l->owner);
    for (int i = 0; i < l->cap && !vigil_job_loop_stopping(l); i++)
        if (l->heads[i].used && l->ops.ready(l->owner, slot_at(l, i)))
            finish_slot(l, i);
    flush_acks(l);
}

void vigil_job_loop_run(vigil_job_loop *l)
{
    while (!vigil_job_loop_stopping(l))
        vigil_job_loop_turn(l);
    flush_acks(l);
}

vigil_job_loop *vigil_job_loop_new(const vigil_job_loop_ops *ops, void *owner,
                                   const vigil_job_loop_config *cfg)
{
    vigil_job_loop *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->ops = *ops;
    l->owner = owner;
    l->redis = cfg->redis;
    l->rt = cfg->rt;
    l->stop = cfg->stop;
    l->block_ms = cfg->block_ms;
    l->cap = cfg->cap > 0 ? cfg->cap : 1;
    snprintf(l->group, sizeof l->group, "%s", cfg->group);
    snprintf(l->ids_prefix, sizeof l->ids_prefix, "%s", cfg->ids_prefix);
    snprintf(l->labels, sizeof l->labels, "worker=\"%d\"", cfg->index);
    l->heads = calloc((size_t)l->cap, sizeof *l->heads);
    l->slots = calloc((size_t)l->cap, ops->slot_size);
    l->renew_ids = calloc((size_t)l->cap, sizeof *l->renew_ids);
    l->renew_slot = calloc((size_t)l->cap, sizeof *l->renew_slot);
    l->renew_lost = calloc((size_t)l->cap, sizeof *l->renew_lost);
    l->renew_every = cfg->lease_ms / 3 > 0 ? cfg->lease_ms / 3 : 1;
    int acks_ok = vigil_job_acks_init(&l->acks, l->cap) == 0;
    l->llm = vigil_llm_client_new(cfg->llm);
    if (!l->heads || !l->slots || !l->renew_ids || !l->renew_slot || !l->renew_lost || !acks_ok ||
        !l->llm) {
        vigil_job_loop_free(l);
        return NULL;
    }
    vigil_job_consumer_init(&l->jobs, cfg->stream, cfg->group, cfg->consumer, cfg->lease_ms);
    vigil_counter_add(LOST_METRIC, LOST_HELP, NULL, 0); /* at zero from the first scrape */
    return l;
}

void vigil_job_loop_free(vigil_job_loop *l)
{
    if (!l)
        return;
    vigil_llm_client_free(l->llm); /* abandons calls in flight: their jobs stay pending */
    for (int i = 0; l->slots && i < l->cap; i++)
        l->ops.clear(slot_at(l, i));
    free(l->slots);
    free(l->heads);
    free(l->renew_ids);
    free(l->renew_slot);
    free(l->renew_lost);
    vigil_job_acks_free(&l->acks);
    free(l);
}

/* A commit waiting out a Redis outage keeps driving the other slots'
 * transfers (vigil_runtime_conn_set_wait): answers already on their way
 * are taken in, not timed out by the clock while the thread sleeps. */
static bool drive_while_waiting(void *arg, int attempt, int64_t ms)
{
    (void)attempt;
    vigil_job_loop *l = arg;
    vigil_llm_drive_for(l->llm, ms, l->ops.on_done);
    return true;
}

int vigil_job_worker_open(vigil_job_worker *jw, vigil_runtime *rt, const vigil_job_loop_ops *ops,
                          void *owner, const char *stream_suffix, vigil_job_loop_config *cfg)
{
    jw->conn = vigil_runtime_conn_open(rt);
    if (!jw->conn)
        return -1;
    char stream[256], ids_prefix[256];
    vigil_runtime_key(rt, stream_suffix, stream, sizeof stream);
    vigil_runtime_key(rt, "ids:", ids_prefix, sizeof ids_prefix);
    cfg->redis = vigil_runtime_conn_redis(jw->conn);
    cfg->rt = rt;
    cfg->stream = stream;
    cfg->ids_prefix = ids_prefix;
    jw->loop = vigil_job_loop_new(ops, owner, cfg);
    if (!jw->loop)
        return -1;
    vigil_runtime_conn_set_wait(jw->conn, drive_while_waiting, jw->loop);
    return 0;
}

void vigil_job_worker_close(vigil_job_worker *jw)
{
    vigil_job_loop_free(jw->loop);
    jw->loop = NULL;
    vigil_runtime_conn_close(jw->conn);
    jw->conn = NULL;
}

void vigil_job_worker_drop(void *worker)
{
    if (!worker)
        return;
    vigil_job_worker_close(worker);
    free(worker);
}

void *vigil_job_worker_run(void *worker)
{
    vigil_job_worker *jw = worker;
    vigil_job_loop_run(jw->loop);
    return NULL;
}

void vigil_job_worker_wake(void *worker)
{
    vigil_job_worker *jw = worker;
    vigil_job_loop_wakeup(jw->loop);
}
