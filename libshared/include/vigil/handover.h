/* handover.h - the outbox and timers of a shard index that no longer
 * exists are taken over, so shrinking VIGIL_SHARD's N strands nothing.
 *
 * Outbox and timers are stored per shard index (store.h). When N shrinks
 * (3 -> 1), indexes 1 and 2 have no replica any more: their outbox would
 * never be published and their timers never fire. Each replica i/N keeps
 * a heartbeat key P S ":alive:" i (a few seconds' TTL) and, every few
 * seconds, adopts the outbox and timers of every index j >= N with
 * j % N == i whose heartbeat is gone: outbox entries are appended to its
 * own outbox, timers merged into its own set at their original deadlines
 * (a timer the new owner set itself meanwhile wins). The heartbeat keeps a
 * replica still running under the old N (a rolling update) from being
 * robbed while it publishes. Moves are batched (1000 entries a call) and
 * atomic per batch, so a crash in between loses nothing. */
#ifndef VIGIL_HANDOVER_H
#define VIGIL_HANDOVER_H
#include <stdint.h>
#include "store.h"

/* Refreshes this replica's heartbeat (value: instance) for ttl_ms. 0 or -1. */
int vigil_handover_beat(vigil_store *s, const char *instance, int64_t ttl_ms);

/* Adopts every orphaned index of this replica (see above) given the
 * current shard count. Returns the number of outbox entries and timers
 * moved (>= 0), or -1 on a Redis error. */
long long vigil_handover_adopt(vigil_store *s, int shard_count);

/* The same for durable streams kept per shard index (a service's job
 * queue, key P S suffix i): the entries of an orphaned index j, pending
 * ones included, are appended to this replica's stream as new entries
 * and j's stream is deleted once empty. suffixes is NULL-terminated.
 * Returns the entries moved (>= 0), or -1 on a Redis error. */
long long vigil_handover_adopt_streams(vigil_store *s, const char *const *suffixes,
                                       int shard_count);

#endif
