/* mqtt.c - MQTT 5 client over paho MQTTAsync (see mqtt.h and docs/architecture.md, "paho.mqtt.c").
 *
 * Threads involved:
 *  - paho's send and receive threads run every callback below; a callback
 *    must never wait for paho (no waitForCompletion, isConnected, destroy).
 *  - our connector thread makes every connection, the first and each one
 *    after a loss, with capped exponential backoff (paho's automatic
 *    reconnect is off: it reports a refused reconnect to no callback).
 *  - callers of vigil_mqtt_publish_batch wait on our condition variable for
 *    the acknowledgements, which the callbacks deliver.
 * Our mutex m->mu is never held while calling into paho, because paho may
 * run a callback that takes it (docs/architecture.md: no own lock around send). */
#include "vigil/mqtt.h"

#include <MQTTAsync.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vigil/clock.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/oom.h"

#include "vigil/topic_prefix.h"
#include "vigil/thread_name.h"

#include "mqtt_secure.h"
#include "tcp_quickack.h"

#define MQTT_KEEPALIVE_S 20
#define MQTT_CONNECT_TIMEOUT_S 10
#define MQTT_RETRY_MIN_S 1
#define MQTT_RETRY_MAX_S 30
#define MQTT_DEFAULT_SESSION_EXPIRY_S 604800 /* 7 days, as VIGIL_MQTT_SESSION_EXPIRY_S */
#define MQTT_DISCONNECT_WAIT_MS 5000
#define MQTT_MAX_QUEUED_SENDS 10000
#define MQTT_MAX_WINDOW 1000
#define MQTT_DEFAULT_WINDOW 10 /* half of mosquitto's default Receive Maximum */
#define MQTT_QUICKACK_FDS 4

/* Nonzero while this thread runs one of our paho callbacks. Waiting for an
 * acknowledgement there would deadlock (the acknowledgement is delivered by
 * the same library thread), so publish_batch refuses. */
static _Thread_local int tl_in_callback;

typedef struct pub_batch pub_batch;

/* One in-flight message of a batch: the context handed to paho. */
typedef struct pub_slot {
    pub_batch *b;
    int idx;
} pub_slot;

/* A batch lives until its caller gave up on it AND every message it handed
 * to paho got its callback (refs counts both), because paho may acknowledge
 * a message after publish_batch timed out (e.g. after a reconnect). Batches
 * still alive at stop are freed after MQTTAsync_destroy. */
struct pub_batch {
    pub_batch *prev, *next;
    vigil_mqtt *m;
    int n;
    int refs;
    int resolved; /* messages with an outcome */
    bool orphan;  /* its handle was retired: freed at stop */
    signed char *state; /* 0 pending, 1 acknowledged, -1 failed */
    pub_slot *slots;
};

/* One tagged publish handed to paho (vigil_mqtt_publish_tagged): lives
 * until its callback, or until stop for one that never got a callback. */
typedef struct pub_token pub_token;
struct pub_token {
    pub_token *prev, *next;
    vigil_mqtt *m;
    uint64_t tag;
    bool orphan; /* its handle was retired: the outcome was already given */
};

enum conn_attempt { ATTEMPT_NONE = 0, ATTEMPT_PENDING, ATTEMPT_OK, ATTEMPT_FAILED };

struct vigil_mqtt {
    /* The paho handle in use. After a lost connection the connector puts a
     * new one here (client_replace); the old one is never freed. */
    _Atomic(MQTTAsync) client;
    atomic_bool tainted; /* a publish of this handle failed on a socket error */
    int replaced;        /* handles retired so far */
    char *url; /* paho form */
    char *user;
    char *password;
    char *client_id;
    char **subs;
    int *sub_qos;
    int nsubs;
    char *status_topic;
    char *topic_prefix;  /* VIGIL_TOPIC_PREFIX, NULL = none (topic_prefix.h) */
    char *will_topic;    /* status_topic under the prefix: paho sends it itself */
    char *ready_payload;
    char *lost_payload;
    vigil_mqtt_on_message on_message;
    vigil_mqtt_on_state on_state;
    void *ctx;
    MQTTProperties connect_props; /* points at session_expiry */
    MQTTProperty session_expiry;
    bool ephemeral; /* session_expiry_s < 0: clean start, no session kept */
    MQTTAsync_willOptions will;
    char *display_url;            /* as configured, for messages */
    vigil_mqtt_tls tls;           /* mqtt_secure.h */
    vigil_mqtt_on_refused on_refused;
    char refusal[320];            /* why the broker refused us ("" = it did not) */

    atomic_bool connected;
    _Atomic int64_t lost_at_ms; /* vigil_mqtt_lost_at_ms */
    int broker_port;             /* for finding our socket (tcp_quickack.h) */
    atomic_int qa_n;             /* our sockets to the broker, 0 while down */
    atomic_int qa_fds[MQTT_QUICKACK_FDS];
    atomic_int window; /* the broker's Receive Maximum less one, capped: QoS 1 in flight */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ever_connected;
    int connacks; /* connects accepted so far (on_connect_ok only) */
    bool stopping;
    bool connector_started;
    bool lost; /* the connection went down: the connector connects again */
    pthread_t connector;
    enum conn_attempt attempt;
    bool disconnect_done;
    pub_batch *batches;
    pub_token *tokens;       /* tagged publishes awaiting their callback */
    int live_tokens;         /* those of them on the current client (not orphaned) */
    vigil_mqtt_ack_fn ack_fn; /* receives their outcomes (under mu) */
    void *ack_ctx;
};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

#define mono_deadline vigil_mono_deadline /* clock.h */

void vigil_mqtt_session_lost_say(const char *client_id)
{
    vigil_counter_add("vigil_mqtt_sessions_lost_total",
                      "Reconnections on which the broker had kept no session for this replica",
                      NULL, 1);
    vigil_log_kv(VIGIL_LOG_WARN,
                 "mqtt: the broker kept no session for this replica (it restarted without "
                 "having saved it, or the session expired); input queued for it or published "
                 "before this reconnect is lost to it",
                 "client_id", client_id, NULL);
}

int vigil_mqtt_url_to_paho(const char *url, char *out, size_t outlen)
{
    static const struct {
        const char *from, *to;
    } schemes[] = {
        { "mqtt://", "tcp://" },
        { "mqtts://", "ssl://" },
        { "tcp://", "tcp://" },
        { "ssl://", "ssl://" },
    };
    if (!url || !out || outlen == 0)
        return -1;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t fl = strlen(schemes[i].from);
        if (strncmp(url, schemes[i].from, fl) != 0)
            continue;
        const char *rest = url + fl;
        if (*rest == '\0' || *rest == ':' || *rest == '/')
            return -1; /* no host */
        int n = snprintf(out, outlen, "%s%s", schemes[i].to, rest);
        if (n < 0 || (size_t)n >= outlen)
            return -1;
        return 0;
    }
    return -1;
}

/* ---- publish acknowledgements ------------------------------------------ */

static void batch_unlink_free(vigil_mqtt *m, pub_batch *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else if (m->batches == b)
        m->batches = b->next;
    if (b->next)
        b->next->prev = b->prev;
    free(b->state);
    free(b->slots);
    free(b);
}

/* Records the outcome of one message (first outcome wins) and drops the
 * reference its callback held. Caller holds m->mu. */
