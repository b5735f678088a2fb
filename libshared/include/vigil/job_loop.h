/* job_loop.h - the loop of a job worker that holds several jobs at once
 * while their slow work (LLM calls) runs: the shape council's,
 * wake-evaluator's and heartbeat's workers share. One turn:
 *   1. fill the free slots from the durable job stream in job_consumer.h's
 *      order (own pending after a start, then jobs idle past the lease,
 *      then new ones, blocking briefly only when idle), after a Redis error
 *      only once the backoff is over; each job is parsed into a slot and,
 *      when it was not new, looked up in the dedupe record first (a restart
 *      between the commit and the acknowledgement: no second LLM call);
 *   2. every third of the lease, renew the leases of the jobs held (one
 *      script for all slots, vigil_jobs_renew), so a job whose call runs
 *      longer than the lease is not taken over by another replica while
 *      this one lives; a job another consumer took over all the same
 *      (this thread stalled past the lease: a Redis outage) is not taken
 *      back, counted in vigil_job_leases_lost_total and still committed:
 *      the commit is deduplicated (the ids hook's input id, or the
 *      commit's own check that the work is still wanted), so the first
 *      commit decides and the other changes nothing; then drive the LLM
 *      transfers;
 *   3. commit every slot whose work is over, then acknowledge the batch
 *      (job_acks.h: one XACK + XDEL round trip). A commit waiting out a
 *      Redis outage keeps driving the other slots' transfers between its
 *      attempts, so their answers are taken in and not timed out.
 * A job is acknowledged only once its outcome is durable (or was already
 * committed, or the job cannot be parsed at all); a commit that gave up
 * (shutting down with Redis away) leaves it pending.
 *
 * What a job is, how its call is made and how its outcome is committed
 * stay the service's, as hooks on a slot of the service's own type; the
 * loop owns the slots' bookkeeping, the consumer, the acknowledgements,
 * the backoff and the LLM client. One loop per worker thread. */
#ifndef VIGIL_JOB_LOOP_H
#define VIGIL_JOB_LOOP_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "llm.h"
#include "redis.h"
#include "runtime.h"

typedef struct vigil_job_loop vigil_job_loop;

typedef struct vigil_job_loop_ops {
    size_t slot_size; /* sizeof the service's slot; a free slot is all zero */
    /* Reads a job into a free slot: 0, or -1 with why (the job is logged,
     * counted "invalid" and acknowledged). */
    int (*parse)(void *owner, void *slot, const char *payload, size_t len, char *why,
                 size_t whylen);
    /* The record key and input id the commit dedupes the job by. NULL:
     * none, the commit itself finds out whether the job's work is still
     * wanted (floor-control's: its message still waits), so a job taken
     * again is always worked again. */
    void (*ids)(const void *slot, const char **key, const char **job);
    /* Starts the slot's work (submits its LLM calls); never waits for the
     * LLM (it may read Redis, as the rest of step 1 does). */
    void (*submit)(void *owner, void *slot);
    /* Is the slot's work over, so that it can be committed? */
    bool (*ready)(void *owner, void *slot);
    /* Commits the slot's outcome (vigil_runtime_decide). */
    vigil_decide_result (*commit)(void *owner, void *slot);
    /* Frees what a slot holds (the loop zeroes it after). */
    void (*clear)(void *slot);
    /* Optional: counts a job handled: outcome is done_outcome,
     * "duplicate", "rejected", "deferred" or "invalid" (slot NULL: nothing
     * was read). */
    void (*count)(const void *slot, const char *outcome);
    /* Optional: called every turn after the LLM transfers were driven. */
    void (*after_llm)(void *owner);
    vigil_llm_done_fn on_done; /* the LLM completion; user is what submit passed */
    const char *done_outcome;  /* the outcome counted for a commit */
    /* Counters of jobs taken again: own pending after a restart, and
     * reclaimed past the lease (name NULL: not counted). */
    const char *resumed_metric, *resumed_help;
    const char *reclaimed_metric, *reclaimed_help;
    /* Optional gauge of the slots in use, labelled worker="<index>". */
    const char *in_flight_metric, *in_flight_help;
} vigil_job_loop_ops;

typedef struct vigil_job_loop_config {
    vigil_redis *redis;         /* the worker's own connection (its runtime conn's) */
    const vigil_runtime *rt;    /* stops the loop too; NULL: only *stop does */
    const atomic_int *stop;     /* the service's stop flag */
    const vigil_llm_config *llm;
    const char *stream;         /* full key of the job stream */
    const char *group;
    const char *consumer;       /* stable per instance and worker */
    int64_t lease_ms;
    const char *ids_prefix;     /* the dedupe record's key is ids_prefix + key */
    int cap;                    /* slots (< 1: 1) */
    int block_ms;               /* the longest wait for new jobs when idle */
    int index;                  /* the worker's number (gauge label) */
} vigil_job_loop_config;

/* A loop for owner (handed back to every hook), or NULL when out of
 * memory or the LLM client cannot be made. The strings are copied. */
vigil_job_loop *vigil_job_loop_new(const vigil_job_loop_ops *ops, void *owner,
                                   const vigil_job_loop_config *cfg);
/* Frees the LLM client first (calls in flight are abandoned: their jobs
 * stay pending), then the slots. NULL is ok. */
void vigil_job_loop_free(vigil_job_loop *l);

/* One turn (steps 1 to 3 above). */
void vigil_job_loop_turn(vigil_job_loop *l);
/* Turns until stopping, then acknowledges what is batched. */
void vigil_job_loop_run(vigil_job_loop *l);

/* ---- a service's job worker: its runtime connection and its loop ---- */

/* The first member of a service's worker struct, so that a pointer to the
 * worker is one to its vigil_job_worker: vigil_job_worker_run and
 * vigil_job_worker_wake then serve as the worker's vigil_worker_ops run
 * and wake (workers.h). */
typedef struct vigil_job_worker {
    vigil_runtime_conn *conn; /* the worker's own (its commits use it too) */
    vigil_job_loop *loop;
} vigil_job_worker;

/* Opens jw's runtime connection and its loop on the stream
 * <prefix><service>:<stream_suffix>, with the runtime's dedupe records
 * (<prefix><service>:ids:<key>); sets cfg's redis, rt, stream and
 * ids_prefix, the rest is the caller's. 0, or -1 (then
 * vigil_job_worker_close is still safe). */
int vigil_job_worker_open(vigil_job_worker *jw, vigil_runtime *rt, const vigil_job_loop_ops *ops,
                          void *owner, const char *stream_suffix, vigil_job_loop_config *cfg);
/* Frees the loop, then closes the connection. */
void vigil_job_worker_close(vigil_job_worker *jw);
/* A vigil_worker_ops drop: closes the worker's vigil_job_worker and frees
 * the worker (one malloc'd block; NULL is ok). A worker holding more frees
 * that first. */
void vigil_job_worker_drop(void *worker);
/* A vigil_worker_ops run: the loop until stopping. */
void *vigil_job_worker_run(void *worker);
/* A vigil_worker_ops wake: out of the loop's wait on the LLM client. */
void vigil_job_worker_wake(void *worker);

vigil_llm_client *vigil_job_loop_llm(vigil_job_loop *l);
/* Out of a wait on the LLM client (at stop, or when other work is in). */
void vigil_job_loop_wakeup(vigil_job_loop *l);
bool vigil_job_loop_stopping(const vigil_job_loop *l);
int vigil_job_loop_used(const vigil_job_loop *l);

#endif
