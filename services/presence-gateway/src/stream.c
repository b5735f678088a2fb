/* stream.c - GET /api/autonomous/deliberations/live and GET /api/events:
 * Server-Sent Events out of the Theater log.
 *
 * A client starts after Last-Event-ID (header) or ?since= (a log
 * position; 0 = the whole log), else at the live end. It joins the hub
 * first, then reads the backlog (since, join position] from the log
 * itself, so together they miss nothing still in the log and repeat
 * nothing. Its first frame is `connected`, whose id is the position it
 * starts after; with ?snapshot=1 the kept
 * latest state of every matching state topic follows (frames without id),
 * before the backlog and the live entries. A resume from a position the
 * log no longer keeps (it trimmed entries after it) is told in a
 * `trimmed` frame before the backlog;
 * one from past the log's newest entry (the log lost its latest entries or
 * was reset) starts from the log's head instead of waiting for the log to
 * get there, told in an `ahead` frame, and `connected` carries the head.
 * /api/events names every frame (event: line); the deliberations stream
 * names none, so an onmessage-only client gets them all, each
 * JSON with its name as `type` (gw_sse_style). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/json.h>
#include <vigil/jtext.h>
#include <vigil/metrics.h>
#include <vigil/stream_reads.h>
#include "adapter.h"

#define PAGE 500
/* Retry-After of a stream refused at the stream cap: a slot frees when a
 * client leaves, which no one can predict; a few seconds spreads retries. */
#define STREAMS_RETRY_S "5"

/* When the log trimmed entries after since (gw_log_trimmed: since is
 * older than the oldest entry the log keeps, and the log dropped entries;
 * VIGIL_GATEWAY_LOG_MAXLEN trims them), appends the `trimmed` frame and
 * counts it. A log that never dropped one (fresh, or recreated after a
 * reset) gets none: everything after since is still there. 0, or -1
 * (Redis unreachable, out of memory). */
static int note_trimmed(gateway *g, vigil_redis *r, gw_pos since, gw_sse_style st,
                        vigil_jtext *b)
{
    gw_log_state log;
    if (gw_log_state_read(r, g->hub.key, &log) != 0)
        return -1;
    if (!gw_log_trimmed(since, &log))
        return 0;
    size_t fl;
    char *frame = gw_sse_trimmed_frame(st, since, log.first, g->cfg.log_maxlen, &fl);
    if (!frame)
        return -1; /* out of memory: a 503 rather than a silent gap */
    vigil_jtext_put(b, frame, fl);
    free(frame);
    gateway_limit_count("log_entries");
    return 0;
}

/* Appends the `ahead` frame (a resume past the log's newest entry,
 * served from the head) and counts it. 0, or -1 out of memory. */
static int note_ahead(gw_sse_style st, gw_pos asked, gw_pos newest, vigil_jtext *b)
{
    size_t fl;
    char *frame = gw_sse_ahead_frame(st, asked, newest, GW_AHEAD_RESUME, &fl);
    if (!frame)
        return -1;
    vigil_jtext_put(b, frame, fl);
    free(frame);
    gateway_limit_count("log_position");
    return 0;
}

int gw_log_newest(vigil_redis *r, const char *key, gw_pos *out)
{
    char id[VIGIL_STREAM_ID_MAX];
    if (vigil_stream_last_id(r, key, id, sizeof id) != VIGIL_READ_OK)
        return -1;
    gw_pos p = {0, 0};
    if (id[0] && gw_pos_parse(id, &p) != 0)
        return -1; /* never a Redis stream id: not read as an empty log */
    *out = p;
    return 0;
}

/* A missing or unparsable id reads as 0-0; the log's ids are Redis'
 * own, so only a key that is no log has other ones. */
static gw_pos pos_or_zero(const char *id)
{
    gw_pos p = {0, 0};
    if (!id[0] || gw_pos_parse(id, &p) != 0)
        p = (gw_pos){0, 0};
    return p;
}

int gw_log_state_read(vigil_redis *r, const char *key, gw_log_state *out)
{
    vigil_stream_info in;
    if (vigil_stream_read_info(r, key, &in) != VIGIL_READ_OK)
        return -1;
    out->first = pos_or_zero(in.first_id);
    out->top = pos_or_zero(in.top_id);
    out->length = in.length;
    out->added = in.entries_added;
    return 0;
}

/* Where a client resuming after *since starts: unchanged while since is
 * within the log; past the log's newest entry (gw_log_ahead) it becomes
 * that entry (0-0 for an empty log), *ahead is set and *newest says where.
 * Read here, not from the hub's last position, which may lag the log by
 * a read: a position another replica just sent is never taken as ahead.
 * 0, or -1 (Redis unreachable). */
