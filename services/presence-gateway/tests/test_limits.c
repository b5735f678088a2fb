/* test_limits.c - the gateway's limits that live in the core (README,
 * "Limits"): each refuses with a detail and names itself (the label it is
 * counted under), exactly past its bound and not at it; the stream cap;
 * the `trimmed`, `ahead` and `dropped` frames a stream gets when a limit
 * cuts it or its position is past the log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <vigil/json.h>
#include "gateway.h"

/* A JSON array of n ids "<prefix><i>". malloc'd. */
static char *id_array(const char *prefix, int n)
{
    size_t cap = (size_t)n * 24 + 3;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t k = (size_t)snprintf(s, cap, "[");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(s + k, cap - k, "%s\"%s%d\"", i ? "," : "", prefix, i);
    snprintf(s + k, cap - k, "]");
    return s;
}

/* Parses head arg tail, e.g. ("{\"rooms\":", ids, "}"). */
static json_object *parse(const char *head, const char *arg, const char *tail)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s%s", head, arg, tail);
    json_object *o = json_tokener_parse(buf);
    assert_non_null(o);
    return o;
}

static void test_topic_filters(void **s)
{
    (void)s;
    gw_filter_set fs;
    char err[200], spec[600] = "";
    const char *limit = "unset";
    for (int i = 0; i < GW_FILTERS_MAX; i++)
        strcat(spec, i ? ",room/x/state" : "room/x/state");
    assert_int_equal(gw_filters_parse(spec, &fs, &limit, err, sizeof err), 0);
    assert_null(limit);
    assert_int_equal(fs.n, GW_FILTERS_MAX);
    strcat(spec, ",room/x/state");
    assert_int_equal(gw_filters_parse(spec, &fs, &limit, err, sizeof err), -1);
    assert_string_equal(limit, "topic_filters");
    assert_non_null(strstr(err, "at most 16 topic filters"));
    /* a family counts as the filters it stands for: personas is 4 */
    assert_int_equal(gw_filters_parse("personas,personas,personas,personas,rooms", &fs, &limit, err,
                                      sizeof err), -1);
    assert_string_equal(limit, "topic_filters");
    /* one filter: 255 bytes pass, 256 are refused as a limit */
    char f[GW_TOPIC_MAX + 2];
    memset(f, 'a', sizeof f);
    memcpy(f, "room/", 5);
    memcpy(f + GW_TOPIC_MAX - 7, "/state", 7); /* 255 bytes */
    assert_int_equal(gw_filters_parse(f, &fs, &limit, err, sizeof err), 0);
    memset(f, 'a', sizeof f);
    memcpy(f, "room/", 5);
    memcpy(f + GW_TOPIC_MAX - 6, "/state", 7); /* 256 bytes */
    assert_int_equal(gw_filters_parse(f, &fs, &limit, err, sizeof err), -1);
    assert_string_equal(limit, "topic_filter_bytes");
}

static void test_rooms_per_session(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    assert_int_equal(c.max_rooms, GW_MAX_ROOMS);
    const char *rooms[GW_MAX_ROOMS];
    gw_beat b;
    char err[200];
    const char *limit;
    char *ids = id_array("r", GW_MAX_ROOMS);
    json_object *o = parse("{\"session\":\"t\",\"rooms\":", ids, "}");
    assert_int_equal(
        gw_req_presence(o, "joel", &c, 1, &b, rooms, GW_MAX_ROOMS, &limit, err, sizeof err),
        GW_REQ_OK);
    assert_null(limit);
    assert_int_equal(b.nrooms, GW_MAX_ROOMS);
    json_object_put(o);
    free(ids);
    ids = id_array("r", GW_MAX_ROOMS + 1);
    o = parse("{\"session\":\"t\",\"rooms\":", ids, "}");
    assert_int_equal(
        gw_req_presence(o, "joel", &c, 1, &b, rooms, GW_MAX_ROOMS, &limit, err, sizeof err),
        GW_REQ_BAD);
    assert_string_equal(limit, "rooms_per_session");
    assert_string_equal(err, "field 'rooms': at most 32 rooms a session (33 given)");
    json_object_put(o);
    free(ids);
}

