/* mqtt.h - MQTT 5 client over paho MQTTAsync with a persistent session.
 *
 * - Stable client id, cleanstart=0 and a Session Expiry Interval, so the
 *   broker queues our QoS 1 input while we are away.
 * - Reconnect (our connector thread) with capped exponential backoff (1 s .. 30 s); on
 *   every (re)connect: subscribe to every filter again (QoS 1) and publish
 *   the retained status payload "ready" (paho does not resubscribe).
 * - Last will: the retained "lost" status.
 * - on_message runs on paho's callback thread. The PUBACK for a QoS 1
 *   message is sent after it returns, so the handler must make the
 *   message's effect durable before returning. It must not call
 *   vigil_mqtt_publish_* (they wait for acknowledgements: deadlock) and
 *   must not call any paho function that waits.
 * docs/architecture.md ("paho.mqtt.c 1.3.12") lists the paho behaviours this
 * relies on and how each was verified. */
#ifndef VIGIL_MQTT_H
#define VIGIL_MQTT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vigil/config.h"

typedef struct vigil_mqtt vigil_mqtt;

/* Called once per arriving message. payload is not NUL-terminated. */
typedef void (*vigil_mqtt_on_message)(void *ctx, const char *topic, const void *payload,
                                      size_t len, bool retained);
/* One message of a batch (vigil_mqtt_on_batch); payload not NUL-terminated. */
typedef struct vigil_mqtt_msg {
    const char *topic;
    const void *payload;
    size_t len;
    bool retained;
} vigil_mqtt_msg;
/* Called with the messages of one read from the broker, in order (Vigil's
 * own intake client, mqtt_link.h, only): returns how many of them, from the
 * first, it made durable, as on_message does for one; their PUBACKs are
 * written once it returns, and the rest stay unacknowledged (the broker
 * delivers them again), so a shutdown need not take in a whole read. */
typedef int (*vigil_mqtt_on_batch)(void *ctx, const vigil_mqtt_msg *msgs, int n);

/* Called (on paho's thread) when the connection comes up or goes down. */
typedef void (*vigil_mqtt_on_state)(void *ctx, bool connected);

/* Called (on our connector thread, never paho's) when the broker refused
 * the first connect for a reason waiting will not fix: bad user name or
 * password, not authorized, or a TLS certificate that does not verify.
 * why is one line naming what failed, without the password. */
typedef void (*vigil_mqtt_on_refused)(void *ctx, const char *why);

typedef struct vigil_mqtt_config {
    const char *url;        /* mqtt://host:port or tcp://host:port */
    const char *user;       /* NULL or "" = none */
    const char *password;
    const char *client_id;  /* stable across restarts, e.g. "vigil-dormancy-monitor-0" */
    const char *const *subscriptions; /* NULL-terminated topic filters */
    int session_expiry_s;   /* how long the broker keeps our session (default 604800, 7 days, if 0);
                             * < 0: clean start and no session kept (short-lived clients) */
    const char *status_topic;   /* sys/{service}/{instance}/status, NULL = none */
    const char *ready_payload;  /* published retained on every connect */
    const char *lost_payload;   /* last will, retained */
    vigil_mqtt_on_message on_message;
    /* mqtt_link.h's intake only, may be NULL: when set, every read's
     * messages go to it instead of on_message */
    vigil_mqtt_on_batch on_batch;
    vigil_mqtt_on_state on_state; /* may be NULL */
    void *ctx;
    /* TLS (mqtts:// or ssl:// only; a file with a plain URL is an error):
     * the CA that signs the broker's certificate (NULL = the system's
     * trust store), an optional client certificate and its key. Server
     * certificate and host name are always verified. */
    const char *tls_ca_file;
    const char *tls_cert_file;
    const char *tls_key_file;
    /* may be NULL: the first connect then ends without retrying, and
     * vigil_mqtt_refused says why */
    vigil_mqtt_on_refused on_refused;
    /* VIGIL_TOPIC_PREFIX (vigil/topic_prefix.h), NULL or "" = none: every
     * subscription and publish (status and will included) is put under
     * "<prefix>/", and on_message sees topics without it. Topics passed
     * to and from this client stay unprefixed. */
    const char *topic_prefix;
} vigil_mqtt_config;

/* A config holding what the common configuration says about the broker:
 * URL, user, password, TLS files and topic prefix (pointers into c, which
 * must outlive it); every other field zero, for the caller to set. Every
 * client of the project reaches the broker this same way. */
vigil_mqtt_config vigil_mqtt_config_of(const vigil_common_config *c);

/* Creates the client (no network yet). Returns NULL with err on a bad URL
 * or a paho error. Strings in cfg are copied. */
