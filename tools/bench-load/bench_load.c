/* bench_load.c - vigil-bench-load: the load generator of scripts/bench and
 * scripts/bench-chat. One process, one thread, two MQTT 5 connections to a
 * loopback broker polled together: a publisher (QoS 1, at most --window
 * unacknowledged, optionally paced) and a subscriber that records each
 * stream key's first arrival. Times are CLOCK_MONOTONIC, as Python's
 * time.monotonic(). See --help and scripts/bench.py (run_stage). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "mqtt_wire.h"
#include "stream.h"

#define KEEPALIVE_S 60
#define CONNECT_TIMEOUT_MS 15000
#define NS 1000000000LL

static const char USAGE[] =
    "Usage: vigil-bench-load --port P --stream FILE [--sub-topic FILTER]\n"
    "                        [--key-field id|message_id] [--window W] [--rate R]\n"
    "                        [--warmup K] [--expect N] [--timeout S] [--out FILE]\n"
    "\n"
    "Publishes each line of FILE (key<TAB>topic<TAB>payload, the payload one line\n"
    "of JSON) to the broker on 127.0.0.1:P at QoS 1, and times each key's first\n"
    "arrival at a subscriber of FILTER (the key is the JSON string value of\n"
    "--key-field in the received payload). One process, one thread, two MQTT 5\n"
    "connections (clean start), polled together.\n"
    "\n"
    "  --port P          the broker's port on 127.0.0.1\n"
    "  --stream FILE     the messages, one a line\n"
    "  --sub-topic F     subscribe F at QoS 1 first; '' or absent = publish only\n"
    "  --key-field K     id (default) or message_id\n"
    "  --window W        at most W PUBLISHes unacknowledged (default 100; never more\n"
    "                    than the broker's Receive Maximum)\n"
    "  --rate R          paced: message i of the timed part due at t_first + i/R\n"
    "                    (default: as fast as the window allows)\n"
    "  --warmup K        the first K messages are published and awaited at the\n"
    "                    subscriber before the clock (t_first) starts\n"
    "  --expect N        stop once N stream keys arrived (default: every line)\n"
    "  --timeout S       give up waiting for the subscriber S seconds after the last\n"
    "                    acknowledgement, and fail when a publish is not acknowledged\n"
    "                    for S seconds (default 600)\n"
    "  --out FILE        results: key<TAB>pub_ns<TAB>recv_ns per line of the stream\n"
    "                    (CLOCK_MONOTONIC ns; -1 = not published / never received)\n"
    "\n"
    "Stdout, a line each, flushed: 'subscribed' at the SUBACK; 'progress <published>\n"
    "<received>' about once a second; 'acked <t_first_ns> <t_all_acked_ns>' once the\n"
    "broker acknowledged every timed message; 'done <received>' at the end.\n"
    "Exit status 0, or 1 with the reason on stderr (a refused connection, a publish\n"
    "not acknowledged in time, the warm-up not arriving, a bad stream line), 2 for\n"
    "bad options.\n";

typedef struct opts {
    int port;
    const char *stream, *sub_topic, *key_field, *out;
    long window, warmup, expect;
    double rate, timeout_s;
} opts;

/* Everything the run holds, reachable from here until exit (so a fatal
 * error's exit is no leak to LeakSanitizer). */
static struct {
    opts o;
    bl_stream s;
    bl_conn pub, sub;
    uint32_t *inflight; /* packet id -> message index + 1 */
} G = { .pub = { .fd = -1 }, .sub = { .fd = -1 } };

/* A fatal error: the reason on stderr, exit status 1. */
static _Noreturn void die(const char *reason)
{
    fprintf(stderr, "vigil-bench-load: error: %s\n", reason);
    exit(1);
}

static _Noreturn void usage_error(const char *what)
{
    fprintf(stderr, "vigil-bench-load: %s (see --help)\n", what);
    exit(2);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One line on stdout, flushed at once: the bench reads it live. */
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static long parse_long(const char *s, const char *name, long min)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < min) {
        fprintf(stderr, "vigil-bench-load: %s must be an integer >= %ld, not '%s'\n", name, min,
                s);
        exit(2);
    }
    return v;
}

static double parse_double(const char *s, const char *name)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *s == '\0' || *end != '\0' || !(v >= 0)) {
        fprintf(stderr, "vigil-bench-load: %s must be a number >= 0, not '%s'\n", name, s);
        exit(2);
    }
    return v;
}

