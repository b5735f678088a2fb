/* outbox.c - the publisher thread (see outbox.h).
 *
 * The Redis outbox is published through a window of QoS 1 messages in
 * flight, never stop-and-wait per batch: a broker that does not set
 * TCP_NODELAY (mosquitto as shipped) holds its PUBACKs behind Nagle and the
 * delayed ACK, and a publisher that waits for a whole batch before sending
 * more stalls ~40 ms each time. Here the thread keeps a ring of the oldest
 * entries read from Redis; it hands them to paho in order while fewer than
 * the window are unacknowledged, and as PUBACKs arrive it trims exactly the
 * acknowledged prefix from Redis (pipelined with the next read). Nothing
 * leaves Redis before the broker acknowledged it; after a crash the rest is
 * published again with the same ids (consumers dedupe).
 *
 * Sequence numbers: every entry read gets the next number; [head_seq,
 * read_seq) are in the ring, the list's index 0 being head_seq; [head_seq,
 * send_seq) were handed to paho. Any doubt about what Redis holds (an error,
 * a failed publish) resets the ring: new numbers, read again from index 0,
 * so a late callback for an old number matches nothing.
 *
 * A failed publish (connection lost, or the broker refused it): wait until
 * nothing is pending, trim the acknowledged prefix, pause
 * VIGIL_OUTBOX_RETRY_MS, then publish the head alone (a probe) until it is
 * acknowledged, and go on with the full window. A head entry that cannot be
 * decoded, or that the broker explicitly refuses (PUBACK reason >= 0x80, e.g.
 * an ACL) VIGIL_OUTBOX_DEAD_LETTER_AFTER times in a row, is moved atomically
 * to the dead-letter list (deadletter.h). Timeouts and disconnects never
 * count: a slow broker cannot cause a dead letter.
 *
 * Locks: o->mu guards the sequence numbers, slot states and flags the
 * acknowledgement callback touches. The callback runs on paho's thread
 * under the MQTT client's lock and takes o->mu; this thread never holds
 * o->mu while calling paho or Redis. */
#include "vigil/outbox.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "outbox_replay.h"
#include "outbox_store.h"
#include "vigil/clock.h"
#include "vigil/config.h"
#include "vigil/deadletter.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/mqtt_links.h"
#include "vigil/thread_name.h"

#define OUTBOX_BATCH 100          /* ephemeral messages per batch */
#define OUTBOX_RING 8192          /* entries held at most (>= twice the largest window) */
#define OUTBOX_FETCH_MAX 256      /* entries read per round trip at most */
#define OUTBOX_IDLE_WAIT_MS 500
#define OUTBOX_STOP_POLL_MS 50
#define OUTBOX_PUBLISH_TIMEOUT_MS 10000
#define OUTBOX_EPHEMERAL_MAX 10000
#define OUTBOX_REDIS_TIMEOUT_MS 2000
#define OUTBOX_BACKOFF_BASE_MS 100
#define OUTBOX_BACKOFF_CAP_MS 5000
#define OUTBOX_GAUGE_REFRESH_MS 5000
#define OUTBOX_RETRY_MS_DEFAULT 1000
#define OUTBOX_DEAD_LETTER_AFTER_DEFAULT 5
#define OUTBOX_REPLAY_MS_DEFAULT 3000 /* > mosquitto's 2 s save cycle (autosave_interval 1) */
#define OUTBOX_REPLAY_MAX 20000       /* acknowledged entries kept at most */
#define OUTBOX_SUP_BUCKETS 4096       /* retained topics remembered for superseding */

#define M_OUTPUTS "vigil_outputs_total"
#define M_OUTPUTS_HELP "Output messages published and acknowledged by the broker"
#define M_FAILURES "vigil_outbox_publish_failures_total"
#define M_FAILURES_HELP "Output messages the broker did not acknowledge (published again)"
#define M_REFUSED "vigil_outbox_refusals_total"
#define M_REFUSED_HELP "Output messages the broker refused with a reason code (e.g. not authorized)"
#define M_DROPPED "vigil_outbox_dropped_total"
#define M_DROPPED_HELP "Ephemeral messages dropped because the in-memory queue was full"
#define M_DEAD "vigil_outbox_dead_letters_total"
#define M_DEAD_HELP "Outbox entries moved to the dead-letter list (undecodable or refused)"
#define M_DEAD_LEN "vigil_outbox_dead_letters"
#define M_DEAD_LEN_HELP "Entries in the service's dead-letter list"
#define M_INFLIGHT "vigil_outbox_inflight"
#define M_INFLIGHT_HELP "Output messages handed to the broker and not yet acknowledged"
#define M_REPLAYED "vigil_outbox_replayed_total"
#define M_REPLAYED_HELP "Outputs published again after a lost connection (the broker may not have saved them)"
#define M_REPLAY_OVERFLOW "vigil_outbox_replay_overflow_total"
#define M_REPLAY_OVERFLOW_HELP "Acknowledged outputs not kept for publishing again (more than the bound in the window)"
#define M_SUPERSEDED "vigil_outbox_superseded_total"
#define M_SUPERSEDED_HELP "Retained outputs not published: a newer one for the same topic followed them in the outbox"

typedef struct eph_msg {
    struct eph_msg *next;
    char *topic;
    char *payload;
    bool retain;
} eph_msg;

