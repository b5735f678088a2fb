/* stream_reads.c - typed reads of streams, sets and strings (see
 * vigil/stream_reads.h). */
#include "vigil/stream_reads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/redis_raw.h"

static char *dup_bytes(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

void vigil_stream_entries_free(vigil_stream_entry *e, size_t n)
{
    if (!e)
        return;
    for (size_t i = 0; i < n; i++) {
        free(e[i].field);
        free(e[i].value);
    }
    free(e);
}

void vigil_strings_free(char **s, size_t n)
{
    if (!s)
        return;
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

/* Copies the entries of an XRANGE-shaped array reply ([id, [f, v, ...]]
 * each); an element of another shape is skipped, as no stream holds one.
 * Returns 0, or -1 when out of memory (nothing is kept). */
static int copy_entries(const redisReply *rep, vigil_stream_entry **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (rep->elements == 0)
        return 0;
    vigil_stream_entry *e = calloc(rep->elements, sizeof *e);
    if (!e)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *x = rep->element[i];
        if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 ||
            x->element[0]->type != REDIS_REPLY_STRING || x->element[0]->len >= VIGIL_STREAM_ID_MAX ||
            x->element[1]->type != REDIS_REPLY_ARRAY || x->element[1]->elements < 2 ||
            x->element[1]->element[0]->type != REDIS_REPLY_STRING ||
            x->element[1]->element[1]->type != REDIS_REPLY_STRING)
            continue;
        const redisReply *f = x->element[1]->element[0], *v = x->element[1]->element[1];
        memcpy(e[k].id, x->element[0]->str, x->element[0]->len);
        e[k].id[x->element[0]->len] = '\0';
        e[k].field = dup_bytes(f->str, f->len);
        e[k].value = dup_bytes(v->str, v->len);
        e[k].len = v->len;
        k++;
        if (!e[k - 1].field || !e[k - 1].value) {
            vigil_stream_entries_free(e, k);
            return -1;
        }
    }
    *out = e;
    *n = k;
    return 0;
}

/* An error reply is the key's type (WRONGTYPE) or a bad argument: either
 * way not a connection problem, so retrying at once would not help. */
static vigil_read_result entries_result(redisReply *rep, vigil_stream_entry **out, size_t *n)
{
    if (!rep)
        return VIGIL_READ_UNREACHABLE;
    vigil_read_result rc = VIGIL_READ_WRONG_TYPE;
    if (rep->type == REDIS_REPLY_ARRAY)
        rc = copy_entries(rep, out, n) == 0 ? VIGIL_READ_OK : VIGIL_READ_UNREACHABLE;
    vigil_redis_reply_free(rep);
    return rc;
}

vigil_read_result vigil_stream_range(vigil_redis *r, const char *key, const char *start,
                                     const char *end, int count, bool reverse,
                                     vigil_stream_entry **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char cnt[16];
    snprintf(cnt, sizeof cnt, "%d", count);
    const char *argv[] = {reverse ? "XREVRANGE" : "XRANGE", key, start, end, "COUNT", cnt};
    redisReply *rep = r ? vigil_redis_commandv(r, count > 0 ? 6 : 4, argv, NULL) : NULL;
    return entries_result(rep, out, n);
}

vigil_read_result vigil_stream_last_id(vigil_redis *r, const char *key, char *id, size_t idlen)
{
    if (idlen)
        id[0] = '\0';
    vigil_stream_entry *e;
    size_t n;
    vigil_read_result rc = vigil_stream_range(r, key, "+", "-", 1, true, &e, &n);
    if (rc == VIGIL_READ_OK && n == 1 && idlen)
        snprintf(id, idlen, "%s", e[0].id);
    vigil_stream_entries_free(e, n);
    return rc;
}

/* Copies a bulk-string stream id into out (VIGIL_STREAM_ID_MAX); a reply
 * of another shape leaves out "". */
static void copy_id(const redisReply *x, char *out)
{
    out[0] = '\0';
    if (x && x->type == REDIS_REPLY_STRING && x->len < VIGIL_STREAM_ID_MAX) {
        memcpy(out, x->str, x->len);
        out[x->len] = '\0';
    }
}

/* XINFO STREAM answers (RESP2) a flat array of field names and values;
 * fields it does not know of are skipped, so a newer server's additions
 * change nothing, and an older one's missing entries-added reads as -1. */