static void test_text_bytes(void **s)
{
    (void)s;
    char err[200];
    const char *limit;
    json_object *pl, *o = parse("{\"text\":\"", "0123456789", "\"}");
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 10, &pl, &limit, err, sizeof err),
                     GW_REQ_OK);
    assert_null(limit);
    json_object_put(pl);
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 9, &pl, &limit, err, sizeof err),
                     GW_REQ_BAD);
    assert_string_equal(limit, "text_bytes");
    assert_string_equal(err, "field 'text': longer than 9 bytes");
    json_object_put(o);
    o = parse("{\"question_id\":\"q1\",\"answer\":\"", "0123456789", "\"}");
    assert_int_equal(gw_req_answer(o, "joel", "gw-2", 1, 9, &pl, &limit, err, sizeof err),
                     GW_REQ_BAD);
    assert_string_equal(limit, "text_bytes");
    json_object_put(o);
    /* an empty text is malformed, not a limit */
    o = parse("{\"text\":\"", "", "\"}");
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 9, &pl, &limit, err, sizeof err),
                     GW_REQ_BAD);
    assert_null(limit);
    json_object_put(o);
}

/* A text within max_text whose JSON escaping takes the published payload
 * past VIGIL_MAX_PAYLOAD is refused (every consumer would refuse it as
 * oversize after a 202): 20 newlines are 20 bytes of text, 40 in JSON. */
static void test_payload_bytes(void **s)
{
    (void)s;
    char err[200];
    const char *limit;
    json_object *pl, *o = parse("{\"text\":\"", "\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n", "\"}");
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 20, &pl, &limit, err, sizeof err),
                     GW_REQ_OK);
    char *text = vigil_json_dump(pl);
    size_t n = strlen(text);
    free(text);
    assert_true(n > 40);
    assert_int_equal(gw_req_fits(pl, n, &limit, err, sizeof err), GW_REQ_OK);
    assert_null(limit);
    assert_int_equal(gw_req_fits(pl, n - 1, &limit, err, sizeof err), GW_REQ_BAD);
    assert_string_equal(limit, "payload_bytes");
    assert_non_null(strstr(err, "VIGIL_MAX_PAYLOAD"));
    json_object_put(pl);
    json_object_put(o);
}

static void test_mentions_per_message(void **s)
{
    (void)s;
    char err[200];
    const char *limit;
    json_object *pl;
    char *ids = id_array("p", GW_MAX_MENTIONS);
    json_object *o = parse("{\"text\":\"hi\",\"mentions\":", ids, "}");
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 100, &pl, &limit, err, sizeof err),
                     GW_REQ_OK);
    assert_int_equal(json_object_array_length(json_object_object_get(pl, "mentions")),
                     GW_MAX_MENTIONS);
    json_object_put(pl);
    json_object_put(o);
    free(ids);
    ids = id_array("p", GW_MAX_MENTIONS + 1);
    o = parse("{\"text\":\"hi\",\"mentions\":", ids, "}");
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 100, &pl, &limit, err, sizeof err),
                     GW_REQ_BAD);
    assert_string_equal(limit, "mentions_per_message");
    assert_string_equal(err, "field 'mentions': at most 32 persona ids (33 given)");
    json_object_put(o);
    free(ids);
    /* a mention that is no persona id is malformed, not a limit */
    o = parse("{\"text\":\"hi\",\"mentions\":", "[\"a b\"]", "}");
    assert_int_equal(gw_req_message(o, "g", "joel", "gw-1", 1, 100, &pl, &limit, err, sizeof err),
                     GW_REQ_BAD);
    assert_null(limit);
    json_object_put(o);
}

static void test_stream_cap(void **s)
{
    (void)s;
    assert_int_equal(gw_stream_cap(1024), 896);   /* an eighth kept for requests */
    assert_int_equal(gw_stream_cap(100000), 87500);
    assert_int_equal(gw_stream_cap(40), 35);
    assert_int_equal(gw_stream_cap(32), 28);
    assert_int_equal(gw_stream_cap(31), 27);      /* at least 4 kept */
    assert_int_equal(gw_stream_cap(12), 8);
    assert_int_equal(gw_stream_cap(4), 1);        /* the smallest setting: still one stream */
}

