/* hub.c - the live fan-out of the Theater log to SSE clients.
 *
 * One thread reads the log stream (XREAD BLOCK) and, under the hub lock,
 * hands each entry to every client whose filters match: a copy of the
 * frame goes on the client's bounded queue. The frame is made once per
 * entry and shared by reference count (under the hub lock), so a fan-out
 * to many clients costs a pointer each, not a copy. A client whose queue
 * is full falls behind: the reader stops queuing for it, and once its
 * queue has gone out its own thread reads what it missed from the log
 * (gw_log_catch_up), a queue's worth at a time, until it is level with
 * the reader again. A burst longer than the queue (a Redis blip, a busy
 * machine) therefore costs a keeping-up client nothing. A client that is
 * behind and takes nothing for VIGIL_GATEWAY_CLIENT_STALL_MS (a stalled
 * reader) is dropped: its stream ends with a `dropped` frame (after the
 * frame it was being sent), and it reconnects with Last-Event-ID. So the
 * reader never waits for a client and no client waits for another. When
 * the log goes back under the reader (reset, its new ids below the
 * position read), the reader starts again from the new log's start and
 * every client gets an `ahead` frame first (start_over). Each client's reader
 * runs on its own connection thread (http_api.h) and sleeps on its own
 * condition variable until a frame or its next ping is due. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vigil/clock.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include <vigil/stream_reads.h>
#include "adapter.h"

/* At most this many log entries per read, and never more than a quarter
 * of a client's queue: the hub lock is released between reads, so a
 * client that keeps up drains its queue between two reads, and a burst
 * read at once (say after a Redis blip) cannot fill a keeping-up
 * client's queue in one go and get it dropped. */
#define READ_COUNT 512
#define READ_BLOCK_MS 500
/* A reader blocked on its condition variable cannot see its peer close
 * the socket; an SSE comment line (invisible to EventSource) this often
 * when idle makes the write fail and frees a vanished client's thread. */
#define PROBE_MS 2000
/* How often, at most, the reader looks whether the log went back under
 * it (one XINFO STREAM): after every read that found nothing (so at
 * least every READ_BLOCK_MS when idle, which is when a log that went
 * back shows: nothing after the position read), and this often when
 * busy. */
#define LOOK_MS 500
/* A stream opened just after start, before the reader has read the log's
 * end once, waits this long for it rather than being refused: /readyz
 * says ready as soon as the broker and Redis are connected, and a client
 * let in by it (or by a load balancer) would otherwise get a 503. */
#define GW_JOIN_WAIT_MS 3000

/* A frame shared by the queues of every client it goes to. refs is only
 * touched under the hub lock. */
typedef struct gw_frame {
    int refs;
    size_t len;
    char data[];
} gw_frame;

struct gw_client {
    gw_hub *hub;
    gw_filter_set filters;
    gw_sse_style style; /* named frames, or unnamed ones for onmessage */
    gw_pos min_pos; /* entries at or before this are not for it (backlog covers them) */
    gw_frame **q;
    int qhead, qn, qcap;
    gw_frame *cur; /* the frame being written */
    size_t cur_off;
    char *backlog;
    size_t backlog_len, backlog_off;
    gw_pos queued_pos; /* the last entry queued (or covered by the backlog) */
    bool behind;       /* its queue filled: entries after queued_pos come from the log */
    int64_t full_since;  /* monotonic ms its queue filled */
    int64_t progress_ms; /* monotonic ms it last took bytes */
    bool dropped;
    gw_frame *farewell; /* the `dropped` frame, sent once the frame being written is */
    bool told;      /* the farewell went out: the stream ends cleanly */
    int64_t next_ping; /* monotonic ms */
    int64_t next_probe; /* monotonic ms: a comment line, to notice a vanished peer */
    pthread_cond_t cond;
    gw_client *prev, *next;
};

static void gauge_clients(gw_hub *h)
{
    vigil_gauge_set("vigil_gateway_sse_clients", "connected SSE clients", NULL, h->nclients);
}

/* Takes text (malloc'd; freed here) into a frame of one reference. */
static gw_frame *frame_wrap(char *text, size_t len)
{
    gw_frame *f = text ? malloc(sizeof *f + len + 1) : NULL;
    if (f) {
        f->refs = 1;
        f->len = len;
        memcpy(f->data, text, len + 1);
    }
    free(text);
    return f;
}