static void slot_resolve_locked(pub_batch *b, int idx, bool ok)
{
    vigil_mqtt *m = b->m;
    if (b->state[idx] != 0)
        return;
    b->state[idx] = ok ? 1 : -1;
    b->resolved++;
    b->refs--;
    if (b->refs == 0)
        batch_unlink_free(m, b);
    else
        pthread_cond_broadcast(&m->cv);
}

/* A PUBACK just arrived: acknowledge the broker's segment at once, so a
 * broker without TCP_NODELAY sends the next PUBACKs now instead of after
 * our delayed ACK (tcp_quickack.h). Runs on paho's receive thread. */
static void quickack(vigil_mqtt *m)
{
    int fds[MQTT_QUICKACK_FDS] = { 0 };
    int n = atomic_load(&m->qa_n);
    if (n > MQTT_QUICKACK_FDS)
        n = MQTT_QUICKACK_FDS;
    for (int i = 0; i < n; i++)
        fds[i] = atomic_load(&m->qa_fds[i]);
    vigil_tcp_quickack(fds, n);
}

/* paho 1.3.12 gives a publish that failed on the socket (code
 * MQTTASYNC_FAILURE, no reason code) this callback and then frees its topic
 * and payload, while its copy in the session's list of messages in flight
 * still points at them: a reconnect of the same handle would send them
 * again, MQTTAsync_destroy would free them twice (ASan: heap-use-after-free
 * in MQTTPacket_send_publish from MQTTProtocol_retry). Such a handle is
 * marked, and never reconnected nor destroyed (client_replace). */
static void note_socket_failure(vigil_mqtt *m, const MQTTAsync_failureData5 *resp)
{
    if (resp && resp->code == MQTTASYNC_FAILURE && resp->reasonCode == 0)
        atomic_store(&m->tainted, true);
}

static void on_publish_ok(void *context, MQTTAsync_successData5 *resp)
{
    pub_slot *s = context;
    vigil_mqtt *m = s->b->m;
    /* An MQTT 5 PUBACK may carry a failure reason (e.g. not authorized). */
    bool ok = !resp || resp->reasonCode < 0x80;
    tl_in_callback++;
    quickack(m);
    if (!ok)
        vigil_log_kv(VIGIL_LOG_WARN, "mqtt publish refused by broker", "reason",
                     MQTTReasonCode_toString(resp->reasonCode), NULL);
    pthread_mutex_lock(&m->mu);
    slot_resolve_locked(s->b, s->idx, ok);
    pthread_mutex_unlock(&m->mu);
    tl_in_callback--;
}

static void on_publish_fail(void *context, MQTTAsync_failureData5 *resp)
{
    pub_slot *s = context;
    vigil_mqtt *m = s->b->m;
    tl_in_callback++;
    note_socket_failure(m, resp);
    vigil_log_kv(VIGIL_LOG_WARN, "mqtt publish failed", "error",
                 resp ? MQTTAsync_strerror(resp->code) : "unknown", NULL);
    pthread_mutex_lock(&m->mu);
    slot_resolve_locked(s->b, s->idx, false);
    pthread_mutex_unlock(&m->mu);
    tl_in_callback--;
}

/* Number of leading acknowledged messages, and whether that number is
 * final (all acknowledged, or the first unacknowledged one failed). */
static int leading_acked(const pub_batch *b, bool *final)
{
    int k = 0;
    while (k < b->n && b->state[k] == 1)
        k++;
    *final = (k == b->n) || b->state[k] == -1;
    return k;
}

/* ---- topic prefix (VIGIL_TOPIC_PREFIX, vigil/topic_prefix.h) ----------- */

/* topic under the client's prefix: topic itself without one, else buf, or
 * *heap (the caller frees it) when buf is too small; NULL out of memory. */
static const char *topic_with_prefix(const vigil_mqtt *m, const char *topic, char *buf,
                                     size_t buflen, char **heap)
{
    *heap = NULL;
    if (!m->topic_prefix)
        return topic;
    if (vigil_topic_prefix_apply(m->topic_prefix, topic, buf, buflen) >= 0)
        return buf;
    size_t n = strlen(m->topic_prefix) + strlen(topic) + 16;
    *heap = malloc(n);
    if (!*heap || vigil_topic_prefix_apply(m->topic_prefix, topic, *heap, n) < 0)
        return NULL;
    return *heap;
}

/* MQTTAsync_sendMessage with the topic under the prefix; paho copies it. */
static int send_prefixed(vigil_mqtt *m, const char *topic, MQTTAsync_message *pm,
                         MQTTAsync_responseOptions *ro)
{
    char buf[512], *heap;
    const char *full = topic_with_prefix(m, topic, buf, sizeof buf, &heap);
    int rc = full ? MQTTAsync_sendMessage(atomic_load(&m->client), full, pm, ro)
                   : MQTTASYNC_FAILURE;
    free(heap);
    return rc;
}

/* Hands message i of the batch to paho. */
static int send_one(vigil_mqtt *m, pub_batch *b, const vigil_pubmsg *msg, int i)
{
    MQTTAsync_message pm = MQTTAsync_message_initializer;
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    pm.payload = (void *)msg->payload;
    pm.payloadlen = (int)msg->len;
    pm.qos = 1;
    pm.retained = msg->retain ? 1 : 0;
    ro.onSuccess5 = on_publish_ok;
    ro.onFailure5 = on_publish_fail;
    ro.context = &b->slots[i];
    int rc = send_prefixed(m, msg->topic, &pm, &ro);
    if (rc != MQTTASYNC_SUCCESS)
        vigil_log_kv(VIGIL_LOG_WARN, "mqtt publish not accepted", "topic", msg->topic, "error",
                     MQTTAsync_strerror(rc), NULL);
    return rc;
}

/* Sends with a sliding window that, with the tagged publishes in flight
 * (the outbox's), stays within the broker's Receive Maximum: when paho has
 * that many QoS 1 messages in flight it parks the rest and its send thread
 * only looks again after about a second (measured: 21 messages took 1 s
 * against mosquitto's default of 20, 100 took 4 s). The outbox calls this
 * (error events, replays) from its own thread, between two passes over its
 * window, so the tagged publishes only drain meanwhile and make room. */
