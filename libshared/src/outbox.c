/* outbox.c - the publisher thread (see outbox.h).
 *
 * Loop: wait for a kick (or at most 500 ms, which also catches entries
 * committed by anyone who did not kick us); while MQTT is down, keep
 * waiting; otherwise drain the in-memory ephemeral queue, then the Redis
 * outbox in batches of up to 100: peek, publish and wait for the PUBACKs,
 * trim exactly the acknowledged prefix. Nothing leaves Redis before the
 * broker acknowledged it, so an entry is published at least once.
 * The thread owns its Redis connection (hiredis contexts are not
 * thread-safe) and never holds o->mu while talking to Redis or MQTT, so a
 * kick from a message callback never waits. */
#include "vigil/outbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vigil/clock.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

#define OUTBOX_BATCH 100
#define OUTBOX_IDLE_WAIT_MS 500
#define OUTBOX_STOP_POLL_MS 50
#define OUTBOX_PUBLISH_TIMEOUT_MS 10000
#define OUTBOX_EPHEMERAL_MAX 10000
#define OUTBOX_REDIS_TIMEOUT_MS 2000
#define OUTBOX_BACKOFF_BASE_MS 100
#define OUTBOX_BACKOFF_CAP_MS 5000

#define M_OUTPUTS "vigil_outputs_total"
#define M_OUTPUTS_HELP "Output messages published and acknowledged by the broker"
/* Consecutive failures of the same head entry before it is dropped (about
 * 30 s at the retry pause, far longer when publishes time out). */
#define OUTBOX_POISON_TRIES 60
#define M_FAILURES "vigil_outbox_publish_failures_total"
#define M_FAILURES_HELP "Output messages the broker did not acknowledge in time (retried)"
#define M_DROPPED "vigil_outbox_dropped_total"
#define M_DROPPED_HELP "Ephemeral messages dropped because the in-memory queue was full"

typedef struct eph_msg {
    struct eph_msg *next;
    char *topic;
    char *payload;
    bool retain;
} eph_msg;

struct vigil_outbox {
    vigil_mqtt *mqtt;
    vigil_redis *r;
    vigil_store *s;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool kicked;
    bool stopping;
    int64_t drain_deadline; /* mono ms, valid once stopping */
    eph_msg *head, *tail;   /* oldest first */
    size_t count;

    atomic_ullong published;
    /* the outbox thread's own bookkeeping of a failing head entry */
    uint64_t head_hash;
    int head_failures;
};

static void eph_free(eph_msg *e)
{
    if (!e)
        return;
    free(e->topic);
    free(e->payload);
    free(e);
}

#define mono_deadline vigil_mono_deadline /* clock.h */

/* Drops the oldest ephemeral messages beyond the bound. Caller holds mu. */
static void eph_enforce_bound_locked(vigil_outbox *o)
{
    while (o->count > OUTBOX_EPHEMERAL_MAX && o->head) {
        eph_msg *old = o->head;
        o->head = old->next;
        if (!o->head)
            o->tail = NULL;
        o->count--;
        eph_free(old);
        vigil_counter_add(M_DROPPED, M_DROPPED_HELP, NULL, 1);
    }
}

/* Sleeps up to ms. A kick ends the wait early only if wake_on_kick (not
 * during a Redis backoff, so commits do not hammer a failing Redis); stop
 * always ends it. */
