/* handover.c - adoption of the outbox and timers of shard indexes beyond
 * the current count (see handover.h). */
#include "vigil/handover.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_lua.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

#define BATCH "1000"
#define MAX_INDEX 1024 /* VIGIL_SHARD's bound on N */

/* KEYS: alive_j, outbox_j, timers_j, dues_j, outbox_i, timers_i, dues_i;
 * ARGV: batch. Returns -1 when j's heartbeat is present (not an orphan),
 * else {entries moved, timers moved, left} for this batch. Checks every
 * key's type before the first write (a failing script keeps its writes). */
static const char ADOPT_LUA[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end\n"
    "local want = {'list', 'zset', 'hash', 'list', 'zset', 'hash'}\n"
    "for k = 2, 7 do\n"
    "  local t = redis.call('TYPE', KEYS[k])['ok']\n"
    "  if t ~= 'none' and t ~= want[k - 1] then\n"
    "    return redis.error_reply('VIGIL_BAD_DATA ' .. KEYS[k] .. ' holds a ' .. t)\n"
    "  end\n"
    "end\n"
    "local n = tonumber(ARGV[1])\n"
    "local items = redis.call('LRANGE', KEYS[2], 0, n - 1)\n"
    "for _, e in ipairs(items) do redis.call('RPUSH', KEYS[5], e) end\n"
    "if #items > 0 then redis.call('LTRIM', KEYS[2], #items, -1) end\n"
    "local t = redis.call('ZRANGE', KEYS[3], 0, n - 1, 'WITHSCORES')\n"
    "for k = 1, #t, 2 do\n"
    "  local m = t[k]\n"
    "  if not redis.call('ZSCORE', KEYS[6], m) then\n"
    "    local due = redis.call('HGET', KEYS[4], m)\n"
    "    redis.call('ZADD', KEYS[6], due or t[k + 1], m)\n"
    "    if due then redis.call('HSET', KEYS[7], m, due) end\n"
    "  end\n"
    "  redis.call('ZREM', KEYS[3], m)\n"
    "  redis.call('HDEL', KEYS[4], m)\n"
    "end\n"
    "local left = redis.call('LLEN', KEYS[2]) + redis.call('ZCARD', KEYS[3])\n"
    "if left == 0 then redis.call('DEL', KEYS[4]) end\n"
    "return {#items, #t / 2, left}\n";

static void count_moved(long long n)
{
    vigil_counter_add("vigil_handover_moved_total",
                      "Outbox entries, timers and stream entries taken over from removed shard "
                      "indexes",
                      NULL, (double)n);
}

int vigil_handover_beat(vigil_store *s, const char *instance, int64_t ttl_ms)
{
    char key[240], set[240], ttl[24], idx[16];
    snprintf(key, sizeof key, "%salive:%d", s->base, s->shard_index);
    snprintf(set, sizeof set, "%sindexes", s->base);
    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    snprintf(idx, sizeof idx, "%d", s->shard_index);
    const char *beat[] = { "SET", key, instance && *instance ? instance : "?", "PX", ttl };
    const char *known[] = { "SADD", set, idx };
    const char **cmds[] = { beat, known };
    const int argc[] = { 5, 3 };
    for (int c = 0; c < 2; c++) {
        redisReply *rep = vigil_redis_commandv(s->r, argc[c], cmds[c], NULL);
        if (!rep)
            return -1;
        int rc = rep->type == REDIS_REPLY_ERROR ? -1 : 0;
        vigil_redis_reply_free(rep);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Moves index j into this store's index, batch by batch. Returns what was
 * moved, 0 when j is alive, -1 on error. */
static long long adopt_one(vigil_store *s, vigil_script *script, int j)
{
    char alive[240], ob[240], tm[240], du[248];
    snprintf(alive, sizeof alive, "%salive:%d", s->base, j);
    snprintf(ob, sizeof ob, "%soutbox:%d", s->base, j);
    snprintf(tm, sizeof tm, "%stimers:%d", s->base, j);
    snprintf(du, sizeof du, "%s:due", tm);
    const char *argv[] = { alive, ob, tm, du, s->outbox_key, s->timers_key, s->dues_key, BATCH };
    long long moved = 0;
    for (;;) {
        redisReply *rep = vigil_redis_eval(s->r, script, 7, 8, argv, NULL);
        if (!rep)
            return -1;
        if (rep->type == REDIS_REPLY_INTEGER) { /* alive: not ours to take */
            vigil_redis_reply_free(rep);
            return moved;
        }
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3) {
            vigil_log(VIGIL_LOG_ERROR, "handover of shard %d: %s", j,
                      rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
            vigil_redis_reply_free(rep);
            return -1;
        }
        long long e = rep->element[0]->integer, t = rep->element[1]->integer;
        long long left = rep->element[2]->integer;
        vigil_redis_reply_free(rep);
        moved += e + t;
        if (e + t > 0) {
            char ej[24], tj[24], js[16];
            snprintf(ej, sizeof ej, "%lld", e);
            snprintf(tj, sizeof tj, "%lld", t);
            snprintf(js, sizeof js, "%d", j);
            vigil_log_kv(VIGIL_LOG_INFO, "adopted the outbox and timers of a removed shard index",
                         "from_shard", js, "outbox_entries", ej, "timers", tj, NULL);
            count_moved(e + t);
        }
        if (left == 0)
            return moved;
    }
}

/* KEYS: alive_j, stream_j, stream_i; ARGV: batch. Returns -1 when j's
 * heartbeat is present, else {entries moved, left}. Entries are appended
 * to i's stream as new ones (pending ones too: their consumer died with
 * index j; a job is deduped by its own id, not the stream's), deleted
 * from j's, and j's stream (with its group) goes once empty. Types are
 * checked before the first write. */
static const char ADOPT_STREAM_LUA[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end\n"
    "for k = 2, 3 do\n"
    "  local t = redis.call('TYPE', KEYS[k])['ok']\n"
    "  if t ~= 'none' and t ~= 'stream' then\n"
    "    return redis.error_reply('VIGIL_BAD_DATA ' .. KEYS[k] .. ' holds a ' .. t)\n"
    "  end\n"
    "end\n"
    "local items = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', tonumber(ARGV[1]))\n"
    "for _, e in ipairs(items) do\n"
    "  redis.call('XADD', KEYS[3], '*', unpack(e[2]))\n"
    "  redis.call('XDEL', KEYS[2], e[1])\n"
    "end\n"
    "local left = redis.call('XLEN', KEYS[2])\n"
    "if left == 0 then redis.call('DEL', KEYS[2]) end\n"
    "return {#items, left}\n";

/* Moves the per-shard stream base suffix j into base suffix i, batch by
 * batch. Returns what was moved (0 when j is alive), -1 on error. */
static long long adopt_stream(vigil_store *s, vigil_script *script, const char *suffix, int j)
{
    char alive[240], from[256], to[256];
    snprintf(alive, sizeof alive, "%salive:%d", s->base, j);
    snprintf(from, sizeof from, "%s%s%d", s->base, suffix, j);
    snprintf(to, sizeof to, "%s%s%d", s->base, suffix, s->shard_index);
    const char *argv[] = { alive, from, to, BATCH };
    long long moved = 0;
    for (;;) {
        redisReply *rep = vigil_redis_eval(s->r, script, 3, 4, argv, NULL);
        if (!rep)
            return -1;
        if (rep->type == REDIS_REPLY_INTEGER) {
            vigil_redis_reply_free(rep);
            return moved;
        }
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            vigil_log(VIGIL_LOG_ERROR, "handover of %s%d: %s", suffix, j,
                      rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
            vigil_redis_reply_free(rep);
            return -1;
        }
        long long e = rep->element[0]->integer, left = rep->element[1]->integer;
        vigil_redis_reply_free(rep);
        moved += e;
        if (e > 0) {
            char es[24], js[16];
            snprintf(es, sizeof es, "%lld", e);
            snprintf(js, sizeof js, "%d", j);
            vigil_log_kv(VIGIL_LOG_INFO, "adopted the job stream of a removed shard index",
                         "from_shard", js, "stream", suffix, "entries", es, NULL);
            count_moved(e);
        }
        if (left == 0)
            return moved;
    }
}

/* Index j parsed from key when it is base + one of suffixes + j, or -1. */
static int index_of(const vigil_store *s, const char *key, const char *const *suffixes)
{
    size_t bl = strlen(s->base);
    if (strncmp(key, s->base, bl) != 0)
        return -1;
    const char *p = key + bl, *q = NULL;
    for (const char *const *x = suffixes; *x && !q; x++)
        if (strncmp(p, *x, strlen(*x)) == 0)
            q = p + strlen(*x);
    if (!q)
        return -1;
    char *end = NULL;
    long j = strtol(q, &end, 10);
    if (end == q || *end != '\0' || j < 0 || j >= MAX_INDEX)
        return -1;
    return (int)j;
}

/* Adds to P S ":indexes" every index j that has a key base + suffix + j
 * (SCAN with match): the indexes of data written before that set existed.
 * 0, or -1 on a Redis error. */
static int scan_indexes(vigil_store *s, const char *set, const char *match,
                        const char *const *suffixes)
{
    bool seen[MAX_INDEX] = { false };
    char cursor[32] = "0";
    do {
        const char *argv[] = { "SCAN", cursor, "MATCH", match, "COUNT", "1000" };
        redisReply *rep = vigil_redis_commandv(s->r, 6, argv, NULL);
        if (!rep)
            return -1;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            vigil_redis_reply_free(rep);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
        redisReply *keys = rep->element[1];
        for (size_t k = 0; k < keys->elements; k++) {
            int j = index_of(s, keys->element[k]->str, suffixes);
            if (j >= 0)
                seen[j] = true;
        }
        vigil_redis_reply_free(rep);
    } while (strcmp(cursor, "0") != 0);
    for (int j = 0; j < MAX_INDEX; j++) {
        if (!seen[j])
            continue;
        char js[16];
        snprintf(js, sizeof js, "%d", j);
        const char *argv[] = { "SADD", set, js };
        redisReply *rep = vigil_redis_commandv(s->r, 3, argv, NULL);
        if (!rep)
            return -1;
        int bad = rep->type == REDIS_REPLY_ERROR;
        vigil_redis_reply_free(rep);
        if (bad)
            return -1;
    }
    return 0;
}

/* Marks in orphan[] the indexes this replica inherits (j >= N with
 * j % N == i) among those that ever kept data: P S ":indexes", to which
 * each replica adds its own with its heartbeat. The keyspace is SCANned
 * only on the calling thread's first success, for data from before that
 * set existed: a SCAN of a large keyspace every 2 s by every replica of
 * every service would cost Redis more than the work itself. */
static int inherited(vigil_store *s, int shard_count, const char *const *streams,
                     bool orphan[MAX_INDEX])
{
    static _Thread_local bool scanned;
    char set[240], match[256];
    snprintf(set, sizeof set, "%sindexes", s->base);
    if (!scanned) {
        static const char *const kept[] = { "outbox:", "timers:", NULL };
        snprintf(match, sizeof match, "%s[ot][ui][tm]*:[0-9]*", s->base);
        if (scan_indexes(s, set, match, kept) != 0)
            return -1;
        for (const char *const *x = streams; x && *x; x++) {
            const char *one[] = { *x, NULL };
            snprintf(match, sizeof match, "%s%s[0-9]*", s->base, *x);
            if (scan_indexes(s, set, match, one) != 0)
                return -1;
        }
        scanned = true;
    }
    const char *argv[] = { "SMEMBERS", set };
    redisReply *rep = vigil_redis_commandv(s->r, 2, argv, NULL);
    if (!rep)
        return -1;
    if (rep->type != REDIS_REPLY_ARRAY) {
        vigil_redis_reply_free(rep);
        return -1;
    }
    for (size_t k = 0; k < rep->elements; k++) {
        const redisReply *e = rep->element[k];
        char *end = NULL;
        long j = e->type == REDIS_REPLY_STRING ? strtol(e->str, &end, 10) : -1;
        if (end && *end == '\0' && j >= shard_count && j < MAX_INDEX &&
            j % shard_count == s->shard_index)
            orphan[j] = true;
    }
    vigil_redis_reply_free(rep);
    return 0;
}

long long vigil_handover_adopt(vigil_store *s, int shard_count, const char *const *streams)
{
    static _Thread_local vigil_script script = VIGIL_SCRIPT(ADOPT_LUA);
    static _Thread_local vigil_script stream_script = VIGIL_SCRIPT(ADOPT_STREAM_LUA);
    if (shard_count < 1)
        return 0;
    bool orphan[MAX_INDEX] = { false };
    if (inherited(s, shard_count, streams, orphan) != 0)
        return -1;
    long long moved = 0;
    for (int j = 0; j < MAX_INDEX; j++) {
        if (!orphan[j])
            continue;
        long long m = adopt_one(s, &script, j);
        if (m < 0)
            return -1;
        moved += m;
        for (const char *const *x = streams; x && *x; x++) {
            m = adopt_stream(s, &stream_script, *x, j);
            if (m < 0)
                return -1;
            moved += m;
        }
    }
    return moved;
}
