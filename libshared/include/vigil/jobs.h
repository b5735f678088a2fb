/* jobs.h - a durable job queue for slow work (LLM calls) beside intake: a
 * Redis stream read through a consumer group (XREADGROUP), abandoned jobs
 * taken over after a lease (XAUTOCLAIM), finished jobs acknowledged and
 * deleted (XACK + XDEL, so the stream holds only unfinished work). Jobs are
 * enqueued by a commit (vigil_fx_stream_add). One vigil_redis per thread. */
#ifndef VIGIL_JOBS_H
#define VIGIL_JOBS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "redis.h"

typedef struct vigil_job_entry {
    char id[48];      /* stream entry id "ms-seq" */
    char *payload;    /* field "m"; NULL when the entry was deleted */
    size_t len;
} vigil_job_entry;

typedef struct vigil_job_entries {
    vigil_job_entry *v;
    int n;
} vigil_job_entries;

void vigil_job_entries_free(vigil_job_entries *e);

#define VIGIL_JOBS_ERROR (-1)   /* Redis unreachable or an error reply */
#define VIGIL_JOBS_NOGROUP (-2) /* the group (or stream) vanished: create it */

/* XGROUP CREATE key group 0 MKSTREAM ("already exists" is success). */
int vigil_jobs_group_create(vigil_redis *r, const char *key, const char *group);

/* XREADGROUP from `from` (">" new entries, an id for this consumer's own
 * pending ones); block_ms <= 0: do not block. Returns 0 (out->n may be 0). */
int vigil_jobs_read(vigil_redis *r, const char *key, const char *group, const char *consumer,
                     const char *from, int count, int block_ms, vigil_job_entries *out);

/* XAUTOCLAIM of entries idle at least min_idle_ms, from *cursor (updated;
 * "0-0" when the scan is complete). Deleted entries come back with a NULL
 * payload so they can be acknowledged. */
int vigil_jobs_autoclaim(vigil_redis *r, const char *key, const char *group,
                          const char *consumer, int64_t min_idle_ms, int count, char *cursor,
                          size_t cursorlen, vigil_job_entries *out);

/* Renews the lease of n entries `consumer` holds, in one round trip: each
 * still pending on `consumer` has its idle time set back to 0 (XCLAIM
 * JUSTID: the delivery count stays), so no XAUTOCLAIM takes it over; one
 * pending on another consumer (it took the job over) is left alone and
 * lost[i] set; one no longer pending (acknowledged, or its entry trimmed)
 * is left alone too, lost[i] unset. Checked and claimed in one Lua script, so
 * a renewal never takes a job back from the consumer that took it over.
 * Returns how many were lost, or VIGIL_JOBS_ERROR / VIGIL_JOBS_NOGROUP. */
int vigil_jobs_renew(vigil_redis *r, const char *key, const char *group, const char *consumer,
                     const char *const *ids, int n, bool *lost);

/* XACK + XDEL of n entries in one round trip. */
int vigil_jobs_finish(vigil_redis *r, const char *key, const char *group, const char *const *ids,
                       int n);

/* 1 when input id `job` is recorded as applied in the ids set `ids_key`
 * (the runtime's dedupe record), 0 if not, -1 on error. */
int vigil_jobs_decided(vigil_redis *r, const char *ids_key, const char *job);

#endif
