/* test_stream.c - the Theater stream's pure parts: topic families and
 * filters, MQTT matching, event names, log positions, stored entries and
 * SSE frames; and request bodies (the answer to a dormancy suggestion
 * checked against libshared's reader of persona commands). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <vigil/msg_persona.h>
#include "gateway.h"

static void test_match(void **s)
{
    (void)s;
    assert_true(gw_topic_match("room/+/message", "room/general/message"));
    assert_false(gw_topic_match("room/+/message", "room/general/state"));
    assert_false(gw_topic_match("room/+/message", "room/general/message/x"));
    assert_false(gw_topic_match("room/+", "room/general/message"));
    assert_true(gw_topic_match("room/#", "room/general/message"));
    assert_true(gw_topic_match("room/#", "room"));
    assert_true(gw_topic_match("#", "sys/a/b/status"));
    assert_true(gw_topic_match("sys/+/+/status", "sys/a/b/status"));
    assert_false(gw_topic_match("persona/ann/+", "persona/bob/state"));
}

static void test_snapshot_topics(void **s)
{
    (void)s;
    assert_true(gw_topic_is_snapshot("persona/ann/state"));
    assert_true(gw_topic_is_snapshot("room/general/state"));
    assert_true(gw_topic_is_snapshot("sys/chat-router/i1/status"));
    assert_true(gw_topic_is_snapshot("council/s1/state"));
    assert_false(gw_topic_is_snapshot("room/general/message"));
    assert_false(gw_topic_is_snapshot("persona/ann/dormancy"));
    assert_false(gw_topic_is_snapshot("council/s1/event"));
}

static void test_filters(void **s)
{
    (void)s;
    gw_filter_set fs;
    char err[200];
    const char *limit;
    assert_int_equal(gw_filters_parse("rooms,wake", &fs, &limit, err, sizeof err), 0);
    assert_int_equal(fs.n, 2);
    assert_true(gw_filters_match(&fs, "room/g/presence", "room.presence"));
    assert_true(gw_filters_match(&fs, "persona/a/wake", "persona.wake"));
    assert_false(gw_filters_match(&fs, "persona/a/dormancy", "persona.dormancy"));
    assert_int_equal(gw_filters_style(&fs), GW_SSE_NAMED); /* /api/events: named frames */
    assert_int_equal(gw_filters_parse("persona/ann/+,sys", &fs, &limit, err, sizeof err), 0);
    assert_true(gw_filters_match(&fs, "persona/ann/state", "persona.state"));
    assert_true(gw_filters_match(&fs, "sys/x/i/status", "sys.status"));
    /* floor: floor-control's room decisions (room/{r}/floor), also in
     * rooms (room/#); the per-persona copies are not carried */
    assert_int_equal(gw_filters_parse("floor", &fs, &limit, err, sizeof err), 0);
    assert_int_equal(fs.n, 1);
    assert_true(gw_filters_match(&fs, "room/g/floor", "room.floor"));
    assert_false(gw_filters_match(&fs, "room/g/message", "room.message"));
    assert_false(gw_filters_match(&fs, "persona/a/floor", "persona.floor"));
    assert_int_equal(gw_filters_parse("room/+/floor", &fs, &limit, err, sizeof err), 0);
    assert_int_equal(gw_filters_parse("persona/+/floor", &fs, &limit, err, sizeof err), -1);
    assert_non_null(strstr(err, "matches no topic the gateway carries"));
    /* filters overlapping what the gateway carries, kept entries' topics too */
    const char *good[] = {"#", "+/+/+", "room/#", "room/+/#", "+/+/+/status", "+/x/humans",
                          "council/s/questions", "sys/#", "heartbeat/+/run/#"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(gw_filters_parse(good[i], &fs, &limit, err, sizeof err), 0);
    const char *bad[] = {"", "room/#/x", "room//x", "bogus family", "room/+/", "a+/b",
                         /* well-formed, but nothing the gateway carries matches */
                         "bogus", "room/+", "room", "room/+/nothing", "+/+", "+/+/+/+/+", "heartbeat/p/run/x",
                         "sys/a/status"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gw_filters_parse(bad[i], &fs, &limit, err, sizeof err), -1);
        assert_null(limit); /* malformed, not a limit */
    }
    assert_int_equal(gw_filters_parse(NULL, &fs, &limit, err, sizeof err), -1);
    assert_null(limit);
    /* the Theater stream: only the six council event types */
    gw_filters_council_live(&fs);
    assert_int_equal(gw_filters_style(&fs), GW_SSE_UNNAMED); /* for onmessage */
    assert_true(gw_filters_match(&fs, "council/s/event", "question"));
    assert_false(gw_filters_match(&fs, "council/s/event", "council.event"));
    assert_false(gw_filters_match(&fs, "council/s/state", "council.state"));
}