/* A log that dropped entries (given more than it holds, or a server that
 * does not say) has trimmed a position older than its oldest entry; one
 * that never dropped any (a fresh log, one recreated after a reset) has
 * trimmed nothing, however old the position (from before the log
 * existed, 0-1). */
static void test_log_trimmed(void **s)
{
    (void)s;
    gw_log_state trimmed = {.first = {1000, 5}, .top = {3000, 0}, .length = 100, .added = 400};
    assert_true(gw_log_trimmed((gw_pos){999, 9}, &trimmed));
    assert_true(gw_log_trimmed((gw_pos){1000, 4}, &trimmed));
    assert_true(gw_log_trimmed((gw_pos){0, 1}, &trimmed)); /* before it existed: still lost some */
    assert_false(gw_log_trimmed((gw_pos){1000, 5}, &trimmed)); /* still kept */
    assert_false(gw_log_trimmed((gw_pos){2000, 0}, &trimmed));
    assert_false(gw_log_trimmed((gw_pos){0, 0}, &trimmed)); /* since=0: whatever is kept */
    gw_log_state fresh = {.first = {1000, 5}, .top = {3000, 0}, .length = 100, .added = 100};
    assert_false(gw_log_trimmed((gw_pos){999, 9}, &fresh));
    assert_false(gw_log_trimmed((gw_pos){0, 1}, &fresh));
    assert_false(gw_log_trimmed((gw_pos){1, 0}, &fresh));
    assert_false(gw_log_trimmed((gw_pos){1000, 5}, &fresh));
    gw_log_state unknown = fresh; /* Redis before 7.0: taken as trimmed, as before */
    unknown.added = -1;
    assert_true(gw_log_trimmed((gw_pos){999, 9}, &unknown));
    assert_false(gw_log_trimmed((gw_pos){1000, 5}, &unknown));
    gw_log_state empty = {.top = {3000, 0}, .length = 0, .added = 400};
    assert_false(gw_log_trimmed((gw_pos){1, 0}, &empty)); /* nothing held: nothing to resume */
}

/* The fan-out's log went back when its top id is below the position read
 * (flushed or replaced, ids lower), or when it was replaced (fewer ever
 * added than at the last look) with entries at or before that position;
 * never while it only grows or trims, and not for a replaced log whose
 * entries all come after the position (reading on gets them all). */
static void test_log_went_back(void **s)
{
    (void)s;
    gw_pos read = {5000, 2};
    gw_log_state seen = {.first = {1000, 0}, .top = {5000, 2}, .length = 100, .added = 400};
    gw_log_state now = seen;
    assert_false(gw_log_went_back(read, &seen, &now));
    assert_false(gw_log_went_back(read, NULL, &now));
    now.top = (gw_pos){6000, 0}; /* grew and trimmed */
    now.first = (gw_pos){2000, 0};
    now.added = 500;
    assert_false(gw_log_went_back(read, &seen, &now));
    /* flushed: no log at all */
    gw_log_state gone = {.added = 0};
    assert_true(gw_log_went_back(read, &seen, &gone));
    assert_true(gw_log_went_back(read, NULL, &gone));
    assert_false(gw_log_went_back((gw_pos){0, 0}, &seen, &gone)); /* read nothing yet */
    /* recreated with lower ids (the clock went back) */
    gw_log_state lower = {.first = {3000, 0}, .top = {4000, 0}, .length = 3, .added = 3};
    assert_true(gw_log_went_back(read, &seen, &lower));
    assert_true(gw_log_went_back(read, NULL, &lower));
    /* recreated, already past read but with entries before it: those were skipped */
    gw_log_state across = {.first = {4999, 0}, .top = {5001, 0}, .length = 3, .added = 3};
    assert_true(gw_log_went_back(read, &seen, &across));
    assert_false(gw_log_went_back(read, NULL, &across)); /* no earlier look: cannot tell */
    /* recreated with every entry after read: reading on gets them all */
    gw_log_state later = {.first = {5001, 0}, .top = {5002, 0}, .length = 2, .added = 2};
    assert_false(gw_log_went_back(read, &seen, &later));
    /* a server that does not count what was added: only the top id tells */
    gw_log_state old_seen = seen, old_across = across;
    old_seen.added = -1;
    old_across.added = -1;
    assert_false(gw_log_went_back(read, &old_seen, &old_across));
    old_across.top = (gw_pos){4000, 0};
    assert_true(gw_log_went_back(read, &old_seen, &old_across));
}