static int resume_position(gateway *g, gw_pos *since, bool *ahead, gw_pos *newest)
{
    vigil_runtime_conn *conn = gw_pool_take(g);
    if (!conn)
        return -1;
    if (gw_log_newest(vigil_runtime_conn_redis(conn), g->hub.key, newest) != 0) {
        vigil_runtime_conn_close(conn);
        return -1;
    }
    gw_pool_put(g, conn);
    *ahead = gw_log_ahead(*since, *newest);
    if (*ahead)
        *since = *newest;
    return 0;
}

int gw_log_catch_up(gateway *g, gw_pos since, gw_pos upto, size_t max_entries,
                    const gw_filter_set *fs, vigil_jtext *b, gw_pos *reached)
{
    *reached = upto;
    vigil_runtime_conn *conn = gw_pool_take(g);
    if (!conn)
        return -1;
    vigil_redis *r = vigil_runtime_conn_redis(conn);
    char from[64], to[48];
    char p[48];
    gw_pos_format(since, p, sizeof p);
    snprintf(from, sizeof from, "(%s", p);
    gw_pos_format(upto, to, sizeof to);
    gw_sse_style st = gw_filters_style(fs);
    int rc = note_trimmed(g, r, since, st, b);
    size_t left = max_entries;
    while (rc == 0 && left > 0) {
        vigil_stream_entry *ents;
        size_t n, page = left < PAGE ? left : PAGE;
        if (vigil_stream_range(r, g->hub.key, from, to, page, false, &ents, &n) != VIGIL_READ_OK) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            char topic[GW_TOPIC_MAX], event[96];
            const char *data;
            if (gw_log_entry_split(ents[i].value, topic, sizeof topic, event, sizeof event, &data) ==
                    0 &&
                gw_filters_match(fs, topic, event)) {
                size_t fl;
                char *frame = gw_sse_entry_frame(st, ents[i].id, event, data, &fl);
                if (frame)
                    vigil_jtext_put(b, frame, fl);
                free(frame);
            }
        }
        if (n)
            snprintf(from, sizeof from, "(%s", ents[n - 1].id);
        left -= n;
        if (n && left == 0)
            gw_pos_parse(ents[n - 1].id, reached); /* stopped short of upto */
        vigil_stream_entries_free(ents, n);
        if (n < page)
            break;
    }
    if (rc == 0)
        gw_pool_put(g, conn);
    else
        vigil_runtime_conn_close(conn);
    return b->oom ? -1 : rc;
}

/* Appends the kept latest entry of every state topic that matches, as
 * frames without id (they are states, not log positions). A kept key of
 * another type is skipped; only an unreachable Redis fails the read. */
static int read_snapshot(gateway *g, const gw_filter_set *fs, vigil_jtext *b)
{
    vigil_runtime_conn *conn = gw_pool_take(g);
    if (!conn)
        return -1;
    vigil_redis *r = vigil_runtime_conn_redis(conn);
    char **members;
    size_t nm;
    if (vigil_read_members(r, g->snap_set, &members, &nm) != VIGIL_READ_OK) {
        vigil_runtime_conn_close(conn);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < nm && rc == 0; i++) {
        if (!gw_filters_match(fs, members[i], "state"))
            continue;
        char key[sizeof g->snap_prefix + GW_TOPIC_MAX];
        int kl = snprintf(key, sizeof key, "%s%s", g->snap_prefix, members[i]);
        if (kl < 0 || (size_t)kl >= sizeof key)
            continue; /* longer than any topic the gateway keeps */
        char *v;
        if (vigil_read_string(r, key, &v, NULL, NULL, 0) == VIGIL_READ_UNREACHABLE) {
            rc = -1;
            break;
        }
        char topic[GW_TOPIC_MAX], event[96];
        const char *data;
        if (v && gw_log_entry_split(v, topic, sizeof topic, event, sizeof event, &data) == 0 &&
            gw_filters_match(fs, topic, event)) {
            size_t fl;
            char *frame = gw_sse_entry_frame(gw_filters_style(fs), NULL, event, data, &fl);
            if (frame)
                vigil_jtext_put(b, frame, fl);
            free(frame);
        }
        free(v);
    }
    vigil_strings_free(members, nm);
    if (rc == 0)
        gw_pool_put(g, conn);
    else
        vigil_runtime_conn_close(conn);
    return b->oom ? -1 : rc;
}

/* 503 at the stream cap: the listener would otherwise reach
 * VIGIL_GATEWAY_MAX_CLIENTS and reset every new connection (POSTs and
 * health checks too) without an answer. */
