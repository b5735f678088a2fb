/* mqtt_wire.h - private to libshared/src: the MQTT 5 packets the outbox's
 * own connection (mqtt_link.c) writes and reads, as pure functions over
 * bytes: CONNECT, PUBLISH (QoS 1), and the decoding of CONNACK and PUBACK.
 * Nothing here does I/O; every reader is bounded by the length it is given
 * and says "malformed" rather than read past it (the broker's bytes are
 * input like any other). */
#ifndef VIGIL_MQTT_WIRE_H
#define VIGIL_MQTT_WIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIGIL_MQTT_VARINT_MAX 268435455u /* the largest Variable Byte Integer */

/* Variable Byte Integer: writes v (<= VIGIL_MQTT_VARINT_MAX) and returns
 * its length (1..4); _len says the length without writing. */
size_t vigil_mqtt_varint_put(unsigned char *p, size_t v);
size_t vigil_mqtt_varint_len(size_t v);
/* Reads one from p (avail bytes): its length (1..4), 0 when more bytes are
 * needed, -1 when malformed (a fifth byte would be needed). */
int vigil_mqtt_varint_get(const unsigned char *p, size_t avail, size_t *v);

/* A topic name a broker accepts: 1..65535 bytes of UTF-8 without NUL and
 * without the wildcards + and #. */
bool vigil_mqtt_topic_name_ok(const char *t, size_t n);

/* Bytes of a QoS 1 PUBLISH of this topic and payload (no properties). */
size_t vigil_mqtt_publish_len(size_t tlen, size_t plen);
/* Writes it (vigil_mqtt_publish_len bytes) with packet id 0; *id_at gets
 * the offset of the id, for vigil_mqtt_put_packet_id once it is known. */
size_t vigil_mqtt_encode_publish(unsigned char *out, const char *topic, size_t tlen,
                                 const void *payload, size_t plen, bool retain, size_t *id_at);
void vigil_mqtt_put_packet_id(unsigned char *at, uint16_t id);

/* Bytes of a CONNECT (MQTT 5, clean start, no properties: the session
 * ends with the connection); user / password NULL = none. */
size_t vigil_mqtt_connect_len(const char *client_id, const char *user, const char *password);
size_t vigil_mqtt_encode_connect(unsigned char *out, const char *client_id, const char *user,
                                 const char *password, int keepalive_s);

/* A CONNECT with a session and a last will (the intake's connection):
 * clean_start false resumes the session the broker kept under client_id;
 * session_expiry_s > 0 is sent as the Session Expiry Interval (without
 * it the broker ends the session with the connection); will_topic NULL =
 * no will, else a QoS 1 will of will_len bytes, retained if will_retain. */
typedef struct vigil_connect_opts {
    const char *client_id, *user, *password; /* user / password NULL = none */
    int keepalive_s;
    bool clean_start;
    uint32_t session_expiry_s;
    const char *will_topic;
    const void *will_payload;
    size_t will_len;
    bool will_retain;
} vigil_connect_opts;
size_t vigil_mqtt_connect_opts_len(const vigil_connect_opts *o);
size_t vigil_mqtt_encode_connect_opts(unsigned char *out, const vigil_connect_opts *o);

/* SUBSCRIBE of n topic filters at QoS 1 (no other options) with packet
 * id; _len says the bytes needed. */
size_t vigil_mqtt_subscribe_len(const char *const *filters, int n);
size_t vigil_mqtt_encode_subscribe(unsigned char *out, uint16_t id, const char *const *filters,
                                   int n);
/* Decodes a SUBACK's body: its packet id and up to maxcodes reason codes
 * (*ncodes of them; >= 0x80 = that filter refused). 0, or -1 malformed. */
int vigil_mqtt_parse_suback(const unsigned char *body, size_t len, int *id, unsigned char *codes,
                            int maxcodes, int *ncodes);

/* An incoming PUBLISH, pointing into the packet's body. */
typedef struct vigil_inpub {
    const char *topic; /* not NUL-terminated */
    size_t tlen;
    int qos;           /* 0 or 1 (2 is refused: we subscribe at QoS 1) */
    bool retain, dup;
    uint16_t id;       /* 0 at QoS 0 */
    const unsigned char *payload;
    size_t plen;
} vigil_inpub;
/* Decodes a PUBLISH from its fixed header's first byte and its body (len
 * bytes). Returns 0, or -1 when malformed: QoS 2 or 3, a topic or the
 * properties longer than the body, a QoS 1 packet id of 0, or an empty
 * topic (we announce no Topic Alias Maximum, so aliases cannot come). */
int vigil_mqtt_parse_publish(unsigned char first, const unsigned char *body, size_t len,
                             vigil_inpub *p);
/* A PUBACK (success) for packet id: 4 bytes. */
void vigil_mqtt_encode_puback(unsigned char out[4], uint16_t id);

/* What a CONNACK says that matters to a publisher. */
typedef struct vigil_connack {
    int reason;           /* 0 = accepted, >= 0x80 = refused */
    bool session_present; /* the broker resumed the session it kept */
    int recv_max;         /* Receive Maximum: 65535 when absent */
    long long max_packet; /* Maximum Packet Size: 0 when absent (no limit) */
    int keepalive;        /* Server Keep Alive: -1 when absent */
    char reason_string[160]; /* "" when absent */
} vigil_connack;
/* Decodes a CONNACK's body (after the fixed header, len bytes). Returns 0,
 * or -1 when malformed; reason is filled whenever the body has it, so a
 * refusal with broken properties is still a refusal. */
int vigil_mqtt_parse_connack(const unsigned char *body, size_t len, vigil_connack *c);

/* Decodes a PUBACK's body: its packet id and reason code (0 when the body
 * has none). Returns 0, or -1 when shorter than a packet id. */
int vigil_mqtt_parse_puback(const unsigned char *body, size_t len, int *id, int *reason);

#endif