static void test_event_names(void **s)
{
    (void)s;
    char ev[96];
    json_object *p = json_tokener_parse("{\"type\":\"session_paused\"}");
    gw_event_name("council/s1/event", p, ev, sizeof ev);
    assert_string_equal(ev, "session_paused");
    json_object_put(p);
    p = json_tokener_parse("{\"type\":\"weird\"}");
    gw_event_name("council/s1/event", p, ev, sizeof ev);
    assert_string_equal(ev, "council.event");
    gw_event_name("sys/chat-router/i1/status", p, ev, sizeof ev);
    assert_string_equal(ev, "sys.status");
    gw_event_name("persona/ann/dormancy", p, ev, sizeof ev);
    assert_string_equal(ev, "persona.dormancy");
    json_object_put(p);
}

static void test_positions_entries_frames(void **s)
{
    (void)s;
    gw_pos a, b;
    assert_int_equal(gw_pos_parse("1700000000000-3", &a), 0);
    assert_int_equal(gw_pos_parse("1700000000000", &b), 0);
    assert_int_equal(gw_pos_cmp(b, a), -1);
    assert_int_equal(gw_pos_parse("0", &b), 0);
    assert_int_equal(gw_pos_cmp(b, a), -1);
    const char *bad[] = {"", "-", "1-", "-1", "a-1", "1-2-3", "99999999999999999999999-1", "1 -2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(gw_pos_parse(bad[i], &b), -1);
    char out[48];
    gw_pos_format(a, out, sizeof out);
    assert_string_equal(out, "1700000000000-3");

    json_object *p = json_tokener_parse("{\"text\":\"two\\nlines\",\"type\":\"question\"}");
    char *e = gw_log_entry("council/s1/event", p);
    char topic[GW_TOPIC_MAX], ev[96];
    const char *data;
    assert_int_equal(gw_log_entry_split(e, topic, sizeof topic, ev, sizeof ev, &data), 0);
    assert_string_equal(topic, "council/s1/event");
    assert_string_equal(ev, "question");
    assert_null(strchr(data, '\n'));
    json_object *d = json_tokener_parse(data);
    assert_string_equal(json_object_get_string(json_object_object_get(d, "topic")), "council/s1/event");
    json_object_put(d);
    size_t len;
    char *f = gw_sse_frame("1-2", ev, data, &len);
    static const char head[] = "id: 1-2\nevent: question\ndata: {";
    assert_int_equal(strncmp(f, head, sizeof head - 1), 0);
    assert_int_equal(len, strlen(f));
    assert_string_equal(f + len - 2, "\n\n");
    free(f);
    f = gw_sse_frame(NULL, "ping", "{}", &len);
    assert_string_equal(f, "event: ping\ndata: {}\n\n");
    free(f);
    free(e);
    json_object_put(p);
    assert_int_equal(gw_log_entry_split("no newline", topic, sizeof topic, ev, sizeof ev, &data), -1);
}

/* /api/events names its frames; the deliberations stream (for an
 * onmessage-only client) names none and keeps the id. */
static void test_frame_styles(void **s)
{
    (void)s;
    gw_filter_set live;
    gw_filters_council_live(&live);

    size_t len;
    char *f = gw_sse_frame(NULL, NULL, "{}", &len);
    assert_string_equal(f, "data: {}\n\n");
    assert_int_equal(len, strlen(f));
    free(f);
    f = gw_sse_frame("1-2", NULL, "{}", &len);
    assert_string_equal(f, "id: 1-2\ndata: {}\n\n");
    free(f);

    /* every entry the deliberations stream lets through carries its event
     * name as `type`: its unnamed frame is all onmessage needs */
    const char *types[] = {"deliberation", "phase", "action", "question", "session_paused",
                           "session_ended", "weird", "ping"};
    int passed = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char body[96];
        snprintf(body, sizeof body, "{\"type\":\"%s\",\"text\":\"t\"}", types[i]);
        json_object *p = json_tokener_parse(body);
        char *e = gw_log_entry("council/s1/event", p);
        char topic[GW_TOPIC_MAX], ev[96];
        const char *data;
        assert_int_equal(gw_log_entry_split(e, topic, sizeof topic, ev, sizeof ev, &data), 0);
        if (gw_filters_match(&live, topic, ev)) {
            passed++;
            f = gw_sse_entry_frame(GW_SSE_UNNAMED, "7-1", ev, data, &len);
            static const char unnamed[] = "id: 7-1\ndata: {";
            assert_int_equal(strncmp(f, unnamed, sizeof unnamed - 1), 0);
            assert_null(strstr(f, "event:"));
            json_object *d = json_tokener_parse(f + strlen("id: 7-1\ndata: "));
            assert_string_equal(json_object_get_string(json_object_object_get(d, "type")), ev);
            json_object_put(d);
            free(f);
            /* the same entry on /api/events: named, as before */
            f = gw_sse_entry_frame(GW_SSE_NAMED, "7-1", ev, data, &len);
            char head[128];
            snprintf(head, sizeof head, "id: 7-1\nevent: %s\ndata: {", ev);
            assert_int_equal(strncmp(f, head, strlen(head)), 0);
            free(f);
        }
        free(e);
        json_object_put(p);
    }
    assert_int_equal(passed, 6);
    /* a kept state (no id) */
    f = gw_sse_entry_frame(GW_SSE_NAMED, NULL, "persona.state", "{}", &len);
    assert_string_equal(f, "event: persona.state\ndata: {}\n\n");
    free(f);

    /* the gateway's own frames: named as before; unnamed with `type` first */
    json_object *o = json_object_new_object();
    json_object_object_add(o, "ts", json_object_new_int64(5));
    f = gw_sse_notice_frame(GW_SSE_NAMED, "ping", o, &len);
    assert_string_equal(f, "event: ping\ndata: {\"ts\":5}\n\n");
    assert_int_equal(len, strlen(f));
    free(f);
    o = json_object_new_object();
    json_object_object_add(o, "ts", json_object_new_int64(5));
    f = gw_sse_notice_frame(GW_SSE_UNNAMED, "ping", o, &len);
    assert_string_equal(f, "data: {\"type\":\"ping\",\"ts\":5}\n\n");
    assert_int_equal(len, strlen(f));
    free(f);
    o = json_tokener_parse("{\"position\":\"1-0\",\"topics\":[\"council/+/event\"],\"ping_ms\":30000}");
    f = gw_sse_notice_frame(GW_SSE_UNNAMED, "connected", o, &len);
    assert_string_equal(f, "data: {\"type\":\"connected\",\"position\":\"1-0\",\"topics\":"
                           "[\"council/+/event\"],\"ping_ms\":30000}\n\n");
    free(f);
    assert_null(gw_sse_notice_frame(GW_SSE_UNNAMED, "ping", NULL, &len));
    assert_null(gw_sse_notice_frame(GW_SSE_NAMED, "ping", NULL, &len));
}

