/* test_kept.c - what the audit of the gateway found the core missing:
 * string fields holding a NUL are refused (never cut), presence dated by
 * idle_ms against the gateway's clock, the payload field each topic level
 * must agree with, and the records kept for ?snapshot=1 (pending council
 * questions, the latest presence per user and room). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gateway.h"

/* Every string field of every POST body, and the items of its arrays: a
 * "\u0000" inside is a 400 naming the field, not a value cut at it. */
static void test_nul_refused_in_every_string_field(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char err[200];
    const char *limit, *rooms[32];
    gw_beat b;
    json_object *pl;
    static const char *const presence[][2] = {
        {"{\"session\":\"t\\u0000x\",\"rooms\":[]}", "'session'"},
        {"{\"user\":\"joel\\u0000x\",\"session\":\"t\",\"rooms\":[]}", "'user'"},
        {"{\"session\":\"t\",\"rooms\":[\"general\\u0000x\"]}", "'rooms[0]'"},
        {"{\"session\":\"t\",\"rooms\":[],\"status\":\"idle\\u0000x\"}", "'status'"},
    };
    for (size_t i = 0; i < sizeof presence / sizeof presence[0]; i++) {
        json_object *o = json_tokener_parse(presence[i][0]);
        assert_non_null(o);
        assert_int_equal(
            gw_req_presence(o, "joel", &c, 100, &b, rooms, 32, &limit, err, sizeof err),
            GW_REQ_BAD);
        assert_non_null(strstr(err, presence[i][1]));
        json_object_put(o);
    }
    static const char *const message[][2] = {
        {"{\"text\":\"a\\u0000b\"}", "'text'"},
        {"{\"text\":\"ab\",\"id\":\"m\\u0000x\"}", "'id'"},
        {"{\"text\":\"ab\",\"reply_to\":\"m\\u0000x\"}", "'reply_to'"},
        {"{\"text\":\"ab\",\"sender\":\"joel\\u0000x\"}", "'sender'"},
        {"{\"text\":\"ab\",\"mentions\":[\"ann\\u0000x\"]}", "'mentions'"},
    };
    for (size_t i = 0; i < sizeof message / sizeof message[0]; i++) {
        json_object *o = json_tokener_parse(message[i][0]);
        assert_int_equal(gw_req_message(o, "general", "joel", "gw-1", 7, 100, &pl, &limit, err,
                                         sizeof err),
                         GW_REQ_BAD);
        assert_null(pl);
        assert_non_null(strstr(err, message[i][1]));
        json_object_put(o);
    }
    static const char *const answer[][2] = {
        {"{\"question_id\":\"q\",\"answer\":\"y\\u0000es\"}", "'answer'"},
        {"{\"question_id\":\"q\\u0000x\",\"answer\":\"yes\"}", "'question_id'"},
    };
    for (size_t i = 0; i < sizeof answer / sizeof answer[0]; i++) {
        json_object *o = json_tokener_parse(answer[i][0]);
        assert_int_equal(gw_req_answer(o, "joel", "gw-2", 9, 100, &pl, &limit, err, sizeof err),
                         GW_REQ_BAD);
        assert_non_null(strstr(err, answer[i][1]));
        json_object_put(o);
    }
    json_object *o = json_tokener_parse("{\"room\":\"g\\u0000x\",\"answer\":\"yes\"}");
    assert_int_equal(gw_req_suggestion(o, "joel", "gw-3", 9, &pl, err, sizeof err), GW_REQ_BAD);
    assert_non_null(strstr(err, "'room'"));
    json_object_put(o);
    o = json_tokener_parse("{\"room\":\"g\",\"answer\":\"yes\\u0000\"}");
    assert_int_equal(gw_req_suggestion(o, "joel", "gw-3", 9, &pl, err, sizeof err), GW_REQ_BAD);
    assert_non_null(strstr(err, "'answer'"));
    json_object_put(o);
}