static void frame_release(gw_frame *f)
{
    if (f && --f->refs == 0)
        free(f);
}

static void queue_clear(gw_client *c)
{
    for (int i = 0; i < c->qn; i++)
        frame_release(c->q[(c->qhead + i) % c->qcap]);
    c->qn = 0;
    c->qhead = 0;
}

/* Called with the hub lock held. farewell (taken; NULL = none, e.g. out
 * of memory) is the client's last frame. */
static void drop_client(gw_client *c, const char *why, gw_frame *farewell)
{
    if (c->dropped) {
        frame_release(farewell);
        return;
    }
    if (c->behind) {
        c->behind = false;
        c->hub->nbehind--;
    }
    c->dropped = true;
    c->farewell = farewell;
    queue_clear(c);
    vigil_counter_add("vigil_gateway_sse_dropped_total", "SSE clients dropped for falling behind",
                      NULL, 1);
    vigil_log(VIGIL_LOG_INFO, "sse: dropping a client: %s", why);
    pthread_cond_signal(&c->cond);
}

/* A client behind with a full queue that took nothing for
 * VIGIL_GATEWAY_CLIENT_STALL_MS: it is told in a last `dropped` frame and
 * counted. */
static void drop_stalled_client(gw_client *c)
{
    size_t len = 0;
    char *f = gw_sse_dropped_frame(c->style, c->qcap, c->hub->stall_ms, &len);
    drop_client(c, "its queue is full and it read nothing (a stalled reader)",
                frame_wrap(f, len));
    gateway_limit_count("sse_client_queue");
}

/* Called with the hub lock held, after each read of the log: drops the
 * clients behind that stalled. Most reads find nobody behind. */
static void sweep_stalled(gw_hub *h)
{
    if (!h->nbehind)
        return;
    int64_t now = vigil_mono_ms();
    for (gw_client *c = h->head; c; c = c->next)
        if (c->behind && gw_client_stalled(now, c->full_since, c->progress_ms, h->stall_ms))
            drop_stalled_client(c);
}

static void dispatch(gw_hub *h, const char *id, const char *entry)
{
    gw_pos pos;
    char topic[GW_TOPIC_MAX], event[96];
    const char *data;
    if (gw_pos_parse(id, &pos) != 0)
        return;
    h->last = pos;
    if (gw_log_entry_split(entry, topic, sizeof topic, event, sizeof event, &data) != 0)
        return;
    /* the entry's frame in each style, made once for every client of it */
    gw_frame *frames[2] = {NULL, NULL};
    for (gw_client *c = h->head; c; c = c->next) {
        if (c->dropped || c->behind || gw_pos_cmp(pos, c->min_pos) <= 0 ||
            !gw_filters_match(&c->filters, topic, event))
            continue;
        if (c->qn == c->qcap) {
            c->behind = true; /* the rest comes from the log (gw_client_read) */
            c->full_since = vigil_mono_ms();
            h->nbehind++;
            continue;
        }
        gw_frame **frame = &frames[c->style];
        if (!*frame) {
            size_t flen = 0;
            char *text = gw_sse_entry_frame(c->style, id, event, data, &flen);
            if (!(*frame = frame_wrap(text, flen))) {
                drop_client(c, "out of memory", NULL);
                continue;
            }
        }
        (*frame)->refs++;
        c->q[(c->qhead + c->qn) % c->qcap] = *frame;
        c->qn++;
        c->queued_pos = pos;
        pthread_cond_signal(&c->cond);
    }
    frame_release(frames[GW_SSE_NAMED]);
    frame_release(frames[GW_SSE_UNNAMED]);
}

/* Called with the hub lock held when the log went back under the reader
 * (gw_log_went_back: flushed, or Redis restarted without it, and its new
 * ids start below the position read): reading on after that position
 * would keep every open stream silent until the log got back there, for
 * as long as the clock that went back takes. The reader starts again
 * from the new log's start, and every client is told first, in an
 * `ahead` frame (GW_AHEAD_LIVE) naming the position read and the new
 * log's newest id, then gets the new log's entries. What was queued for
 * it from the old log still goes out before the notice, unless its queue
 * is full (those frames go: the notice says the old log is gone). A
 * client catching up from the old log stops (catch_up sees the epoch). */
