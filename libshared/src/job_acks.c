/* job_acks.c - a job worker's batched acknowledgements (job_acks.h). */
#include "vigil/job_acks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/jobs.h"
#include "vigil/log.h"

int vigil_job_acks_init(vigil_job_acks *a, int cap)
{
    memset(a, 0, sizeof *a);
    a->cap = cap < 1 ? 1 : cap;
    a->ids = calloc((size_t)a->cap, sizeof *a->ids);
    a->ptrs = calloc((size_t)a->cap, sizeof *a->ptrs);
    return a->ids && a->ptrs ? 0 : -1;
}

void vigil_job_acks_free(vigil_job_acks *a)
{
    if (!a)
        return;
    free(a->ids);
    free(a->ptrs);
    memset(a, 0, sizeof *a);
}

void vigil_job_acks_flush(vigil_job_acks *a, vigil_redis *r, const char *stream,
                          const char *group)
{
    if (a->n == 0)
        return;
    for (int i = 0; i < a->n; i++)
        a->ptrs[i] = a->ids[i];
    if (vigil_jobs_finish(r, stream, group, a->ptrs, a->n) != 0)
        vigil_log_kv(VIGIL_LOG_WARN,
                     "jobs not acknowledged (they will be looked at again, decided once)",
                     "stream", stream, "first", a->ids[0], NULL);
    a->n = 0;
}

void vigil_job_acks_add(vigil_job_acks *a, vigil_redis *r, const char *stream, const char *group,
                        const char *entry)
{
    if (a->n == a->cap)
        vigil_job_acks_flush(a, r, stream, group);
    snprintf(a->ids[a->n++], sizeof a->ids[0], "%s", entry);
}