/* The gateway's texts (a message's text, a council answer) pass libshared's
 * one UTF-8 rule (vigil_utf8_valid), the rule of chat-router's and
 * dormancy-monitor's intake: an overlong form or an encoded UTF-16
 * surrogate is a 400 naming the field and the byte, never a 2xx for an
 * event every consumer refuses. The texts are put in the body as json-c
 * holds them, past the HTTP layer's own check of the raw body. */
static void test_texts_utf8_by_libshareds_rule(void **s)
{
    (void)s;
    char err[200];
    const char *limit;
    json_object *pl;
    static const char *const bad[][2] = {
        {"a\xC0\xAF", "at byte 1"},      /* overlong '/' */
        {"ab\xE0\x80\xAF", "at byte 2"}, /* overlong '/', three bytes */
        {"\xED\xA0\x80", "at byte 0"},   /* U+D800, a high surrogate */
        {"x\xED\xBF\xBF", "at byte 1"},  /* U+DFFF, a low surrogate */
        {"\xF4\x90\x80\x80", "at byte 0"}, /* past U+10FFFF */
        {"ok\xE2\x9C", "at byte 2"},     /* cut short */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "text", json_object_new_string(bad[i][0]));
        assert_int_equal(gw_req_message(o, "general", "joel", "gw-1", 7, 100, &pl, &limit, err,
                                         sizeof err),
                         GW_REQ_BAD);
        assert_null(pl);
        assert_non_null(strstr(err, "field 'text': invalid UTF-8"));
        assert_non_null(strstr(err, bad[i][1]));
        json_object_put(o);
        o = json_object_new_object();
        json_object_object_add(o, "question_id", json_object_new_string("q"));
        json_object_object_add(o, "answer", json_object_new_string(bad[i][0]));
        assert_int_equal(gw_req_answer(o, "joel", "gw-2", 9, 100, &pl, &limit, err, sizeof err),
                         GW_REQ_BAD);
        assert_null(pl);
        assert_non_null(strstr(err, "field 'answer': invalid UTF-8"));
        json_object_put(o);
    }
    /* Well-formed texts at the edges of the ranges still pass. */
    static const char *const good[] = {"\xF0\x9F\x92\xA4 zzz", "\xED\x9F\xBF", "\xEE\x80\x80",
                                       "\xF4\x8F\xBF\xBF", "\xC2\x80"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "text", json_object_new_string(good[i]));
        assert_int_equal(gw_req_message(o, "general", "joel", "gw-1", 7, 100, &pl, &limit, err,
                                         sizeof err),
                         GW_REQ_OK);
        assert_string_equal(json_object_get_string(json_object_object_get(pl, "text")), good[i]);
        json_object_put(pl);
        json_object_put(o);
    }
}

/* idle_ms is how long ago by the client's clock: the gateway dates the
 * activity by its own (a browser minutes slow is active all the same);
 * last_activity stays absolute; both at once, or a bad idle_ms, is a 400. */