/* A resume past the log's newest entry is ahead (served from the head);
 * at the newest entry or before it is not; an empty log (0-0) makes every
 * position but 0 ahead. */
static void test_log_ahead(void **s)
{
    (void)s;
    gw_pos newest = {1000, 5};
    assert_true(gw_log_ahead((gw_pos){1000, 6}, newest));
    assert_true(gw_log_ahead((gw_pos){9999999999999ULL, 0}, newest));
    assert_false(gw_log_ahead((gw_pos){1000, 5}, newest)); /* the newest itself */
    assert_false(gw_log_ahead((gw_pos){999, 9}, newest));
    assert_false(gw_log_ahead((gw_pos){0, 0}, newest));
    assert_true(gw_log_ahead((gw_pos){1, 0}, (gw_pos){0, 0}));
    assert_false(gw_log_ahead((gw_pos){0, 0}, (gw_pos){0, 0}));
}

/* Splits a frame without id into its event name and parsed data. */
static json_object *frame_data(const char *f, size_t len, const char *event)
{
    char head[64];
    snprintf(head, sizeof head, "event: %s\ndata: ", event);
    assert_int_equal(strncmp(f, head, strlen(head)), 0);
    assert_int_equal(strlen(f), len);
    assert_string_equal(f + len - 2, "\n\n");
    assert_ptr_equal(strchr(f + strlen(head), '\n'), f + len - 2); /* one data line */
    json_object *d = json_tokener_parse(f + strlen(head));
    assert_non_null(d);
    return d;
}

static const char *str(json_object *o, const char *k)
{
    return json_object_get_string(json_object_object_get(o, k));
}

/* A notice about a log position names it, the log's end it was measured
 * against (`what`: oldest, newest) and the limit. */
static void assert_position_notice(json_object *d, const char *since, const char *what,
                                   const char *at, const char *limit)
{
    assert_string_equal(str(d, "since"), since);
    assert_string_equal(str(d, what), at);
    assert_string_equal(str(d, "limit"), limit);
}

static void test_notice_frames(void **s)
{
    (void)s;
    size_t len;
    char *f = gw_sse_trimmed_frame(GW_SSE_NAMED, (gw_pos){5, 0}, (gw_pos){1000, 2}, 10000, &len);
    assert_non_null(f);
    json_object *d = frame_data(f, len, "trimmed");
    assert_position_notice(d, "5-0", "oldest", "1000-2", "log_entries");
    assert_non_null(strstr(str(d, "detail"), "about 10000 entries (VIGIL_GATEWAY_LOG_MAXLEN)"));
    json_object_put(d);
    free(f);
    f = gw_sse_dropped_frame(GW_SSE_NAMED, 1024, 30000, &len);
    assert_non_null(f);
    d = frame_data(f, len, "dropped");
    assert_string_equal(str(d, "limit"), "sse_client_queue");
    assert_int_equal(json_object_get_int64(json_object_object_get(d, "queue")), 1024);
    assert_non_null(strstr(str(d, "detail"), "Last-Event-ID"));
    assert_non_null(strstr(str(d, "detail"), "read nothing for 30000 ms"));
    json_object_put(d);
    free(f);
}

/* The `ahead` frame names the position asked for, the log's newest
 * entry and the limit, and says what the stream does; the room log's
 * notice says what `next` is. Unnamed on the deliberations stream. */
