/* store_lua.h - private to libshared/src: the store handle shared by
 * store.c and timers.c, and the Lua scripts they run.
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
    int shard_index;
    char base[192];       /* P S ":" */
    char outbox_key[224]; /* P S ":outbox:" i */
    char timers_key[224]; /* P S ":timers:" i */
    char dues_key[232];   /* P S ":timers:" i ":due": original deadlines of claimed timers */
    vigil_script commit;
    vigil_script check;
    vigil_script del;
    vigil_script claim;
};

/* The first part of the commit: Redis keeps the writes a script made
 * before a run-time error (there is no rollback), so every key the commit
 * writes is checked for its type before the first write: here, and for
 * the record and the processed ids by the commit's first reads, made
 * through read() (a pcall: a key of another type is the same refusal, and
 * saves a TYPE call per commit). A failure returns the error
 * VIGIL_BAD_DATA (a data error: the input is refused, see
 * vigil_redis_error_transient) and has written nothing.
 *
 * The arguments themselves are built by build_commit_args in store.c, from
 * effects that vigil_fx_* checked when they were made (integers written by
 * the library, part and snapshot texts that are JSON objects, no empty
 * timer member), and the script is loaded by the same build: here only
 * their counts are checked, each auxiliary operation's kind (it names the
 * type its key must hold) and that parts come with a new state. Each Lua operation costs tens of
 * nanoseconds on a busy Redis: checking the format of every argument
 * again was a quarter of the commit's time. Argument layout:
 * vigil_store_commit in store.c. */
#define VIGIL_LUA_COMMIT_CHECK                                                        \
    "local function bad(m) return redis.error_reply('VIGIL_BAD_DATA ' .. m) end\n"   \
    "local function want(k, t)\n"                                                    \
    "  local g = redis.call('TYPE', k)['ok']\n"                                      \
    "  if g ~= 'none' and g ~= t then return k .. ' holds a ' .. g .. ', not a ' .. t end\n" \
    "end\n"                                                                          \
    "local nt, no, ns, na = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])\n" \
    "local np = tonumber(ARGV[13])\n"                                                \
    "if not (nt and no and ns and na and np) then return bad('argument counts') end\n" \
    "if (np > 0 or ARGV[14] == '1') and ARGV[4] ~= '1' then return bad('parts without a new state') end\n" \
    "if #KEYS ~= 5 + ns + na then return bad('key count') end\n"                     \
    "if #ARGV ~= 14 + 2 * nt + 4 * na + no + 6 * ns + 2 * np then return bad('argument count') end\n" \
    "local e = want(KEYS[3], 'list') or want(KEYS[4], 'zset') or want(KEYS[5], 'hash')\n" \
    "if e then return bad(e) end\n"                                                  \
    "local function read(...)\n"                                                    \
    "  local ok, res = pcall(redis.call, ...)\n"                                     \
    "  if ok then return true, res end\n"                                            \
    "  return false, bad(select(2, ...) .. ': ' .. tostring(res.err or res))\n"      \
    "end\n"                                                                          \
    "local AUX = {xadd = 'stream', xjob = 'stream', qpush = 'list', qflush = 'list', sadd = 'set',\n" \
    "             srem = 'set', set = true, del = true}\n"                           \
    "local c = 15 + 2 * nt\n"                                                        \
    "for k = 1, na do\n"                                                             \
    "  local kd = AUX[ARGV[c]]\n"                                                    \
    "  if not kd then return bad('unknown operation ' .. tostring(ARGV[c])) end\n"   \
    "  if kd ~= true then e = want(KEYS[5 + ns + k], kd); if e then return bad(e) end end\n" \
    "  c = c + 4\n"                                                                  \
    "end\n"                                                                          \
    "for j = 1, ns do\n"                                                             \
    "  e = want(KEYS[5 + j], 'hash'); if e then return bad(e) end\n"                 \
    "end\n"                                                                          \
    "local function head_if_whole(k)\n"                                              \
    "  if redis.call('HLEN', k) > 2 then return false end\n"                         \
    "  return redis.call('HGET', k, 's')\n"                                          \
    "end\n"

/* The commit's checks alone, and its compare-and-set, writing nothing
 * (vigil_store_check): same arguments as the commit. Returns {"OK", v} |
 * {"CONFLICT", v, s-or-nil} | the VIGIL_BAD_DATA error; s is nil too for a
 * record kept in parts (the caller loads it whole). */
