/* mqtt_link.h - the outbox's own connection to the broker: a small MQTT 5
 * client that only publishes at QoS 1, on its own socket and thread.
 *
 * Why not paho: paho's asynchronous library has one lock for all its
 * clients in a process, and its receive thread holds it while our message
 * callback commits an input. While inputs arrive without gaps, paho's send
 * thread gets the lock only in the gaps, so a replica's outputs left only
 * after the backlog was taken in, and each output cost paho a command
 * queue entry, a thread hand-off and its own write. This client shares
 * nothing with paho: a publish is encoded into a queue, vigil_mqtt_link_flush
 * hands everything queued to the connection's thread, which writes it in
 * one go and reads the PUBACKs as many at a time as have arrived.
 *
 * The session is clean (no state kept by the broker): what was in flight
 * when the connection is lost is reported failed, and the caller publishes
 * it again (the outbox keeps it in Redis until acknowledged). Messages
 * beyond the broker's Receive Maximum wait in our queue, never in the
 * broker's or a library's, and go out as PUBACKs make room.
 *
 * The connection is mqtt:// (tcp://) or mqtts:// (ssl://, OpenSSL: the
 * configured CA or the system's, an optional client certificate, server
 * certificate and host name verified), with the user and password and the
 * topic prefix of vigil_mqtt_config. It reconnects by itself (200 ms
 * doubling to 5 s) and keeps the connection alive with PINGREQ. */
#ifndef VIGIL_MQTT_LINK_H
#define VIGIL_MQTT_LINK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vigil/mqtt.h"

typedef struct vigil_mqtt_link vigil_mqtt_link;

/* Uses cfg's url, user, password, client_id, TLS files and topic prefix
 * (copied); the rest is ignored. Returns NULL with err on a bad URL or
 * TLS setting. Starts nothing. */
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

/* Same contract as vigil_mqtt_set_ack_handler: called on the link's thread,
 * once per tagged message queued; after a removal returns, no call runs. */
void vigil_mqtt_link_set_ack_handler(vigil_mqtt_link *l, vigil_mqtt_ack_fn fn, void *ctx);

/* Queues one QoS 1 message (copied) with tag; it leaves at the next
 * vigil_mqtt_link_flush, in the order queued. VIGIL_PUB_SEND_OK (exactly
 * one handler call follows), VIGIL_PUB_SEND_RETRY (not connected) or
 * VIGIL_PUB_SEND_REFUSED (a topic that is not valid UTF-8 or holds a
 * wildcard, or larger than the broker's Maximum Packet Size). */
int vigil_mqtt_link_publish_tagged(vigil_mqtt_link *l, const vigil_pubmsg *msg, uint64_t tag);

/* Hands what was queued to the connection's thread (one wake-up). */
void vigil_mqtt_link_flush(vigil_mqtt_link *l);

/* Same contract as vigil_mqtt_publish_batch: publishes n messages in order
 * and waits up to timeout_ms; returns how many leading ones the broker
 * acknowledged. */
int vigil_mqtt_link_publish_batch(vigil_mqtt_link *l, const vigil_pubmsg *msgs, int n,
                                  int timeout_ms);

/* Writes what is queued (up to timeout_ms), disconnects cleanly, joins the
 * thread and frees everything. Whatever is still in flight is reported
 * failed to the handler first. NULL is a no-op. */
void vigil_mqtt_link_stop(vigil_mqtt_link *l, int timeout_ms);

#endif