static void parse_opts(int argc, char **argv, opts *o)
{
    static const struct option longs[] = {
        { "port", required_argument, NULL, 'p' },
        { "stream", required_argument, NULL, 's' },
        { "sub-topic", required_argument, NULL, 't' },
        { "key-field", required_argument, NULL, 'k' },
        { "window", required_argument, NULL, 'w' },
        { "rate", required_argument, NULL, 'r' },
        { "warmup", required_argument, NULL, 'u' },
        { "expect", required_argument, NULL, 'e' },
        { "timeout", required_argument, NULL, 'T' },
        { "out", required_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (opts){ .key_field = "id", .window = 100, .expect = -1, .timeout_s = 600 };
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 'p': o->port = (int)parse_long(optarg, "--port", 1); break;
        case 's': o->stream = optarg; break;
        case 't': o->sub_topic = optarg[0] ? optarg : NULL; break;
        case 'k': o->key_field = optarg; break;
        case 'w': o->window = parse_long(optarg, "--window", 1); break;
        case 'r': o->rate = parse_double(optarg, "--rate"); break;
        case 'u': o->warmup = parse_long(optarg, "--warmup", 0); break;
        case 'e': o->expect = parse_long(optarg, "--expect", 0); break;
        case 'T': o->timeout_s = parse_double(optarg, "--timeout"); break;
        case 'o': o->out = optarg; break;
        case 'h': fputs(USAGE, stdout); exit(0);
        default: usage_error("unknown option");
        }
    }
    if (optind < argc)
        usage_error("unexpected argument");
    if (!o->port || o->port > 65535 || !o->stream)
        usage_error("--port (1..65535) and --stream are required");
    if (strcmp(o->key_field, "id") != 0 && strcmp(o->key_field, "message_id") != 0)
        usage_error("--key-field is id or message_id");
    if (o->window > 65535)
        o->window = 65535; /* packet ids */
    if (o->warmup > 0 && !o->sub_topic)
        usage_error("--warmup needs --sub-topic (the warm-up is awaited there)");
}

/* The run's counters, shared by the loop and its handlers. */
typedef struct run {
    size_t n, warmup, next, end_pub; /* next = next message to publish */
    size_t inflight, acked, window;
    size_t received, warm_received; /* stream keys arrived (first arrivals) */
    uint16_t last_id;
    int phase; /* 0 warm-up, 1 timed, 2 waiting for the subscriber */
    int64_t t_first, t_acked, last_ack;
    double rate;
    size_t flen;
} run;

/* When message i of the timed part is due (paced runs). */
static int64_t due_ns(const run *r, size_t i)
{
    return r->t_first + (int64_t)((double)(i - r->warmup) * (double)NS / r->rate);
}

/* A free packet id: the next after the last, skipping 0 and ids still in
 * flight (a broker may acknowledge out of order). */
static uint16_t take_id(run *r)
{
    do
        r->last_id = (uint16_t)(r->last_id + 1);
    while (r->last_id == 0 || G.inflight[r->last_id]);
    return r->last_id;
}

/* Encodes the messages the window and the schedule allow into the
 * publisher's buffer, then writes them; each one's publish time is taken
 * just before that write, never while it waited for the window. */
static void publish_some(run *r, int64_t now)
{
    char err[256];
    size_t first = r->next;
    while (r->next < r->end_pub && r->inflight < r->window) {
        if (r->phase == 1 && r->rate > 0 && due_ns(r, r->next) > now)
            break;
        bl_msg *m = &G.s.msgs[r->next];
        unsigned char *at = bl_conn_reserve(&G.pub, vigil_mqtt_publish_len(m->tlen, m->plen));
        if (!at)
            die("out of memory for the publisher's buffer");
        size_t id_at;
        size_t len = vigil_mqtt_encode_publish(at, m->topic, m->tlen, m->payload, m->plen, false,
                                               &id_at);
        uint16_t id = take_id(r);
        vigil_mqtt_put_packet_id(at + id_at, id);
        G.pub.out_len += len;
        G.inflight[id] = (uint32_t)(r->next + 1);
        if (r->inflight++ == 0)
            r->last_ack = now; /* the PUBACK timeout counts from here */
        r->next++;
    }
    if (r->next == first)
        return;
    int64_t t = bl_now_ns();
    for (size_t i = first; i < r->next; i++)
        G.s.msgs[i].pub_ns = t;
    if (bl_conn_flush(&G.pub, err, sizeof err) < 0)
        die(err);
}

