/* outbox.h - the publisher thread.
 *
 * Output events are committed to the Redis outbox list together with the
 * state change (store.h). This thread reads the oldest entries, publishes
 * them at QoS 1, waits for the broker's acknowledgements and only then
 * trims them from the list; so an event is never lost and may, after a
 * crash, be published twice (consumers dedupe by event id). It also drains
 * an in-memory queue of ephemeral messages (error events), which need no
 * durability. The message callback never waits on this thread: it only
 * kicks it. On start it publishes whatever the outbox holds (replay after a
 * restart). */
#ifndef VIGIL_OUTBOX_H
#define VIGIL_OUTBOX_H
#include <stdbool.h>
#include "mqtt.h"
#include "redis.h"
#include "store.h"

typedef struct vigil_outbox vigil_outbox;

/* Starts the thread with its own Redis connection to addr. */
vigil_outbox *vigil_outbox_start(const vigil_redis_addr *addr, const vigil_store_config *scfg,
                                 vigil_mqtt *mqtt);
/* Wakes the thread: new entries were committed. Never blocks. */
void vigil_outbox_kick(vigil_outbox *o);
/* Queues a message kept only in memory (bounded at 10000; beyond that the
 * oldest is dropped and vigil_outbox_dropped_total counted). */
void vigil_outbox_push_ephemeral(vigil_outbox *o, const char *topic, const char *payload,
                                 bool retain);
/* Entries published since start (for tests/metrics). */
unsigned long long vigil_outbox_published(const vigil_outbox *o);
/* Publishes what is pending (up to drain_ms), then stops the thread. */
void vigil_outbox_stop(vigil_outbox *o, int drain_ms);

#endif