int vigil_mqtt_publish_batch(vigil_mqtt *m, const vigil_pubmsg *msgs, int n, int timeout_ms)
{
    if (!m || n < 0 || (n > 0 && !msgs))
        return -1;
    if (tl_in_callback) {
        vigil_log(VIGIL_LOG_ERROR,
                  "vigil_mqtt_publish_batch called from a paho callback: refused (would deadlock)");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!msgs[i].topic || (msgs[i].len > 0 && !msgs[i].payload) || msgs[i].len > INT32_MAX)
            return -1;
    if (n == 0 || !atomic_load(&m->connected))
        return 0;

    pub_batch *b = calloc(1, sizeof *b);
    if (!b)
        return 0;
    b->state = calloc((size_t)n, sizeof *b->state);
    b->slots = calloc((size_t)n, sizeof *b->slots);
    if (!b->state || !b->slots) {
        free(b->state);
        free(b->slots);
        free(b);
        return 0;
    }
    b->m = m;
    b->n = n;
    b->refs = n + 1; /* one per message callback, one for us */
    for (int i = 0; i < n; i++) {
        b->slots[i].b = b;
        b->slots[i].idx = i;
    }
    int64_t deadline = vigil_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int window = atomic_load(&m->window);

    pthread_mutex_lock(&m->mu);
    b->next = m->batches;
    if (m->batches)
        m->batches->prev = b;
    m->batches = b;

    int next = 0; /* first message not yet handed to paho */
    int acked;
    for (;;) {
        bool final;
        acked = leading_acked(b, &final);
        if (final)
            break;
        if (next < n && next - b->resolved + m->live_tokens < window) {
            /* Never call paho with mu held: its callbacks take mu. */
            int inflight = next - b->resolved + m->live_tokens;
            pthread_mutex_unlock(&m->mu);
            int first_refused = -1;
            while (next < n && inflight < window) {
                if (send_one(m, b, &msgs[next], next) != MQTTASYNC_SUCCESS) {
                    first_refused = next;
                    break;
                }
                next++;
                inflight++;
            }
            pthread_mutex_lock(&m->mu);
            /* Messages never handed to paho get no callback: resolve them
             * here. Later ones could not count anyway, so stop sending. */
            if (first_refused >= 0) {
                for (int i = first_refused; i < n; i++)
                    slot_resolve_locked(b, i, false);
                next = n;
            }
            continue;
        }
        int64_t left = deadline - vigil_mono_ms();
        if (left <= 0)
            break;
        struct timespec ts = mono_deadline(left);
        int rc = pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        if (rc != 0 && rc != ETIMEDOUT)
            break;
    }
    /* Unsent messages (timeout) will never get a callback either. */
    for (int i = next; i < n; i++)
        slot_resolve_locked(b, i, false);
    b->refs--;
    if (b->refs == 0)
        batch_unlink_free(m, b);
    pthread_mutex_unlock(&m->mu);
    if (acked < n)
        vigil_log(VIGIL_LOG_WARN, "mqtt publish batch: %d of %d acknowledged", acked, n);
    return acked;
}

/* ---- tagged publishes (a window of QoS 1 messages, outcomes by tag) --- */

static void token_unlink_locked(vigil_mqtt *m, pub_token *t)
{
    if (!t->orphan)
        m->live_tokens--;
    if (t->prev)
        t->prev->next = t->next;
    else if (m->tokens == t)
        m->tokens = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

/* Delivers one outcome to the ack handler and frees the token. The handler
 * runs under m->mu, so vigil_mqtt_set_ack_handler(m, NULL, NULL) returning
 * means no handler call is running or will start. */
static void token_resolve(pub_token *t, int outcome, int reason)
{
    vigil_mqtt *m = t->m;
    pthread_mutex_lock(&m->mu);
    token_unlink_locked(m, t);
    if (m->ack_fn && !t->orphan)
        m->ack_fn(m->ack_ctx, t->tag, outcome, reason);
    if (m->batches) /* a batch may wait for room in the window */
        pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    free(t);
}

static void on_tagged_ok(void *context, MQTTAsync_successData5 *resp)
{
    pub_token *t = context;
    tl_in_callback++;
    quickack(t->m);
    /* An MQTT 5 PUBACK may carry a refusal (e.g. 0x87 not authorized). */
    int reason = resp ? (int)resp->reasonCode : 0;
    token_resolve(t, reason < 0x80 ? VIGIL_PUB_ACKED : VIGIL_PUB_REFUSED, reason);
    tl_in_callback--;
}

static void on_tagged_fail(void *context, MQTTAsync_failureData5 *resp)
{
    pub_token *t = context;
    tl_in_callback++;
    note_socket_failure(t->m, resp);
    /* A failure callback carries a reason code when the broker answered
     * (PUBACK >= 0x80); otherwise the connection went away. */
    int reason = resp ? (int)resp->reasonCode : 0;
    token_resolve(t, reason >= 0x80 ? VIGIL_PUB_REFUSED : VIGIL_PUB_FAILED, reason);
    tl_in_callback--;
}

void vigil_mqtt_set_ack_handler(vigil_mqtt *m, vigil_mqtt_ack_fn fn, void *ctx)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->ack_fn = fn;
    m->ack_ctx = ctx;
    pthread_mutex_unlock(&m->mu);
}

const char *vigil_mqtt_reason_string(int reason_code)
{
    const char *s = MQTTReasonCode_toString((enum MQTTReasonCodes)reason_code);
    return s ? s : "unknown reason";
}

int vigil_mqtt_window(const vigil_mqtt *m)
{
    return m ? atomic_load(&((vigil_mqtt *)m)->window) : 1;
}

/* paho's own verdicts on a message that say nothing about the connection:
 * sending the same message again can never succeed. */
static bool paho_rc_permanent(int rc)
{
    return rc == MQTTASYNC_BAD_UTF8_STRING || rc == MQTTASYNC_NULL_PARAMETER ||
           rc == MQTTASYNC_TOPICNAME_TRUNCATED || rc == MQTTASYNC_BAD_STRUCTURE ||
           rc == MQTTASYNC_BAD_QOS;
}

int vigil_mqtt_publish_tagged(vigil_mqtt *m, const vigil_pubmsg *msg, uint64_t tag)
{
    if (!m || !msg || !msg->topic || (msg->len > 0 && !msg->payload) || msg->len > INT32_MAX)
        return VIGIL_PUB_SEND_REFUSED;
    if (!atomic_load(&m->connected))
        return VIGIL_PUB_SEND_RETRY;
    pub_token *t = calloc(1, sizeof *t);
    if (!t)
        return VIGIL_PUB_SEND_RETRY;
    t->m = m;
    t->tag = tag;
    pthread_mutex_lock(&m->mu);
    t->next = m->tokens;
    if (m->tokens)
        m->tokens->prev = t;
    m->tokens = t;
    m->live_tokens++;
    pthread_mutex_unlock(&m->mu);

    MQTTAsync_message pm = MQTTAsync_message_initializer;
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    pm.payload = (void *)msg->payload;
    pm.payloadlen = (int)msg->len;
    pm.qos = 1;
    pm.retained = msg->retain ? 1 : 0;
    ro.onSuccess5 = on_tagged_ok;
    ro.onFailure5 = on_tagged_fail;
    ro.context = t;
    int rc = send_prefixed(m, msg->topic, &pm, &ro);
    if (rc == MQTTASYNC_SUCCESS)
        return VIGIL_PUB_SEND_OK;
    /* Not handed over: no callback will come. */
    pthread_mutex_lock(&m->mu);
    token_unlink_locked(m, t);
    pthread_mutex_unlock(&m->mu);
    free(t);
    vigil_log_kv(VIGIL_LOG_WARN, "mqtt publish not accepted", "topic", msg->topic, "error",
                 MQTTAsync_strerror(rc), NULL);
    return paho_rc_permanent(rc) ? VIGIL_PUB_SEND_REFUSED : VIGIL_PUB_SEND_RETRY;
}

static void on_async_publish_fail(void *context, MQTTAsync_failureData5 *resp)
{
    tl_in_callback++;
    note_socket_failure(context, resp);
    vigil_counter_add("vigil_mqtt_publish_failures_total",
                      "Messages queued without waiting that the broker did not acknowledge",
                      NULL, 1);
    vigil_log_kv(VIGIL_LOG_WARN, "mqtt async publish failed", "error",
                 resp ? MQTTAsync_strerror(resp->code) : "unknown", NULL);
    tl_in_callback--;
}

