/* store_lua.h - private to libshared/src: the store handle shared by
 * store.c, store_commit.c and timers.c, and the Lua scripts of the rare
 * operations (a record's delete, the timers' claim). The commit itself
 * runs no script (store_commit.c).
 *
 * The scripts are macros (not static arrays) so that a file including this
 * header does not carry, or warn about, the scripts it does not use. Each
 * store keeps its own vigil_script per script: a script's sha is rewritten
 * on NOSCRIPT, and a store belongs to one thread. */
#ifndef VIGIL_STORE_LUA_H
#define VIGIL_STORE_LUA_H
#include "vigil/redis.h"
#include "vigil/store.h"

struct vigil_store {
    vigil_redis *r;
    int dedupe_keep;
    int64_t ttl_refresh_ms; /* how often one key's expiry is set again; 0: ids never expire */
    char dedupe_ttl[24];  /* PEXPIRE's argument, dedupe_ttl_ms + ttl_refresh_ms */
    struct store_ttl_seen *ttl_seen; /* DEDUPE_TTL_SLOTS: when this store last set a key's */
    int shard_index;
    char base[192];       /* P S ":" */
    char outbox_key[224]; /* P S ":outbox:" i */
    char timers_key[224]; /* P S ":timers:" i */
    char dues_key[232];   /* P S ":timers:" i ":due": original deadlines of claimed timers */
    vigil_script del;
    vigil_script claim;
    struct store_batch *batch; /* commits sent and not yet received (store_commit.c) */
};

/* When this store last set an ids key's expiry, by the key's hash: a
 * direct-mapped table, so a collision only costs one more PEXPIRE. */
#define DEDUPE_TTL_SLOTS 4096
struct store_ttl_seen {
    uint64_t h;
    int64_t at;
};

/* store_commit.c: frees the pending batch (vigil_store_free). */
void store_batch_free(vigil_store *s);
/* store_commit.c, for tests only: fn(ctx) runs between a batch's reads and
 * its transaction (NULL: nothing), the moment another client's write makes
 * EXEC write nothing. Process-wide, not thread-safe. */
void store_test_between_rounds(void (*fn)(void *ctx), void *ctx);
/* store.c: a record's version and text as vigil_store_load hands it over
 * (whole, with its parts; NULL: no record) from its HGETALL reply (an
 * array); -1 when out of memory. */
int store_record_of(const redisReply *hm, int64_t *version, char **state);
/* store.c: a snapshot's envelope as its payload splices it: a compact JSON
 * object without map_name and "ts", exactly "{}" when nothing is left;
 * NULL when it is not an object or memory ran out. */
char *store_envelope(const char *envelope_json, const char *map_name);

/* Deletes a record: KEYS state, ids, timers, timer dues; ARGV[1] the member prefix
 * "<key>|". Members of a key cannot be found by score or by lex range
 * (scores differ), so the set is scanned; deletes are rare. Returns the
 * number of timers removed. */
#define VIGIL_LUA_DELETE                                                              \
    "redis.call('DEL', KEYS[1], KEYS[2])\n"                                           \
    "local prefix = ARGV[1]\n"                                                        \
    "local plen = #prefix\n"                                                          \
    "local cursor, removed = '0', 0\n"                                                \
    "repeat\n"                                                                        \
    "  local res = redis.call('ZSCAN', KEYS[3], cursor, 'COUNT', 1000)\n"             \
    "  cursor = res[1]\n"                                                             \
    "  local items = res[2]\n"                                                        \
    "  for k = 1, #items, 2 do\n"                                                     \
    "    if string.sub(items[k], 1, plen) == prefix then\n"                           \
    "      removed = removed + redis.call('ZREM', KEYS[3], items[k])\n"               \
    "      redis.call('HDEL', KEYS[4], items[k])\n"                                   \
    "    end\n"                                                                       \
    "  end\n"                                                                         \
    "until cursor == '0'\n"                                                           \
    "return removed\n"

/* Claims due timers: KEYS[1] timers, KEYS[2] timer dues; ARGV now, lease
 * score (now + lease, computed in C so it stays an exact integer), max.
 * Every due member gets the lease score. A member's original deadline is
 * kept in the dues hash at its first claim (HSETNX), so a timer claimed
 * again after a lease ran out still reports the deadline it was set for,
 * not the lease score: event ids derived from it stay the same. Commits
 * drop the entry when they complete, set or cancel the timer. Returns the
 * flat list member, original due, ... oldest first. */
#define VIGIL_LUA_CLAIM                                                               \
    "for _, kt in ipairs({{KEYS[1], 'zset'}, {KEYS[2], 'hash'}}) do\n"                \
    "  local t = redis.call('TYPE', kt[1])['ok']\n"                                   \
    "  if t ~= 'none' and t ~= kt[2] then\n"                                          \
    "    return redis.error_reply('VIGIL_BAD_DATA ' .. kt[1] .. ' holds a ' .. t)\n"   \
    "  end\n"                                                                         \
    "end\n"                                                                           \
    "local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1],\n"             \
    "                       'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))\n"           \
    "local out = {}\n"                                                                \
    "for k = 1, #due, 2 do\n"                                                         \
    "  redis.call('HSETNX', KEYS[2], due[k], due[k + 1])\n"                           \
    "  redis.call('ZADD', KEYS[1], ARGV[2], due[k])\n"                                \
    "  out[#out + 1] = due[k]\n"                                                      \
    "  out[#out + 1] = redis.call('HGET', KEYS[2], due[k])\n"                         \
    "end\n"                                                                           \
    "return out\n"

#endif
