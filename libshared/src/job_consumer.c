/* job_consumer.c - a worker thread's reading of a durable job queue (see
 * vigil/job_consumer.h). */
#include "vigil/job_consumer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/clock.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

struct vigil_job_consumer {
    vigil_redis *r;
    char *stream, *group, *consumer, *metric;
    int64_t lease_ms, block_ms;
    bool group_ok, pel_done;
    char pel_cursor[48];
    char claim_cursor[48];
    int64_t next_claim, next_read; /* monotonic ms */
    int errors;
    char (*acks)[48];
    const char **ack_ptrs;
    int n_acks, max_acks;
};

vigil_job_consumer *vigil_job_consumer_new(vigil_redis *r, const vigil_job_consumer_config *cfg)
{
    vigil_job_consumer *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->r = r;
    c->stream = strdup(cfg->stream);
    c->group = strdup(cfg->group);
    c->consumer = strdup(cfg->consumer);
    c->metric = strdup(cfg->metric ? cfg->metric : "vigil_jobs");
    c->lease_ms = cfg->lease_ms > 0 ? cfg->lease_ms : 60000;
    c->block_ms = cfg->block_ms;
    c->max_acks = cfg->max_acks > 0 ? cfg->max_acks : 1;
    c->acks = calloc((size_t)c->max_acks, sizeof *c->acks);
    c->ack_ptrs = calloc((size_t)c->max_acks, sizeof *c->ack_ptrs);
    if (!c->stream || !c->group || !c->consumer || !c->metric || !c->acks || !c->ack_ptrs) {
        vigil_job_consumer_free(c);
        return NULL;
    }
    snprintf(c->pel_cursor, sizeof c->pel_cursor, "0");
    snprintf(c->claim_cursor, sizeof c->claim_cursor, "0-0");
    return c;
}

void vigil_job_consumer_free(vigil_job_consumer *c)
{
    if (!c)
        return;
    free(c->stream);
    free(c->group);
    free(c->consumer);
    free(c->metric);
    free(c->acks);
    free(c->ack_ptrs);
    free(c);
}

static void count(const vigil_job_consumer *c, const char *what, const char *help, int n)
{
    char name[160];
    snprintf(name, sizeof name, "%s_%s_total", c->metric, what);
    vigil_counter_add(name, help, NULL, n);
}

static void backoff(vigil_job_consumer *c, const char *what)
{
    int64_t d = vigil_backoff_ms(c->errors++, 100, 5000);
    if (c->errors == 1 || c->errors % 20 == 0)
        vigil_log_kv(VIGIL_LOG_WARN, "job stream unavailable, retrying", "what", what, "error",
                     vigil_redis_last_error(c->r), NULL);
    c->next_read = vigil_mono_ms() + d;
}

bool vigil_job_consumer_backing_off(const vigil_job_consumer *c)
{
    return vigil_mono_ms() < c->next_read;
}

static int hand(vigil_job_entries *es, bool fresh, vigil_job_take_fn take, void *ctx)
{
    int n = es->n;
    for (int i = 0; i < es->n; i++)
        take(ctx, &es->v[i], fresh);
    vigil_job_entries_free(es);
    return n;
}

int vigil_job_consumer_fill(vigil_job_consumer *c, int room, bool idle, vigil_job_take_fn take,
                            void *ctx)
{
    int64_t mono = vigil_mono_ms();
    if (room <= 0 || mono < c->next_read)
        return 0;
    if (!c->group_ok) {
        if (vigil_jobs_group_create(c->r, c->stream, c->group) != 0) {
            backoff(c, "XGROUP CREATE");
            return -1;
        }
        c->group_ok = true;
    }
    vigil_job_entries es = {0};
    int rc = 0, handed = 0;
    if (!c->pel_done) {
        rc = vigil_jobs_read(c->r, c->stream, c->group, c->consumer, c->pel_cursor, room, 0, &es);
        if (rc == 0 && es.n == 0) {
            vigil_job_entries_free(&es);
            c->pel_done = true;
        } else if (rc == 0) {
            snprintf(c->pel_cursor, sizeof c->pel_cursor, "%s", es.v[es.n - 1].id);
            count(c, "resumed", "Own pending jobs handed over again after a restart", es.n);
            c->errors = 0;
            return hand(&es, false, take, ctx);
        }
    } else if (mono >= c->next_claim) {
        rc = vigil_jobs_autoclaim(c->r, c->stream, c->group, c->consumer, c->lease_ms, room,
                                  c->claim_cursor, sizeof c->claim_cursor, &es);
        if (rc == 0) {
            if (strcmp(c->claim_cursor, "0-0") == 0) {
                int64_t every = c->lease_ms / 2;
                c->next_claim = mono + (every < 1000 ? 1000 : every > 30000 ? 30000 : every);
            }
            if (es.n > 0)
                count(c, "reclaimed", "Jobs taken over from a consumer idle past the lease", es.n);
            room -= es.n;
            handed = hand(&es, false, take, ctx);
        }
    }
    if (rc == 0 && c->pel_done && room > 0) {
        rc = vigil_jobs_read(c->r, c->stream, c->group, c->consumer, ">", room,
                             idle ? (int)c->block_ms : 0, &es);
        if (rc == 0)
            handed += hand(&es, true, take, ctx);
    }
    if (rc == VIGIL_JOBS_NOGROUP)
        c->group_ok = false;
    if (rc != 0) {
        backoff(c, "XREADGROUP");
        return -1;
    }
    c->errors = 0;
    return handed;
}

void vigil_job_consumer_flush(vigil_job_consumer *c)
{
    if (c->n_acks == 0)
        return;
    for (int i = 0; i < c->n_acks; i++)
        c->ack_ptrs[i] = c->acks[i];
    if (vigil_jobs_finish(c->r, c->stream, c->group, c->ack_ptrs, c->n_acks) != 0)
        vigil_log_kv(VIGIL_LOG_WARN, "jobs not acknowledged (looked at again, decided once)",
                     "first", c->acks[0], NULL);
    c->n_acks = 0;
}

void vigil_job_consumer_ack(vigil_job_consumer *c, const char *entry_id)
{
    if (c->n_acks == c->max_acks)
        vigil_job_consumer_flush(c);
    snprintf(c->acks[c->n_acks++], sizeof c->acks[0], "%s", entry_id);
}
