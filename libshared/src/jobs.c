/* jobs.c - Redis stream commands of the durable job queue (see vigil/jobs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/jobs.h"
#include "vigil/redis_raw.h"

void vigil_job_entries_free(vigil_job_entries *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->v[i].payload);
    free(e->v);
    e->v = NULL;
    e->n = 0;
}

static redisReply *cmd(vigil_redis *r, int argc, const char **argv)
{
    size_t lens[16];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return vigil_redis_commandv(r, argc, argv, lens);
}

static int error_kind(const redisReply *rep)
{
    if (rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOGROUP", 7) == 0)
        return VIGIL_JOBS_NOGROUP;
    return VIGIL_JOBS_ERROR;
}

int vigil_jobs_group_create(vigil_redis *r, const char *key, const char *group)
{
    const char *argv[] = {"XGROUP", "CREATE", key, group, "0", "MKSTREAM"};
    redisReply *rep = cmd(r, 6, argv);
    if (!rep)
        return VIGIL_JOBS_ERROR;
    int rc = rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYGROUP", 9) != 0
                 ? VIGIL_JOBS_ERROR
                 : 0;
    vigil_redis_reply_free(rep);
    return rc;
}

/* Appends the entries of an array [[id, [field, value, ...] | nil], ...]. */
static int take_entries(const redisReply *arr, vigil_job_entries *out)
{
    if (arr->type != REDIS_REPLY_ARRAY)
        return VIGIL_JOBS_ERROR;
    vigil_job_entry *v = realloc(out->v, (size_t)(out->n + (int)arr->elements + 1) * sizeof *v);
    if (!v)
        return VIGIL_JOBS_ERROR;
    out->v = v;
    for (size_t i = 0; i < arr->elements; i++) {
        const redisReply *e = arr->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 ||
            e->element[0]->type != REDIS_REPLY_STRING)
            continue;
        vigil_job_entry *x = &out->v[out->n];
        memset(x, 0, sizeof *x);
        snprintf(x->id, sizeof x->id, "%s", e->element[0]->str);
        if (e->elements >= 2 && e->element[1]->type == REDIS_REPLY_ARRAY) {
            const redisReply *f = e->element[1];
            for (size_t k = 0; k + 1 < f->elements; k += 2)
                if (f->element[k]->type == REDIS_REPLY_STRING && strcmp(f->element[k]->str, "m") == 0 &&
                    f->element[k + 1]->type == REDIS_REPLY_STRING) {
                    x->len = f->element[k + 1]->len;
                    x->payload = malloc(x->len + 1);
                    if (!x->payload)
                        return VIGIL_JOBS_ERROR;
                    memcpy(x->payload, f->element[k + 1]->str, x->len);
                    x->payload[x->len] = '\0';
                }
        }
        out->n++;
    }
    return 0;
}

int vigil_jobs_read(vigil_redis *r, const char *key, const char *group, const char *consumer,
                     const char *from, int count, int block_ms, vigil_job_entries *out)
{
    char n[16], b[16];
    snprintf(n, sizeof n, "%d", count);
    snprintf(b, sizeof b, "%d", block_ms);
    const char *argv[] = {"XREADGROUP", "GROUP", group, consumer, "COUNT", n,
                          "BLOCK", b, "STREAMS", key, from};
    const char *nb[] = {"XREADGROUP", "GROUP", group, consumer, "COUNT", n, "STREAMS", key, from};
    redisReply *rep = block_ms > 0 ? cmd(r, 11, argv) : cmd(r, 9, nb);
    out->v = NULL;
    out->n = 0;
    if (!rep)
        return VIGIL_JOBS_ERROR;
    int rc = 0;
    if (rep->type == REDIS_REPLY_NIL) {
        rc = 0;
    } else if (rep->type != REDIS_REPLY_ARRAY) {
        rc = error_kind(rep);
    } else {
        for (size_t i = 0; i < rep->elements && rc == 0; i++) {
            const redisReply *s = rep->element[i];
            if (s->type == REDIS_REPLY_ARRAY && s->elements == 2)
                rc = take_entries(s->element[1], out);
        }
    }
    vigil_redis_reply_free(rep);
    if (rc != 0)
        vigil_job_entries_free(out);
    return rc;
}

int vigil_jobs_autoclaim(vigil_redis *r, const char *key, const char *group,
                          const char *consumer, int64_t min_idle_ms, int count, char *cursor,
                          size_t cursorlen, vigil_job_entries *out)
{
    char idle[24], n[16];
    snprintf(idle, sizeof idle, "%lld", (long long)min_idle_ms);
    snprintf(n, sizeof n, "%d", count);
    const char *argv[] = {"XAUTOCLAIM", key, group, consumer, idle, cursor, "COUNT", n};
    redisReply *rep = cmd(r, 8, argv);
    out->v = NULL;
    out->n = 0;
    if (!rep)
        return VIGIL_JOBS_ERROR;
    int rc = 0;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING) {
        rc = error_kind(rep);
    } else {
        snprintf(cursor, cursorlen, "%s", rep->element[0]->str);
        rc = take_entries(rep->element[1], out);
        /* Redis 7: a third element lists ids whose entries were deleted */
        if (rc == 0 && rep->elements >= 3 && rep->element[2]->type == REDIS_REPLY_ARRAY) {
            const redisReply *del = rep->element[2];
            vigil_job_entry *v = realloc(out->v, (size_t)(out->n + (int)del->elements + 1) * sizeof *v);
            if (!v) {
                rc = VIGIL_JOBS_ERROR;
            } else {
                out->v = v;
                for (size_t i = 0; i < del->elements; i++) {
                    if (del->element[i]->type != REDIS_REPLY_STRING)
                        continue;
                    memset(&out->v[out->n], 0, sizeof out->v[out->n]);
                    snprintf(out->v[out->n].id, sizeof out->v[out->n].id, "%s",
                             del->element[i]->str);
                    out->n++;
                }
            }
        }
    }
    vigil_redis_reply_free(rep);
    if (rc != 0)
        vigil_job_entries_free(out);
    return rc;
}