/* Fire and forget: paho copies topic and payload, so nothing of ours must
 * outlive the call; only a failure is reported (context unused). */
int vigil_mqtt_publish_async(vigil_mqtt *m, const char *topic, const void *payload, size_t len,
                             bool retain)
{
    if (!m || !topic || (len > 0 && !payload) || len > INT32_MAX)
        return -1;
    MQTTAsync_message msg = MQTTAsync_message_initializer;
    MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
    msg.payload = (void *)payload;
    msg.payloadlen = (int)len;
    msg.qos = 1;
    msg.retained = retain ? 1 : 0;
    ro.onFailure5 = on_async_publish_fail;
    ro.context = m;
    int rc = send_prefixed(m, topic, &msg, &ro);
    if (rc != MQTTASYNC_SUCCESS) {
        vigil_log_kv(VIGIL_LOG_WARN, "mqtt async publish not accepted", "topic", topic, "error",
                     MQTTAsync_strerror(rc), NULL);
        return -1;
    }
    return 0;
}

/* ---- connection callbacks ---------------------------------------------- */

/* The client says it is up (the runtime's /readyz) once the broker
 * answered its SUBSCRIBE: until then a message published elsewhere may
 * reach the broker first and find no subscription (a fresh session keeps
 * nothing for us). */
static void say_up(vigil_mqtt *m)
{
    /* a request failed by a lost connection answers too: not up then */
    if (m->on_state && atomic_load(&m->connected))
        m->on_state(m->ctx, true);
}

static void on_subscribe_ok(void *context, MQTTAsync_successData5 *resp)
{
    vigil_mqtt *m = context;
    tl_in_callback++;
    /* With several filters the reason codes come as a list; with one, only
     * in reasonCode (alt.sub is then left uninitialised by paho, so go by
     * our own count). A code >= 0x80 means that filter was refused. */
    if (resp && m->nsubs > 1 && resp->alt.sub.reasonCodeCount > 0 && resp->alt.sub.reasonCodes) {
        for (int i = 0; i < resp->alt.sub.reasonCodeCount; i++)
            if (resp->alt.sub.reasonCodes[i] >= 0x80)
                vigil_log_kv(VIGIL_LOG_ERROR, "mqtt subscription refused", "filter",
                             i < m->nsubs ? m->subs[i] : "?", "reason",
                             MQTTReasonCode_toString(resp->alt.sub.reasonCodes[i]), NULL);
    } else if (resp && resp->reasonCode >= 0x80) {
        vigil_log_kv(VIGIL_LOG_ERROR, "mqtt subscription refused", "filter",
                     m->nsubs > 0 ? m->subs[0] : "?", "reason",
                     MQTTReasonCode_toString(resp->reasonCode), NULL);
    }
    say_up(m);
    tl_in_callback--;
}

static void on_subscribe_fail(void *context, MQTTAsync_failureData5 *resp)
{
    (void)context;
    tl_in_callback++;
    vigil_log_kv(VIGIL_LOG_ERROR, "mqtt subscribe failed", "error",
                 resp ? MQTTAsync_strerror(resp->code) : "unknown", NULL);
    say_up(context); /* connected all the same, as before the answer was awaited */
    tl_in_callback--;
}

/* Runs on the first connect and on every reconnect. The broker
 * may have lost our subscriptions (shared ones never survive a restart on
 * mosquitto 2.0.11), so subscribe again each time, before announcing ready:
 * the broker handles our packets in order, so a client that sees "ready"
 * knows we are subscribed. Only non-blocking paho calls here. */
static void on_connected(void *context, char *cause)
{
    vigil_mqtt *m = context;
    tl_in_callback++;
    atomic_store(&m->connected, true);
    if (m->broker_port > 0) {
        int fds[MQTT_QUICKACK_FDS] = { 0 };
        int n = vigil_tcp_find_peer_fds(m->broker_port, fds, MQTT_QUICKACK_FDS);
        for (int i = 0; i < n; i++)
            atomic_store(&m->qa_fds[i], fds[i]);
        atomic_store(&m->qa_n, n);
    }
    pthread_mutex_lock(&m->mu);
    bool first = !m->ever_connected;
    m->ever_connected = true;
    m->refusal[0] = '\0'; /* accepted again (e.g. after a password rotation) */
    pthread_mutex_unlock(&m->mu);
    if (!first)
        vigil_counter_add("vigil_mqtt_reconnects_total",
                          "Reconnections to the MQTT broker after the first connect", NULL, 1);
    vigil_gauge_set("vigil_mqtt_connected", "1 while connected to the MQTT broker", NULL, 1);
    vigil_log_kv(VIGIL_LOG_INFO, first ? "mqtt connected" : "mqtt reconnected", "client_id",
                 m->client_id, "cause", cause, NULL);

    bool subscribing = false;
    if (m->nsubs > 0) {
        MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
        ro.onSuccess5 = on_subscribe_ok;
        ro.onFailure5 = on_subscribe_fail;
        ro.context = m;
        int rc = MQTTAsync_subscribeMany(atomic_load(&m->client), m->nsubs, m->subs,
                                         m->sub_qos, &ro);
        if (rc != MQTTASYNC_SUCCESS)
            vigil_log_kv(VIGIL_LOG_ERROR, "mqtt subscribe not accepted", "error",
                         MQTTAsync_strerror(rc), NULL);
        subscribing = rc == MQTTASYNC_SUCCESS;
    }
    if (m->status_topic && m->ready_payload)
        (void)vigil_mqtt_publish_async(m, m->status_topic, m->ready_payload,
                                       strlen(m->ready_payload), true);
    if (!subscribing)
        say_up(m); /* else when the broker answers (on_subscribe_ok / _fail) */
    tl_in_callback--;
}

/* Clears the flag and reports the change once, whichever of the two
 * callbacks below comes first for the same loss. */
static void mark_down(vigil_mqtt *m)
{
    atomic_store(&m->qa_n, 0);
    if (!atomic_exchange(&m->connected, false))
        return;
    atomic_store(&m->lost_at_ms, vigil_mono_ms());
    pthread_mutex_lock(&m->mu);
    m->lost = true; /* wakes connector_main */
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    vigil_gauge_set("vigil_mqtt_connected", "1 while connected to the MQTT broker", NULL, 0);
    if (m->on_state)
        m->on_state(m->ctx, false);
}

static void on_connection_lost(void *context, char *cause)
{
    vigil_mqtt *m = context;
    tl_in_callback++;
    vigil_log_kv(VIGIL_LOG_WARN, "mqtt connection lost", "client_id", m->client_id, "cause",
                 cause, NULL);
    mark_down(m);
    tl_in_callback--;
}

/* The broker closed our session with an MQTT 5 DISCONNECT, e.g. "session
 * taken over" when two replicas run with the same client id: worth a
 * clear log line. paho reconnects by itself afterwards. */
static void on_server_disconnect(void *context, MQTTProperties *props,
                                 enum MQTTReasonCodes reason)
{
    vigil_mqtt *m = context;
    (void)props;
    tl_in_callback++;
    vigil_log_kv(VIGIL_LOG_WARN, "mqtt broker sent DISCONNECT", "client_id", m->client_id,
                 "reason", MQTTReasonCode_toString(reason), NULL);
    mark_down(m);
    tl_in_callback--;
}

