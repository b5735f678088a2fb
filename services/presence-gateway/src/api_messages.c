/* api_messages.c - GET /api/rooms/{room}/messages?since=&limit=: the
 * room's log as chat-router keeps it. The log's name comes from
 * chat-router's core library (chat_log_name, shared with the vigil CLI),
 * never spelled here; entries are read-only for the gateway. */
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "adapter.h"
#include "chat.h"

#define DEFAULT_LIMIT 100
#define MAX_LIMIT 1000

static int parse_limit(const char *s, int *out)
{
    if (!s || !*s) {
        *out = DEFAULT_LIMIT;
        return 0;
    }
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > MAX_LIMIT)
        return -1;
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
    if (parse_limit(vigil_http_req_query(req, "limit"), &limit) != 0)
        return gateway_error(req, 400, "limit: 1-1000");
    char name[CHAT_ID_MAX + 16], key[512], cnt[16], from[64], p[48];
    chat_log_name(room, name, sizeof name);
    snprintf(key, sizeof key, "%s%s", g->chat_log_prefix, name);
    snprintf(cnt, sizeof cnt, "%d", limit);
    bool forward = since_s && *since_s;
    const char *argv[6];
    if (forward) {
        gw_pos_format(since, p, sizeof p);
        snprintf(from, sizeof from, "(%s", p);
        const char *a[] = {"XRANGE", key, from, "+", "COUNT", cnt};
        memcpy(argv, a, sizeof a);
    } else {
        const char *a[] = {"XREVRANGE", key, "+", "-", "COUNT", cnt};
        memcpy(argv, a, sizeof a);
    }
    vigil_runtime_conn *conn = gw_pool_take(g);
    redisReply *rep = conn ? vigil_redis_commandv(vigil_runtime_conn_redis(conn), 6, argv, NULL) : NULL;
    if (!rep || rep->type != REDIS_REPLY_ARRAY) {
        if (rep)
            freeReplyObject(rep);
        vigil_runtime_conn_close(conn);
        return gateway_error(req, 503, "cannot read the room log (Redis unreachable)");
    }
    gw_pool_put(g, conn);
    json_object *msgs = json_object_new_array();
    size_t n = rep->elements;
    for (size_t k = 0; k < n; k++) {
        redisReply *e = rep->element[forward ? k : n - 1 - k];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[1]->type != REDIS_REPLY_ARRAY || e->element[1]->elements < 2)
            continue;
        json_object *m = json_tokener_parse(e->element[1]->element[1]->str);
        if (!m || !json_object_is_type(m, json_type_object)) {
            json_object_put(m);
            continue;
        }
        json_object_object_add(m, "log_id", json_object_new_string(e->element[0]->str));
        json_object_array_add(msgs, m);
    }
    freeReplyObject(rep);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "room", json_object_new_string(room));
    size_t len = json_object_array_length(msgs);
    json_object_object_add(o, "messages", msgs);
    if (len) {
        json_object *last = json_object_array_get_idx(msgs, len - 1);
        json_object_object_add(o, "next", json_object_get(json_object_object_get(last, "log_id")));
    } else if (forward) {
        json_object_object_add(o, "next", json_object_new_string(since_s));
    }
    vigil_http_respond_json(req, 200, o);
    json_object_put(o);
}
