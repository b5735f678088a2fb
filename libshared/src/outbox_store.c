/* outbox_store.c - the Redis side of the outbox publisher and of the
 * dead-letter list (outbox_store.h, deadletter.h). */
#include "outbox_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_lua.h"
#include "vigil/deadletter.h"
#include "vigil/redis_raw.h"
#include "vigil/log.h"

/* Moves every dead letter to the outbox's tail in order, then deletes the
 * list, in one script (so a replay racing a new dead letter loses none). */
#define VIGIL_LUA_DEAD_LETTER_REPLAY                                                  \
    "local items = redis.call('LRANGE', KEYS[1], 0, -1)\n"                            \
    "for _, e in ipairs(items) do redis.call('RPUSH', KEYS[2], e) end\n"              \
    "redis.call('DEL', KEYS[1])\n"                                                    \
    "return #items\n"

void vigil_outbox_raw_free(vigil_outbox_raw *out, int n)
{
    if (!out)
        return;
    for (int i = 0; i < n; i++) {
        if (out[i].owner)
            vigil_redis_reply_free(out[i].owner);
        else
            free(out[i].buf);
        out[i].buf = NULL;
        out[i].len = 0;
        out[i].owner = NULL;
    }
}

/* Entry i of an LRANGE reply, kept where the reply holds it. */
static void take_raw(redisReply *range, size_t i, vigil_outbox_raw *o)
{
    redisReply *e = vigil_redis_reply_detach(range, i);
    o->owner = e;
    o->buf = e->str;
    o->len = e->len;
}

int vigil_outbox_store_sync(vigil_store *s, int trim_n, long offset, int max,
                            vigil_outbox_raw *out)
{
    char start[24], from[24], to[24];
    int queued = 0;
    if (trim_n > 0) {
        snprintf(start, sizeof start, "%d", trim_n);
        const char *argv[] = { "LTRIM", s->outbox_key, start, "-1" };
        if (vigil_redis_append(s->r, 4, argv, NULL) != 0)
            return -1;
        queued++;
    }
    if (max > 0) {
        snprintf(from, sizeof from, "%ld", offset);
        snprintf(to, sizeof to, "%ld", offset + max - 1);
        const char *argv[] = { "LRANGE", s->outbox_key, from, to };
        if (vigil_redis_append(s->r, 4, argv, NULL) != 0)
            return -1;
        queued++;
    }
    int n = 0, rc = 0;
    for (int q = 0; q < queued; q++) {
        redisReply *rep = vigil_redis_pipeline_get(s->r);
        if (!rep)
            return -1; /* connection dropped: remaining replies are gone */
        bool is_range = q == queued - 1 && max > 0;
        if (rep->type == REDIS_REPLY_ERROR) {
            vigil_log(VIGIL_LOG_ERROR, "outbox %s: %s", is_range ? "read" : "trim", rep->str);
            rc = -1;
        } else if (is_range && rc == 0) {
            if (rep->type != REDIS_REPLY_ARRAY) {
                rc = -1;
            } else {
                for (size_t i = 0; i < rep->elements && n < max; i++) {
                    const redisReply *e = rep->element[i];
                    if (e->type != REDIS_REPLY_STRING && e->type != REDIS_REPLY_STATUS) {
                        rc = -1;
                        break;
                    }
                    take_raw(rep, i, &out[n]);
                    n++;
                }
            }
        }
        vigil_redis_reply_free(rep);
    }
    if (rc != 0) {
        vigil_outbox_raw_free(out, n);
        return -1;
    }
    return n;
}

/* The integer a script answered, or -1 (logged as what) on an error reply
 * or a connection error. Frees the reply. */
