/* mqtt_wire.c - MQTT 5 packet encoding and decoding (see mqtt_wire.h). */
#include "mqtt_wire.h"

#include <stdio.h>
#include <string.h>

#include "vigil/json.h"

size_t vigil_mqtt_varint_put(unsigned char *p, size_t v)
{
    size_t n = 0;
    do {
        unsigned char b = v % 128;
        v /= 128;
        p[n++] = (unsigned char)(b | (v > 0 ? 128 : 0));
    } while (v > 0);
    return n;
}

size_t vigil_mqtt_varint_len(size_t v)
{
    return v < 128 ? 1 : v < 16384 ? 2 : v < 2097152 ? 3 : 4;
}

int vigil_mqtt_varint_get(const unsigned char *p, size_t avail, size_t *v)
{
    size_t mult = 1, val = 0;
    for (int i = 0; i < 4; i++) {
        if ((size_t)i >= avail)
            return 0;
        val += (size_t)(p[i] & 127) * mult;
        if (!(p[i] & 128)) {
            *v = val;
            return i + 1;
        }
        mult *= 128;
    }
    return -1;
}

bool vigil_mqtt_topic_name_ok(const char *t, size_t n)
{
    return t && n > 0 && n <= 65535 && vigil_utf8_valid(t, n) && !memchr(t, '+', n) &&
           !memchr(t, '#', n) && !memchr(t, '\0', n);
}

static unsigned char *put16(unsigned char *p, size_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
    return p + 2;
}

static unsigned char *put_str(unsigned char *p, const char *s, size_t n)
{
    p = put16(p, n);
    memcpy(p, s, n);
    return p + n;
}

size_t vigil_mqtt_publish_len(size_t tlen, size_t plen)
{
    size_t rem = 2 + tlen + 2 + 1 + plen; /* topic, id, no properties, payload */
    return 1 + vigil_mqtt_varint_len(rem) + rem;
}

size_t vigil_mqtt_encode_publish(unsigned char *out, const char *topic, size_t tlen,
                                 const void *payload, size_t plen, bool retain, size_t *id_at)
{
    size_t rem = 2 + tlen + 2 + 1 + plen;
    unsigned char *p = out;
    *p++ = (unsigned char)(0x32 | (retain ? 1 : 0)); /* PUBLISH, QoS 1 */
    p += vigil_mqtt_varint_put(p, rem);
    p = put_str(p, topic, tlen);
    *id_at = (size_t)(p - out);
    p = put16(p, 0);
    *p++ = 0; /* property length */
    if (plen > 0)
        memcpy(p, payload, plen);
    return (size_t)(p - out) + plen;
}

void vigil_mqtt_put_packet_id(unsigned char *at, uint16_t id)
{
    put16(at, id);
}

static size_t connect_rem(const char *client_id, const char *user, const char *password)
{
    /* protocol name, level, flags, keep alive, property length, client id */
    return 6 + 1 + 1 + 2 + 1 + 2 + strlen(client_id) + (user ? 2 + strlen(user) : 0) +
           (password ? 2 + strlen(password) : 0);
}

size_t vigil_mqtt_connect_len(const char *client_id, const char *user, const char *password)
{
    size_t rem = connect_rem(client_id, user, password);
    return 1 + vigil_mqtt_varint_len(rem) + rem;
}

size_t vigil_mqtt_encode_connect(unsigned char *out, const char *client_id, const char *user,
                                 const char *password, int keepalive_s)
{
    unsigned char *p = out;
    *p++ = 0x10;
    p += vigil_mqtt_varint_put(p, connect_rem(client_id, user, password));
    p = put_str(p, "MQTT", 4);
    *p++ = 5;
    *p++ = (unsigned char)(0x02 | (user ? 0x80 : 0) | (password ? 0x40 : 0)); /* clean start */
    p = put16(p, (size_t)keepalive_s);
    *p++ = 0; /* no properties: Session Expiry Interval 0 */
    p = put_str(p, client_id, strlen(client_id));
    if (user)
        p = put_str(p, user, strlen(user));
    if (password)
        p = put_str(p, password, strlen(password));
    return (size_t)(p - out);
}

/* Length in bytes of one property's value, by its identifier (MQTT 5
 * section 2.2.2.2), read from p (avail bytes); -1 unknown or cut short. */
static long prop_len(int id, const unsigned char *p, size_t avail)
{
    switch (id) {
    case 0x01: case 0x17: case 0x19: case 0x24: case 0x25: case 0x28: case 0x29: case 0x2A:
        return 1;
    case 0x13: case 0x21: case 0x22: case 0x23:
        return 2;
    case 0x02: case 0x11: case 0x18: case 0x27:
        return 4;
    case 0x0B: {
        size_t v;
        int n = vigil_mqtt_varint_get(p, avail, &v);
        return n > 0 ? n : -1;
    }
    case 0x03: case 0x08: case 0x09: case 0x12: case 0x15: case 0x16: case 0x1A: case 0x1C:
    case 0x1F:
        return avail < 2 ? -1 : 2 + ((long)p[0] << 8 | p[1]);
    case 0x26: { /* a string pair */
        if (avail < 2)
            return -1;
        long a = 2 + ((long)p[0] << 8 | p[1]);
        if ((size_t)a + 2 > avail)
            return -1;
        return a + 2 + ((long)p[a] << 8 | p[a + 1]);
    }
    default:
        return -1;
    }
}

int vigil_mqtt_parse_connack(const unsigned char *body, size_t len, vigil_connack *c)
{
    memset(c, 0, sizeof *c);
    c->recv_max = 65535;
    c->keepalive = -1;
    if (len < 2)
        return -1;
    c->reason = body[1];
    if (len == 2)
        return 0; /* no property length at all: tolerated */
    const unsigned char *p = body + 2;
    size_t avail = len - 2, plen;
    int vn = vigil_mqtt_varint_get(p, avail, &plen);
    if (vn <= 0 || plen > avail - (size_t)vn)
        return -1;
    p += vn;
    size_t i = 0;
    while (i < plen) {
        int id = p[i++];
        long n = prop_len(id, p + i, plen - i);
        if (n < 0 || (size_t)n > plen - i)
            return -1;
        const unsigned char *v = p + i;
        if (id == 0x21)
            c->recv_max = v[0] << 8 | v[1];
        else if (id == 0x27)
            c->max_packet = (long long)v[0] << 24 | (long long)v[1] << 16 | v[2] << 8 | v[3];
        else if (id == 0x13)
            c->keepalive = v[0] << 8 | v[1];
        else if (id == 0x1F)
            snprintf(c->reason_string, sizeof c->reason_string, "%.*s", (int)(n - 2),
                     (const char *)v + 2);
        i += (size_t)n;
    }
    return 0;
}

int vigil_mqtt_parse_puback(const unsigned char *body, size_t len, int *id, int *reason)
{
    if (len < 2)
        return -1;
    *id = body[0] << 8 | body[1];
    *reason = len >= 3 ? body[2] : 0;
    return 0;
}
