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

/* What a CONNACK says that matters to a publisher. */
typedef struct vigil_connack {
    int reason;           /* 0 = accepted, >= 0x80 = refused */
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