/* SLOT_LOST: acknowledged on a connection lost before the entry was
 * trimmed; published again like a failed one (requeue_acked).
 * SLOT_SUPERSEDED: a retained output never sent because a newer retained
 * output for the same topic was read behind it (mark_superseded); done, like
 * an acknowledged one, but never counted as published nor replayed. */
enum slot_state {
    SLOT_UNSENT = 0,
    SLOT_PENDING,
    SLOT_ACKED,
    SLOT_FAILED,
    SLOT_REFUSED,
    SLOT_LOST,
    SLOT_SUPERSEDED
};

/* One entry of the ring: the stored text and its decoded form. */
typedef struct ob_slot {
    uint64_t seq;
    vigil_outbox_raw raw;
    char *topic; /* NULL: undecodable */
    const char *payload;
    size_t plen;
    bool retain;
    int state;  /* enum slot_state, under mu */
    int reason; /* broker reason code of a refusal */
    int64_t sent_ms;
} ob_slot;

struct vigil_outbox {
    vigil_mqtt *mqtt;       /* publishes through paho, or */
    vigil_mqtt_links *link; /* through its own connections (vigil_outbox_start_on_links) */
    vigil_redis *r;
    vigil_store *s;
    char service[128];
    char error_topic[192];
    char dl_key[320];
    vigil_script dl_script;
    int64_t retry_ms;
    int dead_letter_after;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool kicked;
    atomic_int *kick_flag;  /* vigil_outbox_set_kick_flag: cleared with kicked */
    bool acked_event; /* a callback reported something worth waking for */
    bool stopping;
    bool waiting;           /* the thread sleeps in outbox_wait: signal it */
    int64_t drain_deadline; /* mono ms, valid once stopping */
    eph_msg *head, *tail;   /* oldest first */
    size_t count;

    /* the window; seq fields and slot states under mu */
    ob_slot *ring;
    uint64_t head_seq, read_seq, send_seq;
    int outstanding; /* tagged publishes without their callback yet */
    bool failed;     /* a slot in [head_seq, send_seq) failed or was refused */
    /* thread-only */
    bool more;       /* Redis may hold entries not read yet */
    bool probing;    /* after a failure: one at a time until the head is acknowledged */
    int64_t retry_at;
    int64_t recover_since; /* mono ms a failure was first seen, 0 = none */
    uint64_t refused_hash;
    int refusals;
    int64_t gauge_at;
    vigil_replay *replay;     /* NULL: VIGIL_OUTBOX_REPLAY_MS=0 */
    bool supersede;           /* VIGIL_OUTBOX_SKIP_SUPERSEDED */
    /* the newest retained entry read per topic hash (seq + 1; 0 = none);
     * checked against the slot before use, so never cleared */
    uint64_t sup_seq[OUTBOX_SUP_BUCKETS];
    int64_t lost_seen;        /* vigil_mqtt_lost_at_ms when last looked */
    bool replay_due;          /* publish the replay ring before anything else */
    unsigned long long overflow_seen;

    atomic_ullong published;
};

/* ---- the connection: paho's client or the outbox's own link ------------ */

static int pub_window(const vigil_outbox *o)
{
    return o->link ? vigil_mqtt_links_window(o->link) : vigil_mqtt_window(o->mqtt);
}

static bool pub_connected(vigil_outbox *o)
{
    if (!o->link)
        return vigil_mqtt_connected(o->mqtt);
    /* Opens the further connections the broker's window calls for, once
     * the first is up; publishing waits until all of them are, or until
     * those the broker would not take are given up. */
    (void)vigil_mqtt_links_grow(o->link);
    if (vigil_mqtt_links_connected(o->link))
        return true;
    pthread_mutex_lock(&o->mu);
    bool idle = o->outstanding == 0;
    pthread_mutex_unlock(&o->mu);
    (void)vigil_mqtt_links_settle(o->link, idle);
    return vigil_mqtt_links_connected(o->link);
}

static int64_t pub_lost_at_ms(const vigil_outbox *o)
{
    return o->link ? vigil_mqtt_links_lost_at_ms(o->link) : vigil_mqtt_lost_at_ms(o->mqtt);
}

static int pub_batch(vigil_outbox *o, const vigil_pubmsg *msgs, int n, int timeout_ms)
{
    return o->link ? vigil_mqtt_links_publish_batch(o->link, msgs, n, timeout_ms)
                   : vigil_mqtt_publish_batch(o->mqtt, msgs, n, timeout_ms);
}

static int pub_tagged(vigil_outbox *o, const vigil_pubmsg *msg, uint64_t tag)
{
    return o->link ? vigil_mqtt_links_publish_tagged(o->link, msg, tag)
                   : vigil_mqtt_publish_tagged(o->mqtt, msg, tag);
}

/* The link sends what was queued in one write when told; paho sends each
 * message as it is handed over. */
static void pub_flush(vigil_outbox *o)
{
    if (o->link)
        vigil_mqtt_links_flush(o->link);
}

static void pub_set_ack_handler(vigil_outbox *o, vigil_mqtt_ack_fn fn, void *ctx)
{
    if (o->link)
        vigil_mqtt_links_set_ack_handler(o->link, fn, ctx);
    else
        vigil_mqtt_set_ack_handler(o->mqtt, fn, ctx);
}

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

/* Sleeps up to ms. A kick or a publish outcome ends the wait early only if
 * wake (not during a Redis backoff, so commits do not hammer a failing
 * Redis); the stop ends a wait that began before it. */
