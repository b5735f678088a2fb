/* conn.c - vigil-bench-load's connections (conn.h). */
#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_START (256u * 1024u)
#define OUT_START (64u * 1024u)

int64_t bl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

unsigned char *bl_conn_reserve(bl_conn *c, size_t n)
{
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_cap - c->out_len >= n)
        return c->out + c->out_len;
    if (c->out_off > 0) { /* move the unwritten rest to the front first */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
        if (c->out_cap - c->out_len >= n)
            return c->out + c->out_len;
    }
    size_t cap = c->out_cap ? c->out_cap : OUT_START;
    while (cap - c->out_len < n)
        cap *= 2;
    unsigned char *nb = realloc(c->out, cap);
    if (!nb)
        return NULL;
    c->out = nb;
    c->out_cap = cap;
    return c->out + c->out_len;
}

int bl_conn_flush(bl_conn *c, char *err, size_t errlen)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            snprintf(err, errlen, "%s: write to the broker: %s", c->name, strerror(errno));
            return -1;
        }
        c->out_off += (size_t)w;
        c->last_write_ns = bl_now_ns();
    }
    c->out_off = c->out_len = 0;
    return 0;
}

int bl_conn_read(bl_conn *c, char *err, size_t errlen)
{
    if (c->in_off > 0) { /* keep the unread part at the front */
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    if (c->in_len == c->in_cap) { /* a packet larger than the buffer */
        unsigned char *nb = realloc(c->in, c->in_cap * 2);
        if (!nb) {
            snprintf(err, errlen, "%s: out of memory for a packet", c->name);
            return -1;
        }
        c->in = nb;
        c->in_cap *= 2;
    }
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (r > 0) {
            c->in_len += (size_t)r;
            return 1;
        }
        if (r == 0) {
            snprintf(err, errlen, "%s: the broker closed the connection", c->name);
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        snprintf(err, errlen, "%s: read from the broker: %s", c->name, strerror(errno));
        return -1;
    }
}

int bl_conn_next(bl_conn *c, bl_packet *p)
{
    size_t avail = c->in_len - c->in_off;
    if (avail < 2)
        return 0;
    const unsigned char *b = c->in + c->in_off;
    size_t rem;
    int vn = vigil_mqtt_varint_get(b + 1, avail - 1, &rem);
    if (vn < 0)
        return -1;
    if (vn == 0 || rem > avail - 1 - (size_t)vn)
        return 0;
    p->first = b[0];
    p->body = b + 1 + vn;
    p->len = rem;
    c->in_off += 1 + (size_t)vn + rem;
    return 1;
}

/* Waits for the next whole packet until deadline (handshakes only: the
 * main loop polls both connections itself). */
static int wait_packet(bl_conn *c, bl_packet *p, int64_t deadline, const char *what, char *err,
                       size_t errlen)
{
    for (;;) {
        int k = bl_conn_next(c, p);
        if (k < 0) {
            snprintf(err, errlen, "%s: malformed packet from the broker", c->name);
            return -1;
        }
        if (k > 0)
            return 0;
        if (bl_conn_flush(c, err, errlen) < 0)
            return -1;
        int64_t left = deadline - bl_now_ns();
        if (left <= 0) {
            snprintf(err, errlen, "%s: no %s from the broker in time", c->name, what);
            return -1;
        }
        struct pollfd pf = { .fd = c->fd, .events = POLLIN };
        if (bl_conn_pending(c))
            pf.events |= POLLOUT;
        if (poll(&pf, 1, (int)(left / 1000000) + 1) < 0 && errno != EINTR) {
            snprintf(err, errlen, "%s: poll: %s", c->name, strerror(errno));
            return -1;
        }
        if ((pf.revents & (POLLIN | POLLHUP | POLLERR)) && bl_conn_read(c, err, errlen) < 0)
            return -1;
    }
}

int bl_conn_open(bl_conn *c, const char *name, int port, const char *client_id, int keepalive_s,
                 int timeout_ms, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->fd = -1;
    c->in = malloc(IN_START);
    if (!c->in) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    c->in_cap = IN_START;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(err, errlen, "%s: socket: %s", name, strerror(errno));
        return -1;
    }
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(err, errlen, "%s: cannot connect to 127.0.0.1:%d: %s", name, port,
                 strerror(errno));
        return -1;
    }
    /* as paho's clients do: each write leaves at once */
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);

    size_t need = vigil_mqtt_connect_len(client_id, NULL, NULL);
    unsigned char *at = bl_conn_reserve(c, need);
    if (!at) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    c->out_len += vigil_mqtt_encode_connect(at, client_id, NULL, NULL, keepalive_s);
    bl_packet p;
    if (wait_packet(c, &p, bl_now_ns() + (int64_t)timeout_ms * 1000000, "CONNACK", err,
                    errlen) < 0)
        return -1;
    vigil_connack ca;
    if ((p.first & 0xF0) != 0x20 || vigil_mqtt_parse_connack(p.body, p.len, &ca) < 0) {
        snprintf(err, errlen, "%s: the broker's answer to CONNECT is no CONNACK", name);
        return -1;
    }
    if (ca.reason >= 0x80) {
        snprintf(err, errlen, "%s: the broker refused the connection (reason 0x%02x%s%s)", name,
                 ca.reason, ca.reason_string[0] ? ": " : "", ca.reason_string);
        return -1;
    }
    c->recv_max = ca.recv_max;
    c->last_write_ns = bl_now_ns();
    return 0;
}

int bl_conn_subscribe(bl_conn *c, const char *filter, int timeout_ms, char *err, size_t errlen)
{
    const char *filters[1] = { filter };
    size_t need = vigil_mqtt_subscribe_len(filters, 1);
    unsigned char *at = bl_conn_reserve(c, need);
    if (!at) {
        snprintf(err, errlen, "%s: out of memory", c->name);
        return -1;
    }
    c->out_len += vigil_mqtt_encode_subscribe(at, 1, filters, 1);
    bl_packet p;
    if (wait_packet(c, &p, bl_now_ns() + (int64_t)timeout_ms * 1000000, "SUBACK", err,
                    errlen) < 0)
        return -1;
    int id, ncodes;
    unsigned char code;
    if ((p.first & 0xF0) != 0x90 ||
        vigil_mqtt_parse_suback(p.body, p.len, &id, &code, 1, &ncodes) < 0 || id != 1 ||
        ncodes != 1) {
        snprintf(err, errlen, "%s: the broker's answer to SUBSCRIBE is no SUBACK", c->name);
        return -1;
    }
    if (code >= 0x80) {
        snprintf(err, errlen, "%s: the broker refused the subscription to %s (reason 0x%02x)",
                 c->name, filter, code);
        return -1;
    }
    return 0;
}

int bl_conn_keepalive(bl_conn *c, int keepalive_s, int64_t now, char *err, size_t errlen)
{
    if (now - c->last_write_ns < (int64_t)keepalive_s * 500000000)
        return 0;
    unsigned char *at = bl_conn_reserve(c, 2);
    if (!at) {
        snprintf(err, errlen, "%s: out of memory", c->name);
        return -1;
    }
    at[0] = 0xC0; /* PINGREQ */
    at[1] = 0x00;
    c->out_len += 2;
    c->last_write_ns = now;
    return bl_conn_flush(c, err, errlen);
}

void bl_conn_close(bl_conn *c)
{
    if (c->fd >= 0) {
        static const unsigned char disconnect[] = { 0xE0, 0x00 };
        (void)!send(c->fd, disconnect, sizeof disconnect, MSG_NOSIGNAL);
        close(c->fd);
    }
    free(c->in);
    free(c->out);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}
