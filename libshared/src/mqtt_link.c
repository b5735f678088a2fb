/* mqtt_link.c - the outbox's own MQTT 5 publishing connection (see
 * vigil/mqtt_link.h).
 *
 * Threads: callers (the outbox thread) encode messages into l->queue under
 * l->mu; the link's thread owns the socket (and the TLS session: OpenSSL's
 * SSL object is not shared between threads) and does every read and write.
 * Packet ids are handed out by the link's thread when a message moves from
 * the queue into the output buffer, at most the broker's Receive Maximum
 * unacknowledged. Outcomes are delivered on the link's thread under cb_mu
 * (never under mu), in the order the PUBACKs arrived. */
#define _GNU_SOURCE
#include "vigil/mqtt_link.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_wire.h"
#include "tls_client.h"
#include "vigil/clock.h"
#include "vigil/config.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/oom.h"
#include "vigil/redact.h"
#include "vigil/topic_prefix.h"
#include "vigil/thread_name.h"

#define LINK_IDS 1024          /* packet id table; > the largest window */
#define LINK_MAX_WINDOW 1000
#define LINK_KEEPALIVE_S 20
#define LINK_CONNECT_TIMEOUT_MS 5000
#define LINK_BACKOFF_BASE_MS 200
#define LINK_BACKOFF_CAP_MS 5000
#define LINK_POLL_MS 1000
/* The publisher acknowledges PUBACK segments within this, and in a burst
 * reads again no sooner (serve; VIGIL_OUTBOX_HOLD_US). 1 ms until
 * 2026-12-01: against mosquitto's window of 20 without TCP_NODELAY each
 * connection's window then came back about once per 1-2 ms, which capped
 * the outbox; 500 us took the mixed workload from 19,400-19,800 to
 * 26,700-28,000 inputs/s and the AI-only one from 14,600-15,900 to
 * 20,500-22,200 (scripts/bench --broker-max-inflight 0, alternated runs). */
#define LINK_HOLD_US_DEFAULT 500
#define LINK_ACK_DELAY_FROM 8 /* ... when at least this many publishes are still in flight */
#define LINK_HOLD_FULL_FROM 64 /* a window at least this large is read with a hold even when full */
#define LINK_READ_CHUNK 65536
#define LINK_GATHER_US_DEFAULT 500 /* VIGIL_MQTT_INTAKE_GATHER_US */
#define LINK_SUBSCRIBE_ID (LINK_IDS + 1) /* outside the publish ids */
#define LINK_MAX_PACKET ((size_t)VIGIL_MQTT_VARINT_MAX + 5)
#define INTAKE_BACKOFF_BASE_MS 1000 /* as paho's reconnect: two replicas started with the
                                     * same client id must not take the session from
                                     * each other in a tight loop */
#define INTAKE_BACKOFF_CAP_MS 30000

enum { OUT_PENDING = 0, OUT_ACKED = 1, OUT_FAILED = 2 };

/* A batch caller waiting for its messages (vigil_mqtt_link_publish_batch). */
typedef struct link_batch {
    int n, left;
    int *state; /* OUT_* per message */
} link_batch;

/* One encoded PUBLISH waiting for a packet id. */
typedef struct qmsg {
    struct qmsg *next;
    uint64_t tag;
    link_batch *batch; /* NULL: tagged (the handler hears of it) */
    int bidx;
    size_t len, pid_off;
    unsigned char buf[];
} qmsg;

typedef struct inflight {
    bool used;
    uint64_t tag;
    link_batch *batch;
    int bidx;
} inflight;

/* An outcome collected under mu, delivered after it is released. */
typedef struct outcome {
    uint64_t tag;
    int result; /* VIGIL_PUB_* */
    int reason;
} outcome;

struct vigil_mqtt_link {
    char *host, *port, *user, *password, *client_id, *prefix;
    bool tls;
    char *ca_file, *cert_file, *key_file;

    pthread_t thread;
    bool started;
    int efd; /* eventfd: wakes the link's thread */

    pthread_mutex_t mu;
    pthread_cond_t cv; /* batch outcomes */
    qmsg *qhead, *qtail;
    inflight ids[LINK_IDS];
    int in_flight;
    uint16_t next_id;
    bool stopping;
    int64_t stop_deadline;
    int sock; /* under mu, so stop can shut a connect in progress */

    pthread_mutex_t cb_mu;
    vigil_mqtt_ack_fn ack_fn;
    void *ack_ctx;

    atomic_bool connected;
    atomic_llong lost_at;
    atomic_int window;
    /* failed connects since the link was last up (or started), and
     * whether the broker refused one of them (_failures_since_up) */
    atomic_int failures_since_up;
    atomic_bool refused_since_up;
    atomic_bool shared; /* one of several publishing connections (vigil_mqtt_link_set_shared) */
    atomic_llong max_packet; /* the broker's Maximum Packet Size, 0 = none said */

    /* the link's thread only */
    SSL_CTX *ctx;
    SSL *ssl;
    unsigned char *obuf;
    size_t olen, ooff, ocap;
    unsigned char *rbuf;
    size_t rlen;
    int recv_max;
    int keepalive_s;
    int64_t last_write, last_read;
    int64_t last_read_us;
    int64_t ack_due; /* publisher: mono us by which to acknowledge what was read, 0 = none */
    int64_t hold_us; /* publisher: the ACK delay and read hold in a burst (serve) */
    /* mono us before which the socket is not read again, 0 = none (serve):
     * the publisher's in a burst, the intake's while a burst gathers */
    int64_t read_hold;
    uint64_t bytes_in; /* read from the broker so far (serve: did a read find any) */
    bool ping_out;
    bool write_wants_read; /* the last SSL_write wanted a read first */
    outcome *outs;
    size_t nouts, capouts;
    char refused[320]; /* last refusal logged, to log a change once */
    size_t rcap;

    /* Intake (cfg->on_message set): a persistent session, its
     * subscriptions, a last will and a ready status on every connect. */
    bool intake;
    char **subs; /* under the prefix */
    int nsubs;
    bool clean_start;
    uint32_t session_expiry_s;
    char *will_topic; /* under the prefix */
    char *lost_payload;
    char *status_topic; /* without the prefix: published through encode_msg */
    char *ready_payload;
    char *display_url;
    vigil_mqtt_on_message on_message;
    vigil_mqtt_on_state on_state;
    vigil_mqtt_on_refused on_refused;
    void *cb_ctx;
    bool ever_connected; /* the link's thread only */
    bool session_present; /* the last CONNACK said the broker kept our session */
    /* intake: connected, and up (on_state) once the broker acknowledged
     * the SUBSCRIBE (subscribed: its SUBACK came); the link's thread only */
    bool up_pending, subscribed;
    /* on_batch: the messages of one read, their packet ids (0: QoS 0) and
     * their topics, NUL-terminated, one after another in topics */
    vigil_mqtt_on_batch on_batch;
    vigil_mqtt_msg *batch;
    uint16_t *batch_ids;
    size_t *batch_topic_at;
    int nbatch, batch_cap;
    /* intake: after a read of two or more messages (last_batch, a burst),
     * the socket is not read again for gather_us (read_hold;
     * VIGIL_MQTT_INTAKE_GATHER_US, 0 = never held) */
    int gather_us, last_batch;
    char *topics;
    size_t topics_len, topics_cap;
};

/* ---- encoding ---------------------------------------------------------- */

/* A PUBLISH (QoS 1) waiting for its packet id, or NULL: out of memory.
 * topic is the full topic (under the prefix). */
static qmsg *encode_publish(const char *topic, size_t tlen, const void *payload, size_t plen,
                            bool retain)
{
    size_t total = vigil_mqtt_publish_len(tlen, plen);
    qmsg *q = malloc(sizeof *q + total);
    if (!q)
        return NULL;
    memset(q, 0, sizeof *q);
    q->len = vigil_mqtt_encode_publish(q->buf, topic, tlen, payload, plen, retain, &q->pid_off);
    return q;
}

/* Encodes msg under the prefix; NULL with *refused set when it can never
 * be published, or with it clear when memory ran out. */
