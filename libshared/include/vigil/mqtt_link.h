/* mqtt_link.h - Vigil's own small MQTT 5 client, on its own socket and
 * thread, in one of two roles:
 *
 * - The outbox's connection: it only publishes at QoS 1.
 * - A service's intake (cfg->on_message set; VIGIL_MQTT_INTAKE=link, the
 *   default): a persistent session, its subscriptions, a retained last
 *   will and a "ready" status on every connect, as vigil_mqtt (mqtt.h)
 *   gives over paho, and publishes without waiting (the status, shard
 *   fences).
 *
 * Why not paho: paho's asynchronous library has one lock for all its
 * clients in a process, and its receive thread holds it while our message
 * callback commits an input. While inputs arrive without gaps, paho's send
 * thread gets the lock only in the gaps, so a replica's outputs left only
 * after the backlog was taken in, and each output cost paho a command
 * queue entry, a thread hand-off and its own write. This client shares
 * nothing with paho: a publish is encoded into a queue, vigil_mqtt_link_flush
 * hands everything queued to the connection's thread, which writes it in
 * one go and reads the PUBACKs as many at a time as have arrived. As an
 * intake it reads many messages per read (paho: four reads and a poll per
 * message), calls on_message for each in order on the link's thread, and
 * writes their PUBACKs together, each only after its on_message returned:
 * the same guarantee as paho's (nothing acknowledged before it is
 * durable) for fewer system calls per input.
 *
 * The outbox's session is clean (no state kept by the broker): what was in
 * flight when the connection is lost is reported failed, and the caller
 * publishes it again (the outbox keeps it in Redis until acknowledged).
 * Messages beyond the broker's Receive Maximum wait in our queue, never in
 * the broker's or a library's, and go out as PUBACKs make room.
 *
 * The connection is mqtt:// (tcp://) or mqtts:// (ssl://, OpenSSL: the
 * configured CA or the system's, an optional client certificate, server
 * certificate and host name verified), with the user and password and the
 * topic prefix of vigil_mqtt_config. It reconnects by itself (outbox: 200
 * ms doubling to 5 s; intake: 1 s doubling to 30 s, as paho's) and keeps
 * the connection alive with PINGREQ. */
#ifndef VIGIL_MQTT_LINK_H
#define VIGIL_MQTT_LINK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vigil/mqtt.h"

typedef struct vigil_mqtt_link vigil_mqtt_link;

/* Uses cfg's url, user, password, client_id, TLS files and topic prefix
 * (copied). With cfg->on_message set the link is an intake and also uses
 * subscriptions, session_expiry_s, status_topic, ready_payload,
 * lost_payload, on_state, on_refused and ctx, with vigil_mqtt's contract
 * (mqtt.h): on_message and on_state run on the link's thread; on_refused
 * once, when the broker refuses the first connect for a reason waiting
 * will not fix (the link then gives up). Returns NULL with err on a bad
 * URL or TLS setting. Starts nothing. */
vigil_mqtt_link *vigil_mqtt_link_new(const vigil_mqtt_config *cfg, char *err, size_t errlen);

/* Starts the connection's thread: connects, and reconnects for ever. */
int vigil_mqtt_link_start(vigil_mqtt_link *l);

/* True between an accepted CONNACK and the loss of that connection. */
bool vigil_mqtt_link_connected(const vigil_mqtt_link *l);

/* Monotonic ms (vigil_mono_ms) when a connection was last lost, 0 if never. */
int64_t vigil_mqtt_link_lost_at_ms(const vigil_mqtt_link *l);

/* The broker's Receive Maximum (at most 1000; 1 before the first connect):
 * how many tagged messages are worth keeping in flight. */
int vigil_mqtt_link_window(const vigil_mqtt_link *l);

/* One of several publishing connections (mqtt_links.h): in a burst it
 * holds its reads for a millisecond even with its window full, since the
 * others keep the broker busy meanwhile (alone, a window under 64 is read
 * at once when full). */
void vigil_mqtt_link_set_shared(vigil_mqtt_link *l, bool shared);

/* Same contract as vigil_mqtt_set_ack_handler: called on the link's thread,
 * once per tagged message queued; after a removal returns, no call runs. */
void vigil_mqtt_link_set_ack_handler(vigil_mqtt_link *l, vigil_mqtt_ack_fn fn, void *ctx);

/* Queues one QoS 1 message (copied) with tag; it leaves at the next
 * vigil_mqtt_link_flush, in the order queued. VIGIL_PUB_SEND_OK (exactly
 * one handler call follows), VIGIL_PUB_SEND_RETRY (not connected) or
 * VIGIL_PUB_SEND_REFUSED (a topic that is not valid UTF-8 or holds a
 * wildcard, or larger than the broker's Maximum Packet Size). */
int vigil_mqtt_link_publish_tagged(vigil_mqtt_link *l, const vigil_pubmsg *msg, uint64_t tag);

/* Publishes one QoS 1 message (copied) without waiting for, or hearing
 * of, its outcome: 0 when queued, -1 when not connected or it can never
 * be published. Safe from on_message. */
int vigil_mqtt_link_publish_async(vigil_mqtt_link *l, const char *topic, const void *payload,
                                  size_t len, bool retain);

/* Hands what was queued to the connection's thread (one wake-up). */
void vigil_mqtt_link_flush(vigil_mqtt_link *l);

/* Same contract as vigil_mqtt_publish_batch: publishes n messages in order
 * and waits up to timeout_ms; returns how many leading ones the broker
 * acknowledged. */
int vigil_mqtt_link_publish_batch(vigil_mqtt_link *l, const vigil_pubmsg *msgs, int n,
                                  int timeout_ms);

/* Failed connect attempts since the link was last up (or since its start),
 * 0 while it is up; *refused (may be NULL) is set when the broker refused
 * one of them with a reason (a CONNACK, not a dropped connection; "Server
 * busy", "Server unavailable" and "Connection rate exceeded" are failures
 * only). */
int vigil_mqtt_link_failures_since_up(const vigil_mqtt_link *l, bool *refused);

/* Ends the link's thread and connection at once, reporting whatever is in
 * flight failed, but keeps it allocated (another thread may still ask
 * whether it is connected: it is not) until vigil_mqtt_link_stop. */
void vigil_mqtt_link_halt(vigil_mqtt_link *l);

/* Writes what is queued (up to timeout_ms), disconnects cleanly, joins the
 * thread and frees everything. Whatever is still in flight is reported
 * failed to the handler first. NULL is a no-op. */
void vigil_mqtt_link_stop(vigil_mqtt_link *l, int timeout_ms);

#endif
