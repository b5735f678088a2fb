/* job_consumer.h - the reading side of a durable job queue (vigil/jobs.h)
 * as one worker thread runs it, so a service's worker only handles jobs:
 *
 *   1. after a start, this consumer's own pending jobs (a kill -9 never
 *      drops a job: it is handed over again, not fresh);
 *   2. jobs of other consumers idle longer than the lease (XAUTOCLAIM,
 *      every lease/2, between 1 and 30 s);
 *   3. new jobs (XREADGROUP >), blocking briefly only when the caller is
 *      idle;
 * with the group (re)created when missing, a capped backoff while Redis is
 * away, and acknowledgements (XACK + XDEL) batched into one round trip.
 * One consumer per thread; it uses the caller's vigil_redis. */
#ifndef VIGIL_JOB_CONSUMER_H
#define VIGIL_JOB_CONSUMER_H
#include <stdbool.h>
#include <stdint.h>
#include "jobs.h"
#include "redis.h"

typedef struct vigil_job_consumer_config {
    const char *stream;   /* the stream's full key */
    const char *group;
    const char *consumer; /* stable across restarts (instance + worker index) */
    int64_t lease_ms;     /* a job unacknowledged this long is taken over */
    int64_t block_ms;     /* XREADGROUP BLOCK while idle */
    int max_acks;         /* acknowledgements batched before a flush (>= 1) */
    const char *metric;   /* counter name prefix, e.g. "vigil_council_jobs" */
} vigil_job_consumer_config;

typedef struct vigil_job_consumer vigil_job_consumer;

/* Copies cfg (strings included). NULL on allocation failure. */
vigil_job_consumer *vigil_job_consumer_new(vigil_redis *r, const vigil_job_consumer_config *cfg);
void vigil_job_consumer_free(vigil_job_consumer *c);

/* A job handed to the worker: fresh is false for its own pending jobs
 * after a restart and for jobs taken over (the worker may check whether
 * they were already decided). entry->payload is NULL for an entry deleted
 * meanwhile (acknowledge it). */
typedef void (*vigil_job_take_fn)(void *ctx, const vigil_job_entry *entry, bool fresh);

/* Hands over at most `room` jobs (steps 1-3 above; blocking only when
 * idle). Does nothing during a backoff. Returns the number handed over, or
 * -1 when Redis failed (a backoff starts). */
int vigil_job_consumer_fill(vigil_job_consumer *c, int room, bool idle, vigil_job_take_fn take,
                            void *ctx);

/* True while a backoff after a Redis error runs (the worker may sleep). */
bool vigil_job_consumer_backing_off(const vigil_job_consumer *c);

/* Acknowledges a finished job (batched; flushed when the batch is full). */
void vigil_job_consumer_ack(vigil_job_consumer *c, const char *entry_id);
/* XACK + XDEL of the batch in one round trip (a failure only means the jobs
 * are looked at again and found decided). */
void vigil_job_consumer_flush(vigil_job_consumer *c);

#endif
