/* outbox.h - the publisher thread.
 *
 * Output events are committed to the Redis outbox list together with the
 * state change (store.h). This thread reads the oldest entries and keeps a
 * window of them in flight at QoS 1 (the broker's Receive Maximum less one),
 * trimming each acknowledged prefix from the list as the PUBACKs arrive;
 * it never waits for a whole batch, so a broker without TCP_NODELAY does
 * not slow it down. So an event is never lost, goes out in commit order
 * (on several connections, mqtt_links.h: in commit order per entity),
 * and may, after a crash, be published twice with its same id (consumers
 * dedupe by event id). An entry that can never be published (undecodable,
 * or refused by the broker VIGIL_OUTBOX_DEAD_LETTER_AFTER times in a row)
 * moves to the dead-letter list (deadletter.h) instead of blocking the rest;
 * a slow or absent broker never causes that. After a lost connection it
 * first publishes again what the broker acknowledged in the last
 * VIGIL_OUTBOX_REPLAY_MS, which a broker that died before saving forgot
 * (outbox_replay.h in libshared/src). It also drains an in-memory
 * queue of ephemeral messages (error events), which need no durability.
 * The message callback never waits on this thread: it only kicks it. On
 * start it publishes whatever the outbox holds (replay after a restart). */
#ifndef VIGIL_OUTBOX_H
#define VIGIL_OUTBOX_H
#include <stdatomic.h>
#include <stdbool.h>
#include "mqtt.h"
#include "mqtt_links.h"
#include "redis.h"
#include "store.h"

typedef struct vigil_outbox vigil_outbox;

/* Starts the thread with its own Redis connection to addr, publishing
 * through mqtt (paho's client, shared with the intake). */
vigil_outbox *vigil_outbox_start(const vigil_redis_addr *addr, const vigil_store_config *scfg,
                                 vigil_mqtt *mqtt);
/* The same, publishing through the outbox's own connections
 * (mqtt_links.h), which the caller starts, and stops after
 * vigil_outbox_stop; the outbox opens the further ones it needs
 * (vigil_mqtt_links_grow). */
vigil_outbox *vigil_outbox_start_on_links(const vigil_redis_addr *addr,
                                          const vigil_store_config *scfg, vigil_mqtt_links *links);
/* Wakes the thread: new entries were committed. Never blocks. */
void vigil_outbox_kick(vigil_outbox *o);
/* A flag another process sets before it kicks us (outbox_process.h): the
 * thread clears it each time it takes the kicks in, before it reads the
 * outbox, so a kicker needs to wake us only when it finds the flag clear.
 * NULL: none. */
void vigil_outbox_set_kick_flag(vigil_outbox *o, atomic_int *flag);
/* Queues a message kept only in memory (bounded at 10000; beyond that the
 * oldest is dropped and vigil_outbox_dropped_total counted). */
void vigil_outbox_push_ephemeral(vigil_outbox *o, const char *topic, const char *payload,
                                 bool retain);
/* Entries published since start (for tests/metrics). */
unsigned long long vigil_outbox_published(const vigil_outbox *o);
/* Publishes what is pending (up to drain_ms), then stops the thread. */
void vigil_outbox_stop(vigil_outbox *o, int drain_ms);

#endif
