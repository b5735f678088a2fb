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
 * atomic per batch, so a crash in between loses nothing. Candidates come
 * from the set P S ":indexes", not from a scan of the keyspace (scanned
 * once per process, for data older than the set). */
#ifndef VIGIL_HANDOVER_H
#define VIGIL_HANDOVER_H
#include <stdint.h>
#include "store.h"

/* Refreshes this replica's heartbeat (value: instance) for ttl_ms and
 * lists its index in P S ":indexes" (the indexes that ever kept data,
 * where adoption looks). 0 or -1. */
int vigil_handover_beat(vigil_store *s, const char *instance, int64_t ttl_ms);

/* Adopts every orphaned index of this replica (see above) given the
 * current shard count: its outbox and timers, and the durable streams the
 * service keeps per shard index (key P S suffix i, streams a
 * NULL-terminated list of suffixes, or NULL): their entries, pending ones
 * included, are appended to this replica's stream as new entries, and the
 * removed index's stream is deleted once empty. Returns what was moved
 * (>= 0), or -1 on a Redis error. */
long long vigil_handover_adopt(vigil_store *s, int shard_count, const char *const *streams);

#endif