static qmsg *encode_msg(vigil_mqtt_link *l, const vigil_pubmsg *msg, bool *refused)
{
    *refused = true;
    if (!msg || !msg->topic || !msg->topic[0] || (msg->len > 0 && !msg->payload))
        return NULL; /* an empty topic under a prefix would be "<prefix>/": never meant */
    char buf[512];
    char *heap = NULL;
    const char *full = msg->topic;
    size_t tlen = strlen(msg->topic);
    if (l->prefix) {
        size_t need = strlen(l->prefix) + tlen + 16;
        char *out = need <= sizeof buf ? buf : (heap = malloc(need));
        if (!out) {
            *refused = false;
            return NULL;
        }
        int n = vigil_topic_prefix_apply(l->prefix, msg->topic, out, need);
        if (n < 0) {
            free(heap);
            return NULL;
        }
        full = out;
        tlen = (size_t)n;
    }
    qmsg *q = NULL;
    long long max = atomic_load(&l->max_packet);
    if (vigil_mqtt_topic_name_ok(full, tlen) &&
        (max <= 0 || vigil_mqtt_publish_len(tlen, msg->len) <= (size_t)max)) {
        q = encode_publish(full, tlen, msg->payload, msg->len, msg->retain);
        if (!q)
            *refused = false;
    }
    free(heap);
    return q;
}

/* ---- outcomes ---------------------------------------------------------- */

static void out_push(vigil_mqtt_link *l, uint64_t tag, int result, int reason)
{
    if (l->nouts == l->capouts) {
        size_t cap = l->capouts ? l->capouts * 2 : 256;
        outcome *o = realloc(l->outs, cap * sizeof *o);
        if (!o)
            return; /* the outbox's own timeout publishes it again */
        l->outs = o;
        l->capouts = cap;
    }
    l->outs[l->nouts++] = (outcome){ tag, result, reason };
}

/* Stands for a batch whose caller stopped waiting: its late outcomes go
 * nowhere (not to the handler, which counts only tagged messages). */
static link_batch orphaned;

/* Records the outcome of a batch message, or queues a tagged one's for
 * the handler. Caller holds mu. */
static void resolve_locked(vigil_mqtt_link *l, uint64_t tag, link_batch *b, int bidx,
                           int result, int reason)
{
    if (b == &orphaned)
        return;
    if (b) {
        if (b->state[bidx] == OUT_PENDING) {
            b->state[bidx] = result == VIGIL_PUB_ACKED ? OUT_ACKED : OUT_FAILED;
            if (--b->left == 0)
                pthread_cond_broadcast(&l->cv);
        }
        return;
    }
    out_push(l, tag, result, reason);
}

/* Hands the collected outcomes to the handler, in order. */
static void deliver(vigil_mqtt_link *l)
{
    if (l->nouts == 0)
        return;
    pthread_mutex_lock(&l->cb_mu);
    if (l->ack_fn)
        for (size_t i = 0; i < l->nouts; i++)
            l->ack_fn(l->ack_ctx, l->outs[i].tag, l->outs[i].result, l->outs[i].reason);
    pthread_mutex_unlock(&l->cb_mu);
    l->nouts = 0;
}

/* Every message in flight or queued fails (the connection is gone, or the
 * link stops): the caller publishes them again on the next connection. */
static void fail_all(vigil_mqtt_link *l)
{
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < LINK_IDS; i++) {
        inflight *f = &l->ids[i];
        if (f->used)
            resolve_locked(l, f->tag, f->batch, f->bidx, VIGIL_PUB_FAILED, 0);
        f->used = false;
    }
    l->in_flight = 0;
    while (l->qhead) {
        qmsg *q = l->qhead;
        l->qhead = q->next;
        resolve_locked(l, q->tag, q->batch, q->bidx, VIGIL_PUB_FAILED, 0);
        free(q);
    }
    l->qtail = NULL;
    pthread_mutex_unlock(&l->mu);
    deliver(l);
}

/* ---- the socket -------------------------------------------------------- */

static void wake(vigil_mqtt_link *l)
{
    uint64_t one = 1;
    ssize_t rc = write(l->efd, &one, sizeof one);
    (void)rc; /* a full counter (impossible in practice) still wakes */
}

static void close_conn(vigil_mqtt_link *l)
{
    if (l->ssl) {
        SSL_free(l->ssl);
        l->ssl = NULL;
    }
    pthread_mutex_lock(&l->mu);
    int fd = l->sock;
    l->sock = -1;
    pthread_mutex_unlock(&l->mu);
    if (fd >= 0)
        close(fd);
    l->olen = l->ooff = l->rlen = 0;
    l->read_hold = 0;
    l->last_batch = 0;
}

/* Marks the connection lost (once), fails what was in flight, closes. */
static void intake_down(vigil_mqtt_link *l);

static void conn_lost(vigil_mqtt_link *l, const char *why)
{
    if (atomic_exchange(&l->connected, false)) {
        atomic_store(&l->lost_at, vigil_mono_ms());
        vigil_log_kv(VIGIL_LOG_WARN,
                     l->intake ? "mqtt connection lost" : "outbox connection to the broker lost",
                     "client_id", l->client_id, "error", why, NULL);
        if (l->intake)
            intake_down(l);
    }
    close_conn(l);
    fail_all(l);
}

/* Reads what has arrived (without blocking) into rbuf. Returns bytes read,
 * 0 when nothing is there now, -1 when the connection ended. */