static void refuse_stream(gateway *g, vigil_http_req *req)
{
    char detail[256];
    snprintf(detail, sizeof detail,
             "%d SSE streams are open, the most this gateway serves (VIGIL_GATEWAY_MAX_CLIENTS "
             "%lld less an eighth, at least 4, kept for requests); retry later",
             g->hub.max_streams, (long long)g->cfg.max_clients);
    vigil_http_req_add_header(req, "Retry-After", STREAMS_RETRY_S);
    gateway_refuse(req, 503, "sse_streams", detail);
}

void gateway_api_stream(gateway *g, vigil_http_req *req, bool council_live)
{
    gw_filter_set fs;
    char err[200];
    const char *limit;
    if (council_live) {
        gw_filters_council_live(&fs);
    } else if (gw_filters_parse(vigil_http_req_query(req, "topics"), &fs, &limit, err,
                                sizeof err) != 0) {
        gateway_refuse(req, 400, limit, err);
        return;
    }
    const char *since_s = vigil_http_req_header(req, "Last-Event-ID");
    if (!since_s || !*since_s)
        since_s = vigil_http_req_query(req, "since");
    gw_pos since = {0, 0};
    bool have_since = since_s && *since_s;
    if (have_since && gw_pos_parse(since_s, &since) != 0) {
        gateway_error(req, 400, "Last-Event-ID / since must be a log position (as sent in id:)");
        return;
    }
    gw_pos asked = since, newest = {0, 0};
    bool ahead = false;
    if (have_since && resume_position(g, &since, &ahead, &newest) != 0) {
        gateway_error(req, 503, "cannot read the log (Redis unreachable)");
        return;
    }
    gw_pos from, reached;
    bool full;
    gw_client *c = gw_hub_join(&g->hub, &fs, have_since ? &since : NULL, &from, &full);
    if (!c && full) {
        refuse_stream(g, req);
        return;
    }
    if (!c) {
        gateway_error(req, 503, "the stream is not ready (Redis not reached yet, or shutting down)");
        return;
    }
    vigil_jtext b = {0};
    char pos[48];
    gw_pos_format(from, pos, sizeof pos);
    json_object *hello = json_object_new_object();
    json_object_object_add(hello, "position", json_object_new_string(pos));
    json_object *topics = json_object_new_array();
    for (int i = 0; i < fs.n; i++)
        json_object_array_add(topics, json_object_new_string(fs.f[i]));
    json_object_object_add(hello, "topics", topics);
    json_object_object_add(hello, "ping_ms", json_object_new_int64(g->cfg.ping_ms));
    json_object_object_add(hello, "ts", json_object_new_int64(vigil_now_ms()));
    size_t hl;
    char *hf = gw_sse_notice_frame(gw_filters_style(&fs), "connected", hello, &hl);
    static const char retry[] = "retry: 2000\n\n";
    vigil_jtext_put(&b, retry, sizeof retry - 1);
    /* connected carries the position the client has everything up to
     * (since when it resumes, else where live starts) as its id, so a
     * client that sees no entry before it reconnects still sends
     * Last-Event-ID and misses nothing */
    char idl[64];
    gw_pos_format(have_since ? since : from, pos, sizeof pos);
    int il = snprintf(idl, sizeof idl, "id: %s\n", pos);
    if (hf && il > 0 && (size_t)il < sizeof idl)
        vigil_jtext_put(&b, idl, (size_t)il);
    if (hf)
        vigil_jtext_put(&b, hf, hl);
    free(hf);
    const char *snap = vigil_http_req_query(req, "snapshot");
    bool want_snap = snap && strcmp(snap, "1") == 0;
    bool told = !ahead || note_ahead(gw_filters_style(&fs), asked, newest, &b) == 0;
    if (!hf || (want_snap && read_snapshot(g, &fs, &b) != 0) || !told ||
        (have_since && gw_pos_cmp(since, from) < 0 &&
         gw_log_catch_up(g, since, from, SIZE_MAX, &fs, &b, &reached) != 0)) {
        free(b.s);
        gw_client_leave(c);
        gateway_error(req, 503, "cannot read the log (Redis unreachable)");
        return;
    }
    gw_client_set_backlog(c, b.s, b.n);
    vigil_counter_add("vigil_gateway_sse_connections_total", "SSE connections accepted", NULL, 1);
    unsigned idle = (unsigned)(g->cfg.ping_ms / 1000 * 2 + 10);
    vigil_http_respond_stream(req, 200, "text/event-stream; charset=utf-8", gw_client_read, c,
                            gw_client_leave, idle);
}
