/* reads.c - typed reads of Redis values (reads.h). */
#include "vigil/reads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/redis_raw.h"

vigil_read_result vigil_read_string(vigil_redis *r, const char *key, char **out, size_t *len,
                                    char *err, size_t errlen)
{
    *out = NULL;
    if (len)
        *len = 0;
    redisReply *rep = r ? vigil_redis_command(r, "GET %s", key) : NULL;
    if (!rep)
        return VIGIL_READ_UNREACHABLE;
    vigil_read_result rc = VIGIL_READ_OK;
    if (rep->type == REDIS_REPLY_STRING) {
        *out = malloc(rep->len + 1);
        if (*out) {
            memcpy(*out, rep->str, rep->len);
            (*out)[rep->len] = '\0';
            if (len)
                *len = rep->len;
        } else {
            rc = VIGIL_READ_UNREACHABLE;
        }
    } else if (rep->type == REDIS_REPLY_ERROR) {
        if (err && errlen)
            snprintf(err, errlen, "%s", rep->str);
        rc = VIGIL_READ_WRONG_TYPE;
    } else if (rep->type != REDIS_REPLY_NIL) {
        if (err && errlen)
            snprintf(err, errlen, "unexpected reply type %d", rep->type);
        rc = VIGIL_READ_WRONG_TYPE;
    }
    freeReplyObject(rep);
    return rc;
}

vigil_read_result vigil_read_flag(vigil_redis *r, const char *key, bool *on, char *err,
                                  size_t errlen)
{
    char *v = NULL;
    size_t len = 0;
    vigil_read_result rc = vigil_read_string(r, key, &v, &len, err, errlen);
    *on = rc == VIGIL_READ_OK && v && len == 1 && v[0] == '1';
    free(v);
    return rc;
}

/* The "m" field of each entry of an XRANGE/XREVRANGE reply to fn. */
static int each_entry(const redisReply *rep, vigil_read_entry_fn fn, void *ctx)
{
    int n = 0;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        const redisReply *f = e->element[1];
        for (size_t k = 0; k + 1 < f->elements; k += 2) {
            if (f->element[k]->type == REDIS_REPLY_STRING && strcmp(f->element[k]->str, "m") == 0 &&
                f->element[k + 1]->type == REDIS_REPLY_STRING) {
                n++;
                if (fn(ctx, e->element[0]->str, f->element[k + 1]->str, f->element[k + 1]->len))
                    return n;
            }
        }
    }
    return n;
}

int vigil_read_stream(vigil_redis *r, const char *key, bool newest_first, int count,
                      vigil_read_entry_fn fn, void *ctx)
{
    int c = count > 0 ? count : 100;
    redisReply *rep = !r             ? NULL
                      : newest_first ? vigil_redis_command(r, "XREVRANGE %s + - COUNT %d", key, c)
                                     : vigil_redis_command(r, "XRANGE %s - + COUNT %d", key, c);
    if (!rep)
        return -1;
    int n = rep->type == REDIS_REPLY_ARRAY ? each_entry(rep, fn, ctx) : -1;
    freeReplyObject(rep);
    return n;
}