static void test_idle_ms_dated_by_the_gateway(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char err[200];
    const char *limit, *rooms[32];
    gw_beat b;
    const int64_t now = 1000000;
    json_object *o = json_tokener_parse("{\"session\":\"t\",\"rooms\":[\"g\"],\"idle_ms\":2500}");
    assert_int_equal(gw_req_presence(o, "joel", &c, now, &b, rooms, 32, &limit, err, sizeof err),
                     GW_REQ_OK);
    assert_int_equal(b.last_activity, now - 2500);
    assert_int_equal(gw_presence_derive(&c, b.last_activity, now, b.claimed, now), GW_ACTIVE);
    json_object_put(o);
    o = json_tokener_parse("{\"session\":\"t\",\"rooms\":[],\"idle_ms\":99999999}");
    assert_int_equal(gw_req_presence(o, "joel", &c, now, &b, rooms, 32, &limit, err, sizeof err),
                     GW_REQ_OK);
    assert_int_equal(b.last_activity, 0);
    json_object_put(o);
    o = json_tokener_parse("{\"session\":\"t\",\"rooms\":[],\"last_activity\":77}");
    assert_int_equal(gw_req_presence(o, "joel", &c, now, &b, rooms, 32, &limit, err, sizeof err),
                     GW_REQ_OK);
    assert_int_equal(b.last_activity, 77);
    json_object_put(o);
    o = json_tokener_parse("{\"session\":\"t\",\"rooms\":[]}");
    assert_int_equal(gw_req_presence(o, "joel", &c, now, &b, rooms, 32, &limit, err, sizeof err),
                     GW_REQ_OK);
    assert_int_equal(b.last_activity, now);
    json_object_put(o);
    static const char *const bad[][2] = {
        {"{\"session\":\"t\",\"rooms\":[],\"idle_ms\":5,\"last_activity\":7}", "not both"},
        {"{\"session\":\"t\",\"rooms\":[],\"idle_ms\":-1}", "'idle_ms'"},
        {"{\"session\":\"t\",\"rooms\":[],\"idle_ms\":\"5\"}", "'idle_ms'"},
        {"{\"session\":\"t\",\"rooms\":[],\"idle_ms\":1.5}", "'idle_ms'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = json_tokener_parse(bad[i][0]);
        assert_int_equal(gw_req_presence(o, "joel", &c, now, &b, rooms, 32, &limit, err,
                                         sizeof err),
                         GW_REQ_BAD);
        assert_non_null(strstr(err, bad[i][1]));
        json_object_put(o);
    }
}

/* The field each topic level names, as in the topics' schemas. */
static void test_topic_param_fields(void **s)
{
    (void)s;
    assert_string_equal(gw_topic_param_field("room/general/message", 1), "room");
    assert_string_equal(gw_topic_param_field("room/general/presence", 1), "room");
    assert_string_equal(gw_topic_param_field("persona/ann/state", 1), "persona");
    assert_string_equal(gw_topic_param_field("heartbeat/ann/run", 1), "persona");
    assert_string_equal(gw_topic_param_field("agent/a1/status", 1), "agent");
    assert_string_equal(gw_topic_param_field("council/s1/event", 1), "session");
    assert_string_equal(gw_topic_param_field("sys/chat-router/i1/status", 1), "service");
    assert_string_equal(gw_topic_param_field("sys/chat-router/i1/status", 2), "instance");
    assert_null(gw_topic_param_field("room/general/message", 0));
    assert_null(gw_topic_param_field("room/general/message", 2));
    assert_null(gw_topic_param_field("roomx/general/message", 1));
}

/* The data of a kept entry, checked to be filed under its own topic. */
static json_object *kept_data(const gw_kept_out *o)
{
    char topic[GW_TOPIC_MAX], event[96];
    const char *data;
    assert_int_equal(gw_log_entry_split(o->entry, topic, sizeof topic, event, sizeof event, &data),
                     0);
    assert_string_equal(topic, o->topic);
    return json_tokener_parse(data);
}

/* Applies one input (payload NULL: the record's timer) and carries the
 * new state forward, as the runtime would between commits. */
static void apply(const gw_presence_cfg *c, const char *key, char **state, const char *topic,
                  const char *payload, int64_t now, gw_kept_out *o)
{
    json_object *p = payload ? json_tokener_parse(payload) : NULL;
    assert_int_equal(gw_kept_apply(c, key, *state, topic, p, now, o), 0);
    json_object_put(p);
    if (o->changed) {
        free(*state);
        *state = strdup(o->new_state);
    }
}

/* Which inputs touch a kept record. */
static void test_kept_keys(void **s)
{
    (void)s;
    char key[128];
    json_object *q = json_tokener_parse("{\"type\":\"question\"}");
    json_object *ph = json_tokener_parse("{\"type\":\"phase\"}");
    json_object *end = json_tokener_parse("{\"type\":\"session_ended\"}");
    assert_true(gw_kept_key("council/s1/event", q, key, sizeof key));
    assert_string_equal(key, "questions:s1");
    assert_true(gw_kept_key("council/s1/event", end, key, sizeof key));
    assert_false(gw_kept_key("council/s1/event", ph, key, sizeof key));
    assert_true(gw_kept_key("council/s1/answer", NULL, key, sizeof key));
    assert_true(gw_kept_key("council/s1/state", NULL, key, sizeof key));
    assert_true(gw_kept_key("room/general/presence", NULL, key, sizeof key));
    assert_string_equal(key, "humans:general");
    assert_false(gw_kept_key("room/general/message", NULL, key, sizeof key));
    assert_false(gw_kept_key("persona/ann/state", NULL, key, sizeof key));
    json_object_put(q);
    json_object_put(ph);
    json_object_put(end);
}

/* A question is kept until answered, its session ends, or it expires (by
 * the record's timer, at the earliest expires_at). */
static void test_kept_questions(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char *st = NULL;
    gw_kept_out o;
    const char *ev = "council/s1/event";
    apply(&c, "questions:s1", &st, ev,
          "{\"id\":\"e1\",\"type\":\"question\",\"session\":\"s1\",\"question_id\":\"q1\","
          "\"question\":\"Ship it?\",\"priority\":8,\"expires_at\":5000,\"ts\":10}",
          100, &o);
    assert_true(o.changed);
    assert_string_equal(o.topic, "council/s1/questions");
    assert_int_equal(o.next_due, 5000);
    json_object *d = kept_data(&o);
    assert_string_equal(json_object_get_string(json_object_object_get(d, "session")), "s1");
    json_object *qs = json_object_object_get(d, "questions");
    assert_int_equal(json_object_array_length(qs), 1);
    json_object *q = json_object_array_get_idx(qs, 0);
    assert_string_equal(json_object_get_string(json_object_object_get(q, "question_id")), "q1");
    assert_string_equal(json_object_get_string(json_object_object_get(q, "topic")), ev);
    json_object_put(d);
    gw_kept_out_free(&o);
    apply(&c, "questions:s1", &st, ev,
          "{\"id\":\"e2\",\"type\":\"question\",\"question_id\":\"q2\",\"question\":\"And?\","
          "\"priority\":5,\"expires_at\":3000,\"ts\":11}",
          200, &o);
    assert_int_equal(o.next_due, 3000);
    gw_kept_out_free(&o);
    /* an already expired question is not kept */
    apply(&c, "questions:s1", &st, ev,
          "{\"id\":\"e3\",\"type\":\"question\",\"question_id\":\"q3\",\"expires_at\":150}", 200,
          &o);
    assert_false(o.changed);
    gw_kept_out_free(&o);
    /* a blank answer (published on the broker by another client) is one
     * council refuses: q1 stays pending there, so it stays kept here */
    apply(&c, "questions:s1", &st, "council/s1/answer",
          "{\"question_id\":\"q1\",\"answer\":\" \\t \"}", 250, &o);
    assert_false(o.changed);
    gw_kept_out_free(&o);
    /* answered elsewhere: q1 goes */
    apply(&c, "questions:s1", &st, "council/s1/answer", "{\"question_id\":\"q1\",\"answer\":\"y\"}",
          300, &o);
    assert_true(o.changed);
    d = kept_data(&o);
    qs = json_object_object_get(d, "questions");
    assert_int_equal(json_object_array_length(qs), 1);
    assert_string_equal(
        json_object_get_string(json_object_object_get(json_object_array_get_idx(qs, 0),
                                                      "question_id")),
        "q2");
    json_object_put(d);
    gw_kept_out_free(&o);
    /* its timer: q2 expired, nothing is left, the kept entry goes */
    apply(&c, "questions:s1", &st, NULL, NULL, 3000, &o);
    assert_true(o.changed);
    assert_null(o.entry);
    assert_int_equal(o.next_due, 0);
    gw_kept_out_free(&o);
    /* the end of the session drops what it still had */
    apply(&c, "questions:s1", &st, ev,
          "{\"id\":\"e4\",\"type\":\"question\",\"question_id\":\"q4\",\"expires_at\":9000}", 4000,
          &o);
    gw_kept_out_free(&o);
    apply(&c, "questions:s1", &st, ev,
          "{\"id\":\"e5\",\"type\":\"session_ended\",\"reason\":\"x\"}", 4100, &o);
    assert_true(o.changed);
    assert_null(o.entry);
    gw_kept_out_free(&o);
    apply(&c, "questions:s1", &st, ev,
          "{\"id\":\"e6\",\"type\":\"question\",\"question_id\":\"q5\",\"expires_at\":9000}", 4000,
          &o);
    gw_kept_out_free(&o);
    apply(&c, "questions:s1", &st, "council/s1/state", "{\"status\":\"active\"}", 4200, &o);
    assert_false(o.changed);
    gw_kept_out_free(&o);
    apply(&c, "questions:s1", &st, "council/s1/state", "{\"status\":\"completed\"}", 4200, &o);
    assert_true(o.changed);
    assert_null(o.entry);
    gw_kept_out_free(&o);
    free(st);
}

/* Bounded: past GW_KEPT_QUESTIONS_MAX the question expiring first goes. */
static void test_kept_questions_bounded(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char *st = NULL;
    gw_kept_out o;
    for (int i = 0; i < GW_KEPT_QUESTIONS_MAX + 5; i++) {
        char p[160];
        snprintf(p, sizeof p,
                 "{\"type\":\"question\",\"question_id\":\"q%d\",\"expires_at\":%d}", i,
                 100000 - i);
        apply(&c, "questions:s1", &st, "council/s1/event", p, 10, &o);
        gw_kept_out_free(&o);
    }
    json_object *r = json_tokener_parse(st);
    json_object *items = json_object_object_get(r, "items");
    assert_int_equal(json_object_object_length(items), GW_KEPT_QUESTIONS_MAX);
    assert_true(json_object_object_get_ex(items, "q0", NULL)); /* expires last: kept */
    assert_false(json_object_object_get_ex(items, "q68", NULL));
    json_object_put(r);
    free(st);
}

/* The kept questions surface as a user should answer them: the most
 * urgent first (priority 1..10, higher first; 5 without one), equal ones
 * in the order they were asked; past the bound the least urgent goes,
 * not a more urgent one that happens to expire sooner. */
static void test_kept_questions_most_urgent_first(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char *st = NULL;
    gw_kept_out o;
    const int prio[] = {2, 9, 0, 5, 10, 1, 9};
    for (size_t i = 0; i < sizeof prio / sizeof prio[0]; i++) {
        char p[200];
        if (prio[i])
            snprintf(p, sizeof p,
                     "{\"type\":\"question\",\"question_id\":\"q%zu\",\"priority\":%d,"
                     "\"expires_at\":90000}",
                     i, prio[i]);
        else
            snprintf(p, sizeof p, "{\"type\":\"question\",\"question_id\":\"q%zu\"}", i);
        apply(&c, "questions:s1", &st, "council/s1/event", p, 10 + (int64_t)i, &o);
        if (i + 1 < sizeof prio / sizeof prio[0])
            gw_kept_out_free(&o);
    }
    json_object *d = kept_data(&o);
    json_object *qs = json_object_object_get(d, "questions");
    const char *want[] = {"q4", "q1", "q6", "q2", "q3", "q0", "q5"};
    assert_int_equal(json_object_array_length(qs), 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(json_object_get_string(json_object_object_get(
                                json_object_array_get_idx(qs, i), "question_id")),
                            want[i]);
    json_object_put(d);
    gw_kept_out_free(&o);
    free(st);
    /* full: the priority-1 question goes although the priority-10 ones
     * expire sooner */
    st = NULL;
    for (int i = 0; i < GW_KEPT_QUESTIONS_MAX + 1; i++) {
        char p[200];
        snprintf(p, sizeof p,
                 "{\"type\":\"question\",\"question_id\":\"u%d\",\"priority\":%d,"
                 "\"expires_at\":%d}",
                 i, i == 0 ? 1 : 10, i == 0 ? 900000 : 1000 + i);
        apply(&c, "questions:s1", &st, "council/s1/event", p, 10, &o);
        gw_kept_out_free(&o);
    }
    json_object *r = json_tokener_parse(st);
    json_object *items = json_object_object_get(r, "items");
    assert_int_equal(json_object_object_length(items), GW_KEPT_QUESTIONS_MAX);
    assert_false(json_object_object_get_ex(items, "u0", NULL));
    assert_true(json_object_object_get_ex(items, "u1", NULL));
    json_object_put(r);
    free(st);
}

/* Presence: active and idle users are kept (the snapshot lists them), an
 * away one goes, and one whose activity is older than away_ms goes by the
 * record's timer even if no `away` ever comes. */
static void test_kept_humans(void **s)
{
    (void)s;
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char *st = NULL;
    gw_kept_out o;
    const char *t = "room/general/presence";
    apply(&c, "humans:general", &st, t,
          "{\"user\":\"ann\",\"session\":\"a\",\"status\":\"idle\",\"last_activity\":1000}", 2000,
          &o);
    assert_true(o.changed);
    assert_string_equal(o.topic, "room/general/humans");
    assert_int_equal(o.next_due, 1000 + c.away_ms);
    gw_kept_out_free(&o);
    apply(&c, "humans:general", &st, t,
          "{\"user\":\"bob\",\"session\":\"b\",\"status\":\"active\",\"last_activity\":3000}", 3000,
          &o);
    json_object *d = kept_data(&o);
    assert_string_equal(json_object_get_string(json_object_object_get(d, "room")), "general");
    assert_int_equal(json_object_array_length(json_object_object_get(d, "humans")), 2);
    json_object_put(d);
    gw_kept_out_free(&o);
    apply(&c, "humans:general", &st, t,
          "{\"user\":\"bob\",\"session\":\"b\",\"status\":\"away\",\"last_activity\":3000}", 4000,
          &o);
    d = kept_data(&o);
    json_object *h = json_object_object_get(d, "humans");
    assert_int_equal(json_object_array_length(h), 1);
    assert_string_equal(
        json_object_get_string(json_object_object_get(json_object_array_get_idx(h, 0), "user")),
        "ann");
    json_object_put(d);
    gw_kept_out_free(&o);
    apply(&c, "humans:general", &st, NULL, NULL, 1000 + c.away_ms, &o);
    assert_true(o.changed);
    assert_null(o.entry);
    gw_kept_out_free(&o);
    for (int i = 0; i < GW_KEPT_HUMANS_MAX + 3; i++) {
        char p[160];
        snprintf(p, sizeof p, "{\"user\":\"u%d\",\"status\":\"active\",\"last_activity\":%d}", i,
                 5000 + i);
        apply(&c, "humans:general", &st, t, p, 6000, &o);
        gw_kept_out_free(&o);
    }
    json_object *r = json_tokener_parse(st);
    json_object *items = json_object_object_get(r, "items");
    assert_int_equal(json_object_object_length(items), GW_KEPT_HUMANS_MAX);
    assert_false(json_object_object_get_ex(items, "u0", NULL)); /* the oldest activity */
    json_object_put(r);
    assert_int_equal(gw_kept_apply(&c, "log", NULL, t, NULL, 1, &o), -1);
    free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul_refused_in_every_string_field),
        cmocka_unit_test(test_texts_utf8_by_libshareds_rule),
        cmocka_unit_test(test_idle_ms_dated_by_the_gateway),
        cmocka_unit_test(test_topic_param_fields),
        cmocka_unit_test(test_kept_keys),
        cmocka_unit_test(test_kept_questions),
        cmocka_unit_test(test_kept_questions_bounded),
        cmocka_unit_test(test_kept_questions_most_urgent_first),
        cmocka_unit_test(test_kept_humans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