/* Messages inside on_message_arrived across every client of the process. */
static atomic_int inputs_in_flight;
#define M_INPUTS_IN_FLIGHT "vigil_inputs_in_flight"
#define M_INPUTS_IN_FLIGHT_HELP "Inputs received and not yet durable (acknowledged when their handler returns)"

/* paho sends the PUBACK after this returns, so on_message makes the
 * effect durable before we return 1. topicLen 0 means NUL-terminated; a
 * nonzero length is copied to give the handler a C string. */
static int on_message_arrived(void *context, char *topicName, int topicLen,
                              MQTTAsync_message *message)
{
    vigil_mqtt *m = context;
    char stackbuf[256];
    char *topic = topicName;
    char *heap = NULL;
    if (topicLen > 0) {
        if ((size_t)topicLen < sizeof stackbuf) {
            topic = stackbuf;
        } else {
            /* Returning 0 would make paho 1.3.12 acknowledge now and keep
             * the message in memory only: retry, then leave unacknowledged. */
            for (int attempt = 0; !(heap = malloc((size_t)topicLen + 1)); attempt++)
                if (!vigil_oom_wait(attempt, "mqtt topic"))
                    vigil_exit_unacknowledged("out of memory receiving a message", NULL);
            topic = heap;
        }
        memcpy(topic, topicName, (size_t)topicLen);
        topic[topicLen] = '\0';
    }
    tl_in_callback++;
    vigil_counter_add("vigil_mqtt_messages_received_total", "MQTT messages received", NULL, 1);
    /* In flight from arrival until its effect is durable (the handler
     * returns): a gauge stuck at 1 is intake blocked on Redis. */
    vigil_gauge_set(M_INPUTS_IN_FLIGHT, M_INPUTS_IN_FLIGHT_HELP, NULL,
                    (double)atomic_fetch_add(&inputs_in_flight, 1) + 1);
    /* Every subscription is under the prefix, so every topic is too. */
    const char *ours = m->topic_prefix ? vigil_topic_prefix_strip(m->topic_prefix, topic) : topic;
    if (m->on_message && ours)
        m->on_message(m->ctx, ours, message->payload,
                      message->payloadlen > 0 ? (size_t)message->payloadlen : 0,
                      message->retained != 0);
    vigil_gauge_set(M_INPUTS_IN_FLIGHT, M_INPUTS_IN_FLIGHT_HELP, NULL,
                    (double)atomic_fetch_sub(&inputs_in_flight, 1) - 1);
    tl_in_callback--;
    free(heap);
    MQTTAsync_freeMessage(&message);
    MQTTAsync_free(topicName);
    return 1;
}

