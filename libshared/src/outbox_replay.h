/* outbox_replay.h - outputs the broker acknowledged lately, kept in memory
 * to be published again after the connection to the broker was lost.
 *
 * A broker acknowledges a QoS 1 message once it holds it in memory; it
 * writes it to disk only at its next save (mosquitto: autosave_interval,
 * every 2 s with `autosave_interval 1`). A broker killed in between loses
 * outputs it acknowledged and had not delivered yet, although the outbox
 * already trimmed them. So the outbox keeps what was acknowledged in the
 * last VIGIL_OUTBOX_REPLAY_MS and publishes it again, in its order and
 * with its ids, before anything else once the connection is back.
 * Consumers dedupe by id, as they do for every output published again.
 *
 * Owned by the outbox thread alone: no lock. */
#ifndef VIGIL_OUTBOX_REPLAY_H
#define VIGIL_OUTBOX_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "outbox_store.h"

typedef struct vigil_replay vigil_replay;

/* Keeps entries acknowledged in the last window_ms, at most max of them
 * (the oldest are dropped beyond: counted, see vigil_replay_overflowed). */
vigil_replay *vigil_replay_new(int64_t window_ms, size_t max);
void vigil_replay_free(vigil_replay *r);

/* Takes raw (left empty) as acknowledged at acked_ms (monotonic). */
void vigil_replay_add(vigil_replay *r, vigil_outbox_raw *raw, int64_t acked_ms);
/* Drops the entries acknowledged before until_ms - window. */
void vigil_replay_expire(vigil_replay *r, int64_t until_ms);
size_t vigil_replay_count(const vigil_replay *r);
/* The i-th oldest entry kept (i < count). */
const vigil_outbox_raw *vigil_replay_at(const vigil_replay *r, size_t i);
/* Drops the n oldest entries (published again). */
void vigil_replay_drop(vigil_replay *r, size_t n);
/* Entries dropped so far because more than max were kept. */
unsigned long long vigil_replay_overflowed(const vigil_replay *r);

#endif