static void test_request_bodies(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char err[200];
    const char *limit;
    const char *rooms[32];
    gw_beat b;
    json_object *o = json_tokener_parse("{\"session\":\"tab\",\"rooms\":[\"general\"],\"status\":\"idle\","
                                        "\"last_activity\":5}");
    assert_int_equal(gw_req_presence(o, "joel", &c, 100, &b, rooms, 32, &limit, err, sizeof err), GW_REQ_OK);
    assert_int_equal(b.claimed, GW_IDLE);
    assert_int_equal(b.last_activity, 5);
    assert_string_equal(b.rooms[0], "general");
    json_object_put(o);
    o = json_tokener_parse("{\"user\":\"ann\",\"session\":\"tab\",\"rooms\":[]}");
    assert_int_equal(gw_req_presence(o, "joel", &c, 100, &b, rooms, 32, &limit, err, sizeof err), GW_REQ_FORBIDDEN);
    json_object_put(o);
    const char *bad[] = {"{\"rooms\":[]}", "{\"session\":\"a b\",\"rooms\":[]}",
                         "{\"session\":\"t\",\"rooms\":\"general\"}", "{\"session\":\"t\",\"rooms\":[1]}",
                         "{\"session\":\"t\",\"rooms\":[],\"status\":\"gone\"}",
                         "{\"session\":\"t\",\"rooms\":[],\"last_activity\":-1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = json_tokener_parse(bad[i]);
        assert_int_equal(gw_req_presence(o, "joel", &c, 100, &b, rooms, 32, &limit, err, sizeof err), GW_REQ_BAD);
        assert_null(limit);
        json_object_put(o);
    }
    json_object *pl;
    o = json_tokener_parse("{\"text\":\"hi @ann\",\"mentions\":[\"ann\"],\"reply_to\":\"m1\"}");
    assert_int_equal(gw_req_message(o, "general", "joel", "gw-1", 7, 100, &pl, &limit, err, sizeof err), GW_REQ_OK);
    assert_string_equal(json_object_get_string(json_object_object_get(pl, "sender_type")), "human");
    assert_string_equal(json_object_get_string(json_object_object_get(pl, "id")), "gw-1");
    assert_int_equal(json_object_get_int64(json_object_object_get(pl, "ts")), 7);
    json_object_put(pl);
    json_object_put(o);

    o = json_tokener_parse("{\"question_id\":\"s:question:1\",\"answer\":\"yes\",\"id\":\"a1\"}");
    assert_int_equal(gw_req_answer(o, "joel", "gw-2", 9, 100, &pl, &limit, err, sizeof err), GW_REQ_OK);
    assert_string_equal(json_object_get_string(json_object_object_get(pl, "id")), "a1");
    assert_string_equal(json_object_get_string(json_object_object_get(pl, "by")), "joel");
    json_object_put(pl);
    json_object_put(o);
    o = json_tokener_parse("{\"question_id\":\"q\"}");
    assert_int_equal(gw_req_answer(o, "joel", "gw-2", 9, 100, &pl, &limit, err, sizeof err), GW_REQ_BAD);
    json_object_put(o);
    /* an answer of spaces: council would refuse it, so no 202 for it */
    o = json_tokener_parse("{\"question_id\":\"q\",\"answer\":\" \\t\\n \"}");
    pl = NULL;
    assert_int_equal(gw_req_answer(o, "joel", "gw-2", 9, 100, &pl, &limit, err, sizeof err), GW_REQ_BAD);
    assert_null(pl);
    assert_non_null(strstr(err, "field 'answer': blank"));
    json_object_put(o);
}