/* Ends a connect attempt: wakes whoever waits for its outcome. */
static void attempt_end(vigil_mqtt *m, enum conn_attempt outcome)
{
    pthread_mutex_lock(&m->mu);
    m->attempt = outcome;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

/* The CONNACK's Receive Maximum (65535 when absent, per MQTT 5) bounds the
 * publish window. paho hands us the CONNACK properties only here, on the
 * first connect; reconnects normally reach the same broker. */
static void on_connect_ok(void *context, MQTTAsync_successData5 *resp)
{
    vigil_mqtt *m = context;
    tl_in_callback++;
    if (resp) {
        int rm = 65535;
        if (MQTTProperties_hasProperty(&resp->properties, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM))
            rm = (int)MQTTProperties_getNumericValue(&resp->properties,
                                                     MQTTPROPERTY_CODE_RECEIVE_MAXIMUM);
        /* All of it but one, shared: the outbox keeps up to that many
         * tagged publishes in flight, a batch sends only into what they
         * leave (vigil_mqtt_publish_batch), and the one left is for the
         * messages published without waiting (a shard fence, the ready
         * status), so paho has no reason to park one. Half of it, as
         * before, left the outbox 10 in flight against mosquitto's default
         * of 20: its drain of a backlog took 15-25 % longer (30,000
         * outputs: 1.40-1.59 s against 1.26-1.28 s with all 20; with our
         * config's 100, 1.05-1.10 s against 0.86-0.88 s). */
        rm -= 1;
        if (rm < 1)
            rm = 1;
        atomic_store(&m->window, rm > MQTT_MAX_WINDOW ? MQTT_MAX_WINDOW : rm);
        /* Counted here, not in on_connected: paho does not promise which
         * of the two runs first. Every connect, reconnects included, is
         * ours (connect_once), so this sees each CONNACK. */
        bool reconnect = m->connacks++ > 0;
        if (reconnect && !m->ephemeral && m->nsubs > 0 && !resp->alt.connect.sessionPresent)
            vigil_mqtt_session_lost_say(m->client_id);
    }
    attempt_end(m, ATTEMPT_OK);
    tl_in_callback--;
}

static void count_refusal(void)
{
    vigil_counter_add("vigil_mqtt_refusals_total",
                      "Connects the broker refused (credentials, authorization or TLS)", NULL, 1);
}

/* A refusal of our credentials or certificate (mqtt_secure.h) is logged
 * as an error naming what failed; before the first connect the connector
 * then gives up (first_refusal), after it the connector keeps retrying and
 * every refusal is logged again, so a rotated password is loud, not silent. */
static void on_connect_fail(void *context, MQTTAsync_failureData5 *resp)
{
    vigil_mqtt *m = context;
    tl_in_callback++;
    char code[32], why[sizeof m->refusal];
    snprintf(code, sizeof code, "%d/%d", resp ? resp->code : 0, resp ? (int)resp->reasonCode : 0);
    if (vigil_mqtt_refusal(resp, &m->tls, m->display_url, m->user, why, sizeof why)) {
        pthread_mutex_lock(&m->mu);
        snprintf(m->refusal, sizeof m->refusal, "%s", why);
        pthread_mutex_unlock(&m->mu);
        count_refusal();
        vigil_log_kv(VIGIL_LOG_ERROR, why, "client_id", m->client_id, "code", code, NULL);
    } else {
        vigil_log_kv(VIGIL_LOG_WARN, "mqtt connect failed", "client_id", m->client_id, "code",
                     code, "error", resp && resp->message ? resp->message : NULL, NULL);
    }
    attempt_end(m, ATTEMPT_FAILED);
    tl_in_callback--;
}

/* Ends the DISCONNECT, whichever its outcome: wakes vigil_mqtt_stop. */
static void disconnect_end(vigil_mqtt *m)
{
    pthread_mutex_lock(&m->mu);
    m->disconnect_done = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static void on_disconnect_done(void *context, MQTTAsync_successData5 *resp)
{
    (void)resp;
    disconnect_end(context);
}

static void on_disconnect_fail(void *context, MQTTAsync_failureData5 *resp)
{
    (void)resp;
    disconnect_end(context);
}

vigil_mqtt_config vigil_mqtt_config_of(const vigil_common_config *c)
{
    vigil_mqtt_config mc = {
        .url = c->mqtt_url,
        .user = c->mqtt_user,
        .password = c->mqtt_password,
        .tls_ca_file = c->mqtt_ca_file,
        .tls_cert_file = c->mqtt_cert_file,
        .tls_key_file = c->mqtt_key_file,
        .topic_prefix = c->topic_prefix,
    };
    return mc;
}

/* ---- first connect ------------------------------------------------------ */

static int connect_once(vigil_mqtt *m)
{
    MQTTAsync_connectOptions o = MQTTAsync_connectOptions_initializer5;
    o.keepAliveInterval = MQTT_KEEPALIVE_S;
    /* Resume the session the broker kept for us, unless the caller asked
     * for none (a short-lived client such as the CLI). */
    o.cleanstart = m->ephemeral ? 1 : 0;
    o.connectProperties = m->ephemeral ? NULL : &m->connect_props;
    o.will = (m->status_topic && m->lost_payload) ? &m->will : NULL;
    o.username = m->user;
    o.password = m->password;
    o.connectTimeout = MQTT_CONNECT_TIMEOUT_S;
    o.automaticReconnect = 0; /* connector_main reconnects (see there) */
    o.onSuccess5 = on_connect_ok;
    o.onFailure5 = on_connect_fail;
    o.context = m;
    o.ssl = vigil_mqtt_tls_options(&m->tls);
    vigil_mqtt_tls_clear_error(&m->tls);
    return MQTTAsync_connect(atomic_load(&m->client), &o);
}

/* Called by the connector with m->mu held when the first connect was
 * refused: hands the reason to on_refused (the runtime exits with
 * VIGIL_EXIT_CONFIG) and ends the connector. Without a handler (e.g. the
 * CLI, which asks vigil_mqtt_refused) it ends too: retrying the same
 * credentials cannot succeed. Returns true to stop retrying. */
static bool first_refusal(vigil_mqtt *m)
{
    char why[sizeof m->refusal];
    snprintf(why, sizeof why, "%s", m->refusal);
    pthread_mutex_unlock(&m->mu);
    if (m->on_refused)
        m->on_refused(m->ctx, why);
    pthread_mutex_lock(&m->mu);
    return true;
}

/* A TLS connect failed without a reason paho could name: our own
 * handshake (mqtt_secure.h) finds out whether TLS is the problem and
 * records the refusal like on_connect_fail does. Called with m->mu held;
 * releases it meanwhile (the probe may take seconds). */
static void diagnose_tls(vigil_mqtt *m)
{
    if (!m->tls.on)
        return;
    char why[sizeof m->refusal];
    pthread_mutex_unlock(&m->mu);
    bool refused = vigil_mqtt_tls_diagnose(&m->tls, m->display_url, why, sizeof why);
    if (refused) {
        count_refusal();
        vigil_log_kv(VIGIL_LOG_ERROR, why, "client_id", m->client_id, NULL);
    }
    pthread_mutex_lock(&m->mu);
    if (refused)
        snprintf(m->refusal, sizeof m->refusal, "%s", why);
}

/* Waits ms on m->cv (m->mu held), returning early when stop is requested. */
static void pause_unless_stopping(vigil_mqtt *m, int64_t ms)
{
    struct timespec ts = mono_deadline(ms);
    while (!m->stopping) {
        if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT)
            break;
    }
}

/* Connects until it succeeds or stop is requested, with capped exponential
 * backoff. Returns true when connected, false when stopping or when the
 * first connect was refused (first_refusal). Called with m->mu held. */
static bool connect_with_backoff(vigil_mqtt *m)
{
    int attempt = 0;
    while (!m->stopping) {
        m->attempt = ATTEMPT_PENDING;
        m->lost = false;
        pthread_mutex_unlock(&m->mu);
        int rc = connect_once(m);
        pthread_mutex_lock(&m->mu);
        if (rc == MQTTASYNC_SUCCESS) {
            struct timespec ts = mono_deadline(MQTT_CONNECT_TIMEOUT_S * 1000 + 5000);
            while (m->attempt == ATTEMPT_PENDING && !m->stopping) {
                if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT)
                    break;
            }
            if (m->attempt == ATTEMPT_OK)
                return true;
            if (m->attempt == ATTEMPT_FAILED && !m->refusal[0])
                diagnose_tls(m);
            if (m->attempt == ATTEMPT_FAILED && m->refusal[0] && !m->ever_connected &&
                first_refusal(m))
                return false;
        } else {
            vigil_log_kv(VIGIL_LOG_WARN, "mqtt connect not started", "error",
                         MQTTAsync_strerror(rc), NULL);
        }
        if (m->stopping)
            break;
        int64_t delay = vigil_backoff_ms(attempt++, MQTT_RETRY_MIN_S * 1000,
                                         MQTT_RETRY_MAX_S * 1000);
        vigil_log(VIGIL_LOG_INFO, "mqtt: retrying connect in %lld ms", (long long)delay);
        pause_unless_stopping(m, delay);
    }
    return false;
}

static void client_replace(vigil_mqtt *m);

/* Makes every connection: the first, and again after each loss. paho's own
 * automatic reconnect is off because it reports a refused reconnect to no
 * callback (checked on Debian's 1.3.11: a password rotated on the broker
 * left the service silently disconnected); connecting here means every
 * refusal reaches on_connect_fail and is logged. Runs outside paho's
 * threads so it may wait. */