static void outbox_wait(vigil_outbox *o, int64_t ms, bool wake_on_kick)
{
    struct timespec ts = mono_deadline(ms);
    pthread_mutex_lock(&o->mu);
    while (!o->stopping && !(wake_on_kick && o->kicked)) {
        if (pthread_cond_timedwait(&o->cv, &o->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&o->mu);
}

/* Publishes the in-memory queue in batches. Returns true when it is empty;
 * unacknowledged messages go back to the front in their order. */
static bool drain_ephemeral(vigil_outbox *o, int timeout_ms)
{
    for (;;) {
        eph_msg *batch = NULL, *last = NULL;
        int k = 0;
        pthread_mutex_lock(&o->mu);
        batch = o->head;
        while (o->head && k < OUTBOX_BATCH) {
            last = o->head;
            o->head = o->head->next;
            k++;
        }
        if (!o->head)
            o->tail = NULL;
        o->count -= (size_t)k;
        pthread_mutex_unlock(&o->mu);
        if (k == 0)
            return true;
        last->next = NULL;

        vigil_pubmsg msgs[OUTBOX_BATCH];
        int i = 0;
        for (eph_msg *e = batch; e; e = e->next, i++) {
            msgs[i].topic = e->topic;
            msgs[i].payload = e->payload;
            msgs[i].len = strlen(e->payload);
            msgs[i].retain = e->retain;
        }
        int acked = vigil_mqtt_publish_batch(o->mqtt, msgs, k, timeout_ms);
        if (acked < 0)
            acked = 0;
        for (i = 0; i < acked; i++) {
            eph_msg *e = batch;
            batch = e->next;
            eph_free(e);
        }
        if (acked > 0) {
            vigil_counter_add(M_OUTPUTS, M_OUTPUTS_HELP, NULL, acked);
            atomic_fetch_add(&o->published, (unsigned long long)acked);
        }
        if (acked == k)
            continue;
        vigil_counter_add(M_FAILURES, M_FAILURES_HELP, NULL, k - acked);
        pthread_mutex_lock(&o->mu);
        last->next = o->head;
        o->head = batch;
        if (!o->tail)
            o->tail = last;
        o->count += (size_t)(k - acked);
        eph_enforce_bound_locked(o);
        pthread_mutex_unlock(&o->mu);
        return false;
    }
}

typedef enum { DRAIN_EMPTY, DRAIN_INCOMPLETE, DRAIN_REDIS_ERROR } drain_result;

/* A head entry that can never be published (undecodable, or refused by the
 * broker, e.g. larger than its packet limit) would hold up every output
 * behind it forever. Undecodable entries are dropped at once; an entry
 * that fails OUTBOX_POISON_TRIES times in a row while we are connected is
 * dropped too. Both are logged with the topic and counted. */
static bool head_is_poison(vigil_outbox *o, const vigil_outmsg *head)
{
    if (!head->topic || !*head->topic) {
        vigil_log(VIGIL_LOG_ERROR, "outbox: dropping an undecodable entry");
        return true;
    }
    if (!vigil_mqtt_connected(o->mqtt))
        return false;
    size_t tl = strlen(head->topic), pl = head->payload ? strlen(head->payload) : 0;
    uint64_t h = vigil_hash64(head->topic, tl) ^ (vigil_hash64(head->payload ? head->payload : "", pl) * 31);
    if (h != o->head_hash) {
        o->head_hash = h;
        o->head_failures = 0;
    }
    if (++o->head_failures < OUTBOX_POISON_TRIES)
        return false;
    vigil_log_kv(VIGIL_LOG_ERROR, "outbox: dropping a message the broker keeps refusing", "topic",
                 head->topic, NULL);
    return true;
}

/* Publishes the Redis outbox, oldest first, until it is empty or a batch
 * is not fully acknowledged. Only the acknowledged prefix is trimmed, so a
 * failure leaves the rest (and a failed trim the whole batch: published
 * again later, consumers dedupe by id). */
static drain_result drain_outbox(vigil_outbox *o, int timeout_ms)
{
    for (;;) {
        if (!vigil_redis_ensure(o->r))
            return DRAIN_REDIS_ERROR;
        vigil_outmsg ents[OUTBOX_BATCH];
        int n = vigil_store_outbox_peek(o->s, OUTBOX_BATCH, ents);
        if (n < 0)
            return DRAIN_REDIS_ERROR;
        if (n == 0)
            return DRAIN_EMPTY;
        vigil_pubmsg msgs[OUTBOX_BATCH];
        for (int i = 0; i < n; i++) {
            msgs[i].topic = ents[i].topic;
            msgs[i].payload = ents[i].payload;
            msgs[i].len = ents[i].payload ? strlen(ents[i].payload) : 0;
            msgs[i].retain = ents[i].retain;
        }
        int acked = vigil_mqtt_publish_batch(o->mqtt, msgs, n, timeout_ms);
        if (acked < 0)
            acked = 0;
        bool drop_head = acked < n && head_is_poison(o, &ents[acked]);
        vigil_outbox_entries_free(ents, n);
        if (acked > 0) {
            vigil_counter_add(M_OUTPUTS, M_OUTPUTS_HELP, NULL, acked);
            atomic_fetch_add(&o->published, (unsigned long long)acked);
            if (vigil_store_outbox_trim(o->s, acked) != 0) {
                vigil_log_kv(VIGIL_LOG_WARN, "outbox trim failed; entries will be published again",
                             "error", vigil_redis_last_error(o->r), NULL);
                return DRAIN_REDIS_ERROR;
            }
        }
        if (acked < n) {
            vigil_counter_add(M_FAILURES, M_FAILURES_HELP, NULL, n - acked);
            if (drop_head && vigil_store_outbox_trim(o->s, 1) == 0) {
                vigil_counter_add("vigil_outbox_dropped_total",
                                  "Output messages dropped (ephemeral overflow, or refused by the "
                                  "broker too often)",
                                  NULL, 1);
                o->head_hash = 0;
                o->head_failures = 0;
                continue;
            }
            return DRAIN_INCOMPLETE;
        }
        o->head_failures = 0;
    }
}

static void *outbox_main(void *arg)
{
    vigil_outbox *o = arg;
    int redis_attempt = 0;
    bool redis_backoff = false;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        bool stopping = o->stopping;
        int64_t deadline = o->drain_deadline;
        o->kicked = false;
        pthread_mutex_unlock(&o->mu);
        int64_t now = vigil_mono_ms();
        if (stopping && now >= deadline)
            break;

        if (!vigil_mqtt_connected(o->mqtt)) {
            outbox_wait(o, stopping ? OUTBOX_STOP_POLL_MS : OUTBOX_IDLE_WAIT_MS, true);
            if (stopping)
                vigil_sleep_ms(OUTBOX_STOP_POLL_MS, NULL);
            continue;
        }
        int timeout = OUTBOX_PUBLISH_TIMEOUT_MS;
        if (stopping && deadline - now < timeout)
            timeout = (int)(deadline - now);

        bool eph_empty = drain_ephemeral(o, timeout);
        drain_result dr = drain_outbox(o, timeout);
        if (dr == DRAIN_REDIS_ERROR) {
            int64_t d = vigil_backoff_ms(redis_attempt++, OUTBOX_BACKOFF_BASE_MS,
                                         OUTBOX_BACKOFF_CAP_MS);
            if (!redis_backoff || redis_attempt % 10 == 1)
                vigil_log_kv(VIGIL_LOG_WARN, "outbox: redis unavailable, backing off", "error",
                             vigil_redis_last_error(o->r), NULL);
            redis_backoff = true;
            if (stopping) {
                if (d > deadline - vigil_mono_ms())
                    d = deadline - vigil_mono_ms();
                vigil_sleep_ms(d > 0 ? d : 0, NULL);
            } else {
                outbox_wait(o, d, false);
            }
            continue;
        }
        if (redis_backoff)
            vigil_log(VIGIL_LOG_INFO, "outbox: redis available again");
        redis_backoff = false;
        redis_attempt = 0;
        if (stopping) {
            if (eph_empty && dr == DRAIN_EMPTY)
                break;
            vigil_sleep_ms(OUTBOX_STOP_POLL_MS, NULL);
            continue;
        }
        /* Something left means the broker did not acknowledge in time:
         * retry after the usual pause rather than at once. */
        outbox_wait(o, OUTBOX_IDLE_WAIT_MS, eph_empty && dr == DRAIN_EMPTY);
    }
    return NULL;
}

vigil_outbox *vigil_outbox_start(const vigil_redis_addr *addr, const vigil_store_config *scfg,
                                 vigil_mqtt *mqtt)
{
    if (!addr || !scfg || !mqtt)
        return NULL;
    vigil_outbox *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->mqtt = mqtt;
    o->r = vigil_redis_new(addr, OUTBOX_REDIS_TIMEOUT_MS);
    if (!o->r)
        goto fail;
    o->s = vigil_store_new(o->r, scfg);
    if (!o->s)
        goto fail;
    atomic_init(&o->published, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&o->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&o->mu, NULL);
    /* Replay whatever a previous run left in the outbox without waiting
     * for a kick: the first loop iteration reads it at once. */
    o->kicked = true;
    int rc = pthread_create(&o->thread, NULL, outbox_main, o);
    if (rc != 0) {
        vigil_log(VIGIL_LOG_ERROR, "outbox: cannot start thread: %s", strerror(rc));
        pthread_mutex_destroy(&o->mu);
        pthread_cond_destroy(&o->cv);
        goto fail;
    }
    return o;
fail:
    if (o->s)
        vigil_store_free(o->s);
    if (o->r)
        vigil_redis_free(o->r);
    free(o);
    return NULL;
}

void vigil_outbox_kick(vigil_outbox *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->kicked = true;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

void vigil_outbox_push_ephemeral(vigil_outbox *o, const char *topic, const char *payload,
                                 bool retain)
{
    if (!o || !topic || !payload)
        return;
    eph_msg *e = calloc(1, sizeof *e);
    if (e) {
        e->topic = strdup(topic);
        e->payload = strdup(payload);
        e->retain = retain;
    }
    if (!e || !e->topic || !e->payload) {
        eph_free(e);
        vigil_counter_add(M_DROPPED, M_DROPPED_HELP, NULL, 1);
        return;
    }
    pthread_mutex_lock(&o->mu);
    if (o->tail)
        o->tail->next = e;
    else
        o->head = e;
    o->tail = e;
    o->count++;
    eph_enforce_bound_locked(o);
    o->kicked = true;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

unsigned long long vigil_outbox_published(const vigil_outbox *o)
{
    return o ? atomic_load(&((vigil_outbox *)o)->published) : 0;
}

void vigil_outbox_stop(vigil_outbox *o, int drain_ms)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->stopping = true;
    o->drain_deadline = vigil_mono_ms() + (drain_ms > 0 ? drain_ms : 0);
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    pthread_join(o->thread, NULL);

    size_t left = o->count;
    while (o->head) {
        eph_msg *e = o->head;
        o->head = e->next;
        eph_free(e);
    }
    if (left > 0)
        vigil_log(VIGIL_LOG_WARN, "outbox stopped with %zu ephemeral messages unsent", left);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    vigil_store_free(o->s);
    vigil_redis_free(o->r);
    free(o);
}
