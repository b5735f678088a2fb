/* api_messages.c - GET /api/rooms/{room}/messages?since=&limit=: the
 * room's log as chat-router keeps it; a since past its newest message
 * pages on from that message, said in `ahead`. The log's name comes from
 * chat-router's core library (chat_log_name, shared with the vigil CLI),
 * never spelled here; entries are read-only for the gateway. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/stream_reads.h>
#include "adapter.h"
#include "chat.h"

#define DEFAULT_LIMIT 100
#define MAX_LIMIT 1000

/* ?limit=: 0 ok, -1 not a count of 1 or more, -2 more than MAX_LIMIT (a
 * limit refusal, told and counted as such). */
static int parse_limit(const char *s, int *out)
{
    if (!s || !*s) {
        *out = DEFAULT_LIMIT;
        return 0;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || v < 1)
        return -1;
    if (v > MAX_LIMIT || errno == ERANGE)
        return -2;
    *out = (int)v;
    return 0;
}

void gateway_api_messages_get(gateway *g, vigil_http_req *req, const char *room)
{
    const char *since_s = vigil_http_req_query(req, "since");
    gw_pos since;
    int limit;
    if (since_s && *since_s && gw_pos_parse(since_s, &since) != 0)
        return gateway_error(req, 400, "since: a log id as returned in log_id (ms-seq)");
    int lrc = parse_limit(vigil_http_req_query(req, "limit"), &limit);
    if (lrc != 0) {
        char detail[96];
        snprintf(detail, sizeof detail, "limit: 1-%d messages a page (page on with since=<next>)",
                 MAX_LIMIT);
        return gateway_refuse(req, 400, lrc == -2 ? "messages_page" : NULL, detail);
    }
    char name[CHAT_ID_MAX + 16], key[512], from[64], p[48];
    chat_log_name(room, name, sizeof name);
    snprintf(key, sizeof key, "%s%s", g->chat_log_prefix, name);
    bool forward = since_s && *since_s;
    if (forward) {
        gw_pos_format(since, p, sizeof p);
        snprintf(from, sizeof from, "(%s", p);
    }
    vigil_runtime_conn *conn = gw_pool_take(g);
    vigil_stream_entry *ents = NULL;
    size_t n = 0;
    vigil_read_result rc =
        conn ? vigil_stream_range(vigil_runtime_conn_redis(conn), key, forward ? from : "+",
                                  forward ? "+" : "-", limit, !forward, &ents, &n)
             : VIGIL_READ_UNREACHABLE;
    /* an empty page after since: is since past the room log's newest
     * message (the log was reset, or lost its latest entries)? Then next
     * is that message, else a client would page on from since and never
     * see what the log holds before it */
    gw_pos newest = {0, 0};
    bool ahead = false;
    if (rc == VIGIL_READ_OK && forward && n == 0) {
        if (gw_log_newest(vigil_runtime_conn_redis(conn), key, &newest) != 0)
            rc = VIGIL_READ_UNREACHABLE;
        else
            ahead = gw_log_ahead(since, newest);
    }
    if (rc != VIGIL_READ_OK) {
        vigil_runtime_conn_close(conn);
        vigil_stream_entries_free(ents, n);
        return gateway_error(req, 503, "cannot read the room log (Redis unreachable)");
    }
    gw_pool_put(g, conn);
    /* Newest first from XREVRANGE: the answer is oldest first either way. */
    json_object *msgs = json_object_new_array();
    for (size_t k = 0; k < n; k++) {
        const vigil_stream_entry *e = &ents[forward ? k : n - 1 - k];
        json_object *m = json_tokener_parse(e->value);
        if (!m || !json_object_is_type(m, json_type_object)) {
            json_object_put(m);
            continue;
        }
        json_object_object_add(m, "log_id", json_object_new_string(e->id));
        json_object_array_add(msgs, m);
    }
    vigil_stream_entries_free(ents, n);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "room", json_object_new_string(room));
    size_t len = json_object_array_length(msgs);
    json_object_object_add(o, "messages", msgs);
    if (len) {
        json_object *last = json_object_array_get_idx(msgs, len - 1);
        json_object_object_add(o, "next", json_object_get(json_object_object_get(last, "log_id")));
    } else if (ahead) {
        /* since is past the newest message: page on from the log's head,
         * and say so (as the streams' `ahead` frame does) */
        char nx[48];
        gw_pos_format(newest, nx, sizeof nx);
        json_object_object_add(o, "next", json_object_new_string(nx));
        json_object_object_add(o, "ahead", gw_ahead_notice(since, newest, GW_AHEAD_PAGE));
        gateway_limit_count("log_position");
    } else {
        /* nothing (more) to read: page on from where this page started, or
         * from the log's beginning ("0-0": every message yet to come) */
        json_object_object_add(o, "next", json_object_new_string(forward ? since_s : "0-0"));
    }
    vigil_http_respond_json(req, 200, o);
    json_object_put(o);
}