static void start_over(gw_hub *h, const gw_log_state *now)
{
    char was[48], top[48];
    gw_pos_format(h->last, was, sizeof was);
    gw_pos_format(now->top, top, sizeof top);
    vigil_log(VIGIL_LOG_WARN,
              "sse: the log went back under the fan-out (its newest id %s, read up to %s: "
              "reset or replaced); reading it from its start and telling every stream",
              top, was);
    gw_frame *frames[2] = {NULL, NULL};
    for (gw_client *c = h->head; c; c = c->next) {
        if (c->dropped)
            continue;
        if (c->behind) {
            c->behind = false;
            h->nbehind--;
        }
        gw_frame **frame = &frames[c->style];
        if (!*frame) {
            size_t flen = 0;
            char *text = gw_sse_ahead_frame(c->style, h->last, now->top, GW_AHEAD_LIVE, &flen);
            if (!(*frame = frame_wrap(text, flen))) {
                drop_client(c, "out of memory", NULL);
                continue;
            }
        }
        if (c->qn == c->qcap)
            queue_clear(c);
        (*frame)->refs++;
        c->q[(c->qhead + c->qn) % c->qcap] = *frame;
        c->qn++;
        c->min_pos = (gw_pos){0, 0};
        c->queued_pos = c->min_pos;
        gateway_limit_count("log_position");
        pthread_cond_signal(&c->cond);
    }
    frame_release(frames[GW_SSE_NAMED]);
    frame_release(frames[GW_SSE_UNNAMED]);
    h->last = (gw_pos){0, 0};
    h->epoch++;
}

/* Looks at the log (XINFO STREAM) and starts over when it went back under
 * the reader (start_over); *went_back says so (what was just read then
 * came after the old position and is read again from the start). 0, or
 * -1 (Redis unreachable: the next read looks again). */