static void outbox_wait(vigil_outbox *o, int64_t ms, bool wake)
{
    struct timespec ts = mono_deadline(ms);
    pthread_mutex_lock(&o->mu);
    o->waiting = true;
    /* The stop ends a wait that began before it. Once stopping, the drain
     * waits too, for an acknowledgement or the poll: returning at once
     * there spun the thread on a full core until the window emptied. */
    bool stopping_before = o->stopping;
    while (!(o->stopping && !stopping_before) && !(wake && (o->kicked || o->acked_event))) {
        if (pthread_cond_timedwait(&o->cv, &o->mu, &ts) == ETIMEDOUT)
            break;
    }
    o->waiting = false;
    pthread_mutex_unlock(&o->mu);
}

/* Publishes the in-memory queue in batches. Returns true when it is empty;
 * unacknowledged messages go back to the front in their order. Ephemeral
 * messages (error events) are rare, so waiting per batch costs nothing. */
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
        int acked = pub_batch(o, msgs, k, timeout_ms);
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

/* ---- the window ------------------------------------------------------- */

static ob_slot *slot_of(vigil_outbox *o, uint64_t seq)
{
    return &o->ring[seq % OUTBOX_RING];
}

static void slot_clear(ob_slot *sl)
{
    vigil_outbox_raw_free(&sl->raw, 1);
    free(sl->topic);
    memset(sl, 0, sizeof *sl);
}

/* paho's thread, under the MQTT client's lock: record the outcome. Tags
 * are sequence numbers; one outside the current window belongs to a ring
 * that was reset and is ignored (its message counts only toward
 * outstanding). Wakes the thread when the window has half emptied, when
 * nothing is left in flight, or on a failure. */
static void on_ack(void *ctx, uint64_t tag, int outcome, int reason)
{
    vigil_outbox *o = ctx;
    pthread_mutex_lock(&o->mu);
    if (o->outstanding > 0)
        o->outstanding--;
    bool wake = false;
    if (tag >= o->head_seq && tag < o->send_seq) {
        ob_slot *sl = slot_of(o, tag);
        if (sl->seq == tag && sl->state == SLOT_PENDING) {
            if (outcome == VIGIL_PUB_ACKED) {
                sl->state = SLOT_ACKED;
            } else {
                sl->state = outcome == VIGIL_PUB_REFUSED ? SLOT_REFUSED : SLOT_FAILED;
                sl->reason = reason;
                o->failed = true;
                wake = true;
            }
        }
    }
    /* Wake the thread only when it waits for this: a failure, room in the
     * window for entries it holds unsent or for entries committed since it
     * last looked (a kick deferred while publishes were in flight, see
     * vigil_outbox_kick), or the last outcome while it drains at stop. Trimming what was acknowledged rides along with the
     * next read (or the short poll), not one round trip per PUBACK. */
    int window = pub_window(o);
    bool signal = false;
    if (wake || ((o->send_seq < o->read_seq || o->kicked) && o->outstanding <= window / 2) ||
        (o->outstanding == 0 && o->stopping)) {
        o->acked_event = true;
        signal = o->waiting;
    }
    pthread_mutex_unlock(&o->mu);
    /* Signalled after the unlock: a thread woken while this one still
     * held mu blocked on it at once, two more futex calls and a context
     * switch per wake. The flags it waits for were set under mu, so it
     * cannot miss them. */
    if (signal)
        pthread_cond_signal(&o->cv);
}

/* Forgets the ring: what Redis holds is read again from index 0 under new
 * sequence numbers. Used after any Redis error and after a failed publish. */
static void ring_reset(vigil_outbox *o)
{
    pthread_mutex_lock(&o->mu);
    for (uint64_t q = o->head_seq; q < o->read_seq; q++)
        slot_clear(slot_of(o, q));
    o->head_seq = o->send_seq = o->read_seq;
    o->failed = false;
    pthread_mutex_unlock(&o->mu);
    o->more = true;
}

static bool slot_done(const ob_slot *sl)
{
    return sl->state == SLOT_ACKED || sl->state == SLOT_SUPERSEDED;
}

/* Length of the done (acknowledged or superseded) prefix of the window.
 * Caller holds mu. */
static int acked_prefix_locked(vigil_outbox *o)
{
    int k = 0;
    for (uint64_t q = o->head_seq; q < o->send_seq && slot_done(slot_of(o, q)); q++)
        k++;
    return k;
}

/* A retained output is a snapshot: a subscriber that connects later gets
 * only the newest, and one that is connected loses nothing it needs when an
 * older snapshot still waiting here is skipped for a newer one of the same
 * topic. During a backlog (a broker that lets few messages be in flight,
 * mosquitto's 20 as shipped) that turns a room's or a persona's run of state
 * snapshots into its last one, so the window carries events and the latest
 * states. Only an entry not yet handed to the broker is skipped, only for a
 * retained entry read after it, and never while probing after a failure.
 * Caller holds mu; sl is the entry just read. */
static void mark_superseded(vigil_outbox *o, ob_slot *sl)
{
    if (!o->supersede || !sl->topic || !sl->retain || o->probing)
        return;
    uint64_t *b = &o->sup_seq[vigil_hash64(sl->topic, strlen(sl->topic)) % OUTBOX_SUP_BUCKETS];
    if (*b > 0) {
        uint64_t q = *b - 1;
        ob_slot *old = slot_of(o, q);
        if (q >= o->send_seq && q < sl->seq && old->seq == q && old->state == SLOT_UNSENT &&
            old->topic && old->retain && strcmp(old->topic, sl->topic) == 0)
            old->state = SLOT_SUPERSEDED;
    }
    *b = sl->seq + 1;
}