static long long int_reply(redisReply *rep, const char *what)
{
    if (!rep)
        return -1;
    long long n = -1;
    if (rep->type == REDIS_REPLY_INTEGER)
        n = rep->integer;
    else
        vigil_log(VIGIL_LOG_ERROR, "%s: %s", what,
                  rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    vigil_redis_reply_free(rep);
    return n;
}

long long vigil_outbox_store_dead_letter(vigil_store *s, vigil_script *script, const char *dl_key,
                                         const char *raw, size_t len)
{
    const char *argv[] = { s->outbox_key, dl_key, raw };
    size_t argvlen[] = { strlen(s->outbox_key), strlen(dl_key), len };
    return int_reply(vigil_redis_eval(s->r, script, 2, 3, argv, argvlen), "outbox dead letter");
}

long long vigil_outbox_store_llen(vigil_store *s, const char *key)
{
    const char *argv[] = { "LLEN", key };
    return int_reply(vigil_redis_commandv(s->r, 2, argv, NULL), "LLEN");
}

/* ---- deadletter.h -------------------------------------------------------- */

int vigil_deadletter_key(const char *prefix, const char *service, char *out, size_t outlen)
{
    if (!prefix || !service || !out)
        return -1;
    int n = snprintf(out, outlen, "%s%s:deadletter", prefix, service);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

bool vigil_outbox_entry_decode(const char *raw, size_t len, char **topic, const char **payload,
                               size_t *payload_len, bool *retain)
{
    *topic = NULL;
    *payload = NULL;
    *payload_len = 0;
    *retain = false;
    if (!raw || len < 3 || (raw[0] != '0' && raw[0] != '1'))
        return false;
    const char *nl = memchr(raw, '\n', len);
    if (!nl || nl == raw + 1)
        return false;
    size_t tl = (size_t)(nl - raw - 1);
    /* An MQTT topic name has at most 65535 bytes, no wildcard and no NUL
     * (a broker disconnects a client that publishes one). */
    if (tl > 65535 || memchr(raw + 1, '\0', tl) || memchr(raw + 1, '+', tl) ||
        memchr(raw + 1, '#', tl))
        return false;
    char *t = malloc(tl + 1);
    if (!t)
        return false;
    memcpy(t, raw + 1, tl);
    t[tl] = '\0';
    *topic = t;
    *payload = nl + 1;
    *payload_len = len - tl - 2;
    *retain = raw[0] == '1';
    return true;
}

long long vigil_deadletter_list(vigil_redis *r, const char *prefix, const char *service,
                                vigil_deadletter_fn fn, void *ctx)
{
    char key[512];
    if (vigil_deadletter_key(prefix, service, key, sizeof key) != 0)
        return -1;
    const char *argv[] = { "LRANGE", key, "0", "-1" };
    redisReply *rep = vigil_redis_commandv(r, 4, argv, NULL);
    if (!rep)
        return -1;
    long long n = -1;
    if (rep->type == REDIS_REPLY_ARRAY) {
        n = 0;
        for (size_t i = 0; i < rep->elements; i++) {
            const redisReply *e = rep->element[i];
            if (e->type != REDIS_REPLY_STRING)
                continue;
            vigil_deadletter d = { .raw = e->str, .raw_len = e->len };
            char *topic = NULL;
            if (!vigil_outbox_entry_decode(e->str, e->len, &topic, &d.payload, &d.payload_len,
                                           &d.retain))
                d.payload = NULL;
            d.topic = topic;
            if (fn)
                fn(ctx, n, &d);
            free(topic);
            n++;
        }
    } else {
        vigil_log(VIGIL_LOG_ERROR, "dead letter list: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    }
    vigil_redis_reply_free(rep);
    return n;
}

long long vigil_deadletter_replay(vigil_redis *r, const char *prefix, const char *service,
                                  int shard_index)
{
    char dl[512], outbox[560];
    if (vigil_deadletter_key(prefix, service, dl, sizeof dl) != 0 || shard_index < 0)
        return -1;
    int k = snprintf(outbox, sizeof outbox, "%s%s:outbox:%d", prefix, service, shard_index);
    if (k < 0 || (size_t)k >= sizeof outbox)
        return -1;
    vigil_script script = VIGIL_SCRIPT(VIGIL_LUA_DEAD_LETTER_REPLAY);
    const char *argv[] = { dl, outbox };
    return int_reply(vigil_redis_eval(r, &script, 2, 2, argv, NULL), "dead letter replay");
}