vigil_read_result vigil_stream_read_info(vigil_redis *r, const char *key, vigil_stream_info *out)
{
    memset(out, 0, sizeof *out);
    out->entries_added = -1;
    const char *argv[] = {"XINFO", "STREAM", key};
    redisReply *rep = r ? vigil_redis_commandv(r, 3, argv, NULL) : NULL;
    if (!rep)
        return VIGIL_READ_UNREACHABLE;
    vigil_read_result rc = VIGIL_READ_OK;
    if (rep->type == REDIS_REPLY_ERROR) {
        /* "ERR no such key" (a data error, not retried: redis.c): a stream
         * not (or no longer) there */
        if (!rep->str || strncmp(rep->str, "ERR no such key", 15) != 0)
            rc = VIGIL_READ_WRONG_TYPE;
        out->entries_added = 0;
    } else if (rep->type != REDIS_REPLY_ARRAY) {
        rc = VIGIL_READ_WRONG_TYPE;
    } else {
        out->exists = true;
        for (size_t i = 0; i + 1 < rep->elements; i += 2) {
            const redisReply *f = rep->element[i], *v = rep->element[i + 1];
            if (f->type != REDIS_REPLY_STRING)
                continue;
            if (strcmp(f->str, "length") == 0 && v->type == REDIS_REPLY_INTEGER)
                out->length = v->integer < 0 ? 0 : (unsigned long long)v->integer;
            else if (strcmp(f->str, "entries-added") == 0 && v->type == REDIS_REPLY_INTEGER)
                out->entries_added = v->integer;
            else if (strcmp(f->str, "last-generated-id") == 0)
                copy_id(v, out->top_id);
            else if (strcmp(f->str, "first-entry") == 0 && v->type == REDIS_REPLY_ARRAY &&
                     v->elements == 2)
                copy_id(v->element[0], out->first_id);
        }
    }
    vigil_redis_reply_free(rep);
    return rc;
}

vigil_read_result vigil_stream_read_after(vigil_redis *r, const char *key, const char *after,
                                          int count, int block_ms, vigil_stream_entry **out,
                                          size_t *n)
{
    *out = NULL;
    *n = 0;
    char cnt[16], blk[16];
    snprintf(cnt, sizeof cnt, "%d", count > 0 ? count : 100);
    snprintf(blk, sizeof blk, "%d", block_ms);
    const char *block[] = {"XREAD", "COUNT", cnt, "BLOCK", blk, "STREAMS", key, after};
    const char *noblock[] = {"XREAD", "COUNT", cnt, "STREAMS", key, after};
    redisReply *rep = !r ? NULL
                      : block_ms >= 0 ? vigil_redis_commandv(r, 8, block, NULL)
                                      : vigil_redis_commandv(r, 6, noblock, NULL);
    if (!rep)
        return VIGIL_READ_UNREACHABLE;
    vigil_read_result rc = VIGIL_READ_OK;
    /* Nothing new is a nil reply; otherwise [[key, entries]] (RESP2). */
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = VIGIL_READ_WRONG_TYPE;
    } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
               rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2 &&
               rep->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
        if (copy_entries(rep->element[0]->element[1], out, n) != 0)
            rc = VIGIL_READ_UNREACHABLE;
    }
    vigil_redis_reply_free(rep);
    return rc;
}

vigil_read_result vigil_read_members(vigil_redis *r, const char *key, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    redisReply *rep = r ? vigil_redis_command(r, "SMEMBERS %s", key) : NULL;
    if (!rep)
        return VIGIL_READ_UNREACHABLE;
    vigil_read_result rc = VIGIL_READ_WRONG_TYPE;
    if (rep->type == REDIS_REPLY_ARRAY) {
        rc = VIGIL_READ_OK;
        char **s = rep->elements ? calloc(rep->elements, sizeof *s) : NULL;
        size_t k = 0;
        if (rep->elements && !s)
            rc = VIGIL_READ_UNREACHABLE;
        for (size_t i = 0; s && i < rep->elements; i++) {
            const redisReply *m = rep->element[i];
            if (m->type != REDIS_REPLY_STRING)
                continue;
            if (!(s[k] = dup_bytes(m->str, m->len))) {
                vigil_strings_free(s, k);
                s = NULL;
                k = 0;
                rc = VIGIL_READ_UNREACHABLE;
                break;
            }
            k++;
        }
        *out = s;
        *n = k;
    }
    vigil_redis_reply_free(rep);
    return rc;
}