/* Entries handed to paho and still without an outcome. Caller holds mu. */
static bool any_pending_locked(vigil_outbox *o, int64_t *oldest_sent)
{
    bool any = false;
    for (uint64_t q = o->head_seq; q < o->send_seq; q++) {
        ob_slot *sl = slot_of(o, q);
        if (sl->state == SLOT_PENDING) {
            if (!any || sl->sent_ms < *oldest_sent)
                *oldest_sent = sl->sent_ms;
            any = true;
        }
    }
    return any;
}

/* Publishes an error event about a dead letter on sys/<service>/error
 * (kept in memory only, like every error event). */
static void report_dead_letter(vigil_outbox *o, const ob_slot *sl, const char *detail,
                               long long dl_len)
{
    char sample[1024], topic_safe[512];
    const char *body = sl->payload ? sl->payload : sl->raw.buf;
    size_t blen = sl->payload ? sl->plen : sl->raw.len;
    vigil_json_sample(body, blen, sample, sizeof sample);
    if (sl->topic)
        vigil_json_sample(sl->topic, strlen(sl->topic), topic_safe, sizeof topic_safe);
    else
        topic_safe[0] = '\0';
    int64_t now = vigil_now_ms();
    /* "err-<hash of the entry>-<now>": a dead letter is an occurrence, not
     * an input. It is reported once, after the move that cannot be undone
     * (nothing redelivers it), and an entry replayed and refused again is
     * a new occurrence that must not be deduped against the first. */
    char id[64];
    snprintf(id, sizeof id, "err-%016" PRIx64 "-%lld", vigil_hash64(sl->raw.buf, sl->raw.len),
             (long long)now);
    json_object *j = vigil_error_event_new(id, o->service, topic_safe, "dead_letter", detail,
                                           sample);
    json_object_object_add(j, "dead_letter_key", json_object_new_string(o->dl_key));
    json_object_object_add(j, "dead_letters", json_object_new_int64(dl_len));
    json_object_object_add(j, "ts", json_object_new_int64(now));
    char *s = vigil_json_dump(j);
    json_object_put(j);
    if (s)
        vigil_outbox_push_ephemeral(o, o->error_topic, s, false);
    free(s);
    vigil_log_kv(VIGIL_LOG_ERROR, "outbox: entry moved to the dead-letter list", "topic",
                 topic_safe, "detail", detail, "key", o->dl_key, NULL);
}

/* Moves the head entry (head_seq, all trimmed before it) to the dead-letter
 * list. Returns 0, or -1 on a Redis error or when the head was not that
 * entry (the ring is then reset). */
static int dead_letter_head(vigil_outbox *o, const char *detail)
{
    ob_slot *sl = slot_of(o, o->head_seq);
    long long n = vigil_outbox_store_dead_letter(o->s, &o->dl_script, o->dl_key, sl->raw.buf,
                                                 sl->raw.len);
    if (n <= 0) {
        ring_reset(o);
        return -1;
    }
    vigil_counter_add(M_DEAD, M_DEAD_HELP, NULL, 1);
    vigil_gauge_set(M_DEAD_LEN, M_DEAD_LEN_HELP, NULL, (double)n);
    report_dead_letter(o, sl, detail, n);
    /* The entry left the list: everything after it moves up one index,
     * which the ring follows by dropping its first slot. */
    pthread_mutex_lock(&o->mu);
    slot_clear(sl);
    o->head_seq++;
    if (o->send_seq < o->head_seq)
        o->send_seq = o->head_seq;
    pthread_mutex_unlock(&o->mu);
    o->refusals = 0;
    o->refused_hash = 0;
    return 0;
}

/* Trims the acknowledged prefix and reads more entries into the ring, in
 * one round trip. Returns 0, or -1 on a Redis error (ring reset). */
/* How far ahead of what it sends the thread reads: a window, or with
 * superseding on, half the ring, so that during a backlog a snapshot is seen
 * to be superseded by a newer one of its topic that far on. Each entry is
 * read once either way; a room of 200 whose state changes with every input
 * repeats only every 200 inputs (600 entries), beyond a window's reach. */
static int lookahead(const vigil_outbox *o, int window)
{
    return o->supersede && OUTBOX_RING / 2 > window ? OUTBOX_RING / 2 : window;
}