#define VIGIL_LUA_CHECK                                                               \
    VIGIL_LUA_COMMIT_CHECK                                                            \
    "local ok, cur = read('HGET', KEYS[1], 'v')\n"                                   \
    "if not ok then return cur end\n"                                                \
    "local v = tonumber(cur or '0') or 0\n"                                          \
    "if v ~= tonumber(ARGV[1]) then\n"                                               \
    "  return {'CONFLICT', cur or '0', head_if_whole(KEYS[1])}\n"                    \
    "end\n"                                                                          \
    "return {'OK', string.format('%d', v)}\n"

/* The commit (see store.h and vigil_store_commit for the argument layout).
 * Lua numbers are doubles: versions and ms timestamps travel as decimal
 * strings and are compared with tonumber (13-digit ms values are exact).
 * Returns {"DUPLICATE"} | {"CONFLICT", v, s-or-nil} | {"OK", v, k, n, ...}:
 * after v, a pair for each job stream add ('xjob', auxiliary op k, from 1)
 * whose cap trimmed entries, n of them (XLEN before and after the XADD,
 * O(1) each). A job stream holds only unfinished jobs (workers XDEL what
 * they finished), so those are jobs that will never run.
 *
 * Snapshot payloads are assembled as text rather than through
 * cjson.encode: the hash values are JSON already (checked by
 * vigil_fx_snapshot) and are spliced verbatim, so an empty array stays []
 * (cjson would turn it into {}), numbers keep their exact form, and the
 * fields come out sorted (deterministic payloads). ARGV carries the
 * envelope already stripped of map_name/"ts" and the map name already
 * JSON-encoded. */
