/* timers.c - claiming due timers with a lease, and looking at the set.
 * Timers are written by commits (store.c); see timers.h. */
#include "vigil/timers.h"
#include "vigil/redis_raw.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_lua.h"
#include "vigil/log.h"

/* Scores are doubles in Redis; ms deadlines are integers well below 2^53,
 * so rounding the parsed value gives the exact deadline back. */
static int64_t parse_score(const redisReply *rep)
{
    if (!rep || (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_STATUS))
        return -1;
    return (int64_t)llround(strtod(rep->str, NULL));
}

/* Splits "<key>|<name>" at the LAST '|' (names never contain '|'; keys
 * should not either, but a key may contain ':'). Returns -1 when the member
 * has no '|' or a part does not fit the claim's buffers. */
static int split_member(const char *m, size_t len, vigil_timer_claim *c)
{
    const char *bar = NULL;
    for (size_t i = len; i > 0; i--) {
        if (m[i - 1] == '|') {
            bar = m + i - 1;
            break;
        }
    }
    if (!bar || len >= sizeof c->member)
        return -1;
    size_t kl = (size_t)(bar - m), nl = len - kl - 1;
    if (kl == 0 || kl >= sizeof c->key || nl == 0 || nl >= sizeof c->name)
        return -1;
    memcpy(c->member, m, len);
    c->member[len] = '\0';
    memcpy(c->key, m, kl);
    c->key[kl] = '\0';
    memcpy(c->name, bar + 1, nl);
    c->name[nl] = '\0';
    return 0;
}

int vigil_timers_claim(vigil_store *s, int64_t now_ms, int64_t lease_ms, int max,
                       vigil_timer_claim *out)
{
    if (max <= 0)
        return 0;
    char now[24], lease[24], maxs[16];
    int64_t lease_score = now_ms + (lease_ms > 0 ? lease_ms : 0);
    snprintf(now, sizeof now, "%" PRId64, now_ms);
    snprintf(lease, sizeof lease, "%" PRId64, lease_score);
    snprintf(maxs, sizeof maxs, "%d", max);
    const char *argv[] = { s->timers_key, s->dues_key, now, lease, maxs };
    redisReply *rep = vigil_redis_eval(s->r, &s->claim, 2, 5, argv, NULL);
    if (!rep)
        return -1;
    int n = 0;
    if (rep->type != REDIS_REPLY_ARRAY) {
        vigil_log(VIGIL_LOG_ERROR, "timers claim: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        n = -1;
        goto cleanup;
    }
    for (size_t i = 0; i + 1 < rep->elements && n < max; i += 2) {
        const redisReply *m = rep->element[i];
        if (m->type != REDIS_REPLY_STRING || split_member(m->str, m->len, &out[n]) != 0) {
            /* Leased anyway: it comes back every lease, logged each time,
             * rather than being dropped silently. */
            vigil_log(VIGIL_LOG_WARN, "timers claim: malformed member '%.*s'",
                      m->type == REDIS_REPLY_STRING ? (int)(m->len > 200 ? 200 : m->len) : 0,
                      m->type == REDIS_REPLY_STRING ? m->str : "");
            continue;
        }
        out[n].due_ms = parse_score(rep->element[i + 1]);
        out[n].lease_score = lease_score;
        n++;
    }
cleanup:
    vigil_redis_reply_free(rep);
    return n;
}

int64_t vigil_timers_next_due(vigil_store *s)
{
    const char *argv[] = { "ZRANGE", s->timers_key, "0", "0", "WITHSCORES" };
    redisReply *rep = vigil_redis_commandv(s->r, 5, argv, NULL);
    if (!rep)
        return -1;
    int64_t due = -1;
    if (rep->type == REDIS_REPLY_ARRAY) {
        if (rep->elements == 0)
            due = INT64_MAX;
        else if (rep->elements >= 2)
            due = parse_score(rep->element[1]);
    } else {
        vigil_log(VIGIL_LOG_ERROR, "timers next due: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    }
    vigil_redis_reply_free(rep);
    return due;
}

long long vigil_timers_count(vigil_store *s)
{
    const char *argv[] = { "ZCARD", s->timers_key };
    redisReply *rep = vigil_redis_commandv(s->r, 2, argv, NULL);
    if (!rep)
        return -1;
    long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    vigil_redis_reply_free(rep);
    return n;
}