/* The publisher's input: PUBACKs (and PINGRESPs). */
static void on_publisher_input(run *r, int64_t now)
{
    char err[256];
    bl_packet p;
    int k;
    while ((k = bl_conn_next(&G.pub, &p)) > 0) {
        int type = p.first >> 4;
        if (type == 4) {
            int id, reason;
            if (vigil_mqtt_parse_puback(p.body, p.len, &id, &reason) < 0)
                die("publisher: malformed PUBACK");
            uint32_t idx = G.inflight[id];
            if (!idx)
                continue; /* not ours (or twice) */
            if (reason >= 0x80) {
                snprintf(err, sizeof err, "publisher: the broker refused the message %s "
                         "(PUBACK reason 0x%02x)", G.s.msgs[idx - 1].key, reason);
                die(err);
            }
            G.inflight[id] = 0;
            r->inflight--;
            r->acked++;
            r->last_ack = now;
        } else if (type == 14) {
            snprintf(err, sizeof err, "publisher: the broker disconnected us (reason 0x%02x)",
                     p.len > 0 ? p.body[0] : 0);
            die(err);
        }
    }
    if (k < 0)
        die("publisher: malformed packet from the broker");
}

/* The subscriber's input, all packets of one read stamped with the time of
 * that read: each PUBLISH is acknowledged (the PUBACKs of a read written
 * together) and its key's first arrival recorded. Kept cheap: 40,000+
 * messages a second may come. */
static void on_subscriber_input(run *r, int64_t t)
{
    char err[256];
    bl_packet p;
    int k;
    while ((k = bl_conn_next(&G.sub, &p)) > 0) {
        int type = p.first >> 4;
        if (type == 3) {
            vigil_inpub in;
            if (vigil_mqtt_parse_publish(p.first, p.body, p.len, &in) < 0)
                die("subscriber: malformed PUBLISH");
            if (in.qos == 1) {
                unsigned char *at = bl_conn_reserve(&G.sub, 4);
                if (!at)
                    die("out of memory for the subscriber's buffer");
                vigil_mqtt_encode_puback(at, in.id);
                G.sub.out_len += 4;
            }
            size_t klen;
            const char *key = bl_find_key(in.payload, in.plen, G.o.key_field, r->flen, &klen);
            bl_msg *m = key ? bl_stream_find(&G.s, key, klen) : NULL;
            if (m && m->recv_ns < 0) {
                m->recv_ns = t;
                r->received++;
                if ((size_t)(m - G.s.msgs) < r->warmup)
                    r->warm_received++;
            }
        } else if (type == 14) {
            snprintf(err, sizeof err, "subscriber: the broker disconnected us (reason 0x%02x)",
                     p.len > 0 ? p.body[0] : 0);
            die(err);
        }
    }
    if (k < 0)
        die("subscriber: malformed packet from the broker");
    if (bl_conn_flush(&G.sub, err, sizeof err) < 0)
        die(err);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The single loop: publish what is due, then sleep in ppoll() until a
 * socket is ready or the next message, progress line or deadline is due. */
static void loop(run *r)
{
    char err[256];
    const int64_t timeout = (int64_t)(G.o.timeout_s * (double)NS);
    const bool has_sub = G.o.sub_topic != NULL;
    const size_t expect = G.o.expect >= 0 ? (size_t)G.o.expect : (has_sub ? r->n : 0);
    int64_t now = bl_now_ns(), next_progress = now + NS, warm_deadline = now + timeout;
    int64_t sub_deadline = 0;
    r->phase = r->warmup > 0 ? 0 : 1;
    r->end_pub = r->warmup > 0 ? r->warmup : r->n;
    r->t_first = now;
    r->last_ack = now;
    for (;;) {
        now = bl_now_ns();
        if (r->phase == 0 && r->acked == r->warmup && r->warm_received == r->warmup) {
            r->phase = 1; /* the clock starts: the warm-up arrived */
            r->t_first = now;
            r->end_pub = r->n;
        } else if (r->phase == 0 && now > warm_deadline) {
            snprintf(err, sizeof err, "the %zu warm-up messages did not arrive within %.0f s "
                     "(%zu arrived)", r->warmup, G.o.timeout_s, r->warm_received);
            die(err);
        }
        if (r->phase <= 1)
            publish_some(r, now);
        if (r->phase == 1 && r->acked == r->n) {
            r->t_acked = bl_now_ns();
            r->phase = 2;
            sub_deadline = r->t_acked + timeout;
            say("acked %" PRId64 " %" PRId64, r->t_first, r->t_acked);
        }
        if (r->phase == 2 && (!has_sub || r->received >= expect || now >= sub_deadline))
            return;
        if (r->inflight > 0 && now - r->last_ack > timeout) {
            snprintf(err, sizeof err, "publisher: %zu messages not acknowledged within %.0f s",
                     r->inflight, G.o.timeout_s);
            die(err);
        }
        if (now >= next_progress) {
            say("progress %zu %zu", r->next, r->received);
            next_progress = now + NS;
        }
        if (bl_conn_keepalive(&G.pub, KEEPALIVE_S, now, err, sizeof err) < 0 ||
            (has_sub && bl_conn_keepalive(&G.sub, KEEPALIVE_S, now, err, sizeof err) < 0))
            die(err);

        int64_t wake = next_progress;
        if (r->phase == 1 && r->rate > 0 && r->next < r->n && r->inflight < r->window)
            wake = min64(wake, due_ns(r, r->next));
        if (r->phase == 2)
            wake = min64(wake, sub_deadline);
        int64_t left = wake - bl_now_ns();
        if (left < 0)
            left = 0;
        struct timespec ts = { .tv_sec = left / NS, .tv_nsec = left % NS };
        struct pollfd pf[2] = { { .fd = G.pub.fd, .events = POLLIN },
                                { .fd = has_sub ? G.sub.fd : -1, .events = POLLIN } };
        if (bl_conn_pending(&G.pub))
            pf[0].events |= POLLOUT;
        if (has_sub && bl_conn_pending(&G.sub))
            pf[1].events |= POLLOUT;
        if (ppoll(pf, 2, &ts, NULL) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, sizeof err, "poll: %s", strerror(errno));
            die(err);
        }
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            int k = bl_conn_read(&G.sub, err, sizeof err);
            if (k < 0)
                die(err);
            if (k > 0)
                on_subscriber_input(r, bl_now_ns());
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            int k = bl_conn_read(&G.pub, err, sizeof err);
            if (k < 0)
                die(err);
            if (k > 0)
                on_publisher_input(r, bl_now_ns());
        }
        if (((pf[0].revents & POLLOUT) && bl_conn_flush(&G.pub, err, sizeof err) < 0) ||
            ((pf[1].revents & POLLOUT) && bl_conn_flush(&G.sub, err, sizeof err) < 0))
            die(err);
    }
}