static void *connector_main(void *arg)
{
    vigil_mqtt *m = arg;
    vigil_thread_name("vigil-connect");
    pthread_mutex_lock(&m->mu);
    while (connect_with_backoff(m)) {
        while (!m->lost && !m->stopping)
            pthread_cond_wait(&m->cv, &m->mu);
        /* A pause before reconnecting, as paho's own reconnect made: two
         * replicas started with the same client id would otherwise take
         * the session from each other in a tight loop. */
        pause_unless_stopping(m, MQTT_RETRY_MIN_S * 1000);
        if (m->stopping)
            break;
        pthread_mutex_unlock(&m->mu);
        client_replace(m);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- paho handles -------------------------------------------------------- */

/* paho-mqtt3as initialises OpenSSL in full (every error string, cipher
 * and digest table) when its first client is created, whether or not a
 * broker URL asks for TLS: about 3 MiB of resident memory in each process.
 * OpenSSL 3 initialises itself on first use, so paho is told to leave it:
 * a process that never speaks TLS never pays, one that does pays then. */
static void paho_init_once(void)
{
    MQTTAsync_init_options io = MQTTAsync_init_options_initializer;
    io.do_openssl_init = 0;
    MQTTAsync_global_init(&io);
}

/* A new paho handle with our callbacks. Returns 0, or -1 with err set. */
static int client_create(vigil_mqtt *m, MQTTAsync *out, char *err, size_t errlen)
{
    static pthread_once_t paho_once = PTHREAD_ONCE_INIT;
    pthread_once(&paho_once, paho_init_once);
    MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer5;
    /* paho refuses a send once this many are queued, connected or not
     * (default 100: one full outbox batch plus a status would fail). */
    co.maxBufferedMessages = MQTT_MAX_QUEUED_SENDS;
    MQTTAsync c = NULL;
    int rc = MQTTAsync_createWithOptions(&c, m->url, m->client_id, MQTTCLIENT_PERSISTENCE_NONE,
                                         NULL, &co);
    if (rc != MQTTASYNC_SUCCESS) {
        snprintf(err, errlen, "cannot create MQTT client for %s: %s", m->display_url,
                 MQTTAsync_strerror(rc));
        return -1;
    }
    rc = MQTTAsync_setCallbacks(c, m, on_connection_lost, on_message_arrived, NULL);
    if (rc == MQTTASYNC_SUCCESS)
        rc = MQTTAsync_setConnected(c, m, on_connected);
    if (rc == MQTTASYNC_SUCCESS)
        rc = MQTTAsync_setDisconnected(c, m, on_server_disconnect);
    if (rc != MQTTASYNC_SUCCESS) {
        snprintf(err, errlen, "cannot set MQTT callbacks: %s", MQTTAsync_strerror(rc));
        MQTTAsync_destroy(&c);
        return -1;
    }
    *out = c;
    return 0;
}

/* A retired handle receives nothing (it is not connected); paho insists on
 * a message callback all the same. */
static int retired_message(void *context, char *topicName, int topicLen, MQTTAsync_message *msg)
{
    (void)context;
    (void)topicLen;
    MQTTAsync_freeMessage(&msg);
    MQTTAsync_free(topicName);
    return 1;
}

/* Unhooks a handle that is no longer used and leaves it to paho, which
 * keeps it in its list of clients until the process ends. Destroying it
 * could free a topic twice (note_socket_failure). */
static void client_retire(MQTTAsync c)
{
    (void)MQTTAsync_setCallbacks(c, NULL, NULL, retired_message, NULL);
    (void)MQTTAsync_setConnected(c, NULL, NULL);
    (void)MQTTAsync_setDisconnected(c, NULL, NULL);
}

/* Called by the connector, without m->mu, before connecting again after a
 * lost connection: the next connection starts on a new paho handle, so
 * paho never sends again what its old session kept in flight (our outbox
 * publishes it again itself), and a message that paho 1.3.12 freed on the
 * socket failure is never touched again (note_socket_failure). Whatever
 * the old handle still had in flight fails now: its callbacks may never
 * come, and what they would point at is kept until stop. */
static void client_replace(vigil_mqtt *m)
{
    char err[256];
    MQTTAsync fresh = NULL;
    if (client_create(m, &fresh, err, sizeof err) != 0) {
        vigil_log_kv(VIGIL_LOG_WARN, "mqtt: keeping the old client", "error", err, NULL);
        return;
    }
    MQTTAsync old = atomic_exchange(&m->client, fresh);
    atomic_store(&m->tainted, false);
    client_retire(old);

    pthread_mutex_lock(&m->mu);
    m->replaced++;
    int failed = 0;
    for (pub_token *t = m->tokens; t; t = t->next) {
        if (t->orphan)
            continue;
        t->orphan = true;
        m->live_tokens--;
        failed++;
        if (m->ack_fn)
            m->ack_fn(m->ack_ctx, t->tag, VIGIL_PUB_FAILED, 0);
    }
    for (pub_batch *b = m->batches; b; b = b->next) {
        for (int i = 0; i < b->n; i++) {
            if (b->state[i] != 0)
                continue;
            /* An outcome without dropping the callback's reference: the
             * batch stays allocated until stop. */
            b->state[i] = -1;
            b->resolved++;
            b->orphan = true;
            failed++;
        }
    }
    pthread_cond_broadcast(&m->cv);
    int replaced = m->replaced;
    pthread_mutex_unlock(&m->mu);
    vigil_log(VIGIL_LOG_INFO, "mqtt: reconnecting on a new client (%d so far); %d messages in flight "
              "on the old one will be published again", replaced, failed);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void mqtt_free_fields(vigil_mqtt *m)
{
    free(m->topic_prefix);
    free(m->will_topic);
    free(m->display_url);
    vigil_mqtt_tls_free(&m->tls);
    free(m->url);
    free(m->user);
    free(m->password);
    free(m->client_id);
    if (m->subs) {
        for (int i = 0; i < m->nsubs; i++)
            free(m->subs[i]);
        free(m->subs);
    }
    free(m->sub_qos);
    free(m->status_topic);
    free(m->ready_payload);
    free(m->lost_payload);
}

/* strdup of topic under the prefix (subscriptions). */
static char *prefixed_dup(const vigil_mqtt *m, const char *topic)
{
    char buf[512], *heap;
    const char *full = topic_with_prefix(m, topic, buf, sizeof buf, &heap);
    if (heap || !full)
        return heap;
    return strdup(full);
}

/* Checks and keeps the prefix, and the last will's topic under it (paho
 * publishes the will itself, so it cannot go through send_prefixed). */
static int set_topic_prefix(vigil_mqtt *m, const char *prefix, char *err, size_t errlen)
{
    if (!prefix || !prefix[0])
        return 0;
    if (vigil_topic_prefix_check(prefix, err, errlen) != 0)
        return -1;
    m->topic_prefix = strdup(prefix);
    if (m->topic_prefix && m->status_topic)
        m->will_topic = prefixed_dup(m, m->status_topic);
    if (!m->topic_prefix || (m->status_topic && !m->will_topic)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

vigil_mqtt *vigil_mqtt_new(const vigil_mqtt_config *cfg, char *err, size_t errlen)
{
    char paho_url[512];
    vigil_mqtt *m = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!cfg || !cfg->url || vigil_mqtt_url_to_paho(cfg->url, paho_url, sizeof paho_url) != 0) {
        snprintf(err, errlen, "bad MQTT URL '%s': expected mqtt://host:port, mqtts://, tcp:// or ssl://",
                 cfg && cfg->url ? cfg->url : "(null)");
        return NULL;
    }
    if (!cfg->client_id || !cfg->client_id[0]) {
        snprintf(err, errlen, "MQTT client id is required (a persistent session needs a stable id)");
        return NULL;
    }
    m = calloc(1, sizeof *m);
    if (!m)
        goto oom;
    if (vigil_mqtt_tls_init(&m->tls, paho_url, cfg->tls_ca_file, cfg->tls_cert_file,
                            cfg->tls_key_file, err, errlen) != 0) {
        mqtt_free_fields(m);
        free(m);
        return NULL;
    }
    m->on_refused = cfg->on_refused;
    m->display_url = strdup(cfg->url);
    m->url = strdup(paho_url);
    m->client_id = strdup(cfg->client_id);
    m->user = (cfg->user && cfg->user[0]) ? strdup(cfg->user) : NULL;
    m->password = (cfg->user && cfg->user[0]) ? dup_or_null(cfg->password) : NULL;
    m->status_topic = (cfg->status_topic && cfg->status_topic[0]) ? strdup(cfg->status_topic) : NULL;
    if (set_topic_prefix(m, cfg->topic_prefix, err, errlen) != 0) {
        mqtt_free_fields(m);
        free(m);
        return NULL;
    }
    m->ready_payload = dup_or_null(cfg->ready_payload);
    m->lost_payload = dup_or_null(cfg->lost_payload);
    if (!m->url || !m->display_url || !m->client_id || (cfg->user && cfg->user[0] && !m->user) ||
        (m->user && cfg->password && !m->password) ||
        (cfg->status_topic && cfg->status_topic[0] && !m->status_topic) ||
        (cfg->ready_payload && !m->ready_payload) || (cfg->lost_payload && !m->lost_payload))
        goto oom;
    if (cfg->subscriptions) {
        int n = 0;
        while (cfg->subscriptions[n])
            n++;
        if (n > 0) {
            m->subs = calloc((size_t)n, sizeof *m->subs);
            m->sub_qos = calloc((size_t)n, sizeof *m->sub_qos);
            if (!m->subs || !m->sub_qos)
                goto oom;
            for (int i = 0; i < n; i++) {
                m->subs[i] = prefixed_dup(m, cfg->subscriptions[i]);
                if (!m->subs[i]) {
                    m->nsubs = i;
                    goto oom;
                }
                m->sub_qos[i] = 1;
            }
            m->nsubs = n;
        }
    }
    m->on_message = cfg->on_message;
    m->on_state = cfg->on_state;
    m->ctx = cfg->ctx;

    /* Without a Session Expiry Interval an MQTT 5 session ends at
     * disconnect and the broker would not queue our input meanwhile.
     * The list is built by hand, not with MQTTProperties_add: that
     * allocates through paho's heap tracker, which paho tears down when its
     * last client is destroyed, and a later free then leaks. paho copies
     * the list at every MQTTAsync_connect. */
    m->ephemeral = cfg->session_expiry_s < 0;
    m->session_expiry.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL;
    m->session_expiry.value.integer4 =
        (unsigned)(cfg->session_expiry_s > 0 ? cfg->session_expiry_s
                                             : MQTT_DEFAULT_SESSION_EXPIRY_S);
    m->connect_props.count = 1;
    m->connect_props.max_count = 1;
    m->connect_props.length = 1 + 4; /* identifier byte + four byte integer */
    m->connect_props.array = &m->session_expiry;


    m->will = (MQTTAsync_willOptions)MQTTAsync_willOptions_initializer;
    m->will.topicName = m->topic_prefix ? m->will_topic : m->status_topic;
    m->will.message = m->lost_payload;
    m->will.retained = 1;
    m->will.qos = 1;

    atomic_init(&m->connected, false);
    atomic_init(&m->lost_at_ms, 0);
    atomic_init(&m->qa_n, 0);
    for (int i = 0; i < MQTT_QUICKACK_FDS; i++)
        atomic_init(&m->qa_fds[i], -1);
    /* The broker's port, from the paho form tcp://host:port ([v6]:port). */
    const char *colon = strrchr(m->url, ':');
    m->broker_port = colon && colon[1] && !strchr(colon, ']') && !strchr(colon, '/') ? atoi(colon + 1) : 0;
    if (m->broker_port <= 0)
        m->broker_port = strncmp(m->url, "ssl://", 6) == 0 ? 8883 : 1883;
    atomic_init(&m->window, MQTT_DEFAULT_WINDOW);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&m->mu, NULL);

    MQTTAsync c = NULL;
    if (client_create(m, &c, err, errlen) != 0)
        goto fail_sync;
    atomic_init(&m->client, c);
    atomic_init(&m->tainted, false);
    return m;

fail_sync:
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    mqtt_free_fields(m);
    free(m);
    return NULL;
oom:
    snprintf(err, errlen, "out of memory");
    if (m) {
        mqtt_free_fields(m);
        free(m);
    }
    return NULL;
}

int vigil_mqtt_start(vigil_mqtt *m)
{
    if (!m)
        return -1;
    pthread_mutex_lock(&m->mu);
    if (m->connector_started || m->stopping) {
        pthread_mutex_unlock(&m->mu);
        return -1;
    }
    int rc = pthread_create(&m->connector, NULL, connector_main, m);
    if (rc == 0)
        m->connector_started = true;
    pthread_mutex_unlock(&m->mu);
    if (rc != 0) {
        vigil_log(VIGIL_LOG_ERROR, "mqtt: cannot start connector thread: %s", strerror(rc));
        return -1;
    }
    return 0;
}

bool vigil_mqtt_refused(vigil_mqtt *m, char *why, size_t whylen)
{
    if (!m)
        return false;
    pthread_mutex_lock(&m->mu);
    bool refused = m->refusal[0] != '\0';
    if (refused && why && whylen)
        snprintf(why, whylen, "%s", m->refusal);
    pthread_mutex_unlock(&m->mu);
    return refused;
}

int64_t vigil_mqtt_lost_at_ms(const vigil_mqtt *m)
{
    return m ? atomic_load(&((vigil_mqtt *)m)->lost_at_ms) : 0;
}

bool vigil_mqtt_connected(const vigil_mqtt *m)
{
    return m && atomic_load(&((vigil_mqtt *)m)->connected);
}

/* Orderly shutdown: final status (acknowledged), then a normal DISCONNECT
 * (reason 0, so the broker drops the will), then destroy. Each wait is
 * bounded by what is left of timeout_ms. */
void vigil_mqtt_stop(vigil_mqtt *m, const char *final_status, int timeout_ms)
{
    if (!m)
        return;
    if (tl_in_callback) {
        vigil_log(VIGIL_LOG_ERROR, "vigil_mqtt_stop called from a paho callback: ignored");
        return;
    }
    int64_t deadline = vigil_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);

    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_cond_broadcast(&m->cv);
    bool joined = m->connector_started;
    pthread_mutex_unlock(&m->mu);
    if (joined)
        pthread_join(m->connector, NULL);

    if (final_status && m->status_topic && atomic_load(&m->connected)) {
        vigil_pubmsg msg = { m->status_topic, final_status, strlen(final_status), true };
        int64_t left = deadline - vigil_mono_ms();
        if (vigil_mqtt_publish_batch(m, &msg, 1, (int)(left > 0 ? left : 0)) != 1)
            vigil_log(VIGIL_LOG_WARN, "mqtt: final status not acknowledged before stop");
    }

    MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer5;
    int64_t left = deadline - vigil_mono_ms();
    d.timeout = (int)(left > 1000 ? 1000 : (left > 0 ? left : 0));
    d.onSuccess5 = on_disconnect_done;
    d.onFailure5 = on_disconnect_fail;
    d.context = m;
    MQTTAsync c = atomic_load(&m->client);
    int rc = MQTTAsync_disconnect(c, &d);
    if (rc == MQTTASYNC_SUCCESS) {
        int64_t wait = deadline - vigil_mono_ms();
        if (wait < 200)
            wait = 200; /* let the DISCONNECT go out even with no time left */
        if (wait > MQTT_DISCONNECT_WAIT_MS)
            wait = MQTT_DISCONNECT_WAIT_MS;
        struct timespec ts = mono_deadline(wait);
        pthread_mutex_lock(&m->mu);
        while (!m->disconnect_done) {
            if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT)
                break;
        }
        pthread_mutex_unlock(&m->mu);
    }
    atomic_store(&m->connected, false);
    vigil_gauge_set("vigil_mqtt_connected", "1 while connected to the MQTT broker", NULL, 0);
    if (atomic_load(&m->tainted))
        client_retire(c); /* destroying it could free a topic twice */
    else
        MQTTAsync_destroy(&c);
    atomic_store(&m->client, NULL);

    /* No callback can run any more: free batches whose messages were never
     * acknowledged. */
    while (m->batches)
        batch_unlink_free(m, m->batches);
    while (m->tokens) {
        pub_token *t = m->tokens;
        token_unlink_locked(m, t);
        free(t);
    }
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    vigil_log_kv(VIGIL_LOG_INFO, "mqtt stopped", "client_id", m->client_id, NULL);
    mqtt_free_fields(m);
    free(m);
}
