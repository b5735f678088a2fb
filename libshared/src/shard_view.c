/* shard_view.c - the shard counts in use, and which keys a replica takes
 * while N changes (see shard_view.h). */
#include "vigil/shard_view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_lua.h"
#include "vigil/json.h"
#include "vigil/log.h"

#define MAX_COUNT 1024 /* VIGIL_SHARD's bound on N */

void vigil_shard_view_init(vigil_shard_view *v, int own_count)
{
    memset(v, 0, sizeof *v);
    v->counts[0] = own_count;
    v->n = 1;
}

bool vigil_shard_view_add(vigil_shard_view *v, int count)
{
    if (count < 1 || count > MAX_COUNT)
        return true; /* not a count: nothing to add */
    for (int i = 0; i < v->n; i++)
        if (v->counts[i] == count)
            return true;
    if (v->n >= VIGIL_SHARD_VIEW_MAX)
        return false;
    v->counts[v->n++] = count;
    return true;
}

bool vigil_shard_view_owns(const vigil_shard_view *v, int index, const char *key)
{
    for (int i = 0; i < v->n; i++) {
        int c = v->counts[i];
        if (index >= c)
            continue; /* a draining index owns nothing under c */
        if (c == 1 || vigil_shard_of(key, c) == index)
            return true;
    }
    return false;
}

bool vigil_shard_view_equal(const vigil_shard_view *a, const vigil_shard_view *b)
{
    if (a->n != b->n)
        return false;
    for (int i = 0; i < a->n; i++) {
        bool found = false;
        for (int j = 0; j < b->n && !found; j++)
            found = a->counts[i] == b->counts[j];
        if (!found)
            return false;
    }
    return true;
}

void vigil_shard_view_format(const vigil_shard_view *v, char *out, size_t outlen)
{
    size_t off = 0;
    if (outlen)
        out[0] = '\0';
    for (int i = 0; i < v->n && off < outlen; i++) {
        int w = snprintf(out + off, outlen - off, "%s%d", i ? "," : "", v->counts[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* KEYS: counts (zset: member N, score = expiry ms), settled (string),
 * sessions (set of the indexes that ever had a session), ran (set of the
 * counts this index's session was consumed under, shard_view.h).
 * ARGV: now, ttl, count, index, session_ready (0/1), session_px, base.
 * Checks every key's type before the first write (a failing script keeps
 * its writes). The session markers' names are built from base: they are
 * the service's own keys, like every other key the script touches. */
static const char VIEW_LUA[] =
    "local want = {'zset', 'string', 'set', 'set'}\n"
    "for k = 1, 4 do\n"
    "  local t = redis.call('TYPE', KEYS[k])['ok']\n"
    "  if t ~= 'none' and t ~= want[k] then\n"
    "    return redis.error_reply('VIGIL_BAD_DATA ' .. KEYS[k] .. ' holds a ' .. t)\n"
    "  end\n"
    "end\n"
    "local now = tonumber(ARGV[1])\n"
    "redis.call('ZADD', KEYS[1], 'GT', now + tonumber(ARGV[2]), ARGV[3])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)\n"
    "redis.call('SADD', KEYS[4], ARGV[3])\n"
    "if ARGV[5] == '1' then\n"
    "  redis.call('SET', ARGV[7] .. 'shard:session:' .. ARGV[4], '1', 'PX', ARGV[6])\n"
    "  redis.call('SADD', KEYS[3], ARGV[4])\n"
    "end\n"
    "local n = tonumber(ARGV[3])\n"
    "local all = true\n"
    "for j = 0, n - 1 do\n"
    "  if redis.call('EXISTS', ARGV[7] .. 'shard:session:' .. j) == 0 then all = false; break end\n"
    "end\n"
    "if all then redis.call('SET', KEYS[2], ARGV[3]) end\n"
    "return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('GET', KEYS[2]) or '',\n"
    "        redis.call('SMEMBERS', KEYS[3]), redis.call('SMEMBERS', KEYS[4])}\n";

/* Parses a count from a reply string; 0 when it is not one. */
static int count_of(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 4)
        return 0;
    char buf[8];
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    char *end = NULL;
    long c = strtol(buf, &end, 10);
    return *end == '\0' && c >= 1 && c <= MAX_COUNT ? (int)c : 0;
}

/* An index (0..1023) from a reply string; -1 when it is not one. */
static int index_of_member(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 4)
        return -1;
    int j = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->str[i] < '0' || r->str[i] > '9')
            return -1;
        j = j * 10 + (r->str[i] - '0');
    }
    return j < MAX_COUNT ? j : -1;
}

int vigil_shard_view_release(vigil_store *s, int index, const vigil_shard_view *counts)
{
    if (counts->n == 0)
        return 0;
    char ran[224], c[VIGIL_SHARD_VIEW_MAX][16];
    const char *argv[2 + VIGIL_SHARD_VIEW_MAX] = { "SREM", ran };
    snprintf(ran, sizeof ran, "%sshard:ran:%d", s->base, index);
    for (int i = 0; i < counts->n; i++) {
        snprintf(c[i], sizeof c[i], "%d", counts->counts[i]);
        argv[2 + i] = c[i];
    }
    redisReply *rep = vigil_redis_commandv(s->r, 2 + counts->n, argv, NULL);
    if (!rep)
        return -1;
    int rc = rep->type == REDIS_REPLY_ERROR ? -1 : 0;
    vigil_redis_reply_free(rep);
    return rc;
}