static ssize_t conn_read(vigil_mqtt_link *l, unsigned char *p, size_t n)
{
    if (l->ssl) {
        ERR_clear_error();
        int r = SSL_read(l->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
        if (r > 0)
            return r;
        int e = SSL_get_error(l->ssl, r);
        return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
    }
    errno = 0;
    ssize_t r = recv(l->sock, p, n, MSG_DONTWAIT);
    if (r > 0)
        return r;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return -1;
}

/* Writes what it can of obuf without blocking. -1: the connection ended. */
static int conn_write(vigil_mqtt_link *l)
{
    while (l->ooff < l->olen) {
        size_t n = l->olen - l->ooff;
        ssize_t w;
        if (l->ssl) {
            ERR_clear_error();
            int r = SSL_write(l->ssl, l->obuf + l->ooff, n > INT32_MAX ? INT32_MAX : (int)n);
            if (r <= 0) {
                int e = SSL_get_error(l->ssl, r);
                /* TLS may need to read before it can write (a key update):
                 * then waiting for POLLOUT would spin. */
                l->write_wants_read = e == SSL_ERROR_WANT_READ;
                return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
            }
            l->write_wants_read = false;
            w = r;
        } else {
            w = send(l->sock, l->obuf + l->ooff, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        }
        l->ooff += (size_t)w;
        l->last_write = vigil_mono_ms();
        l->ack_due = 0; /* the data carried our ACK */
    }
    l->olen = l->ooff = 0;
    return 0;
}

static bool obuf_reserve(vigil_mqtt_link *l, size_t n)
{
    if (l->ooff > 0 && l->ooff == l->olen)
        l->olen = l->ooff = 0;
    if (l->olen + n <= l->ocap)
        return true;
    size_t cap = l->ocap ? l->ocap : 65536;
    while (cap < l->olen + n)
        cap *= 2;
    unsigned char *b = realloc(l->obuf, cap);
    if (!b)
        return false;
    l->obuf = b;
    l->ocap = cap;
    return true;
}

static bool obuf_put(vigil_mqtt_link *l, const void *p, size_t n)
{
    if (!obuf_reserve(l, n))
        return false;
    memcpy(l->obuf + l->olen, p, n);
    l->olen += n;
    return true;
}

/* Moves queued messages into the output buffer while the broker's Receive
 * Maximum leaves room, giving each a free packet id. */
static void take_queue(vigil_mqtt_link *l)
{
    pthread_mutex_lock(&l->mu);
    while (l->qhead && l->in_flight < l->recv_max) {
        qmsg *q = l->qhead;
        uint16_t id = 0;
        for (int tries = 0; tries < LINK_IDS; tries++) {
            uint16_t c = (uint16_t)(l->next_id % LINK_IDS + 1); /* 1 .. LINK_IDS */
            l->next_id = c;
            if (!l->ids[c - 1].used) {
                id = c;
                break;
            }
        }
        if (id == 0 || !obuf_reserve(l, q->len))
            break; /* every id in use (cannot happen below LINK_IDS) or no memory: later */
        vigil_mqtt_put_packet_id(q->buf + q->pid_off, id);
        obuf_put(l, q->buf, q->len);
        l->ids[id - 1] = (inflight){ true, q->tag, q->batch, q->bidx };
        l->in_flight++;
        l->qhead = q->next;
        if (!l->qhead)
            l->qtail = NULL;
        free(q);
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- reading packets --------------------------------------------------- */

/* One PUBACK: its id's message is acknowledged, or refused with a reason
 * of 0x80 or more. Caller holds mu. */
static void on_puback_locked(vigil_mqtt_link *l, const unsigned char *p, size_t rem)
{
    int id, reason;
    if (vigil_mqtt_parse_puback(p, rem, &id, &reason) != 0)
        return;
    if (id < 1 || id > LINK_IDS || !l->ids[id - 1].used)
        return; /* not ours (an id from before a reconnect cannot come: clean session) */
    inflight *f = &l->ids[id - 1];
    f->used = false;
    l->in_flight--;
    resolve_locked(l, f->tag, f->batch, f->bidx,
                   reason >= 0x80 ? VIGIL_PUB_REFUSED : VIGIL_PUB_ACKED, reason);
}

static int conn_write(vigil_mqtt_link *l);

/* Messages inside the intake's handler across every client of the
 * process (the same gauge as paho's intake, mqtt.c). */
static atomic_int intake_in_flight;
#define M_INPUTS_IN_FLIGHT "vigil_inputs_in_flight"
#define M_INPUTS_IN_FLIGHT_HELP "Inputs received and not yet durable (acknowledged when their handler returns)"

/* Grows *p (elements of size sz, capacity *cap) to hold need; false when
 * memory stays short (after vigil_oom_wait's pauses). */
static bool grow(void **p, size_t sz, size_t need, size_t *cap)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q;
    for (int attempt = 0; !(q = realloc(*p, n * sz)); attempt++)
        if (!vigil_oom_wait(attempt, "mqtt batch"))
            return false;
    *p = q;
    *cap = n;
    return true;
}

/* One PUBLISH joins the read's batch (on_batch): its payload stays in
 * rbuf until the batch is handed over, its topic is copied. Returns -1
 * (why) for a malformed packet or when memory stays short. */
static int batch_add(vigil_mqtt_link *l, unsigned char first, const unsigned char *body,
                     size_t rem, char *why, size_t whylen)
{
    vigil_inpub in;
    if (vigil_mqtt_parse_publish(first, body, rem, &in) != 0) {
        snprintf(why, whylen, "malformed PUBLISH from the broker");
        return -1;
    }
    size_t cap = (size_t)l->batch_cap, cap2 = cap, cap3 = cap;
    if (!grow((void **)&l->batch, sizeof *l->batch, (size_t)l->nbatch + 1, &cap) ||
        !grow((void **)&l->batch_ids, sizeof *l->batch_ids, (size_t)l->nbatch + 1, &cap2) ||
        !grow((void **)&l->batch_topic_at, sizeof *l->batch_topic_at, (size_t)l->nbatch + 1,
              &cap3) ||
        !grow((void **)&l->topics, 1, l->topics_len + in.tlen + 1, &l->topics_cap)) {
        snprintf(why, whylen, "out of memory for a batch of messages");
        return -1;
    }
    l->batch_cap = (int)(cap < cap2 ? (cap < cap3 ? cap : cap3) : (cap2 < cap3 ? cap2 : cap3));
    memcpy(l->topics + l->topics_len, in.topic, in.tlen);
    l->topics[l->topics_len + in.tlen] = '\0';
    l->batch_topic_at[l->nbatch] = l->topics_len;
    l->topics_len += in.tlen + 1;
    l->batch[l->nbatch] = (vigil_mqtt_msg){ NULL, in.payload, in.plen, in.retain };
    l->batch_ids[l->nbatch] = in.qos == 1 ? in.id : 0;
    l->nbatch++;
    return 0;
}

/* Hands the read's messages to on_batch, or one by one to on_message, in
 * order, then queues their PUBACKs (written by the caller's next write):
 * every PUBACK after its message's handler returned, so a crash before the
 * write leaves them unacknowledged and the broker sends them again. The
 * PUBACKs of a read go out together. Runs on the link's thread without mu
 * (publishers must not wait for a handler). Returns -1 (why) when a PUBACK
 * cannot be queued: the messages stay unacknowledged. */
static int batch_deliver(vigil_mqtt_link *l, char *why, size_t whylen)
{
    int n = l->nbatch, kept = 0;
    l->last_batch = n;
    if (n == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        const char *t = l->topics + l->batch_topic_at[i];
        /* Every subscription is under the prefix, so every topic is too. */
        const char *ours = l->prefix ? vigil_topic_prefix_strip(l->prefix, t) : t;
        if (!ours)
            continue;
        l->batch[kept] = l->batch[i];
        l->batch[kept++].topic = ours;
    }
    vigil_counter_add("vigil_mqtt_messages_received_total", "MQTT messages received", NULL, n);
    vigil_gauge_set(M_INPUTS_IN_FLIGHT, M_INPUTS_IN_FLIGHT_HELP, NULL,
                    (double)atomic_fetch_add(&intake_in_flight, n) + n);
    int handled = kept;
    if (l->on_batch && kept > 0) {
        handled = l->on_batch(l->cb_ctx, l->batch, kept);
        handled = handled < 0 ? 0 : handled > kept ? kept : handled;
    }
    for (int i = 0; !l->on_batch && i < kept; i++)
        l->on_message(l->cb_ctx, l->batch[i].topic, l->batch[i].payload, l->batch[i].len,
                      l->batch[i].retained);
    vigil_gauge_set(M_INPUTS_IN_FLIGHT, M_INPUTS_IN_FLIGHT_HELP, NULL,
                    (double)atomic_fetch_sub(&intake_in_flight, n) - n);
    int rc = 0, seen = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *t = l->topics + l->batch_topic_at[i];
        bool ours = !l->prefix || vigil_topic_prefix_strip(l->prefix, t);
        /* PUBACKs go out in the order of the messages: none after the
         * first message the handler left (a shutdown), which comes again */
        if (ours && seen++ >= handled)
            break;
        if (l->batch_ids[i] == 0)
            continue;
        unsigned char ack[4];
        vigil_mqtt_encode_puback(ack, l->batch_ids[i]);
        if (!obuf_put(l, ack, sizeof ack)) {
            snprintf(why, whylen, "out of memory for a PUBACK");
            rc = -1;
        }
    }
    l->nbatch = 0;
    l->topics_len = 0;
    return rc;
}

/* A SUBACK: a filter the broker refused (an ACL) is an error worth a line. */
static void on_suback(vigil_mqtt_link *l, const unsigned char *body, size_t rem)
{
    unsigned char codes[64];
    int id, n;
    if (vigil_mqtt_parse_suback(body, rem, &id, codes, 64, &n) != 0)
        return;
    if (id == LINK_SUBSCRIBE_ID)
        l->subscribed = true;
    if (n != l->nsubs)
        vigil_log_kv(VIGIL_LOG_WARN, "mqtt SUBACK with a reason code count other than the "
                     "filters sent", "client_id", l->client_id, NULL);
    for (int i = 0; i < n; i++)
        if (codes[i] >= 0x80)
            vigil_log_kv(VIGIL_LOG_ERROR, "mqtt subscription refused", "filter",
                         i < l->nsubs ? l->subs[i] : "?", "reason",
                         vigil_mqtt_reason_string(codes[i]), NULL);
}

/* The intake says it is up (the runtime's /readyz) only once the broker
 * acknowledged its SUBSCRIBE: until then a message published elsewhere
 * may reach the broker first and find no subscription (a fresh session
 * keeps nothing for us). Said outside mu: the callback is the runtime's. */
static void intake_up_when_subscribed(vigil_mqtt_link *l)
{
    if (!l->up_pending || !l->subscribed)
        return;
    l->up_pending = false;
    if (l->on_state)
        l->on_state(l->cb_ctx, true);
}

/* Parses the complete packets in rbuf. Returns -1 (with why) when the
 * connection must end: a DISCONNECT from the broker or a malformed packet. */
static int parse_packets(vigil_mqtt_link *l, char *why, size_t whylen)
{
    size_t off = 0;
    int rc = 0;
    pthread_mutex_lock(&l->mu);
    while (l->rlen - off >= 2) {
        size_t rem;
        int vn = vigil_mqtt_varint_get(l->rbuf + off + 1, l->rlen - off - 1, &rem);
        if (vn < 0) {
            snprintf(why, whylen, "malformed packet from the broker");
            rc = -1;
            break;
        }
        if (vn == 0 || l->rlen - off - 1 - (size_t)vn < rem)
            break; /* incomplete */
        unsigned char first = l->rbuf[off], type = first >> 4;
        const unsigned char *body = l->rbuf + off + 1 + vn;
        if (type == 4) {
            on_puback_locked(l, body, rem);
        } else if (type == 3 && l->intake) {
            rc = batch_add(l, first, body, rem, why, whylen);
            if (rc != 0)
                break;
        } else if (type == 9 && l->intake) {
            on_suback(l, body, rem);
        } else if (type == 14) {
            int reason = rem >= 1 ? body[0] : 0;
            snprintf(why, whylen, "the broker disconnected us: %s (%d)",
                     vigil_mqtt_reason_string(reason), reason);
            rc = -1;
            break;
        } else if (type == 13) {
            l->ping_out = false;
        } /* anything else (nothing else is expected) is skipped */
        off += 1 + (size_t)vn + rem;
    }
    pthread_mutex_unlock(&l->mu);
    intake_up_when_subscribed(l);
    /* The payloads point into rbuf: hand them over before it moves. A
     * batch cut short by a bad packet is not handed over: unacknowledged,
     * it comes again on the next connection. */
    if (rc == 0)
        rc = batch_deliver(l, why, whylen);
    l->nbatch = 0;
    l->topics_len = 0;
    if (off > 0) {
        memmove(l->rbuf, l->rbuf + off, l->rlen - off);
        l->rlen -= off;
    }
    deliver(l);
    return rc;
}

/* The intake's rbuf holds at least the whole packet that starts it, however
 * large (a message over VIGIL_MAX_PAYLOAD must reach the handler, which
 * refuses it with an error event, rather than end the connection).
 * Returns false when the packet cannot be held. */
static bool rbuf_fit_first(vigil_mqtt_link *l)
{
    size_t rem;
    int vn = l->rlen >= 2 ? vigil_mqtt_varint_get(l->rbuf + 1, l->rlen - 1, &rem) : 0;
    if (vn <= 0)
        return false;
    size_t need = 1 + (size_t)vn + rem;
    if (need <= l->rcap || need > LINK_MAX_PACKET)
        return false;
    unsigned char *b;
    for (int attempt = 0; !(b = realloc(l->rbuf, need)); attempt++)
        if (!vigil_oom_wait(attempt, "mqtt packet"))
            return false;
    l->rbuf = b;
    l->rcap = need;
    return true;
}

/* Sends the ACK of what was read now (the flag does not stick). */
static void set_quickack(vigil_mqtt_link *l)
{
    int one = 1;
    setsockopt(l->sock, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
    l->ack_due = 0;
}

/* Reads everything available and handles the complete packets. */
static int read_packets(vigil_mqtt_link *l, char *why, size_t whylen)
{
    for (;;) {
        size_t room = l->rcap - l->rlen;
        if (room == 0 && !(l->intake && rbuf_fit_first(l))) {
            snprintf(why, whylen, "a packet from the broker larger than %zu bytes", l->rcap);
            return -1;
        }
        room = l->rcap - l->rlen;
        ssize_t n = conn_read(l, l->rbuf + l->rlen, room);
        if (n < 0) {
            snprintf(why, whylen, "connection closed: %s", errno ? strerror(errno) : "end of stream");
            return -1;
        }
        if (n == 0)
            return 0;
        l->rlen += (size_t)n;
        l->bytes_in += (uint64_t)n;
        l->last_read_us = vigil_mono_us();
        l->last_read = l->last_read_us / 1000; /* the same clock */
        l->write_wants_read = false;
        if (parse_packets(l, why, whylen) != 0)
            return -1;
        /* A broker without TCP_NODELAY holds its next segment until this
         * one is acknowledged; Linux would delay that ACK up to 40 ms when
         * we have nothing to send back. The intake acknowledges at once
         * (an input held back is latency), and so does the publisher
         * with few publishes left in flight (an output waiting for room
         * is latency). With LINK_ACK_DELAY_FROM or more in flight (a
         * burst), the publisher acknowledges within its hold (hold_us)
         * unless its next write carries the ACK first (serve), so the
         * broker gathers that time's PUBACKs into one segment:
         * acknowledging every read at once made a ping-pong of small
         * segments, 1.1-1.8 wakes and 27-40 us of system time per input
         * on this thread. The flag does not stick. Leaving the intake's
         * ACK to the PUBACKs that follow its commit saves a system call
         * per read but cost about 9 % of the processed rate against
         * mosquitto's window of 20 (six alternated runs each), probably
         * because setting the flag also takes the socket out of the
         * kernel's delayed-ACK ping-pong mode, so the broker's next
         * segments, held by its Nagle, are acknowledged as they arrive
         * during the commit. */
        if (l->intake || l->in_flight < LINK_ACK_DELAY_FROM)
            set_quickack(l);
        else if (!l->ack_due)
            l->ack_due = l->last_read_us + l->hold_us;
        /* And in a burst the publisher does not read again for
         * its hold either: a broker with TCP_NODELAY writes each
         * PUBACK alone, and reading each as it came woke this thread
         * 1.3-2.3 times per input. A full window read at once was the
         * same ping-pong, one PUBACK in and one PUBLISH out per wake
         * (nodelay on: 0.9-1.1 wakes, 38-46 us of system time per input;
         * held: 0.2-0.3 and 8-11 us). The hold is kept with the window
         * full only when it is LINK_HOLD_FULL_FROM or more: the broker
         * then still has most of it to work through while the PUBACKs
         * of that millisecond gather (about 12 at 12,000 outputs/s). A
         * smaller window (mosquitto's default of 20) is held only while
         * at most half of it is in flight: held full, it left the broker
         * idle (as shipped, 2,739-2,754 against 3,148-3,238 inputs/s),
         * unless it is one of several connections (mqtt_links.h), whose
         * others keep the broker busy meanwhile. */
        if (!l->intake)
            l->read_hold = l->in_flight >= LINK_ACK_DELAY_FROM &&
                                   (l->in_flight <= l->recv_max / 2 ||
                                    l->recv_max >= LINK_HOLD_FULL_FROM ||
                                    atomic_load_explicit(&l->shared, memory_order_relaxed))
                               ? l->last_read_us + l->hold_us
                               : 0;
        /* The intake in a burst lets the next inputs gather (serve): a read
         * of one or two inputs, each read committed at once, made a Redis
         * round trip, a PUBACK segment and a wake for each, in the
         * service, in Redis and in the broker alike. Against mosquitto's
         * window of 20, gathering for 500 us took the median of four
         * alternated runs from 12,700 to 14,500 inputs/s, CPU per input
         * from 26-36 to 20-24 us in the service and from 18-24 to 14-16
         * us in Redis (scripts/bench --mix human). A lone input is never
         * held: it costs no latency at a slow pace. */
        if (l->intake)
            l->read_hold = l->gather_us > 0 && l->last_batch >= 2 ? vigil_mono_us() + l->gather_us
                                                                  : 0;
        if (l->rcap > LINK_READ_CHUNK && l->rlen < LINK_READ_CHUNK) {
            /* a large message has gone: give its room back */
            unsigned char *b = realloc(l->rbuf, LINK_READ_CHUNK);
            if (b) {
                l->rbuf = b;
                l->rcap = LINK_READ_CHUNK;
            }
        }
        if (!l->ssl && (size_t)n < room)
            return 0; /* the socket is drained: no second recv for EAGAIN */
    }
}

/* ---- connecting -------------------------------------------------------- */

/* The TCP connection, registered under mu so vigil_mqtt_link_stop can cut
 * a handshake short. */
static int tcp_connect(vigil_mqtt_link *l, char *why, size_t whylen)
{
    int fd = vigil_tcp_connect_bounded(l->host, l->port, LINK_CONNECT_TIMEOUT_MS, why, whylen);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_mutex_lock(&l->mu);
    bool stopping = l->stopping;
    l->sock = fd;
    pthread_mutex_unlock(&l->mu);
    if (stopping) {
        snprintf(why, whylen, "stopping");
        close_conn(l);
        return -1;
    }
    return 0;
}

/* The TLS handshake on the (still blocking) socket, verifying the broker's
 * certificate and host name as the paho client does. */
static int tls_handshake(vigil_mqtt_link *l, char *why, size_t whylen)
{
    if (!l->ctx) {
        char e[200];
        l->ctx = vigil_tls_client_ctx(l->ca_file, l->cert_file, l->key_file, e, sizeof e);
        if (!l->ctx) {
            snprintf(why, whylen, "TLS with %s:%s: %s", l->host, l->port, e);
            return -1;
        }
        SSL_CTX_set_mode(l->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    l->ssl = vigil_tls_client_session(l->ctx, l->sock, l->host);
    if (!l->ssl) {
        snprintf(why, whylen, "cannot create a TLS session");
        return -1;
    }
    ERR_clear_error();
    if (SSL_connect(l->ssl) != 1) {
        long v = SSL_get_verify_result(l->ssl);
        /* The broker answered and TLS itself failed (OpenSSL says why): a
         * refusal waiting will not fix; a connection cut without a word
         * from OpenSSL is an outage. */
        bool tls_said = v != X509_V_OK || ERR_peek_last_error() != 0;
        if (v != X509_V_OK)
            snprintf(why, whylen, "TLS handshake with %s:%s failed: certificate verify failed: %s",
                     l->host, l->port, X509_verify_cert_error_string(v));
        else
            snprintf(why, whylen, "TLS handshake with %s:%s failed: %s", l->host, l->port,
                     vigil_tls_queue_reason("handshake failed"));
        return l->intake && tls_said ? -2 : -1;
    }
    return 0;
}

/* Reads exactly n bytes on the blocking socket (the CONNACK). */
static int read_full(vigil_mqtt_link *l, unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r;
        if (l->ssl) {
            int s = SSL_read(l->ssl, p + got, (int)(n - got));
            r = s > 0 ? s : -1;
        } else {
            r = recv(l->sock, p + got, n - got, 0);
        }
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(vigil_mqtt_link *l, const unsigned char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w;
        if (l->ssl) {
            int s = SSL_write(l->ssl, p + done, (int)(n - done));
            w = s > 0 ? s : -1;
        } else {
            w = send(l->sock, p + done, n - done, MSG_NOSIGNAL);
        }
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

/* CONNACK reasons that say "not now" rather than "not you": Server
 * unavailable (0x88), Server busy (0x89), Connection rate exceeded (0x9F). */
static bool reason_passing(int reason)
{
    return reason == 0x88 || reason == 0x89 || reason == 0x9F;
}

/* CONNECT (MQTT 5, clean start, no session kept) and its CONNACK. Returns
 * 0, -1 for a failure worth retrying soon, -2 for a refusal (logged once). */
static int mqtt_handshake(vigil_mqtt_link *l, char *why, size_t whylen)
{
    vigil_connect_opts co = {
        .client_id = l->client_id,
        .user = l->user,
        .password = l->password,
        .keepalive_s = LINK_KEEPALIVE_S,
        .clean_start = !l->intake || l->clean_start,
        .session_expiry_s = l->intake ? l->session_expiry_s : 0,
        .will_topic = l->intake ? l->will_topic : NULL,
        .will_payload = l->lost_payload,
        .will_len = l->lost_payload ? strlen(l->lost_payload) : 0,
        .will_retain = true,
    };
    unsigned char *pkt = malloc(vigil_mqtt_connect_opts_len(&co));
    if (!pkt) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    size_t n = vigil_mqtt_encode_connect_opts(pkt, &co);
    int w = write_full(l, pkt, n);
    free(pkt);
    unsigned char hdr[5];
    size_t crem = 0;
    if (w != 0 || read_full(l, hdr, 2) != 0) {
        /* TLS 1.3: a broker that wants a client certificate says so here,
         * or resets the connection before its alert is read */
        bool alert = l->ssl && ERR_peek_last_error();
        if (l->ssl && (alert || vigil_tls_cert_asked(l->ssl))) {
            snprintf(why, whylen, "TLS handshake with %s:%s failed: %s", l->host, l->port,
                     alert ? vigil_tls_queue_reason("handshake failed")
                           : VIGIL_TLS_NO_CERT_REASON);
            return l->intake ? -2 : -1;
        }
        snprintf(why, whylen, "no CONNACK from %s:%s%s%s", l->host, l->port,
                 l->ssl && ERR_peek_last_error() ? ": " : "",
                 l->ssl && ERR_peek_last_error() ? vigil_tls_queue_reason("") : "");
        return -1;
    }
    for (int i = 1; (hdr[i] & 128) && i < 4; i++)
        if (read_full(l, hdr + i + 1, 1) != 0) {
            snprintf(why, whylen, "no CONNACK from %s:%s", l->host, l->port);
            return -1;
        }
    int vn = vigil_mqtt_varint_get(hdr + 1, 4, &crem);
    if (hdr[0] != 0x20 || vn <= 0 || crem < 2 || crem > 65536) {
        snprintf(why, whylen, "unexpected answer to CONNECT from %s:%s", l->host, l->port);
        return -1;
    }
    unsigned char *body = malloc(crem);
    if (!body || read_full(l, body, crem) != 0) {
        free(body);
        snprintf(why, whylen, "no CONNACK from %s:%s", l->host, l->port);
        return -1;
    }
    vigil_connack ca;
    int prc = vigil_mqtt_parse_connack(body, crem, &ca);
    free(body);
    if (ca.reason != 0 && l->intake && (ca.reason == 0x86 || ca.reason == 0x87)) {
        /* worded as paho's intake words it (mqtt_secure.c) */
        char safe_url[300];
        vigil_redact_url(l->display_url, safe_url, sizeof safe_url);
        snprintf(why, whylen, "MQTT broker %.200s refused user '%.64s': %s", safe_url,
                 l->user ? l->user : "(anonymous)",
                 ca.reason == 0x86 ? "bad user name or password" : "not authorized");
        return -2;
    }
    if (ca.reason != 0) {
        snprintf(why, whylen, "MQTT broker %s:%s refused client %s%s%s%s: %s (%d)%s%s", l->host,
                 l->port, l->client_id, l->user ? " (user '" : "", l->user ? l->user : "",
                 l->user ? "')" : "", vigil_mqtt_reason_string(ca.reason), ca.reason,
                 ca.reason_string[0] ? ": " : "", ca.reason_string);
        /* For the intake only credentials and authorization are final
         * (above): a busy or unavailable broker, a quota or a rate limit
         * is waited out, as paho's intake does. For a further outbox
         * connection a refusal is a reason to give it up (mqtt_links.c),
         * except a busy or unavailable broker and a connection rate
         * limit, which say "not now": those count as failed connects. */
        return l->intake || reason_passing(ca.reason) ? -1 : -2;
    }
    if (prc != 0) {
        snprintf(why, whylen, "malformed CONNACK from %s:%s", l->host, l->port);
        return -1;
    }
    l->recv_max = ca.recv_max < 1 ? 1 : ca.recv_max > LINK_MAX_WINDOW ? LINK_MAX_WINDOW
                                                                       : ca.recv_max;
    l->keepalive_s = ca.keepalive >= 0 ? ca.keepalive : LINK_KEEPALIVE_S;
    atomic_store(&l->max_packet, ca.max_packet);
    atomic_store(&l->window, l->recv_max);
    l->session_present = ca.session_present;
    return 0;
}

/* One connection attempt: TCP, TLS, CONNECT/CONNACK, then non-blocking. */
static int conn_open(vigil_mqtt_link *l, char *why, size_t whylen)
{
    if (tcp_connect(l, why, whylen) != 0)
        return -1;
    int rc = l->tls ? tls_handshake(l, why, whylen) : 0;
    if (rc == 0)
        rc = mqtt_handshake(l, why, whylen);
    if (rc != 0) {
        close_conn(l);
        return rc;
    }
    int fl = fcntl(l->sock, F_GETFL);
    fcntl(l->sock, F_SETFL, fl | O_NONBLOCK);
    l->last_read = l->last_write = vigil_mono_ms();
    l->ping_out = false;
    l->write_wants_read = false;
    return 0;
}

/* ---- the link's thread ------------------------------------------------- */

static bool stopping_now(vigil_mqtt_link *l, int64_t *deadline)
{
    pthread_mutex_lock(&l->mu);
    bool s = l->stopping;
    *deadline = l->stop_deadline;
    pthread_mutex_unlock(&l->mu);
    return s;
}

static bool queue_empty(vigil_mqtt_link *l)
{
    pthread_mutex_lock(&l->mu);
    bool e = !l->qhead && l->in_flight == 0;
    pthread_mutex_unlock(&l->mu);
    return e;
}

/* Serves one connection until it is lost or the link stops. */
static void serve(vigil_mqtt_link *l)
{
    char why[256] = "";
    for (;;) {
        int64_t deadline;
        bool stopping = stopping_now(l, &deadline);
        int64_t now = vigil_mono_ms();
        if (stopping && (now >= deadline || (queue_empty(l) && l->olen == l->ooff))) {
            static const unsigned char disconnect[] = { 0xE0, 0x00 };
            obuf_put(l, disconnect, sizeof disconnect);
            conn_write(l);
            atomic_store(&l->connected, false);
            close_conn(l);
            fail_all(l);
            return;
        }
        take_queue(l);
        if (l->keepalive_s > 0) {
            int64_t ka = (int64_t)l->keepalive_s * 1000;
            if (l->ping_out && now - l->last_read > ka) {
                conn_lost(l, "no answer to PINGREQ");
                return;
            }
            if (!l->ping_out && now - l->last_write >= ka / 2) {
                static const unsigned char ping[] = { 0xC0, 0x00 };
                if (obuf_put(l, ping, sizeof ping))
                    l->ping_out = true;
            }
        }
        if (conn_write(l) != 0) {
            snprintf(why, sizeof why, "write failed: %s", strerror(errno));
            conn_lost(l, why);
            return;
        }
        /* TLS may hold decrypted bytes the socket no longer shows. */
        if (l->ssl && SSL_pending(l->ssl) > 0) {
            if (read_packets(l, why, sizeof why) != 0) {
                conn_lost(l, why);
                return;
            }
            continue;
        }
        struct pollfd pf[2] = {
            { .fd = l->sock,
              .events = (short)(POLLIN | (l->olen > l->ooff && !l->write_wants_read ? POLLOUT : 0)) },
            { .fd = l->efd, .events = POLLIN },
        };
        int timeout = stopping ? 50 : LINK_POLL_MS;
        int64_t wait_ns = (int64_t)timeout * 1000000;
        if (l->ack_due) {
            int64_t now_us = vigil_mono_us();
            if (now_us >= l->ack_due)
                set_quickack(l);
            else if ((l->ack_due - now_us) * 1000 < wait_ns)
                wait_ns = (l->ack_due - now_us) * 1000;
        }
        if (l->read_hold) { /* the socket's errors and hang-ups still wake the poll */
            int64_t now_us = vigil_mono_us();
            if (now_us >= l->read_hold) {
                l->read_hold = 0;
                /* What the hold let gather is almost always there by now:
                 * read it at once rather than poll first (a poll that
                 * returned at once was one more system call per hold). */
                uint64_t seen = l->bytes_in;
                if (read_packets(l, why, sizeof why) != 0) {
                    conn_lost(l, why);
                    return;
                }
                if (l->bytes_in != seen)
                    continue;
            } else {
                pf[0].events = (short)(pf[0].events & ~POLLIN);
                if ((l->read_hold - now_us) * 1000 < wait_ns)
                    wait_ns = (l->read_hold - now_us) * 1000;
            }
        }
        struct timespec wait = { (time_t)(wait_ns / 1000000000), (long)(wait_ns % 1000000000) };
        int n = ppoll(pf, 2, &wait, NULL);
        if (n < 0 && errno != EINTR) {
            conn_lost(l, strerror(errno));
            return;
        }
        if (n <= 0)
            continue;
        if (pf[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(l->efd, &v, sizeof v);
            (void)r;
        }
        if (pf[0].revents & (POLLIN | POLLERR | POLLHUP)) {
            if (read_packets(l, why, sizeof why) != 0) {
                conn_lost(l, why);
                return;
            }
        }
    }
}

/* Sleeps ms on the eventfd, returning early when the link stops. */
static void pause_unless_stopping(vigil_mqtt_link *l, int64_t ms)
{
    int64_t deadline, until = vigil_mono_ms() + ms;
    while (!stopping_now(l, &deadline)) {
        int64_t left = until - vigil_mono_ms();
        if (left <= 0)
            break;
        struct pollfd pf = { .fd = l->efd, .events = POLLIN };
        if (poll(&pf, 1, (int)(left < 100 ? left : 100)) == 1) {
            uint64_t v;
            ssize_t r = read(l->efd, &v, sizeof v);
            (void)r;
        }
    }
}

static int queue_async(vigil_mqtt_link *l, const char *topic, const void *payload, size_t len,
                       bool retain);

/* A reconnect on which the broker kept no session for our persistent
 * one: it restarted without having saved it (mosquitto saves on a timer, so
 * a session younger than its last save dies with a kill -9), or it expired.
 * Whatever was queued for us, and whatever was published between its
 * restart and this SUBSCRIBE, never reaches this replica; it cannot be
 * fetched again, so it is said, with a counter, rather than passed over. */
static void session_lost_say(vigil_mqtt_link *l, bool first)
{
    if (first || l->clean_start || l->session_present)
        return;
    vigil_mqtt_session_lost_say(l->client_id);
}

/* The intake is connected: subscribe to every filter again, before
 * anything else (the broker may have lost the subscriptions; paho's intake
 * did the same), then announce ready, which the broker handles after the
 * SUBSCRIBE: a client that sees "ready" knows we are subscribed. */
static void intake_up(vigil_mqtt_link *l)
{
    bool first = !l->ever_connected;
    l->ever_connected = true;
    if (!first)
        vigil_counter_add("vigil_mqtt_reconnects_total",
                          "Reconnections to the MQTT broker after the first connect", NULL, 1);
    vigil_log_kv(VIGIL_LOG_INFO, first ? "mqtt connected" : "mqtt reconnected", "client_id",
                 l->client_id, NULL);
    session_lost_say(l, first);
    if (l->nsubs > 0) {
        size_t n = vigil_mqtt_subscribe_len((const char *const *)l->subs, l->nsubs);
        if (obuf_reserve(l, n)) {
            l->olen += vigil_mqtt_encode_subscribe(l->obuf + l->olen, LINK_SUBSCRIBE_ID,
                                                   (const char *const *)l->subs, l->nsubs);
        } else {
            vigil_log_kv(VIGIL_LOG_ERROR, "mqtt subscribe not sent: out of memory", "client_id",
                         l->client_id, NULL);
        }
    }
    if (l->status_topic && l->ready_payload)
        (void)queue_async(l, l->status_topic, l->ready_payload, strlen(l->ready_payload), true);
    l->subscribed = l->nsubs == 0;
    l->up_pending = true;
    intake_up_when_subscribed(l);
}

static void intake_down(vigil_mqtt_link *l)
{
    l->up_pending = false;
    if (l->on_state)
        l->on_state(l->cb_ctx, false);
}

/* A failed connect of the intake: a refusal (credentials, authorization,
 * TLS) is an error line every time; before the first accepted connect it
 * is final (on_refused: the runtime exits with VIGIL_EXIT_CONFIG), after it
 * the link keeps trying, so a rotated password is loud, not silent.
 * Returns true when the link must give up. */
static bool intake_failed(vigil_mqtt_link *l, int rc, const char *why, int attempt)
{
    if (rc != -2) {
        if (attempt % 10 == 0)
            vigil_log_kv(VIGIL_LOG_WARN, "mqtt connect failed", "client_id", l->client_id,
                         "error", why, NULL);
        return false;
    }
    vigil_counter_add("vigil_mqtt_refusals_total",
                      "Connects the broker refused (credentials, authorization or TLS)", NULL, 1);
    vigil_log_kv(VIGIL_LOG_ERROR, why, "client_id", l->client_id, NULL);
    if (l->ever_connected || !l->on_refused)
        return false;
    l->on_refused(l->cb_ctx, why);
    return true;
}

static void *link_main(void *arg)
{
    vigil_mqtt_link *l = arg;
    vigil_thread_name(l->intake ? "vigil-intake" : "vigil-publish");
    int attempt = 0;
    char why[320];
    for (;;) {
        int64_t deadline;
        if (stopping_now(l, &deadline))
            break;
        why[0] = '\0';
        int rc = conn_open(l, why, sizeof why);
        if (rc == 0) {
            attempt = 0;
            l->refused[0] = '\0';
            atomic_store(&l->failures_since_up, 0);
            atomic_store(&l->refused_since_up, false);
            atomic_store(&l->connected, true);
            if (l->intake)
                intake_up(l);
            else
                vigil_log_kv(VIGIL_LOG_INFO, "outbox connection to the broker up", "client_id",
                             l->client_id, NULL);
            serve(l);
            if (l->intake)
                pause_unless_stopping(l, INTAKE_BACKOFF_BASE_MS);
            continue;
        }
        fail_all(l); /* nothing can be in flight; queued batch messages fail now */
        if (rc == -2)
            atomic_store(&l->refused_since_up, true);
        atomic_fetch_add(&l->failures_since_up, 1);
        if (l->intake) {
            if (intake_failed(l, rc, why, attempt))
                break;
        } else if (rc == -2 ? strcmp(l->refused, why) != 0 : attempt % 10 == 0) {
            vigil_log_kv(VIGIL_LOG_WARN, "outbox connection to the broker failed", "client_id",
                         l->client_id, "error", why, NULL);
            if (rc == -2)
                snprintf(l->refused, sizeof l->refused, "%s", why);
        }
        int64_t d = l->intake
                        ? vigil_backoff_ms(attempt++, INTAKE_BACKOFF_BASE_MS, INTAKE_BACKOFF_CAP_MS)
                        : vigil_backoff_ms(attempt++, LINK_BACKOFF_BASE_MS, LINK_BACKOFF_CAP_MS);
        pause_unless_stopping(l, d);
    }
    fail_all(l);
    return NULL;
}

/* ---- the API ----------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s && s[0] ? strdup(s) : NULL;
}

/* host and port of mqtt://, mqtts://, tcp:// or ssl:// URLs ("[v6]:port"
 * too; user info before '@' ignored; 1883 / 8883 without a port). */
static int parse_url(vigil_mqtt_link *l, const char *url)
{
    static const struct {
        const char *scheme;
        bool tls;
    } schemes[] = { { "mqtt://", false }, { "tcp://", false }, { "mqtts://", true },
                    { "ssl://", true } };
    const char *rest = NULL;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0] && !rest; i++)
        if (strncmp(url, schemes[i].scheme, strlen(schemes[i].scheme)) == 0) {
            rest = url + strlen(schemes[i].scheme);
            l->tls = schemes[i].tls;
        }
    if (!rest)
        return -1;
    const char *at = strrchr(rest, '@');
    if (at)
        rest = at + 1;
    size_t n = strcspn(rest, "/");
    char hp[256];
    if (n == 0 || n >= sizeof hp)
        return -1;
    memcpy(hp, rest, n);
    hp[n] = '\0';
    char *host = hp, *port = NULL;
    if (hp[0] == '[') {
        char *end = strchr(hp, ']');
        if (!end)
            return -1;
        *end = '\0';
        host = hp + 1;
        if (end[1] == ':')
            port = end + 2;
        else if (end[1])
            return -1;
    } else {
        char *colon = strrchr(hp, ':');
        if (colon) {
            *colon = '\0';
            port = colon + 1;
        }
    }
    if (!host[0] || (port && !port[0]))
        return -1;
    l->host = strdup(host);
    l->port = strdup(port ? port : l->tls ? "8883" : "1883");
    return l->host && l->port ? 0 : -1;
}

static void link_free(vigil_mqtt_link *l)
{
    free(l->host);
    free(l->port);
    free(l->user);
    free(l->password);
    free(l->client_id);
    free(l->prefix);
    free(l->ca_file);
    free(l->cert_file);
    free(l->key_file);
    free(l->obuf);
    free(l->rbuf);
    free(l->outs);
    if (l->subs)
        for (int i = 0; i < l->nsubs; i++)
            free(l->subs[i]);
    free(l->subs);
    free(l->will_topic);
    free(l->lost_payload);
    free(l->status_topic);
    free(l->ready_payload);
    free(l->display_url);
    free(l->batch);
    free(l->batch_ids);
    free(l->batch_topic_at);
    free(l->topics);
    if (l->ctx)
        SSL_CTX_free(l->ctx);
    if (l->efd >= 0)
        close(l->efd);
    free(l);
}

/* topic under the link's prefix (a copy), or NULL: out of memory or a
 * topic the prefix cannot take. */
static char *prefixed_dup(const vigil_mqtt_link *l, const char *topic)
{
    if (!l->prefix)
        return strdup(topic);
    size_t need = strlen(l->prefix) + strlen(topic) + 16;
    char *out = malloc(need);
    if (out && vigil_topic_prefix_apply(l->prefix, topic, out, need) < 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* The intake's part of the configuration: subscriptions and the will
 * under the prefix, the session, the status payloads and the handlers. */
static int intake_config(vigil_mqtt_link *l, const vigil_mqtt_config *cfg, char *err,
                         size_t errlen)
{
    l->intake = true;
    int64_t gather = LINK_GATHER_US_DEFAULT;
    if (vigil_env_int64("VIGIL_MQTT_INTAKE_GATHER_US", LINK_GATHER_US_DEFAULT, 0, 100000, &gather,
                        err, errlen) != 0)
        return -1;
    l->gather_us = (int)gather;
    l->on_message = cfg->on_message;
    l->on_batch = cfg->on_batch;
    l->on_state = cfg->on_state;
    l->on_refused = cfg->on_refused;
    l->cb_ctx = cfg->ctx;
    /* < 0: a clean start and no session kept; 0: the default 7 days */
    l->clean_start = cfg->session_expiry_s < 0;
    l->session_expiry_s = cfg->session_expiry_s < 0    ? 0
                          : cfg->session_expiry_s == 0 ? 604800u
                                                       : (uint32_t)cfg->session_expiry_s;
    l->display_url = strdup(cfg->url);
    if (!l->display_url)
        goto oom;
    if (cfg->status_topic && cfg->status_topic[0]) {
        l->status_topic = strdup(cfg->status_topic);
        l->ready_payload = dup_or_null(cfg->ready_payload);
        l->lost_payload = dup_or_null(cfg->lost_payload);
        l->will_topic = cfg->lost_payload ? prefixed_dup(l, cfg->status_topic) : NULL;
        if (!l->status_topic || (cfg->ready_payload && cfg->ready_payload[0] && !l->ready_payload) ||
            (cfg->lost_payload && cfg->lost_payload[0] && !l->lost_payload) ||
            (cfg->lost_payload && !l->will_topic))
            goto oom;
    }
    int n = 0;
    while (cfg->subscriptions && cfg->subscriptions[n])
        n++;
    if (n > 0) {
        l->subs = calloc((size_t)n, sizeof *l->subs);
        if (!l->subs)
            goto oom;
        for (; l->nsubs < n; l->nsubs++)
            if (!(l->subs[l->nsubs] = prefixed_dup(l, cfg->subscriptions[l->nsubs])))
                goto oom;
    }
    return 0;
oom:
    snprintf(err, errlen, "cannot create the MQTT connection: out of memory");
    return -1;
}

vigil_mqtt_link *vigil_mqtt_link_new(const vigil_mqtt_config *cfg, char *err, size_t errlen)
{
    if (!cfg || !cfg->url || !cfg->client_id || !cfg->client_id[0]) {
        snprintf(err, errlen, "the outbox connection needs a broker URL and a client id");
        return NULL;
    }
    vigil_mqtt_link *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->efd = -1;
    l->sock = -1;
    if (parse_url(l, cfg->url) != 0) {
        snprintf(err, errlen, "bad MQTT URL '%s': expected mqtt://host:port, mqtts://, tcp:// or ssl://",
                 cfg->url);
        link_free(l);
        return NULL;
    }
    if (cfg->topic_prefix && cfg->topic_prefix[0] &&
        vigil_topic_prefix_check(cfg->topic_prefix, err, errlen) != 0) {
        link_free(l);
        return NULL;
    }
    l->user = dup_or_null(cfg->user);
    l->password = dup_or_null(cfg->password);
    l->client_id = strdup(cfg->client_id);
    l->prefix = dup_or_null(cfg->topic_prefix);
    l->ca_file = dup_or_null(cfg->tls_ca_file);
    l->cert_file = dup_or_null(cfg->tls_cert_file);
    l->key_file = dup_or_null(cfg->tls_key_file);
    if ((cfg->on_message || cfg->on_batch) && intake_config(l, cfg, err, errlen) != 0) {
        link_free(l);
        return NULL;
    }
    if (!l->intake && vigil_env_int64("VIGIL_OUTBOX_HOLD_US", LINK_HOLD_US_DEFAULT, 0, 100000,
                                      &l->hold_us, err, errlen) != 0) {
        link_free(l);
        return NULL;
    }
    l->rbuf = malloc(LINK_READ_CHUNK);
    l->rcap = LINK_READ_CHUNK;
    l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!l->client_id || !l->rbuf || l->efd < 0) {
        snprintf(err, errlen, "cannot create the outbox connection: %s", strerror(errno));
        link_free(l);
        return NULL;
    }
    l->recv_max = 1;
    atomic_init(&l->connected, false);
    atomic_init(&l->lost_at, 0);
    atomic_init(&l->window, 1);
    atomic_init(&l->shared, false);
    atomic_init(&l->max_packet, 0);
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->cb_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

int vigil_mqtt_link_start(vigil_mqtt_link *l)
{
    if (!l || l->started)
        return -1;
    int rc = pthread_create(&l->thread, NULL, link_main, l);
    if (rc != 0) {
        vigil_log(VIGIL_LOG_ERROR, "outbox connection: cannot start thread: %s", strerror(rc));
        return -1;
    }
    l->started = true;
    return 0;
}

bool vigil_mqtt_link_connected(const vigil_mqtt_link *l)
{
    return l && atomic_load(&((vigil_mqtt_link *)l)->connected);
}

int64_t vigil_mqtt_link_lost_at_ms(const vigil_mqtt_link *l)
{
    return l ? atomic_load(&((vigil_mqtt_link *)l)->lost_at) : 0;
}

int vigil_mqtt_link_window(const vigil_mqtt_link *l)
{
    return l ? atomic_load(&((vigil_mqtt_link *)l)->window) : 1;
}

void vigil_mqtt_link_set_shared(vigil_mqtt_link *l, bool shared)
{
    if (l)
        atomic_store(&l->shared, shared);
}

void vigil_mqtt_link_set_ack_handler(vigil_mqtt_link *l, vigil_mqtt_ack_fn fn, void *ctx)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->cb_mu);
    l->ack_fn = fn;
    l->ack_ctx = ctx;
    pthread_mutex_unlock(&l->cb_mu);
}

/* Appends an encoded message to the queue; false when not connected. */
static bool enqueue(vigil_mqtt_link *l, qmsg *q)
{
    pthread_mutex_lock(&l->mu);
    bool ok = atomic_load(&l->connected) && !l->stopping;
    if (ok) {
        if (l->qtail)
            l->qtail->next = q;
        else
            l->qhead = q;
        l->qtail = q;
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}

int vigil_mqtt_link_publish_tagged(vigil_mqtt_link *l, const vigil_pubmsg *msg, uint64_t tag)
{
    if (!l)
        return VIGIL_PUB_SEND_REFUSED;
    if (!atomic_load(&l->connected))
        return VIGIL_PUB_SEND_RETRY;
    bool refused;
    qmsg *q = encode_msg(l, msg, &refused);
    if (!q) {
        if (refused)
            vigil_log_kv(VIGIL_LOG_WARN, "outbox: message cannot be published (topic not valid "
                         "or larger than the broker accepts)", "topic",
                         msg && msg->topic ? msg->topic : "(null)", NULL);
        return refused ? VIGIL_PUB_SEND_REFUSED : VIGIL_PUB_SEND_RETRY;
    }
    q->tag = tag;
    if (!enqueue(l, q)) {
        free(q);
        return VIGIL_PUB_SEND_RETRY;
    }
    return VIGIL_PUB_SEND_OK;
}

/* A message whose outcome nobody waits for (a status, a fence): queued
 * like a batch message whose caller left. 0, or -1 when not connected or
 * it cannot be published. */
static int queue_async(vigil_mqtt_link *l, const char *topic, const void *payload, size_t len,
                       bool retain)
{
    vigil_pubmsg msg = { .topic = topic, .payload = payload, .len = len, .retain = retain };
    bool refused;
    qmsg *q = encode_msg(l, &msg, &refused);
    if (!q)
        return -1;
    q->batch = &orphaned;
    if (!enqueue(l, q)) {
        free(q);
        return -1;
    }
    return 0;
}

int vigil_mqtt_link_publish_async(vigil_mqtt_link *l, const char *topic, const void *payload,
                                  size_t len, bool retain)
{
    if (!l || !atomic_load(&l->connected) || queue_async(l, topic, payload, len, retain) != 0)
        return -1;
    wake(l);
    return 0;
}

void vigil_mqtt_link_flush(vigil_mqtt_link *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    bool any = l->qhead != NULL;
    pthread_mutex_unlock(&l->mu);
    if (any)
        wake(l);
}

int vigil_mqtt_link_publish_batch(vigil_mqtt_link *l, const vigil_pubmsg *msgs, int n,
                                  int timeout_ms)
{
    if (!l || !msgs || n <= 0 || !atomic_load(&l->connected))
        return 0;
    link_batch *b = calloc(1, sizeof *b);
    if (!b || !(b->state = calloc((size_t)n, sizeof *b->state))) {
        free(b);
        return 0;
    }
    b->n = n;
    int queued = 0;
    for (; queued < n; queued++) {
        bool refused;
        qmsg *q = encode_msg(l, &msgs[queued], &refused);
        if (!q)
            break;
        q->batch = b;
        q->bidx = queued;
        pthread_mutex_lock(&l->mu);
        b->left++;
        pthread_mutex_unlock(&l->mu);
        if (!enqueue(l, q)) {
            pthread_mutex_lock(&l->mu);
            b->left--;
            pthread_mutex_unlock(&l->mu);
            free(q);
            break;
        }
    }
    if (queued > 0)
        wake(l);
    struct timespec until = vigil_mono_deadline(timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (b->left > 0 && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT) {
    }
    /* Late outcomes must not reach b: detach what is still unresolved. */
    if (b->left > 0) {
        for (int i = 0; i < LINK_IDS; i++)
            if (l->ids[i].used && l->ids[i].batch == b)
                l->ids[i].batch = &orphaned;
        for (qmsg *q = l->qhead; q; q = q->next)
            if (q->batch == b)
                q->batch = &orphaned;
    }
    pthread_mutex_unlock(&l->mu);
    int acked = 0;
    while (acked < queued && b->state[acked] == OUT_ACKED)
        acked++;
    free(b->state);
    free(b);
    return acked;
}

int vigil_mqtt_link_failures_since_up(const vigil_mqtt_link *l, bool *refused)
{
    vigil_mqtt_link *m = (vigil_mqtt_link *)l;
    if (refused)
        *refused = m && atomic_load(&m->refused_since_up);
    return m ? atomic_load(&m->failures_since_up) : 0;
}

/* Ends the link's thread (so its connection and its handler calls) without
 * freeing it: another thread may still ask whether it is connected. */
static void link_join(vigil_mqtt_link *l, int timeout_ms)
{
    if (!l->started)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    l->stop_deadline = vigil_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    /* A connect in progress ends now (not after its timeout). */
    if (l->sock >= 0 && !atomic_load(&l->connected))
        shutdown(l->sock, SHUT_RDWR);
    pthread_mutex_unlock(&l->mu);
    wake(l);
    pthread_join(l->thread, NULL);
    l->started = false;
    fail_all(l);
}

void vigil_mqtt_link_halt(vigil_mqtt_link *l)
{
    if (l)
        link_join(l, 0);
}

void vigil_mqtt_link_stop(vigil_mqtt_link *l, int timeout_ms)
{
    if (!l)
        return;
    link_join(l, timeout_ms);
    fail_all(l);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->cb_mu);
    pthread_cond_destroy(&l->cv);
    link_free(l);
}