static int look_back(gw_hub *h, vigil_redis *r, bool *went_back)
{
    gw_log_state now;
    *went_back = false;
    if (gw_log_state_read(r, h->key, &now) != 0)
        return -1;
    pthread_mutex_lock(&h->mu);
    *went_back = gw_log_went_back(h->last, h->have_seen ? &h->seen : NULL, &now);
    if (*went_back)
        start_over(h, &now);
    h->seen = now;
    h->have_seen = true;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

/* Reads the log's last id (where live delivery starts) and what the log
 * is (the first look of gw_log_went_back). 0 ok, -1 retry. */
static int read_tail(gw_hub *h, vigil_redis *r)
{
    gw_pos p;
    gw_log_state seen;
    if (gw_log_newest(r, h->key, &p) != 0 || gw_log_state_read(r, h->key, &seen) != 0)
        return -1;
    pthread_mutex_lock(&h->mu);
    h->last = p;
    h->seen = seen;
    h->have_seen = true;
    h->have_last = true;
    pthread_cond_broadcast(&h->have_last_cond);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static void *hub_main(void *arg)
{
    gw_hub *h = arg;
    vigil_runtime_conn *conn = vigil_runtime_conn_open(h->rt);
    vigil_redis *r = conn ? vigil_runtime_conn_redis(conn) : NULL;
    int attempt = 0;
    while (r && !atomic_load(&h->stop) && read_tail(h, r) != 0)
        vigil_sleep_ms(vigil_backoff_ms(attempt++, 100, 2000), NULL);
    attempt = 0;
    int64_t next_look = vigil_mono_ms() + LOOK_MS;
    while (r && !atomic_load(&h->stop)) {
        char last[48];
        pthread_mutex_lock(&h->mu);
        gw_pos_format(h->last, last, sizeof last);
        pthread_mutex_unlock(&h->mu);
        vigil_stream_entry *ents;
        size_t n;
        int count = h->qcap / 4 < READ_COUNT ? h->qcap / 4 : READ_COUNT;
        if (vigil_stream_read_after(r, h->key, last, count > 0 ? count : 1, READ_BLOCK_MS, &ents,
                                    &n) !=
            VIGIL_READ_OK) {
            vigil_sleep_ms(vigil_backoff_ms(attempt++, 100, 2000), NULL);
            continue;
        }
        attempt = 0;
        bool went_back = false;
        if ((n == 0 || vigil_mono_ms() >= next_look) && look_back(h, r, &went_back) == 0)
            next_look = vigil_mono_ms() + LOOK_MS;
        if (!went_back) {
            pthread_mutex_lock(&h->mu);
            for (size_t i = 0; i < n; i++)
                dispatch(h, ents[i].id, ents[i].value);
            sweep_stalled(h);
            pthread_mutex_unlock(&h->mu);
        }
        vigil_stream_entries_free(ents, n);
    }
    vigil_runtime_conn_close(conn);
    return NULL;
}

int gw_hub_start(gw_hub *h, struct gateway *g, vigil_runtime *rt, const char *key, int qcap,
                 int max_streams, int64_t ping_ms, int64_t stall_ms)
{
    h->g = g;
    h->stall_ms = stall_ms;
    h->rt = rt;
    snprintf(h->key, sizeof h->key, "%s", key);
    h->qcap = qcap;
    h->max_streams = max_streams;
    h->ping_ms = ping_ms;
    atomic_store(&h->stop, 0);
    if (pthread_create(&h->thread, NULL, hub_main, h) != 0)
        return -1;
    h->running = true;
    gauge_clients(h);
    return 0;
}

void gw_hub_stop(gw_hub *h)
{
    atomic_store(&h->stop, 1);
    pthread_mutex_lock(&h->mu);
    pthread_cond_broadcast(&h->have_last_cond);
    for (gw_client *c = h->head; c; c = c->next)
        pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&h->mu);
    if (h->running)
        pthread_join(h->thread, NULL);
    h->running = false;
}

gw_client *gw_hub_join(gw_hub *h, const gw_filter_set *fs, const gw_pos *since, gw_pos *from,
                       bool *full)
{
    *full = false;
    gw_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->q = calloc((size_t)h->qcap, sizeof *c->q);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int crc = pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (!c->q || crc != 0) {
        free(c->q);
        free(c);
        return NULL;
    }
    c->hub = h;
    c->filters = *fs;
    c->style = gw_filters_style(fs);
    c->qcap = h->qcap;
    c->next_ping = vigil_mono_ms() + h->ping_ms;
    c->next_probe = vigil_mono_ms() + PROBE_MS;
    c->progress_ms = vigil_mono_ms();
    pthread_mutex_lock(&h->mu);
    if (!h->have_last && !atomic_load(&h->stop)) {
        struct timespec until = vigil_mono_deadline(GW_JOIN_WAIT_MS);
        while (!h->have_last && !atomic_load(&h->stop) &&
               pthread_cond_timedwait(&h->have_last_cond, &h->mu, &until) == 0)
            ;
    }
    bool ready = !atomic_load(&h->stop) && h->have_last;
    *full = ready && h->nclients >= h->max_streams;
    if (!ready || *full) {
        pthread_mutex_unlock(&h->mu);
        pthread_cond_destroy(&c->cond);
        free(c->q);
        free(c);
        return NULL;
    }
    *from = h->last;
    c->min_pos = h->last;
    if (since && gw_pos_cmp(*since, h->last) > 0)
        c->min_pos = *since;
    c->queued_pos = c->min_pos;
    c->next = h->head;
    if (h->head)
        h->head->prev = c;
    h->head = c;
    h->nclients++;
    gauge_clients(h);
    pthread_mutex_unlock(&h->mu);
    return c;
}

void gw_client_set_backlog(gw_client *c, char *buf, size_t len)
{
    pthread_mutex_lock(&c->hub->mu);
    free(c->backlog);
    c->backlog = buf;
    c->backlog_len = len;
    c->backlog_off = 0;
    pthread_mutex_unlock(&c->hub->mu);
}

static size_t take(char *dst, size_t max, const char *src, size_t len, size_t *off)
{
    size_t n = len - *off < max ? len - *off : max;
    memcpy(dst, src + *off, n);
    *off += n;
    return n;
}

/* Called with the hub lock held by a client behind whose queue has gone
 * out: reads the next entries it missed, (queued_pos, the reader's last],
 * a queue's worth at most, from the log without the lock, and makes them
 * its backlog. When they reach the reader's position the client is level
 * again and the reader queues for it from there. 0, or -1 when the log
 * cannot be read (the client is then cut and reconnects). */
static int catch_up(gw_client *c)
{
    gw_hub *h = c->hub;
    gw_pos since = c->queued_pos, upto = h->last, reached;
    unsigned epoch = h->epoch;
    vigil_jtext b = {0};
    pthread_mutex_unlock(&h->mu);
    int rc = gw_log_catch_up(h->g, since, upto, (size_t)c->qcap, &c->filters, &b, &reached);
    pthread_mutex_lock(&h->mu);
    /* the log went back meanwhile: what was read is moot, start_over told
     * the client and set where it reads from */
    bool moot = c->dropped || h->epoch != epoch;
    if (rc != 0 || moot) {
        free(b.s);
        return moot ? 0 : rc;
    }
    free(c->backlog);
    c->backlog = b.s;
    c->backlog_len = b.n;
    c->backlog_off = 0;
    c->queued_pos = reached;
    if (gw_pos_cmp(reached, h->last) >= 0) {
        c->behind = false;
        h->nbehind--;
    }
    return 0;
}

/* Blocks until there is something to send: backlog first, then queued
 * frames, a ping when one is due; ends the stream when the client was
 * dropped (after its `dropped` frame; without one, out of memory, the
 * connection is cut) or the gateway stops. Fills buf with as many queued
 * frames as fit: a client that fell behind catches up in one write and
 * one lock, rather than one of each per frame. */
ssize_t gw_client_read(void *cls, char *buf, size_t max)
{
    gw_client *c = cls;
    gw_hub *h = c->hub;
    size_t out = 0;
    ssize_t end = 0; /* what to return when nothing was taken */
    pthread_mutex_lock(&h->mu);
    while (out < max) {
        if (c->backlog && c->backlog_off < c->backlog_len) {
            out += take(buf + out, max - out, c->backlog, c->backlog_len, &c->backlog_off);
            continue;
        }
        if (c->cur) {
            out += take(buf + out, max - out, c->cur->data, c->cur->len, &c->cur_off);
            if (c->cur_off == c->cur->len) {
                frame_release(c->cur);
                c->cur = NULL;
            }
            continue;
        }
        if (c->dropped && c->farewell) {
            c->cur = c->farewell;
            c->cur_off = 0;
            c->farewell = NULL;
            c->told = true;
            continue;
        }
        if (c->dropped) {
            end = c->told ? VIGIL_HTTP_STREAM_END : VIGIL_HTTP_STREAM_ERROR;
            break;
        }
        if (atomic_load(&h->stop)) {
            end = VIGIL_HTTP_STREAM_END;
            break;
        }
        if (c->qn) {
            c->cur = c->q[c->qhead];
            c->cur_off = 0;
            c->qhead = (c->qhead + 1) % c->qcap;
            c->qn--;
            continue;
        }
        if (out > 0)
            break; /* send what there is; wait only with nothing to send */
        if (c->behind) {
            if (catch_up(c) != 0) {
                drop_client(c, "cannot read the log to catch up (Redis unreachable)", NULL);
                end = VIGIL_HTTP_STREAM_ERROR;
                break;
            }
            continue;
        }
        int64_t now = vigil_mono_ms();
        if (now >= c->next_ping) {
            json_object *data = json_object_new_object();
            if (data)
                json_object_object_add(data, "ts", json_object_new_int64(vigil_now_ms()));
            size_t len = 0;
            char *text = gw_sse_notice_frame(c->style, "ping", data, &len);
            c->cur = frame_wrap(text, len);
            c->cur_off = 0;
            c->next_ping = now + h->ping_ms;
            if (!c->cur) {
                end = VIGIL_HTTP_STREAM_ERROR;
                break;
            }
            continue;
        }
        if (now >= c->next_probe) {
            static const char probe[] = ":\n\n";
            c->next_probe = now + PROBE_MS;
            out = max < sizeof probe - 1 ? max : sizeof probe - 1;
            memcpy(buf, probe, out);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t wait = (c->next_ping < c->next_probe ? c->next_ping : c->next_probe) - now;
        ts.tv_sec += wait / 1000;
        ts.tv_nsec += (wait % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cond, &h->mu, &ts);
    }
    if (out > 0) {
        c->progress_ms = vigil_mono_ms();
        c->next_probe = c->progress_ms + PROBE_MS;
    }
    pthread_mutex_unlock(&h->mu);
    return out > 0 ? (ssize_t)out : end;
}

void gw_client_leave(void *cls)
{
    gw_client *c = cls;
    gw_hub *h = c->hub;
    pthread_mutex_lock(&h->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->nclients--;
    if (c->behind)
        h->nbehind--;
    gauge_clients(h);
    queue_clear(c);
    frame_release(c->cur);
    frame_release(c->farewell);
    pthread_mutex_unlock(&h->mu);
    pthread_cond_destroy(&c->cond);
    free(c->backlog);
    free(c->q);
    free(c);
}