int main(int argc, char **argv)
{
    char err[512];
    parse_opts(argc, argv, &G.o);
    if (bl_stream_load(&G.s, G.o.stream, err, sizeof err) < 0)
        die(err);
    if ((size_t)G.o.warmup > G.s.n)
        G.o.warmup = (long)G.s.n;
    G.inflight = calloc(65536, sizeof *G.inflight);
    if (!G.inflight)
        die("out of memory");

    char id[64];
    unsigned tag = (unsigned)getpid() ^ (unsigned)bl_now_ns();
    if (G.o.sub_topic) {
        snprintf(id, sizeof id, "bench-sub-%08x", tag);
        if (bl_conn_open(&G.sub, "subscriber", G.o.port, id, KEEPALIVE_S, CONNECT_TIMEOUT_MS,
                         err, sizeof err) < 0 ||
            bl_conn_subscribe(&G.sub, G.o.sub_topic, CONNECT_TIMEOUT_MS, err, sizeof err) < 0)
            die(err);
        say("subscribed");
    }
    snprintf(id, sizeof id, "bench-pub-%08x", tag);
    if (bl_conn_open(&G.pub, "publisher", G.o.port, id, KEEPALIVE_S, CONNECT_TIMEOUT_MS, err,
                     sizeof err) < 0)
        die(err);

    run r = { .n = G.s.n, .warmup = (size_t)G.o.warmup, .rate = G.o.rate,
              .flen = strlen(G.o.key_field) };
    /* MQTT 5: never more in flight than the broker's Receive Maximum */
    r.window = (size_t)G.o.window;
    if (G.pub.recv_max > 0 && r.window > (size_t)G.pub.recv_max)
        r.window = (size_t)G.pub.recv_max;
    loop(&r);

    if (G.o.out && bl_stream_write_results(&G.s, G.o.out) < 0) {
        snprintf(err, sizeof err, "cannot write %s: %s", G.o.out, strerror(errno));
        die(err);
    }
    say("done %zu", r.received);
    bl_conn_close(&G.pub);
    bl_conn_close(&G.sub);
    bl_stream_free(&G.s);
    free(G.inflight);
    return 0;
}
