/* job_reader.h - the reading order of a job worker on the durable queue
 * (vigil/jobs.h), in one place for every service with slow work:
 *   1. after a start, this consumer's own pending jobs (a process killed
 *      mid-job handles them again under the same consumer name);
 *   2. jobs of other consumers idle longer than the lease (XAUTOCLAIM),
 *      looked for every claim_every_ms;
 *   3. new jobs (XREADGROUP >), blocking block_ms only when idle.
 * The consumer group is created on first use and again if it vanished;
 * after a Redis error the reader backs off (capped, jittered) and says so.
 * One reader per worker thread, used with that thread's vigil_redis. */
#ifndef VIGIL_JOB_READER_H
#define VIGIL_JOB_READER_H
#include <stdbool.h>
#include <stdint.h>
#include "jobs.h"
#include "redis.h"

typedef struct vigil_job_reader {
    char stream[256];      /* full Redis key of the stream */
    char group[64];
    char consumer[200];
    int64_t lease_ms;      /* a job idle this long is taken over */
    int64_t claim_every_ms;/* how often step 2 looks (default lease / 4, 250 ms .. 15 s) */
    int block_ms;          /* step 3's BLOCK while idle (default 200) */
    /* progress (read-only for the caller) */
    bool group_ok, own_done;
    char own_cursor[48], claim_cursor[48];
    int64_t next_claim, next_read; /* monotonic ms */
    int errors;            /* consecutive Redis errors */
    long long resumed, reclaimed; /* own pending jobs handled again; jobs taken over */
} vigil_job_reader;

void vigil_job_reader_init(vigil_job_reader *r, const char *stream, const char *group,
                           const char *consumer, int64_t lease_ms);

/* Called once per entry read; fresh is false for steps 1 and 2 (the job may
 * already be decided: look before doing the slow work again). */
typedef void (*vigil_job_take_fn)(void *arg, const vigil_job_entry *e, bool fresh);

/* Reads at most `room` entries, in the order above, handing each to take.
 * idle: nothing in hand, so step 3 may block. Returns 0, or -1 after a
 * Redis error (the reader then waits out its backoff: calls before
 * next_read return 0 at once). */
int vigil_job_reader_fill(vigil_job_reader *r, vigil_redis *redis, int room, bool idle,
                          vigil_job_take_fn take, void *arg);

/* True while backing off after an error (the caller may sleep). */
bool vigil_job_reader_backing_off(const vigil_job_reader *r);

#endif
