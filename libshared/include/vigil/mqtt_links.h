/* mqtt_links.h - the outbox's publishing connections: one vigil_mqtt_link
 * (mqtt_link.h), and more of them when the broker allows few messages in
 * flight on one.
 *
 * Why: QoS 1 output is bounded by the broker's Receive Maximum per
 * connection: mosquitto as shipped says 20 (max_inflight_messages), and a
 * publisher with 20 messages in flight waits for their PUBACKs, which a
 * broker without TCP_NODELAY is slow to send. A service emits about three
 * outputs per input, so one such connection caps it near a third of the
 * broker's relay rate. Once the first connection is up and its window
 * known, vigil_mqtt_links_grow opens enough connections for a window of
 * VIGIL_LINKS_WANT_WINDOW in all, at most the configured count
 * (VIGIL_OUTBOX_CONNECTIONS), each with its own client id (the first's id,
 * then "<id>2", "<id>3", ...) and thread; a connection that is one of
 * several holds its reads in a burst even with its window full
 * (vigil_mqtt_link_set_shared). Against mosquitto as shipped, two
 * connections processed 35 % more inputs per second than one for the same
 * CPU per input; three and five cost more CPU per input than they gained
 * (each thread wakes for its own PUBACKs), hence a window of 40 in all.
 *
 * Order: every output about one entity (the topic's first two levels:
 * room/<room>/..., persona/<persona>/..., council/<session>/...) goes out on
 * the same connection, so it keeps its order; outputs about different
 * entities may interleave differently than they were committed, which MQTT
 * does not order across topics anyway. The number of connections is fixed
 * at the first connect, so an entity does not move between connections,
 * except that a further connection the broker does not take (a connection
 * limit, a client id it refuses) is given up (vigil_mqtt_links_settle):
 * the outbox goes on with fewer rather than waiting for it forever; once
 * something was published, only with nothing in flight, so no entity's
 * order changes.
 *
 * Threads: vigil_mqtt_links_grow, _settle, _publish_tagged, _flush and
 * _publish_batch are called by one thread (the outbox's); _connected,
 * _first_connected, _lost_at_ms, _window and _count from any. */
#ifndef VIGIL_MQTT_LINKS_H
#define VIGIL_MQTT_LINKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vigil/mqtt.h"
#include "vigil/mqtt_link.h"

#define VIGIL_LINKS_MAX 16          /* connections at most (VIGIL_OUTBOX_CONNECTIONS' bound) */
#define VIGIL_LINKS_WANT_WINDOW 40 /* messages in flight wanted in all */

typedef struct vigil_mqtt_links vigil_mqtt_links;

/* cfg as for a publishing vigil_mqtt_link (copied); max_links 1..
 * VIGIL_LINKS_MAX. Creates the first connection; starts nothing. NULL with
 * err on a bad setting. */
vigil_mqtt_links *vigil_mqtt_links_new(const vigil_mqtt_config *cfg, int max_links, char *err,
                                       size_t errlen);

/* Starts the first connection. */
int vigil_mqtt_links_start(vigil_mqtt_links *s);

/* Once, when the first connection is up: opens and starts the connections
 * its window calls for (links_wanted). Returns how many there are. */
int vigil_mqtt_links_grow(vigil_mqtt_links *s);

/* After _grow, while the first connection is up: gives up the connections
 * from the first further one that is down on, when the broker refused it
 * (busy, unavailable or a connection rate limit are failures, not
 * refusals) or its connects failed three times in a row (five, once something was
 * published, and then only when idle: nothing in flight on any). A
 * warning says so, and the gauge. Returns how many are left. */
int vigil_mqtt_links_settle(vigil_mqtt_links *s, bool idle);

/* Whether the first connection (the one that is always kept) is up. */
bool vigil_mqtt_links_first_connected(const vigil_mqtt_links *s);

/* Connections to open for a first window w (the broker's Receive Maximum),
 * at most max_links: enough for VIGIL_LINKS_WANT_WINDOW in flight. */
int vigil_mqtt_links_wanted(int w, int max_links);

/* The connection (0..n-1) that carries topic among n: by the topic's first
 * two levels. */
int vigil_mqtt_links_pick(const char *topic, int n);

/* Every connection opened is up. */
bool vigil_mqtt_links_connected(const vigil_mqtt_links *s);

/* The latest vigil_mqtt_link_lost_at_ms of any connection, 0 if none. */
int64_t vigil_mqtt_links_lost_at_ms(const vigil_mqtt_links *s);

/* The sum of the connections' windows. */
int vigil_mqtt_links_window(const vigil_mqtt_links *s);

/* Connections opened. */
int vigil_mqtt_links_count(const vigil_mqtt_links *s);

/* vigil_mqtt_link_set_ack_handler on every connection, those opened later
 * too. */
void vigil_mqtt_links_set_ack_handler(vigil_mqtt_links *s, vigil_mqtt_ack_fn fn, void *ctx);

/* vigil_mqtt_link_publish_tagged on the topic's connection. */
int vigil_mqtt_links_publish_tagged(vigil_mqtt_links *s, const vigil_pubmsg *msg, uint64_t tag);

/* vigil_mqtt_link_flush on each connection that queued something since. */
void vigil_mqtt_links_flush(vigil_mqtt_links *s);

/* vigil_mqtt_link_publish_batch on the first connection (error events and
 * the replay after a loss: rare, and waited for). */
int vigil_mqtt_links_publish_batch(vigil_mqtt_links *s, const vigil_pubmsg *msgs, int n,
                                   int timeout_ms);

/* vigil_mqtt_link_stop on every connection, then frees. NULL is a no-op. */
void vigil_mqtt_links_stop(vigil_mqtt_links *s, int timeout_ms);

#endif