static int sync_redis(vigil_outbox *o, int window)
{
    pthread_mutex_lock(&o->mu);
    int k = acked_prefix_locked(o);
    uint64_t head = o->head_seq, read = o->read_seq, send = o->send_seq;
    pthread_mutex_unlock(&o->mu);
    int room = OUTBOX_RING - (int)(read - head - (uint64_t)k);
    int want = 0;
    /* Read when there may be more and the unsent part is short of the
     * lookahead. */
    if (o->more && (int)(read - send) < lookahead(o, window)) {
        want = room < OUTBOX_FETCH_MAX ? room : OUTBOX_FETCH_MAX;
        if (want < 0)
            want = 0;
    }
    if (k == 0 && want == 0)
        return 0;
    vigil_outbox_raw got[OUTBOX_FETCH_MAX];
    long offset = (long)(read - head) - k;
    int n = vigil_outbox_store_sync(o->s, k, offset, want, got);
    if (n < 0) {
        vigil_log_kv(VIGIL_LOG_WARN, "outbox: redis error; unacknowledged entries are read again",
                     "error", vigil_redis_last_error(o->r), NULL);
        ring_reset(o);
        return -1;
    }
    int64_t now = vigil_mono_ms();
    int acked = 0;
    pthread_mutex_lock(&o->mu);
    for (int i = 0; i < k; i++) {
        ob_slot *sl = slot_of(o, o->head_seq + (uint64_t)i);
        if (sl->state == SLOT_ACKED) {
            acked++;
            if (o->replay)
                vigil_replay_add(o->replay, &sl->raw, now); /* takes the text */
        }
        slot_clear(sl);
    }
    o->head_seq += (uint64_t)k;
    for (int i = 0; i < n; i++) {
        ob_slot *sl = slot_of(o, o->read_seq);
        memset(sl, 0, sizeof *sl);
        sl->seq = o->read_seq;
        sl->raw = got[i];
        if (!vigil_outbox_entry_decode(sl->raw.buf, sl->raw.len, &sl->topic, &sl->payload,
                                       &sl->plen, &sl->retain))
            sl->topic = NULL;
        mark_superseded(o, sl);
        o->read_seq++;
    }
    pthread_mutex_unlock(&o->mu);
    if (acked > 0) {
        vigil_counter_add(M_OUTPUTS, M_OUTPUTS_HELP, NULL, acked);
        atomic_fetch_add(&o->published, (unsigned long long)acked);
    }
    if (k > acked)
        vigil_counter_add(M_SUPERSEDED, M_SUPERSEDED_HELP, NULL, k - acked);
    if (acked > 0 && o->probing)
        o->probing = false; /* the head got through: full window again */
    unsigned long long over = vigil_replay_overflowed(o->replay);
    if (over != o->overflow_seen) {
        vigil_counter_add(M_REPLAY_OVERFLOW, M_REPLAY_OVERFLOW_HELP, NULL,
                          (double)(over - o->overflow_seen));
        o->overflow_seen = over;
    }
    if (want > 0 && n < want)
        o->more = false;
    return 0;
}

/* After a failure, once nothing is pending any more (or the oldest pending
 * waited too long): counts a broker refusal of the head, moves the head to
 * the dead-letter list after too many, then resets the ring, pauses and
 * probes. Returns -1 on a Redis error. */
static int recover(vigil_outbox *o, int64_t now)
{
    pthread_mutex_lock(&o->mu);
    ob_slot *h = o->head_seq < o->send_seq ? slot_of(o, o->head_seq) : NULL;
    int hstate = h ? h->state : SLOT_UNSENT;
    int reason = h ? h->reason : 0;
    int failed_n = 0;
    for (uint64_t q = o->head_seq; q < o->send_seq; q++)
        if (!slot_done(slot_of(o, q)) && slot_of(o, q)->state != SLOT_LOST)
            failed_n++;
    pthread_mutex_unlock(&o->mu);
    vigil_counter_add(M_FAILURES, M_FAILURES_HELP, NULL, failed_n);

    if (hstate == SLOT_REFUSED) {
        vigil_counter_add(M_REFUSED, M_REFUSED_HELP, NULL, 1);
        uint64_t hh = vigil_hash64(h->raw.buf, h->raw.len);
        if (hh != o->refused_hash) {
            o->refused_hash = hh;
            o->refusals = 0;
        }
        o->refusals++;
        vigil_log_kv(VIGIL_LOG_WARN, "outbox: the broker refused a message", "topic",
                     h->topic ? h->topic : "", "reason",
                     reason ? vigil_mqtt_reason_string(reason) : "not publishable", NULL);
        if (o->refusals >= o->dead_letter_after) {
            char detail[256];
            snprintf(detail, sizeof detail, "refused %d times in a row: %s", o->refusals,
                     reason ? vigil_mqtt_reason_string(reason) : "not publishable");
            if (dead_letter_head(o, detail) != 0)
                return -1;
        }
    } else if (hstate == SLOT_ACKED || hstate == SLOT_PENDING || hstate == SLOT_LOST ||
               hstate == SLOT_SUPERSEDED) {
        o->refusals = 0; /* the head itself is fine (or still unresolved) */
    }
    ring_reset(o);
    o->probing = true;
    o->retry_at = now + o->retry_ms;
    o->recover_since = 0;
    return 0;
}

/* Hands unsent entries to paho while the window has room. An undecodable
 * entry is a barrier until it is the head, and then a dead letter. */