vigil_mqtt *vigil_mqtt_new(const vigil_mqtt_config *cfg, char *err, size_t errlen);

/* Starts connecting in the background; reconnects by itself forever. */
int vigil_mqtt_start(vigil_mqtt *m);

/* True while the broker refuses us (credentials, authorization, TLS): why
 * gets the last refusal's text. A refused first connect is final; a
 * refused reconnect is retried by paho, and the next accepted connect
 * clears this. */
bool vigil_mqtt_refused(vigil_mqtt *m, char *why, size_t whylen);

/* Our own flag, kept by the connected/connectionLost callbacks (never
 * calls MQTTAsync_isConnected, which may deadlock inside callbacks). */
bool vigil_mqtt_connected(const vigil_mqtt *m);

/* Monotonic ms (vigil_mono_ms) when the connection was last lost, 0 when
 * it never was. */
int64_t vigil_mqtt_lost_at_ms(const vigil_mqtt *m);

typedef struct vigil_pubmsg {
    const char *topic;
    const void *payload;
    size_t len;
    bool retain;
} vigil_pubmsg;

/* Publishes n messages at QoS 1 in order and waits until every one is
 * acknowledged by the broker or timeout_ms passes. Returns the number of
 * leading messages acknowledged (n on full success). Never call from a
 * paho callback. */
int vigil_mqtt_publish_batch(vigil_mqtt *m, const vigil_pubmsg *msgs, int n, int timeout_ms);

/* Outcome of a tagged publish, delivered to the ack handler. */
enum {
    VIGIL_PUB_ACKED = 1,   /* PUBACK with a success reason code */
    VIGIL_PUB_FAILED = 0,  /* no answer: connection lost, timed out in paho */
    VIGIL_PUB_REFUSED = -1 /* the broker answered with a reason >= 0x80 (e.g. ACL) */
};
/* Called once per tagged publish handed to paho, on paho's thread, with the
 * client's lock held: record the outcome and return; never call paho. */
typedef void (*vigil_mqtt_ack_fn)(void *ctx, uint64_t tag, int outcome, int reason_code);
/* Installs (or with fn NULL removes) the handler. Once it returns after a
 * removal no handler call is running or will start, so ctx may be freed. */
void vigil_mqtt_set_ack_handler(vigil_mqtt *m, vigil_mqtt_ack_fn fn, void *ctx);

enum {
    VIGIL_PUB_SEND_OK = 0,       /* handed to paho: exactly one handler call follows */
    VIGIL_PUB_SEND_RETRY = -1,   /* not handed over (disconnected, paho queue full) */
    VIGIL_PUB_SEND_REFUSED = -2  /* never publishable as is (e.g. topic not UTF-8) */
};
/* Hands one QoS 1 message to paho without waiting; its outcome reaches the
 * ack handler with tag. paho copies topic and payload. Messages are sent in
 * the order handed over. Keep at most vigil_mqtt_window() unresolved:
 * beyond the broker's Receive Maximum paho parks messages for about a
 * second each. Never call from a paho callback. */
int vigil_mqtt_publish_tagged(vigil_mqtt *m, const vigil_pubmsg *msg, uint64_t tag);
/* QoS 1 messages the tagged publisher may keep in flight: the broker's
 * Receive Maximum (from the CONNACK) less one, kept for
 * vigil_mqtt_publish_async; at most 1000. A batch
 * (vigil_mqtt_publish_batch) sends only into what those leave of it. */
int vigil_mqtt_window(const vigil_mqtt *m);

/* Name of an MQTT 5 reason code ("Not authorized"). */
const char *vigil_mqtt_reason_string(int reason_code);

/* Queues one message at QoS 1 without waiting (safe from a callback).
 * Returns 0 if handed to paho. */
int vigil_mqtt_publish_async(vigil_mqtt *m, const char *topic, const void *payload,
                             size_t len, bool retain);

/* Publishes final_status (retained, if not NULL) and waits for it, then
 * disconnects cleanly (the will is not sent) and frees everything. */
void vigil_mqtt_stop(vigil_mqtt *m, const char *final_status, int timeout_ms);

/* Says (a warning and vigil_mqtt_sessions_lost_total) that a reconnect
 * of a persistent intake found no session kept by the broker: input queued
 * for it, or published before it subscribed again, is lost to it. Both
 * intakes (paho's and mqtt_link.c) call it. */
void vigil_mqtt_session_lost_say(const char *client_id);

/* Converts mqtt:// / mqtts:// to paho's tcp:// / ssl:// form. */
int vigil_mqtt_url_to_paho(const char *url, char *out, size_t outlen);

#endif