int vigil_shard_view_forget_session(vigil_store *s, int index)
{
    char members[224], marker[224], ran[224], idx[16];
    snprintf(members, sizeof members, "%sshard:sessions", s->base);
    snprintf(marker, sizeof marker, "%sshard:session:%d", s->base, index);
    snprintf(ran, sizeof ran, "%sshard:ran:%d", s->base, index);
    snprintf(idx, sizeof idx, "%d", index);
    const char *srem[] = { "SREM", members, idx };
    redisReply *rep = vigil_redis_commandv(s->r, 3, srem, NULL);
    if (!rep)
        return -1;
    int rc = rep->type == REDIS_REPLY_ERROR ? -1 : 0;
    vigil_redis_reply_free(rep);
    const char *del[] = { "DEL", marker, ran };
    rep = vigil_redis_commandv(s->r, 3, del, NULL);
    if (!rep)
        return -1;
    rc |= rep->type == REDIS_REPLY_ERROR ? -1 : 0;
    vigil_redis_reply_free(rep);
    return rc;
}

int vigil_shard_view_alive(vigil_store *s, int index)
{
    char alive[224];
    snprintf(alive, sizeof alive, "%salive:%d", s->base, index);
    const char *argv[] = { "EXISTS", alive };
    redisReply *rep = vigil_redis_commandv(s->r, 2, argv, NULL);
    if (!rep)
        return -1;
    int rc = rep->type == REDIS_REPLY_INTEGER ? rep->integer > 0 : -1;
    vigil_redis_reply_free(rep);
    return rc;
}

int vigil_shard_view_refresh(vigil_store *s, int index, int count, bool session_ready,
                             int64_t now_ms, int64_t ttl_ms, int64_t session_ms,
                             vigil_shard_view *v, vigil_shard_view *held,
                             vigil_shard_sessions *sessions)
{
    static _Thread_local vigil_script script = VIGIL_SCRIPT(VIEW_LUA);
    vigil_shard_view_init(v, count);
    if (held)
        memset(held, 0, sizeof *held);
    if (sessions)
        sessions->n = 0;
    char counts[224], settled[224], members[224], ran[224], now[24], ttl[24], cnt[16], idx[16],
        px[24];
    snprintf(counts, sizeof counts, "%sshard:counts", s->base);
    snprintf(settled, sizeof settled, "%sshard:settled", s->base);
    snprintf(members, sizeof members, "%sshard:sessions", s->base);
    snprintf(ran, sizeof ran, "%sshard:ran:%d", s->base, index);
    snprintf(now, sizeof now, "%" PRId64, now_ms);
    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    snprintf(cnt, sizeof cnt, "%d", count);
    snprintf(idx, sizeof idx, "%d", index);
    snprintf(px, sizeof px, "%" PRId64, session_ms > 0 ? session_ms : 1);
    const char *argv[] = { counts, settled, members, ran, now, ttl, cnt, idx,
                           session_ready ? "1" : "0", px, s->base };
    redisReply *rep = vigil_redis_eval(s->r, &script, 4, 11, argv, NULL);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 ||
        rep->element[0]->type != REDIS_REPLY_ARRAY || rep->element[2]->type != REDIS_REPLY_ARRAY ||
        rep->element[3]->type != REDIS_REPLY_ARRAY) {
        vigil_log(VIGIL_LOG_ERROR, "shard view: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        vigil_redis_reply_free(rep);
        return -1;
    }
    bool full = false;
    const redisReply *live = rep->element[0];
    for (size_t i = 0; i < live->elements; i++)
        full |= !vigil_shard_view_add(v, count_of(live->element[i]));
    full |= !vigil_shard_view_add(v, count_of(rep->element[1]));
    /* Counts this index's session was consumed under before: its queue may
     * still hold input published under them (shard_view.h, "Held"). */
    const redisReply *before = rep->element[3];
    for (size_t i = 0; i < before->elements; i++) {
        int c = count_of(before->element[i]);
        if (c == 0 || c == count)
            continue;
        full |= !vigil_shard_view_add(v, c);
        if (held)
            vigil_shard_view_add(held, c);
    }
    const redisReply *had = rep->element[2];
    for (size_t i = 0; sessions && i < had->elements; i++) {
        int j = index_of_member(had->element[i]);
        if (j >= 0 && sessions->n < VIGIL_SHARD_SESSIONS_MAX)
            sessions->index[sessions->n++] = j;
    }
    vigil_redis_reply_free(rep);
    if (full)
        vigil_log(VIGIL_LOG_WARN, "shard view: more than %d shard counts in use at once; "
                                  "finish one change of VIGIL_SHARD before starting another",
                  VIGIL_SHARD_VIEW_MAX);
    return 0;
}