static int send_window(vigil_outbox *o, int window, int64_t now)
{
    for (;;) {
        pthread_mutex_lock(&o->mu);
        /* superseded entries are done without a publish or room in the window */
        while (!o->failed && o->send_seq < o->read_seq &&
               slot_of(o, o->send_seq)->state == SLOT_SUPERSEDED)
            o->send_seq++;
        int limit = o->probing ? 1 : window;
        bool can = !o->failed && o->send_seq < o->read_seq && o->outstanding < limit &&
                   !(o->probing && o->send_seq > o->head_seq);
        uint64_t seq = o->send_seq;
        ob_slot *sl = slot_of(o, seq);
        bool at_head = seq == o->head_seq;
        if (can && sl->topic) {
            sl->state = SLOT_PENDING;
            sl->sent_ms = now;
            o->outstanding++;
            o->send_seq++;
        }
        pthread_mutex_unlock(&o->mu);
        if (!can)
            return 0;
        if (!sl->topic) {
            if (!at_head)
                return 0; /* wait until everything before it is acknowledged */
            if (dead_letter_head(o, "undecodable outbox entry") != 0)
                return -1;
            continue;
        }
        vigil_pubmsg msg = { sl->topic, sl->payload, sl->plen, sl->retain };
        int rc = pub_tagged(o, &msg, seq);
        if (rc != VIGIL_PUB_SEND_OK) {
            pthread_mutex_lock(&o->mu);
            if (o->outstanding > 0)
                o->outstanding--;
            if (sl->seq == seq && sl->state == SLOT_PENDING) {
                sl->state = rc == VIGIL_PUB_SEND_REFUSED ? SLOT_REFUSED : SLOT_FAILED;
                o->failed = true;
            }
            pthread_mutex_unlock(&o->mu);
            return 0;
        }
    }
}

/* One pass over the window. Returns -1 on a Redis error. */
static int pump(vigil_outbox *o)
{
    int window = pub_window(o);
    if (window > OUTBOX_RING / 2)
        window = OUTBOX_RING / 2;
    int64_t now = vigil_mono_ms();
    if (sync_redis(o, window) != 0)
        return -1;

    pthread_mutex_lock(&o->mu);
    bool failed = o->failed;
    int64_t oldest = 0;
    bool pending = any_pending_locked(o, &oldest);
    pthread_mutex_unlock(&o->mu);
    /* A message paho keeps without an outcome for this long (a reconnect
     * that never came back, a lost callback): publish it again. Never a
     * dead letter. */
    if (pending && now - oldest > OUTBOX_PUBLISH_TIMEOUT_MS) {
        pthread_mutex_lock(&o->mu);
        o->failed = failed = true;
        o->outstanding = 0;
        pending = false;
        pthread_mutex_unlock(&o->mu);
        vigil_log(VIGIL_LOG_WARN, "outbox: no acknowledgement for %d ms; publishing again",
                  OUTBOX_PUBLISH_TIMEOUT_MS);
    }
    if (failed) {
        if (o->recover_since == 0)
            o->recover_since = now;
        /* Let every outcome of the window arrive first, so what is
         * published again starts from the first unacknowledged entry. */
        if (pending && now - o->recover_since < OUTBOX_PUBLISH_TIMEOUT_MS)
            return 0;
        if (sync_redis(o, 0) != 0) /* trim what did get through */
            return -1;
        return recover(o, now);
    }
    if (now < o->retry_at)
        return 0;
    int rc = send_window(o, window, now);
    pub_flush(o);
    return rc;
}

/* Is there something this thread can do right now without waiting? */
static bool work_ready(vigil_outbox *o)
{
    int window = pub_window(o);
    pthread_mutex_lock(&o->mu);
    int limit = o->probing ? 1 : window;
    /* An undecodable entry waits until it is the head (a barrier). */
    bool unsent = o->send_seq < o->read_seq &&
                  (slot_of(o, o->send_seq)->topic || o->send_seq == o->head_seq);
    bool r = !o->failed && vigil_mono_ms() >= o->retry_at &&
             ((unsent && o->outstanding < limit && !o->probing) ||
              (o->more && (int)(o->read_seq - o->send_seq) < lookahead(o, window) &&
               o->read_seq - o->head_seq < OUTBOX_RING / 2));
    pthread_mutex_unlock(&o->mu);
    return r;
}

/* Something acknowledged waits to be trimmed, or is still in flight. */
static bool window_busy(vigil_outbox *o)
{
    pthread_mutex_lock(&o->mu);
    bool b = o->send_seq > o->head_seq;
    pthread_mutex_unlock(&o->mu);
    return b;
}

static bool window_empty(vigil_outbox *o)
{
    pthread_mutex_lock(&o->mu);
    bool e = o->head_seq == o->read_seq;
    pthread_mutex_unlock(&o->mu);
    return e && !o->more;
}

static void refresh_gauges(vigil_outbox *o, int64_t now)
{
    if (now < o->gauge_at)
        return;
    o->gauge_at = now + OUTBOX_GAUGE_REFRESH_MS;
    long long n = vigil_outbox_store_llen(o->s, o->dl_key);
    if (n >= 0)
        vigil_gauge_set(M_DEAD_LEN, M_DEAD_LEN_HELP, NULL, (double)n);
    pthread_mutex_lock(&o->mu);
    int out = o->outstanding;
    pthread_mutex_unlock(&o->mu);
    vigil_gauge_set(M_INFLIGHT, M_INFLIGHT_HELP, NULL, out);
}

/* Publishes again, oldest first, what the broker acknowledged in the
 * window before the connection was lost (outbox_replay.h). Returns true
 * when all of it was acknowledged again; what was is dropped. */
