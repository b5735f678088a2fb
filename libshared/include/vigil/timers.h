/* timers.h - durable deadlines in a Redis sorted set, claimed with a lease.
 *
 * Timers are set and cancelled by commits (store.h, effects.h). Each tick a
 * replica claims the due members of its shard's set: claiming moves the
 * member's score to now + lease_ms (a visibility timeout), so a replica that
 * dies while acting lets the timer come back when the lease ends. Acting
 * ends with a commit that completes the claimed timer (vigil_commit
 * leased_timer/leased_score). */
#ifndef VIGIL_TIMERS_H
#define VIGIL_TIMERS_H
#include <stdint.h>
#include "redis.h"
#include "store.h"

typedef struct vigil_timer_claim {
    char key[128];    /* state key the timer belongs to */
    char name[64];    /* timer name */
    char member[200]; /* "<key>|<name>" */
    int64_t due_ms;   /* the deadline it had when claimed */
    int64_t lease_score; /* the score it now has (pass to the commit) */
} vigil_timer_claim;

/* Claims at most max due timers (score <= now) of the store's shard, oldest
 * first, in one script call. Returns the count or -1 on a Redis error. */
int vigil_timers_claim(vigil_store *s, int64_t now_ms, int64_t lease_ms, int max,
                       vigil_timer_claim *out);

/* Earliest due time in the shard's set, or INT64_MAX if none, -1 on error.
 * Lets the timer thread sleep until then (bounded by the tick). */
int64_t vigil_timers_next_due(vigil_store *s);

/* Number of timers in the shard's set, -1 on error. */
long long vigil_timers_count(vigil_store *s);

#endif
