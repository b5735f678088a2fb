/* conn.h - one MQTT 5 connection of vigil-bench-load: a non-blocking
 * loopback socket with an input buffer cut into whole packets and an output
 * buffer written as the socket takes it. The packets themselves are
 * libshared's (libshared/src/mqtt_wire.h). */
#ifndef VIGIL_BENCH_LOAD_CONN_H
#define VIGIL_BENCH_LOAD_CONN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt_wire.h"

typedef struct bl_conn {
    const char *name; /* "publisher" / "subscriber", for messages */
    int fd;
    unsigned char *in;
    size_t in_len, in_cap, in_off; /* unread bytes are in[in_off, in_len) */
    unsigned char *out;
    size_t out_len, out_cap, out_off; /* unwritten bytes are out[out_off, out_len) */
    int64_t last_write_ns;            /* for PINGREQ while idle */
    int recv_max;                     /* the broker's Receive Maximum */
} bl_conn;

/* One whole packet at the front of the input: its first byte, body and
 * length. */
typedef struct bl_packet {
    unsigned char first;
    const unsigned char *body;
    size_t len;
} bl_packet;

int64_t bl_now_ns(void);

/* Connects to 127.0.0.1:port, sends a clean-start CONNECT as client_id and
 * waits (up to timeout_ms) for an accepting CONNACK. 0, or -1 with the
 * reason in err. */
int bl_conn_open(bl_conn *c, const char *name, int port, const char *client_id, int keepalive_s,
                 int timeout_ms, char *err, size_t errlen);
/* Subscribes filter at QoS 1 and waits (up to timeout_ms) for a SUBACK
 * granting it, the broker's first packet after the SUBSCRIBE (mosquitto
 * sends retained messages after it); later packets stay buffered. */
int bl_conn_subscribe(bl_conn *c, const char *filter, int timeout_ms, char *err, size_t errlen);

/* Room for n more output bytes; NULL when out of memory. The caller writes
 * there and adds n to out_len. */
unsigned char *bl_conn_reserve(bl_conn *c, size_t n);
/* Writes what the socket takes now. 0, or -1 with the reason in err. */
int bl_conn_flush(bl_conn *c, char *err, size_t errlen);
static inline bool bl_conn_pending(const bl_conn *c)
{
    return c->out_off < c->out_len;
}
/* Reads what the socket has (one read). 1 read something, 0 nothing yet,
 * -1 closed or failed (reason in err). */
int bl_conn_read(bl_conn *c, char *err, size_t errlen);
/* The next whole packet in the input: 1 and *p (valid until the next
 * read), 0 none yet, -1 malformed. */
int bl_conn_next(bl_conn *c, bl_packet *p);
/* Sends PINGREQ when nothing was written for keepalive_s / 2. */
int bl_conn_keepalive(bl_conn *c, int keepalive_s, int64_t now, char *err, size_t errlen);
void bl_conn_close(bl_conn *c);

#endif