static void test_ahead_notices(void **s)
{
    (void)s;
    size_t len;
    char *f = gw_sse_ahead_frame(GW_SSE_NAMED, (gw_pos){9999999999999ULL, 0}, (gw_pos){1000, 2},
                                 GW_AHEAD_RESUME, &len);
    assert_non_null(f);
    json_object *d = frame_data(f, len, "ahead");
    assert_position_notice(d, "9999999999999-0", "newest", "1000-2", "log_position");
    assert_non_null(strstr(str(d, "detail"), "goes on from the log's head"));
    assert_non_null(strstr(str(d, "detail"), "?snapshot=1"));
    json_object_put(d);
    free(f);
    f = gw_sse_ahead_frame(GW_SSE_UNNAMED, (gw_pos){7, 1}, (gw_pos){0, 0}, GW_AHEAD_RESUME, &len);
    assert_non_null(f);
    static const char unnamed[] = "data: {\"type\":\"ahead\",";
    assert_int_equal(strncmp(f, unnamed, sizeof unnamed - 1), 0);
    free(f);
    /* an open stream whose log went back under it: reset, from the new start */
    f = gw_sse_ahead_frame(GW_SSE_NAMED, (gw_pos){9000, 3}, (gw_pos){4000, 0}, GW_AHEAD_LIVE, &len);
    assert_non_null(f);
    d = frame_data(f, len, "ahead");
    assert_position_notice(d, "9000-3", "newest", "4000-0", "log_position");
    assert_non_null(strstr(str(d, "detail"), "reset under this stream"));
    assert_non_null(strstr(str(d, "detail"), "from the new log's start"));
    json_object_put(d);
    free(f);
    d = gw_ahead_notice((gw_pos){7, 1}, (gw_pos){5, 0}, GW_AHEAD_PAGE);
    assert_position_notice(d, "7-1", "newest", "5-0", "log_position");
    assert_non_null(strstr(str(d, "detail"), "next is the newest message"));
    json_object_put(d);
}

/* On the deliberations stream (unnamed frames, for onmessage) the same
 * notices carry their name as `type`, first, and no event: line. */
static json_object *unnamed_data(const char *f, size_t len)
{
    static const char head[] = "data: {\"type\":";
    assert_int_equal(strncmp(f, head, sizeof head - 1), 0);
    assert_int_equal(strlen(f), len);
    assert_ptr_equal(strchr(f, '\n'), f + len - 2); /* one data line, nothing else */
    json_object *d = json_tokener_parse(f + strlen("data: "));
    assert_non_null(d);
    return d;
}

static void test_notice_frames_unnamed(void **s)
{
    (void)s;
    size_t len;
    char *f = gw_sse_trimmed_frame(GW_SSE_UNNAMED, (gw_pos){5, 0}, (gw_pos){1000, 2}, 10000, &len);
    assert_non_null(f);
    json_object *d = unnamed_data(f, len);
    assert_string_equal(str(d, "type"), "trimmed");
    assert_position_notice(d, "5-0", "oldest", "1000-2", "log_entries");
    json_object_put(d);
    free(f);
    f = gw_sse_dropped_frame(GW_SSE_UNNAMED, 1024, 30000, &len);
    assert_non_null(f);
    d = unnamed_data(f, len);
    assert_string_equal(str(d, "type"), "dropped");
    assert_string_equal(str(d, "limit"), "sse_client_queue");
    assert_int_equal(json_object_get_int64(json_object_object_get(d, "queue")), 1024);
    json_object_put(d);
    free(f);
}

/* A full queue alone does not drop a client: it is dropped only when it
 * took nothing for the stall time since the later of its queue filling
 * and its last progress (a client idle for a minute whose queue fills in
 * a burst is not stalled). */
static void test_client_stalled(void **s)
{
    (void)s;
    assert_false(gw_client_stalled(10000, 10000, 0, 2000)); /* just filled */
    assert_false(gw_client_stalled(11999, 10000, 0, 2000));
    assert_true(gw_client_stalled(12000, 10000, 0, 2000));
    assert_false(gw_client_stalled(12000, 10000, 11000, 2000)); /* still taking */
    assert_true(gw_client_stalled(13000, 10000, 11000, 2000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_stalled),
        cmocka_unit_test(test_topic_filters),
        cmocka_unit_test(test_rooms_per_session),
        cmocka_unit_test(test_text_bytes),
        cmocka_unit_test(test_payload_bytes),
        cmocka_unit_test(test_mentions_per_message),
        cmocka_unit_test(test_stream_cap),
        cmocka_unit_test(test_log_trimmed),
        cmocka_unit_test(test_log_went_back),
        cmocka_unit_test(test_log_ahead),
        cmocka_unit_test(test_ahead_notices),
        cmocka_unit_test(test_notice_frames),
        cmocka_unit_test(test_notice_frames_unnamed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