/* KEYS[1] the stream; ARGV: group, consumer, then the entry ids. XPENDING
 * over the one id says who holds it; only those still this consumer's are
 * claimed again (min idle 0: at once), in the same script, so no
 * XAUTOCLAIM can come between the check and the claim. One flag per id:
 * 1 renewed, 0 held by another consumer, 2 no longer pending (acknowledged,
 * or its entry trimmed: XCLAIM dropped it). */
static const char RENEW_LUA[] =
    "local group, me = ARGV[1], ARGV[2]\n"
    "local flags, claim = {}, {'XCLAIM', KEYS[1], group, me, 0}\n"
    "for i = 3, #ARGV do\n"
    "  local p = redis.call('XPENDING', KEYS[1], group, ARGV[i], ARGV[i], 1)\n"
    "  if #p == 0 then\n"
    "    flags[#flags + 1] = 2\n"
    "  elseif p[1][2] == me then\n"
    "    flags[#flags + 1] = 1\n"
    "    claim[#claim + 1] = ARGV[i]\n"
    "  else\n"
    "    flags[#flags + 1] = 0\n"
    "  end\n"
    "end\n"
    "if #claim > 5 then\n"
    "  claim[#claim + 1] = 'JUSTID'\n"
    "  redis.call(unpack(claim))\n"
    "end\n"
    "return flags\n";

int vigil_jobs_renew(vigil_redis *r, const char *key, const char *group, const char *consumer,
                     const char *const *ids, int n, bool *lost)
{
    static _Thread_local vigil_script script = VIGIL_SCRIPT(RENEW_LUA);
    if (n <= 0)
        return 0;
    const char **argv = malloc((size_t)(n + 3) * sizeof *argv);
    if (!argv)
        return VIGIL_JOBS_ERROR;
    argv[0] = key, argv[1] = group, argv[2] = consumer;
    for (int i = 0; i < n; i++)
        argv[3 + i] = ids[i];
    redisReply *rep = vigil_redis_eval(r, &script, 1, n + 3, argv, NULL);
    free(argv);
    if (!rep)
        return VIGIL_JOBS_ERROR;
    int rc = 0;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
        rc = error_kind(rep);
    } else {
        for (int i = 0; i < n; i++) {
            const redisReply *f = rep->element[i];
            lost[i] = f->type == REDIS_REPLY_INTEGER && f->integer == 0;
            rc += lost[i];
        }
    }
    vigil_redis_reply_free(rep);
    return rc;
}

int vigil_jobs_finish(vigil_redis *r, const char *key, const char *group, const char *const *ids,
                       int n)
{
    if (n <= 0)
        return 0;
    const char **ack = malloc((size_t)(n + 3) * sizeof *ack);
    const char **del = malloc((size_t)(n + 2) * sizeof *del);
    size_t *al = malloc((size_t)(n + 3) * sizeof *al);
    size_t *dl = malloc((size_t)(n + 2) * sizeof *dl);
    int rc = VIGIL_JOBS_ERROR;
    if (!ack || !del || !al || !dl)
        goto cleanup;
    ack[0] = "XACK", ack[1] = key, ack[2] = group;
    del[0] = "XDEL", del[1] = key;
    for (int i = 0; i < n; i++)
        ack[3 + i] = del[2 + i] = ids[i];
    for (int i = 0; i < n + 3; i++)
        al[i] = strlen(ack[i]);
    for (int i = 0; i < n + 2; i++)
        dl[i] = strlen(del[i]);
    if (vigil_redis_append(r, n + 3, ack, al) != 0 || vigil_redis_append(r, n + 2, del, dl) != 0)
        goto cleanup;
    rc = 0;
    for (int i = 0; i < 2; i++) {
        redisReply *rep = vigil_redis_pipeline_get(r);
        if (!rep) {
            rc = VIGIL_JOBS_ERROR;
            break;
        }
        if (rep->type == REDIS_REPLY_ERROR)
            rc = VIGIL_JOBS_ERROR;
        vigil_redis_reply_free(rep);
    }
cleanup:
    free(ack);
    free(del);
    free(al);
    free(dl);
    return rc;
}

int vigil_jobs_decided(vigil_redis *r, const char *ids_key, const char *job)
{
    const char *argv[] = {"ZSCORE", ids_key, job};
    redisReply *rep = cmd(r, 3, argv);
    if (!rep)
        return -1;
    int rc = rep->type == REDIS_REPLY_NIL ? 0 : rep->type == REDIS_REPLY_ERROR ? -1 : 1;
    vigil_redis_reply_free(rep);
    return rc;
}
