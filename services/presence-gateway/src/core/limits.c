/* limits.c - the rules of the limits that cut a live stream, and what the
 * stream says when one does: how many streams the gateway serves, when a
 * resuming client asks for entries the log no longer keeps (the `trimmed`
 * frame) or for a position past its newest entry (the `ahead` frame, also
 * sent to open streams when the log went back under them), and
 * the last frame of a client too slow to keep up (`dropped`).
 * Every limit of the gateway is listed in README.md ("Limits"). */
#include <stdio.h>
#include "gateway.h"

/* The share of VIGIL_GATEWAY_MAX_CLIENTS kept free of streams: an eighth,
 * and at least a few, because the listener still counts a closed
 * connection until its thread is reaped (a client's requests one after
 * another can briefly hold two or three). */
#define REQUEST_RESERVE_DIVISOR 8
#define REQUEST_RESERVE_MIN 4

int gw_stream_cap(int64_t max_clients)
{
    int64_t reserve = max_clients / REQUEST_RESERVE_DIVISOR;
    if (reserve < REQUEST_RESERVE_MIN)
        reserve = REQUEST_RESERVE_MIN;
    int64_t cap = max_clients - reserve;
    return cap < 1 ? 1 : (int)cap;
}

/* The data of a notice about a log position: {since, <what>: at, limit,
 * detail}, where `what` names the log's end the position was measured
 * against (oldest, newest). NULL when out of memory. */
static json_object *position_notice(const char *since, const char *what, const char *at,
                                    const char *limit, const char *detail)
{
    json_object *d = json_object_new_object();
    if (d) {
        json_object_object_add(d, "since", json_object_new_string(since));
        json_object_object_add(d, what, json_object_new_string(at));
        json_object_object_add(d, "limit", json_object_new_string(limit));
        json_object_object_add(d, "detail", json_object_new_string(detail));
    }
    return d;
}

bool gw_log_trimmed(gw_pos since, const gw_log_state *log)
{
    gw_pos zero = {0, 0};
    bool dropped = log->added < 0 || (uint64_t)log->added > log->length;
    return dropped && log->length > 0 && gw_pos_cmp(since, zero) != 0 &&
           gw_pos_cmp(since, log->first) < 0;
}

bool gw_log_went_back(gw_pos read, const gw_log_state *seen, const gw_log_state *now)
{
    if (gw_pos_cmp(now->top, read) < 0)
        return true;
    bool replaced = seen && seen->added >= 0 && now->added >= 0 && now->added < seen->added;
    return replaced && now->length > 0 && gw_pos_cmp(now->first, read) <= 0;
}

char *gw_sse_trimmed_frame(gw_sse_style st, gw_pos since, gw_pos oldest, int64_t log_maxlen,
                           size_t *len)
{
    char s[48], o[48], detail[320];
    gw_pos_format(since, s, sizeof s);
    gw_pos_format(oldest, o, sizeof o);
    snprintf(detail, sizeof detail,
             "the log keeps about %lld entries (VIGIL_GATEWAY_LOG_MAXLEN): whatever was logged "
             "after %s and before %s is no longer kept; ?snapshot=1 gives the current states, "
             "GET /api/rooms/{r}/messages each room's messages",
             (long long)log_maxlen, s, o);
    return gw_sse_notice_frame(st, "trimmed", position_notice(s, "oldest", o, "log_entries", detail),
                               len);
}

bool gw_log_ahead(gw_pos since, gw_pos newest)
{
    return gw_pos_cmp(since, newest) > 0;
}

json_object *gw_ahead_notice(gw_pos since, gw_pos newest, gw_ahead_kind kind)
{
    char s[48], n[48], detail[640];
    gw_pos_format(since, s, sizeof s);
    gw_pos_format(newest, n, sizeof n);
    static const char after[] =
        "whatever a reset lost is gone: ?snapshot=1 gives the current states, "
        "GET /api/rooms/{r}/messages each room's messages";
    if (kind == GW_AHEAD_LIVE)
        snprintf(detail, sizeof detail,
                 "the log was reset under this stream: its newest entry (%s) is before the "
                 "position %s the stream had reached (Redis flushed, restarted without its data "
                 "or restored from an older copy, and its ids start lower: a clock that went "
                 "back); the stream goes on from the new log's start; %s",
                 n, s, after);
    else if (kind == GW_AHEAD_RESUME)
        snprintf(detail, sizeof detail,
                 "the position %s is past the newest entry of the log (%s): that log lost its "
                 "latest entries or was reset (Redis restarted without them, flushed or restored "
                 "from an older copy), or the id is not one it gave; the stream goes on from the "
                 "log's head (after the newest entry) instead of waiting for the log to reach "
                 "it; what was logged after a reset before now is not replayed; %s",
                 s, n, after);
    else
        snprintf(detail, sizeof detail,
                 "since %s is past the newest message of the room log (%s): that log lost its "
                 "latest entries or was reset (Redis restarted without them, flushed or restored "
                 "from an older copy), or the id is not one it gave; next is the newest message, "
                 "so paging on reads what is logged from now on; without since= the page holds "
                 "the latest messages",
                 s, n);
    return position_notice(s, "newest", n, "log_position", detail);
}

char *gw_sse_ahead_frame(gw_sse_style st, gw_pos since, gw_pos newest, gw_ahead_kind kind,
                         size_t *len)
{
    return gw_sse_notice_frame(st, "ahead", gw_ahead_notice(since, newest, kind), len);
}

char *gw_sse_dropped_frame(gw_sse_style st, int64_t queue, int64_t stall_ms, size_t *len)
{
    char detail[320];
    snprintf(detail, sizeof detail,
             "%lld events waited for this client (VIGIL_GATEWAY_CLIENT_QUEUE) and it read nothing "
             "for %lld ms (VIGIL_GATEWAY_CLIENT_STALL_MS): the stream ends here; reconnect with "
             "Last-Event-ID to catch up from the log",
             (long long)queue, (long long)stall_ms);
    json_object *d = json_object_new_object();
    if (d) {
        json_object_object_add(d, "limit", json_object_new_string("sse_client_queue"));
        json_object_object_add(d, "queue", json_object_new_int64(queue));
        json_object_object_add(d, "detail", json_object_new_string(detail));
    }
    return gw_sse_notice_frame(st, "dropped", d, len);
}

bool gw_client_stalled(int64_t now, int64_t full_since, int64_t progress_ms, int64_t stall_ms)
{
    int64_t since = full_since > progress_ms ? full_since : progress_ms;
    return now - since >= stall_ms;
}