static bool replay_publish(vigil_outbox *o, int timeout_ms)
{
    size_t total = vigil_replay_count(o->replay);
    if (total == 0)
        return true;
    vigil_log(VIGIL_LOG_INFO,
              "outbox: publishing again %zu outputs acknowledged just before the connection was "
              "lost (the broker may not have saved them)", total);
    while (vigil_replay_count(o->replay) > 0) {
        vigil_pubmsg msgs[OUTBOX_BATCH];
        char *topics[OUTBOX_BATCH];
        size_t at[OUTBOX_BATCH]; /* replay index of each message */
        size_t n = vigil_replay_count(o->replay), taken = 0;
        int k = 0;
        for (; taken < n && k < OUTBOX_BATCH; taken++) {
            const vigil_outbox_raw *raw = vigil_replay_at(o->replay, taken);
            const char *payload;
            size_t plen;
            bool retain;
            /* It was published once, so it decodes; if not, skip it. */
            if (!vigil_outbox_entry_decode(raw->buf, raw->len, &topics[k], &payload, &plen, &retain))
                continue;
            msgs[k] = (vigil_pubmsg){ topics[k], payload, plen, retain };
            at[k] = taken;
            k++;
        }
        int acked = k > 0 ? pub_batch(o, msgs, k, timeout_ms) : 0;
        if (acked < 0)
            acked = 0;
        for (int i = 0; i < k; i++)
            free(topics[i]);
        if (acked > 0)
            vigil_counter_add(M_REPLAYED, M_REPLAYED_HELP, NULL, acked);
        vigil_replay_drop(o->replay, acked == k ? taken : at[acked]);
        if (acked < k)
            return false;
    }
    return true;
}

/* After a lost connection: entries the broker acknowledged and this thread
 * has not trimmed yet (trimming rides on the next read or the short poll)
 * are no safer than those in the replay ring, and they never get there in
 * time: they are trimmed only after the loss was seen. Mark them to be
 * published again; recover() resets the ring, so they are read again from
 * Redis and go out in order, ahead of everything after them. */
static void requeue_acked(vigil_outbox *o)
{
    int n = 0;
    pthread_mutex_lock(&o->mu);
    for (uint64_t q = o->head_seq; q < o->send_seq; q++) {
        ob_slot *sl = slot_of(o, q);
        if (sl->state == SLOT_ACKED) {
            sl->state = SLOT_LOST;
            n++;
        }
    }
    if (n > 0)
        o->failed = true;
    pthread_mutex_unlock(&o->mu);
    if (n > 0) {
        vigil_counter_add(M_REPLAYED, M_REPLAYED_HELP, NULL, n);
        vigil_log(VIGIL_LOG_INFO,
                  "outbox: publishing again %d outputs acknowledged but not yet trimmed when the "
                  "connection was lost", n);
    }
}

/* Tracks the connection for the replay ring: after a loss it keeps what was
 * acknowledged in the window before it and makes the replay due; while
 * connected it lets older entries go. A loss is seen by its time, not by
 * the flag: this thread may be away (a Redis backoff) for the whole of a
 * broker restart and never see the connection down. */
static void replay_track(vigil_outbox *o, bool connected, int64_t now)
{
    if (!o->replay)
        return;
    int64_t lost = pub_lost_at_ms(o);
    if (lost != o->lost_seen) {
        o->lost_seen = lost;
        requeue_acked(o);
        if (!o->replay_due) /* else the earlier loss's window still waits */
            vigil_replay_expire(o->replay, lost > 0 && lost <= now ? lost : now);
        o->replay_due = vigil_replay_count(o->replay) > 0;
        return;
    }
    if (connected && !o->replay_due)
        vigil_replay_expire(o->replay, now);
}

static void *outbox_main(void *arg)
{
    vigil_outbox *o = arg;
    vigil_thread_name("vigil-outbox");
    int redis_attempt = 0;
    bool redis_backoff = false;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        bool stopping = o->stopping;
        int64_t deadline = o->drain_deadline;
        if (o->kicked)
            o->more = true;
        o->kicked = false;
        if (o->kick_flag)
            atomic_store(o->kick_flag, 0);
        o->acked_event = false;
        bool eph = o->count > 0;
        pthread_mutex_unlock(&o->mu);
        int64_t now = vigil_mono_ms();
        if (stopping && now >= deadline)
            break;

        bool connected = pub_connected(o);
        replay_track(o, connected, now);
        if (!connected) {
            outbox_wait(o, stopping ? OUTBOX_STOP_POLL_MS : OUTBOX_IDLE_WAIT_MS, true);
            if (stopping)
                vigil_sleep_ms(OUTBOX_STOP_POLL_MS, NULL);
            continue;
        }
        if (o->replay_due) {
            int timeout = OUTBOX_PUBLISH_TIMEOUT_MS;
            if (stopping && deadline - now < timeout)
                timeout = (int)(deadline - now);
            if (replay_publish(o, timeout > 0 ? timeout : 0))
                o->replay_due = false;
            else if (!stopping)
                continue; /* not all went through: again when connected */
        }
        bool eph_empty = true;
        if (eph) {
            int timeout = OUTBOX_PUBLISH_TIMEOUT_MS;
            if (stopping && deadline - now < timeout)
                timeout = (int)(deadline - now);
            eph_empty = drain_ephemeral(o, timeout);
        }
        if (!vigil_redis_ensure(o->r) || pump(o) != 0) {
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
        refresh_gauges(o, now);
        if (stopping && eph_empty && window_empty(o))
            break;
        if (work_ready(o))
            continue;
        /* Sleep until a kick, an acknowledgement that freed half the
         * window or a failure, the end of a retry pause, or the idle poll
         * (which also finds entries committed by anyone who did not kick). */
        int64_t wait = stopping || window_busy(o) ? OUTBOX_STOP_POLL_MS : OUTBOX_IDLE_WAIT_MS;
        if (o->retry_at > now && o->retry_at - now < wait)
            wait = o->retry_at - now;
        outbox_wait(o, wait, eph_empty);
        if (vigil_mono_ms() - now >= wait)
            o->more = true;
    }
    return NULL;
}

