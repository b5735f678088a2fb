/* kv.c - typed reads of auxiliary keys (see vigil/kv.h). */
#include "vigil/kv.h"
#include <stdlib.h>
#include <string.h>

int vigil_kv_get(vigil_redis *r, const char *key, char **out, size_t *len)
{
    *out = NULL;
    if (len)
        *len = 0;
    redisReply *rep = vigil_redis_command(r, "GET %s", key);
    if (!rep)
        return -1;
    int rc = -1;
    if (rep->type == REDIS_REPLY_NIL) {
        rc = 0;
    } else if (rep->type == REDIS_REPLY_STRING) {
        *out = malloc(rep->len + 1);
        if (*out) {
            memcpy(*out, rep->str, rep->len);
            (*out)[rep->len] = '\0';
            if (len)
                *len = rep->len;
            rc = 1;
        }
    }
    freeReplyObject(rep);
    return rc;
}

int vigil_kv_stream_range(vigil_redis *r, const char *key, int newest_first, int count,
                          vigil_kv_entry_fn fn, void *ctx)
{
    redisReply *rep = newest_first
                          ? vigil_redis_command(r, "XREVRANGE %s + - COUNT %d", key,
                                                count > 0 ? count : 100)
                          : vigil_redis_command(r, "XRANGE %s - + COUNT %d", key,
                                                count > 0 ? count : 100);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(rep);
        return -1;
    }
    int n = 0;
    for (size_t i = 0; i < rep->elements; i++) {
        redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        redisReply *f = e->element[1];
        for (size_t k = 0; k + 1 < f->elements; k += 2) {
            if (f->element[k]->type == REDIS_REPLY_STRING && strcmp(f->element[k]->str, "m") == 0 &&
                f->element[k + 1]->type == REDIS_REPLY_STRING) {
                n++;
                if (fn(ctx, e->element[0]->str, f->element[k + 1]->str, f->element[k + 1]->len)) {
                    freeReplyObject(rep);
                    return n;
                }
            }
        }
    }
    freeReplyObject(rep);
    return n;
}
