/* job_consumer.c - see job_consumer.h: own pending jobs first, then jobs
 * idle past the lease, then new ones. */
#include <stdio.h>
#include <string.h>
#include "vigil/job_consumer.h"
#include "vigil/clock.h"
#include "vigil/log.h"

void vigil_job_consumer_init(vigil_job_consumer *c, const char *stream, const char *group,
                             const char *consumer, int64_t lease_ms)
{
    memset(c, 0, sizeof *c);
    snprintf(c->stream, sizeof c->stream, "%s", stream);
    snprintf(c->group, sizeof c->group, "%s", group);
    snprintf(c->consumer, sizeof c->consumer, "%s", consumer);
    c->lease_ms = lease_ms;
    snprintf(c->pel_cursor, sizeof c->pel_cursor, "0");
    snprintf(c->claim_cursor, sizeof c->claim_cursor, "0-0");
}

/* After a full XAUTOCLAIM pass, the next one waits half a lease. */
static int64_t claim_every(const vigil_job_consumer *c)
{
    int64_t every = c->lease_ms / 2;
    return every < 500 ? 500 : every > 30000 ? 30000 : every;
}

int vigil_job_consumer_next(vigil_job_consumer *c, vigil_redis *r, int max, int block_ms,
                            int64_t now_mono, vigil_job_entries *out, vigil_jobs_origin *origin)
{
    out->v = NULL;
    out->n = 0;
    if (!c->group_ok) {
        if (vigil_jobs_group_create(r, c->stream, c->group) != 0)
            return VIGIL_JOBS_ERROR;
        c->group_ok = true;
    }
    int rc;
    if (!c->pel_done) {
        *origin = VIGIL_JOBS_OWN_PENDING;
        rc = vigil_jobs_read(r, c->stream, c->group, c->consumer, c->pel_cursor, max, 0, out);
        if (rc == 0 && out->n > 0) {
            snprintf(c->pel_cursor, sizeof c->pel_cursor, "%s", out->v[out->n - 1].id);
            return 0;
        }
        vigil_job_entries_free(out);
        if (rc != 0)
            goto fail;
        c->pel_done = true;
    }
    if (now_mono >= c->next_claim) {
        *origin = VIGIL_JOBS_RECLAIMED;
        rc = vigil_jobs_autoclaim(r, c->stream, c->group, c->consumer, c->lease_ms, max,
                                  c->claim_cursor, sizeof c->claim_cursor, out);
        if (rc != 0)
            goto fail;
        if (strcmp(c->claim_cursor, "0-0") == 0)
            c->next_claim = now_mono + claim_every(c);
        if (out->n > 0)
            return 0;
        vigil_job_entries_free(out);
    }
    *origin = VIGIL_JOBS_NEW;
    rc = vigil_jobs_read(r, c->stream, c->group, c->consumer, ">", max, block_ms, out);
    if (rc == 0)
        return 0;
    vigil_job_entries_free(out);
fail:
    if (rc == VIGIL_JOBS_NOGROUP)
        c->group_ok = false;
    return VIGIL_JOBS_ERROR;
}

int64_t vigil_job_backoff(int *errors, vigil_redis *r, const char *what)
{
    int64_t d = vigil_backoff_ms((*errors)++, 100, 5000);
    if (*errors == 1 || *errors % 20 == 0)
        vigil_log_kv(VIGIL_LOG_WARN, "job stream unavailable, retrying", "what", what, "error",
                     r ? vigil_redis_last_error(r) : "no connection", NULL);
    return d;
}