/* Reads one positive setting (already validated by the common config at
 * start; a bad value here falls back to the default with a warning). */
static int64_t env_setting(const char *name, int64_t def, int64_t min, int64_t max)
{
    int64_t v = def;
    char err[256];
    if (vigil_env_int64(name, def, min, max, &v, err, sizeof err) != 0) {
        vigil_log(VIGIL_LOG_WARN, "outbox: %s; using %lld", err, (long long)def);
        v = def;
    }
    return v;
}

static vigil_outbox *outbox_start(const vigil_redis_addr *addr, const vigil_store_config *scfg,
                                  vigil_mqtt *mqtt, vigil_mqtt_links *link)
{
    if (!addr || !scfg || (!mqtt && !link))
        return NULL;
    vigil_outbox *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->ring = calloc(OUTBOX_RING, sizeof *o->ring);
    if (!o->ring)
        goto fail;
    o->mqtt = mqtt;
    o->link = link;
    const char *service = scfg->service ? scfg->service : "";
    snprintf(o->service, sizeof o->service, "%s", service);
    snprintf(o->error_topic, sizeof o->error_topic, "sys/%s/error", service);
    if (vigil_deadletter_key(scfg->prefix ? scfg->prefix : "vigil:", service, o->dl_key,
                             sizeof o->dl_key) != 0)
        goto fail;
    o->dl_script = (vigil_script)VIGIL_SCRIPT(VIGIL_LUA_DEAD_LETTER);
    o->retry_ms = env_setting("VIGIL_OUTBOX_RETRY_MS", OUTBOX_RETRY_MS_DEFAULT, 1, 600000);
    o->dead_letter_after = (int)env_setting("VIGIL_OUTBOX_DEAD_LETTER_AFTER",
                                            OUTBOX_DEAD_LETTER_AFTER_DEFAULT, 1, 1000000);
    int64_t replay_ms = env_setting("VIGIL_OUTBOX_REPLAY_MS", OUTBOX_REPLAY_MS_DEFAULT, 0, 600000);
    o->supersede = env_setting("VIGIL_OUTBOX_SKIP_SUPERSEDED", 1, 0, 1) == 1;
    if (replay_ms > 0 && !(o->replay = vigil_replay_new(replay_ms, OUTBOX_REPLAY_MAX)))
        goto fail;
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
    o->more = true;
    pub_set_ack_handler(o, on_ack, o);
    int rc = pthread_create(&o->thread, NULL, outbox_main, o);
    if (rc != 0) {
        vigil_log(VIGIL_LOG_ERROR, "outbox: cannot start thread: %s", strerror(rc));
        pub_set_ack_handler(o, NULL, NULL);
        pthread_mutex_destroy(&o->mu);
        pthread_cond_destroy(&o->cv);
        goto fail;
    }
    return o;
fail:
    vigil_replay_free(o->replay);
    if (o->s)
        vigil_store_free(o->s);
    if (o->r)
        vigil_redis_free(o->r);
    free(o->ring);
    free(o);
    return NULL;
}

vigil_outbox *vigil_outbox_start(const vigil_redis_addr *addr, const vigil_store_config *scfg,
                                 vigil_mqtt *mqtt)
{
    return mqtt ? outbox_start(addr, scfg, mqtt, NULL) : NULL;
}

vigil_outbox *vigil_outbox_start_on_links(const vigil_redis_addr *addr,
                                          const vigil_store_config *scfg, vigil_mqtt_links *link)
{
    return link ? outbox_start(addr, scfg, NULL, link) : NULL;
}

void vigil_outbox_kick(vigil_outbox *o)
{
    if (!o)
        return;
    /* Called after every commit: a futex wake only when the thread sleeps
     * with nothing in flight and was not kicked already. While publishes
     * are in flight, their acknowledgements wake it (on_ack) and it reads
     * what the commits added meanwhile in one go: one wake for many
     * commits instead of one per commit (a failure or the short poll
     * wakes it if no acknowledgement comes). */
    bool signal = false;
    pthread_mutex_lock(&o->mu);
    if (!o->kicked) {
        o->kicked = true;
        signal = o->waiting && o->outstanding == 0;
    }
    pthread_mutex_unlock(&o->mu);
    if (signal) /* after the unlock, as in on_ack */
        pthread_cond_signal(&o->cv);
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

void vigil_outbox_set_kick_flag(vigil_outbox *o, atomic_int *flag)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->kick_flag = flag;
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
    /* After this no acknowledgement callback runs or starts with o. */
    pub_set_ack_handler(o, NULL, NULL);

    size_t left = o->count;
    while (o->head) {
        eph_msg *e = o->head;
        o->head = e->next;
        eph_free(e);
    }
    if (left > 0)
        vigil_log(VIGIL_LOG_WARN, "outbox stopped with %zu ephemeral messages unsent", left);
    for (uint64_t q = o->head_seq; q < o->read_seq; q++)
        slot_clear(slot_of(o, q));
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    vigil_replay_free(o->replay);
    vigil_store_free(o->s);
    vigil_redis_free(o->r);
    free(o->ring);
    free(o);
}