#define VIGIL_LUA_COMMIT                                                              \
    VIGIL_LUA_COMMIT_CHECK                                                            \
    "local st, ids, outbox, timers, dues = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]\n" \
    "local id, now = ARGV[2], ARGV[3]\n"                                              \
    "local function complete_lease()\n"                                              \
    "  if ARGV[7] == '' then return end\n"                                           \
    "  local sc = redis.call('ZSCORE', timers, ARGV[7])\n"                           \
    "  if sc and tonumber(sc) == tonumber(ARGV[8]) then\n"                           \
    "    redis.call('ZREM', timers, ARGV[7])\n"                                      \
    "    redis.call('HDEL', dues, ARGV[7])\n"                                        \
    "  end\n"                                                                        \
    "end\n"                                                                          \
    "local ok, cur = read('HGET', st, 'v')\n"                                        \
    "if not ok then return cur end\n"                                                \
    "if id ~= '' then\n"                                                             \
    "  local seen\n"                                                                 \
    "  ok, seen = read('ZSCORE', ids, id)\n"                                         \
    "  if not ok then return seen end\n"                                             \
    "  if seen then\n"                                                               \
    "    complete_lease()\n"                                                         \
    "    return {'DUPLICATE'}\n"                                                     \
    "  end\n"                                                                        \
    "end\n"                                                                          \
    "local v = tonumber(cur or '0') or 0\n"                                           \
    "if v ~= tonumber(ARGV[1]) then\n"                                                \
    "  return {'CONFLICT', cur or '0', head_if_whole(st)}\n"                          \
    "end\n"                                                                           \
    "if ARGV[4] == '1' then\n"                                                        \
    "  v = v + 1\n"                                                                   \
    "  redis.call('HSET', st, 'v', string.format('%d', v), 's', ARGV[5])\n"           \
    "end\n"                                                                           \
    "if id ~= '' then\n"                                                              \
    "  redis.call('ZADD', ids, now, id)\n"                                            \
    "  redis.call('ZREMRANGEBYRANK', ids, 0, -tonumber(ARGV[6]) - 1)\n"               \
    "end\n"                                                                           \
    "complete_lease()\n"                                                             \
    "local out = {}\n"                                                               \
    "local function flush()\n"                                                       \
    "  for a = 1, #out, 1000 do\n"                                                   \
    "    redis.call('RPUSH', outbox, unpack(out, a, math.min(a + 999, #out)))\n"     \
    "  end\n"                                                                        \
    "end\n"                                                                          \
    "local i = 15\n"                                                                  \
    "for _ = 1, tonumber(ARGV[9]) do\n"                                               \
    "  if ARGV[i + 1] == '' then redis.call('ZREM', timers, ARGV[i])\n"               \
    "  else redis.call('ZADD', timers, ARGV[i + 1], ARGV[i]) end\n"                   \
    "  redis.call('HDEL', dues, ARGV[i])\n"                                           \
    "  i = i + 2\n"                                                                   \
    "end\n"                                                                           \
    "local nsnap = tonumber(ARGV[11])\n"                                              \
    "local trimmed = {}\n"                                                            \
    "for k = 1, tonumber(ARGV[12]) do\n"                                              \
    "  local key = KEYS[5 + nsnap + k]\n"                                             \
    "  local kind, val, n1, n2 = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])\n" \
    "  i = i + 4\n"                                                                   \
    "  if kind == 'xadd' or kind == 'xjob' then\n"                                    \
    "    local before = kind == 'xjob' and redis.call('XLEN', key) or 0\n"             \
    "    if n1 > 0 then redis.call('XADD', key, 'MAXLEN', '~', n1, '*', 'm', val)\n"  \
    "    else redis.call('XADD', key, '*', 'm', val) end\n"                           \
    "    if n2 > 0 and tonumber(now) - n2 > 0 then\n"                                 \
    "      redis.call('XTRIM', key, 'MINID', string.format('%d', tonumber(now) - n2))\n" \
    "    end\n"                                                                       \
    "    if kind == 'xjob' then\n"                                                    \
    "      local gone = before + 1 - redis.call('XLEN', key)\n"                       \
    "      if gone > 0 then trimmed[#trimmed + 1] = k; trimmed[#trimmed + 1] = gone end\n" \
    "    end\n"                                                                       \
    "  elseif kind == 'qpush' then redis.call('RPUSH', key, val)\n"                   \
    "  elseif kind == 'qflush' then\n"                                                \
    "    local items = redis.call('LRANGE', key, 0, -1)\n"                            \
    "    for _, e in ipairs(items) do out[#out + 1] = e end\n"                       \
    "    redis.call('DEL', key)\n"                                                    \
    "  elseif kind == 'set' then redis.call('SET', key, val)\n"                       \
    "  elseif kind == 'del' then redis.call('DEL', key)\n"                            \
    "  elseif kind == 'sadd' then redis.call('SADD', key, val)\n"                     \
    "  elseif kind == 'srem' then redis.call('SREM', key, val)\n"                     \
    "  end\n"                                                                         \
    "end\n"                                                                           \
    "for _ = 1, tonumber(ARGV[10]) do\n"                                              \
    "  out[#out + 1] = ARGV[i]\n"                                                    \
    "  i = i + 1\n"                                                                   \
    "end\n"                                                                           \
    "for j = 1, tonumber(ARGV[11]) do\n"                                              \
    "  local h = KEYS[5 + j]\n"                                                       \
    "  local field, op, val = ARGV[i], ARGV[i + 1], ARGV[i + 2]\n"                    \
    "  local topic, env, mapname = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]\n"           \
    "  i = i + 6\n"                                                                   \
    "  if op == 's' then redis.call('HSET', h, field, val)\n"                         \
    "  else redis.call('HDEL', h, field) end\n"                                       \
    "  local all = redis.call('HGETALL', h)\n"                                        \
    "  local names, vals = {}, {}\n"                                                  \
    "  for k = 1, #all, 2 do names[#names + 1] = all[k]; vals[all[k]] = all[k + 1] end\n" \
    "  table.sort(names)\n"                                                           \
    "  local parts = {}\n"                                                            \
    "  for k, f in ipairs(names) do parts[k] = cjson.encode(f) .. ':' .. vals[f] end\n" \
    "  local body = mapname .. ':{' .. table.concat(parts, ',') .. '},\"ts\":' .. now .. '}'\n" \
    "  local payload\n"                                                               \
    "  if env == '{}' then payload = '{' .. body\n"                                   \
    "  else payload = string.sub(env, 1, -2) .. ',' .. body end\n"                    \
    "  out[#out + 1] = '1' .. topic .. '\\n' .. payload\n"                           \
    "end\n"                                                                           \
    "if ARGV[14] == '1' then\n"                                                       \
    "  for _, f in ipairs(redis.call('HKEYS', st)) do\n"                              \
    "    if string.sub(f, 1, 2) == 'p:' then redis.call('HDEL', st, f) end\n"         \
    "  end\n"                                                                         \
    "end\n"                                                                           \
    "for _ = 1, tonumber(ARGV[13]) do\n"                                              \
    "  if ARGV[i + 1] == '' then redis.call('HDEL', st, ARGV[i])\n"                   \
    "  else redis.call('HSET', st, ARGV[i], ARGV[i + 1]) end\n"                       \
    "  i = i + 2\n"                                                                   \
    "end\n"                                                                           \
    "flush()\n"                                                                      \
    "return {'OK', string.format('%d', v), unpack(trimmed)}\n"

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