/* The answer to a dormancy suggestion: the command built is one
 * libshared's reader of persona/{p}/command (dormancy-monitor's) accepts
 * as that answer; every malformed body is refused naming its field. */
static void test_suggestion_answer_body(void **s)
{
    (void)s;
    char err[200];
    json_object *pl;
    json_object *o = json_tokener_parse(
        "{\"room\":\"general\",\"suggestion_id\":\"timer.nohuman.17:general:0\","
        "\"answer\":\"snooze\",\"extra\":1}");
    assert_int_equal(gw_req_suggestion(o, "joel", "gw-3", 11, &pl, err, sizeof err), GW_REQ_OK);
    json_object_put(o);
    assert_string_equal(json_object_get_string(json_object_object_get(pl, "id")), "gw-3");
    assert_null(json_object_object_get(pl, "extra"));
    vigil_persona_command c;
    vigil_error verr = {0};
    assert_int_equal(vigil_persona_command_read(pl, 11, &c, &verr), 0);
    assert_int_equal(c.cmd, VIGIL_COMMAND_ANSWER);
    assert_true(c.has_answer);
    assert_int_equal(c.answer, VIGIL_ANSWER_SNOOZE);
    assert_string_equal(c.room, "general");
    assert_string_equal(c.suggestion_id, "timer.nohuman.17:general:0");
    assert_string_equal(c.by, "joel");
    json_object_put(pl);
    /* no suggestion_id: the pending one; the client's id kept */
    o = json_tokener_parse("{\"room\":\"ops\",\"answer\":\"yes\",\"id\":\"c-1\"}");
    assert_int_equal(gw_req_suggestion(o, "ann", "gw-4", 12, &pl, err, sizeof err), GW_REQ_OK);
    json_object_put(o);
    assert_string_equal(json_object_get_string(json_object_object_get(pl, "id")), "c-1");
    assert_int_equal(vigil_persona_command_read(pl, 12, &c, &verr), 0);
    assert_null(c.suggestion_id);
    assert_int_equal(c.answer, VIGIL_ANSWER_YES);
    json_object_put(pl);
    /* the buttons' words as a user reads them: the lowercase word goes out */
    const struct {
        const char *said;
        int word;
    } said[] = {
        {"Yes", VIGIL_ANSWER_YES},       {"YES", VIGIL_ANSWER_YES},
        {"No", VIGIL_ANSWER_NO},         {"Snooze", VIGIL_ANSWER_SNOOZE},
        {"Snooze 5min", VIGIL_ANSWER_SNOOZE}, {"snooze 30s", VIGIL_ANSWER_SNOOZE},
        {"Snooze 1500ms", VIGIL_ANSWER_SNOOZE},
    };
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
        char body[120];
        snprintf(body, sizeof body, "{\"room\":\"g\",\"answer\":\"%s\"}", said[i].said);
        o = json_tokener_parse(body);
        assert_int_equal(gw_req_suggestion(o, "joel", "gw-6", 14, &pl, err, sizeof err),
                         GW_REQ_OK);
        json_object_put(o);
        assert_string_equal(json_object_get_string(json_object_object_get(pl, "answer")),
                            vigil_answer_names[said[i].word]);
        assert_int_equal(vigil_persona_command_read(pl, 14, &c, &verr), 0);
        assert_int_equal(c.answer, said[i].word);
        json_object_put(pl);
    }
    char longid[VIGIL_EVENT_ID_MAX + 2]; /* the contract's eventId: at most 128 */
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    char toolong[300];
    snprintf(toolong, sizeof toolong, "{\"room\":\"g\",\"answer\":\"no\",\"suggestion_id\":\"%s\"}",
             longid);
    const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"answer\":\"yes\"}", "'room'"},
        {"{\"room\":\"a/b\",\"answer\":\"yes\"}", "'room'"},
        {"{\"room\":5,\"answer\":\"yes\"}", "'room'"},
        {"{\"room\":\"g\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"maybe\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"yes please\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"Snooze 5\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"Snooze min\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"Snooze  5min\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"Snooze 5min later\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"No 5min\"}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":true}", "'answer'"},
        {"{\"room\":\"g\",\"answer\":\"yes\",\"suggestion_id\":\"\"}", "'suggestion_id'"},
        {"{\"room\":\"g\",\"answer\":\"yes\",\"suggestion_id\":\"a#b\"}", "'suggestion_id'"},
        {"{\"room\":\"g\",\"answer\":\"yes\",\"suggestion_id\":7}", "'suggestion_id'"},
        {toolong, "'suggestion_id'"},
        {"{\"room\":\"g\",\"answer\":\"yes\",\"id\":\"a/b\"}", "'id'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = json_tokener_parse(bad[i].body);
        assert_non_null(o);
        pl = NULL;
        err[0] = '\0';
        assert_int_equal(gw_req_suggestion(o, "joel", "gw-5", 13, &pl, err, sizeof err),
                         GW_REQ_BAD);
        assert_null(pl);
        assert_non_null(strstr(err, bad[i].field));
        json_object_put(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_snapshot_topics),
        cmocka_unit_test(test_event_names),
        cmocka_unit_test(test_positions_entries_frames),
        cmocka_unit_test(test_frame_styles),
        cmocka_unit_test(test_request_bodies),
        cmocka_unit_test(test_suggestion_answer_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
