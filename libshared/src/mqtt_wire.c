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

static size_t connect_rem(const vigil_connect_opts *o)
{
    /* protocol name, level, flags, keep alive, properties, client id */
    size_t rem = 6 + 1 + 1 + 2 + 1 + 2 + strlen(o->client_id);
    if (o->session_expiry_s > 0)
        rem += 5; /* 0x11 and four bytes */
    if (o->will_topic)
        rem += 1 + 2 + strlen(o->will_topic) + 2 + o->will_len; /* no will properties */
    if (o->user)
        rem += 2 + strlen(o->user);
    if (o->password)
        rem += 2 + strlen(o->password);
    return rem;
}

size_t vigil_mqtt_connect_opts_len(const vigil_connect_opts *o)
{
    size_t rem = connect_rem(o);
    return 1 + vigil_mqtt_varint_len(rem) + rem;
}

size_t vigil_mqtt_encode_connect_opts(unsigned char *out, const vigil_connect_opts *o)
{
    unsigned char *p = out;
    *p++ = 0x10;
    p += vigil_mqtt_varint_put(p, connect_rem(o));
    p = put_str(p, "MQTT", 4);
    *p++ = 5;
    unsigned char flags = (unsigned char)((o->user ? 0x80 : 0) | (o->password ? 0x40 : 0) |
                                          (o->clean_start ? 0x02 : 0));
    if (o->will_topic)
        flags |= (unsigned char)(0x04 | 0x08 | (o->will_retain ? 0x20 : 0)); /* will, QoS 1 */
    *p++ = flags;
    p = put16(p, (size_t)o->keepalive_s);
    if (o->session_expiry_s > 0) {
        *p++ = 5;
        *p++ = 0x11;
        p = put16(p, o->session_expiry_s >> 16);
        p = put16(p, o->session_expiry_s & 0xFFFF);
    } else {
        *p++ = 0; /* no properties: Session Expiry Interval 0 */
    }
    p = put_str(p, o->client_id, strlen(o->client_id));
    if (o->will_topic) {
        *p++ = 0; /* no will properties */
        p = put_str(p, o->will_topic, strlen(o->will_topic));
        p = put16(p, o->will_len);
        if (o->will_len > 0)
            memcpy(p, o->will_payload, o->will_len);
        p += o->will_len;
    }
    if (o->user)
        p = put_str(p, o->user, strlen(o->user));
    if (o->password)
        p = put_str(p, o->password, strlen(o->password));
    return (size_t)(p - out);
}

size_t vigil_mqtt_connect_len(const char *client_id, const char *user, const char *password)
{
    vigil_connect_opts o = { .client_id = client_id, .user = user, .password = password,
                             .clean_start = true };
    return vigil_mqtt_connect_opts_len(&o);
}

size_t vigil_mqtt_encode_connect(unsigned char *out, const char *client_id, const char *user,
                                 const char *password, int keepalive_s)
{
    vigil_connect_opts o = { .client_id = client_id, .user = user, .password = password,
                             .keepalive_s = keepalive_s, .clean_start = true };
    return vigil_mqtt_encode_connect_opts(out, &o);
}

static size_t subscribe_rem(const char *const *filters, int n)
{
    size_t rem = 2 + 1; /* packet id, no properties */
    for (int i = 0; i < n; i++)
        rem += 2 + strlen(filters[i]) + 1;
    return rem;
}

size_t vigil_mqtt_subscribe_len(const char *const *filters, int n)
{
    size_t rem = subscribe_rem(filters, n);
    return 1 + vigil_mqtt_varint_len(rem) + rem;
}

size_t vigil_mqtt_encode_subscribe(unsigned char *out, uint16_t id, const char *const *filters,
                                   int n)
{
    unsigned char *p = out;
    *p++ = 0x82;
    p += vigil_mqtt_varint_put(p, subscribe_rem(filters, n));
    p = put16(p, id);
    *p++ = 0;
    for (int i = 0; i < n; i++) {
        p = put_str(p, filters[i], strlen(filters[i]));
        *p++ = 0x01; /* QoS 1; local messages, retained as sent by default */
    }
    return (size_t)(p - out);
}

/* Skips a property block (its Variable Byte Integer length and its
 * bytes) at p, avail bytes; the bytes it took, or -1 when it runs past. */
static long skip_props(const unsigned char *p, size_t avail)
{
    size_t plen;
    int vn = vigil_mqtt_varint_get(p, avail, &plen);
    if (vn <= 0 || plen > avail - (size_t)vn)
        return -1;
    return vn + (long)plen;
}

int vigil_mqtt_parse_suback(const unsigned char *body, size_t len, int *id, unsigned char *codes,
                            int maxcodes, int *ncodes)
{
    *ncodes = 0;
    if (len < 2)
        return -1;
    *id = body[0] << 8 | body[1];
    long sp = skip_props(body + 2, len - 2);
    if (sp < 0)
        return -1;
    for (size_t i = 2 + (size_t)sp; i < len; i++)
        if (*ncodes < maxcodes)
            codes[(*ncodes)++] = body[i];
    return 0;
}

int vigil_mqtt_parse_publish(unsigned char first, const unsigned char *body, size_t len,
                             vigil_inpub *p)
{
    memset(p, 0, sizeof *p);
    p->qos = (first >> 1) & 3;
    p->retain = first & 1;
    p->dup = (first & 8) != 0;
    if (p->qos > 1 || len < 2)
        return -1;
    size_t tlen = (size_t)(body[0] << 8 | body[1]), off = 2;
    if (tlen == 0 || tlen > len - off)
        return -1;
    p->topic = (const char *)body + off;
    p->tlen = tlen;
    off += tlen;
    if (p->qos == 1) {
        if (len - off < 2)
            return -1;
        p->id = (uint16_t)(body[off] << 8 | body[off + 1]);
        if (p->id == 0)
            return -1;
        off += 2;
    }
    long sp = skip_props(body + off, len - off);
    if (sp < 0)
        return -1;
    off += (size_t)sp;
    p->payload = body + off;
    p->plen = len - off;
    return 0;
}

void vigil_mqtt_encode_puback(unsigned char out[4], uint16_t id)
{
    out[0] = 0x40;
    out[1] = 2;
    put16(out + 2, id);
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
    c->session_present = body[0] & 1;
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
