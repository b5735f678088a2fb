/* reads.c - typed reads of Redis values (reads.h). */
#include "vigil/reads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/redis_raw.h"
#include "vigil/stream_reads.h"

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
    vigil_redis_reply_free(rep);
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

/* One implementation of stream reads: vigil_stream_range (stream_reads.c)
 * copies the entries out; this hands their "m" field to fn. */
int vigil_read_stream(vigil_redis *r, const char *key, bool newest_first, int count,
                      vigil_read_entry_fn fn, void *ctx)
{
    vigil_stream_entry *e = NULL;
    size_t len = 0;
    vigil_read_result rc =
        vigil_stream_range(r, key, newest_first ? "+" : "-", newest_first ? "-" : "+",
                           count > 0 ? count : 100, newest_first, &e, &len);
    if (rc != VIGIL_READ_OK)
        return -1;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (strcmp(e[i].field, "m") != 0)
            continue;
        n++;
        if (fn(ctx, e[i].id, e[i].value, e[i].len))
            break;
    }
    vigil_stream_entries_free(e, len);
    return n;
}
