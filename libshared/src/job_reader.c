/* job_reader.c - the reading order of a job worker (see vigil/job_reader.h). */
#include <stdio.h>
#include <string.h>
#include "vigil/clock.h"
#include "vigil/job_reader.h"
#include "vigil/log.h"

void vigil_job_reader_init(vigil_job_reader *r, const char *stream, const char *group,
                           const char *consumer, int64_t lease_ms)
{
    memset(r, 0, sizeof *r);
    snprintf(r->stream, sizeof r->stream, "%s", stream);
    snprintf(r->group, sizeof r->group, "%s", group);
    snprintf(r->consumer, sizeof r->consumer, "%s", consumer);
    r->lease_ms = lease_ms;
    int64_t every = lease_ms / 4;
    r->claim_every_ms = every < 250 ? 250 : every > 15000 ? 15000 : every;
    r->block_ms = 200;
    snprintf(r->own_cursor, sizeof r->own_cursor, "0");
    snprintf(r->claim_cursor, sizeof r->claim_cursor, "0-0");
}

bool vigil_job_reader_backing_off(const vigil_job_reader *r)
{
    return vigil_mono_ms() < r->next_read;
}

static void backoff(vigil_job_reader *r, vigil_redis *redis, const char *what)
{
    int64_t d = vigil_backoff_ms(r->errors++, 100, 5000);
    if (r->errors == 1 || r->errors % 20 == 0)
        vigil_log_kv(VIGIL_LOG_WARN, "job stream unavailable, retrying", "stream", r->stream,
                     "what", what, "error", vigil_redis_last_error(redis), NULL);
    r->next_read = vigil_mono_ms() + d;
}

static int hand(vigil_job_entries *es, bool fresh, vigil_job_take_fn take, void *arg)
{
    int n = es->n;
    for (int i = 0; i < es->n; i++)
        take(arg, &es->v[i], fresh);
    vigil_job_entries_free(es);
    return n;
}

int vigil_job_reader_fill(vigil_job_reader *r, vigil_redis *redis, int room, bool idle,
                          vigil_job_take_fn take, void *arg)
{
    int64_t mono = vigil_mono_ms();
    if (room <= 0 || mono < r->next_read)
        return 0;
    if (!r->group_ok) {
        if (vigil_jobs_group_create(redis, r->stream, r->group) != 0) {
            backoff(r, redis, "XGROUP CREATE");
            return -1;
        }
        r->group_ok = true;
    }
    vigil_job_entries es = {0};
    int rc = 0;
    if (!r->own_done) {
        rc = vigil_jobs_read(redis, r->stream, r->group, r->consumer, r->own_cursor, room, 0, &es);
        if (rc == 0 && es.n == 0) {
            r->own_done = true;
            vigil_job_entries_free(&es);
        } else if (rc == 0) {
            snprintf(r->own_cursor, sizeof r->own_cursor, "%s", es.v[es.n - 1].id);
            r->resumed += hand(&es, false, take, arg);
            r->errors = 0;
            return 0;
        }
    } else if (mono >= r->next_claim) {
        rc = vigil_jobs_autoclaim(redis, r->stream, r->group, r->consumer, r->lease_ms, room,
                                  r->claim_cursor, sizeof r->claim_cursor, &es);
        if (rc == 0) {
            if (strcmp(r->claim_cursor, "0-0") == 0)
                r->next_claim = mono + r->claim_every_ms;
            int n = hand(&es, false, take, arg);
            r->reclaimed += n;
            room -= n;
        }
    }
    if (rc == 0 && r->own_done && room > 0) {
        rc = vigil_jobs_read(redis, r->stream, r->group, r->consumer, ">", room,
                             idle ? r->block_ms : 0, &es);
        if (rc == 0)
            hand(&es, true, take, arg);
    }
    if (rc == VIGIL_JOBS_NOGROUP)
        r->group_ok = false;
    if (rc != 0) {
        backoff(r, redis, "XREADGROUP");
        return -1;
    }
    r->errors = 0;
    return 0;
}
