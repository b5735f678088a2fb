/* job_consumer.h - the order in which a worker takes jobs from a durable
 * job stream (jobs.h), in one place for every service with slow or
 * cross-record work:
 *   1. after a start, this consumer's own pending jobs (a process killed
 *      between taking a job and acknowledging it finds it again under its
 *      stable consumer name);
 *   2. every lease/2 (bounded to 0.5..30 s), jobs idle longer than the
 *      lease, whoever held them (XAUTOCLAIM: a dead replica's jobs; a live
 *      job loop renews the leases of the jobs it holds, job_loop.h);
 *   3. new jobs (XREADGROUP >), blocking up to block_ms.
 * The group is created on first use and again if it vanished. Handling
 * and acknowledging (vigil_jobs_finish) stay with the caller. One consumer
 * per thread, used with that thread's vigil_redis. */
#ifndef VIGIL_JOB_CONSUMER_H
#define VIGIL_JOB_CONSUMER_H
#include <stdbool.h>
#include <stdint.h>
#include "jobs.h"
#include "redis.h"

typedef enum {
    VIGIL_JOBS_OWN_PENDING = 0, /* step 1 */
    VIGIL_JOBS_RECLAIMED,       /* step 2 */
    VIGIL_JOBS_NEW              /* step 3 */
} vigil_jobs_origin;

typedef struct vigil_job_consumer {
    char stream[256];   /* full key of the stream */
    char group[64];
    char consumer[200]; /* stable per instance and worker */
    int64_t lease_ms;
    bool group_ok;
    bool pel_done;
    char pel_cursor[48];
    char claim_cursor[48];
    int64_t next_claim; /* monotonic ms */
} vigil_job_consumer;

void vigil_job_consumer_init(vigil_job_consumer *c, const char *stream, const char *group,
                             const char *consumer, int64_t lease_ms);

/* Fetches the next batch (at most max entries; possibly none) by the order
 * above, setting *origin. Returns 0, or VIGIL_JOBS_ERROR when Redis failed
 * (back off and call again; nothing is lost). now_mono is vigil_mono_ms(). */
int vigil_job_consumer_next(vigil_job_consumer *c, vigil_redis *r, int max, int block_ms,
                            int64_t now_mono, vigil_job_entries *out, vigil_jobs_origin *origin);

/* After a failed read of the job stream: the wait before the next try
 * (vigil_backoff_ms: 100 ms doubling to 5 s, jittered, with *errors,
 * which it counts up; the worker sets it back to 0 after a good read), and
 * a warning naming what failed and Redis' error on the first failure and
 * every 20th after it. */
int64_t vigil_job_backoff(int *errors, vigil_redis *r, const char *what);

#endif
