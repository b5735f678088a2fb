/* job_acks.h - a job worker's batched acknowledgements: the entries it
 * finished (committed, or found decided) are acknowledged and deleted in
 * one XACK + XDEL round trip per turn instead of one per job. A crash
 * before the flush only means those jobs are looked at again and found
 * decided (the runtime's dedupe record), so nothing is done twice. */
#ifndef VIGIL_JOB_ACKS_H
#define VIGIL_JOB_ACKS_H
#include "redis.h"

#define VIGIL_JOB_ACK_ID_MAX 48 /* a stream entry id ("ms-seq") fits */

typedef struct vigil_job_acks {
    char (*ids)[VIGIL_JOB_ACK_ID_MAX];
    const char **ptrs;
    int n, cap;
} vigil_job_acks;

/* Room for cap entries (cap < 1: 1). 0, or -1 when out of memory (then
 * vigil_job_acks_free() is still safe). */
int vigil_job_acks_init(vigil_job_acks *a, int cap);
void vigil_job_acks_free(vigil_job_acks *a);
/* Batches entry; flushes first when the batch is full. */
void vigil_job_acks_add(vigil_job_acks *a, vigil_redis *r, const char *stream, const char *group,
                        const char *entry);
/* Acknowledges and deletes what is batched, in one round trip. A failure
 * is logged and the batch dropped (the jobs come back and are found
 * decided). */
void vigil_job_acks_flush(vigil_job_acks *a, vigil_redis *r, const char *stream,
                          const char *group);

#endif
