/* test_room.c - the room record, delete (with its tombstone and the
 * cleanup guard), the global-flag writer, the resume-all continuation,
 * log entries and ids. */
#include "sim.h"

static bool has_action(const chat_result *r, chat_action_kind k, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == k && (!name || (r->v[i].name && strcmp(r->v[i].name, name) == 0)))
            return true;
    return false;
}

static chat_input control(const char *id, chat_control_action a)
{
    chat_input in;
    memset(&in, 0, sizeof in);
    in.kind = CHAT_IN_CONTROL;
    in.ctl.id = id;
    in.ctl.action = a;
    in.ctl.by = "joel";
    return in;
}

static void test_record_round_trip(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "hello"), 1000);
    sim_send(&s, sim_msg_in("m2", "arya", CHAT_SENDER_AI, "hi"), 2000);
    assert_int_equal(json_i64(s.state, "count"), 2);
    assert_int_equal(json_i64(s.state, "created"), 1000);
    assert_int_equal(json_i64(s.state, "last_activity"), 2000);
    char buf[64];
    assert_string_equal(json_s(s.state, "last_sender", buf, sizeof buf), "arya");
    assert_true(sim_in_set(&s, CHAT_KEY_ROOMS, "general"));
    char err[100];
    chat_room *r = chat_room_from_json("general", "[1,2]", err, sizeof err);
    assert_null(r);
    sim_free(&s);
}

static void test_unreadable_record_is_replaced(void **st)
{
    (void)st;
    chat_config cfg;
    chat_config_init(&cfg);
    chat_input in = sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya hi");
    chat_result r;
    chat_result_init(&r);
    char err[200] = "";
    assert_int_equal(chat_apply(&cfg, "general", "not json", &in, 5, &r, err, sizeof err), 1);
    assert_true(strlen(err) > 0);
    assert_non_null(r.new_state);
    assert_true(has_action(&r, CHAT_ACT_LOG_APPEND, "log:general"));
    chat_result_free(&r);
}

static void test_delete(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_control(&s, "p", CHAT_CTL_PAUSE, false, 1);
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya hi"), 2);
    assert_int_equal(s.n_queue, 1);
    chat_input in = control("d", CHAT_CTL_DELETE);
    chat_result r;
    sim_apply(&s, &in, 3, &r);
    assert_true(has_action(&r, CHAT_ACT_KEY_DELETE, "log:general"));
    assert_true(has_action(&r, CHAT_ACT_KEY_DELETE, "queue:general"));
    chat_result_free(&r);
    assert_int_equal(s.n_log, 0);
    assert_int_equal(s.n_queue, 0);
    assert_int_equal(s.n_sets, 0);
    assert_int_equal(json_i64(s.state, "deleted"), 3);
    /* the next message starts the room afresh, live */
    sim_send(&s, sim_msg_in("m2", "joel", CHAT_SENDER_HUMAN, "@arya back"), 4);
    assert_true(sim_in_set(&s, CHAT_KEY_ROOMS, "general"));
    assert_int_equal(json_i64(s.state, "count"), 1);
    assert_false(json_flag(s.state, "paused"));
    assert_int_equal(s.n_out, 1);
    sim_free(&s);
}

/* Delete ends the conversation: a message of the chain it cut (an AI
 * answer, with or without depth, or the stop message) is refused - not
 * logged, not forwarded, the tombstone kept - and reported
 * (result.room_deleted). A person starts the room again: a human message,
 * or the system message `vigil chat new` posts. */
static void test_delete_stops_the_chain(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("h1", "joel", CHAT_SENDER_HUMAN, "@arya go"), 1);
    sim_control(&s, "p", CHAT_CTL_PAUSE, false, 2);
    sim_control(&s, "d", CHAT_CTL_DELETE, false, 3);
    char *tomb = strdup(s.state);
    int out = s.n_out;
    chat_input late[3] = {
        sim_msg_in("a1", "arya", CHAT_SENDER_AI, "@gendry on"),
        sim_msg_in("a2", "arya", CHAT_SENDER_AI, "@gendry no depth"),
        sim_msg_in("stop-1", CHAT_SYSTEM_SENDER, CHAT_SENDER_SYSTEM, "chain stopped"),
    };
    late[0].msg.has_depth = true;
    late[0].msg.depth = 5;
    late[0].msg.reply_to = "h1";
    for (int i = 0; i < 3; i++) {
        chat_result r;
        sim_apply(&s, &late[i], 10 + i, &r);
        assert_true(r.room_deleted);
        assert_false(r.logged);
        assert_null(r.new_state);
        assert_int_equal(r.n, 0);
        chat_result_free(&r);
    }
    assert_string_equal(s.state, tomb);
    assert_int_equal(s.n_log, 0);
    assert_int_equal(s.n_out, out);
    assert_false(sim_in_set(&s, CHAT_KEY_ROOMS, "general"));
    /* `vigil chat new` on the name starts it again, live */
    sim_send(&s, sim_msg_in("n1", "joel", CHAT_SENDER_SYSTEM, "room created"), 20);
    assert_true(sim_in_set(&s, CHAT_KEY_ROOMS, "general"));
    assert_false(json_flag(s.state, "paused"));
    sim_control(&s, "d2", CHAT_CTL_DELETE, false, 21);
    /* as does a human message; an AI message then goes through */
    sim_send(&s, sim_msg_in("h2", "joel", CHAT_SENDER_HUMAN, "@arya back"), 22);
    chat_result r;
    sim_apply(&s, &late[0], 23, &r);
    assert_false(r.room_deleted);
    assert_true(r.logged);
    assert_int_equal(r.notified, 1);
    chat_result_free(&r);
    assert_int_equal(json_i64(s.state, "count"), 2);
    free(tomb);
    sim_free(&s);
}

/* `vigil chat view --since` takes a log id: MS or MS-SEQ, each part a
 * decimal of at most UINT64_MAX (what Redis accepts). */
static void test_log_id_valid(void **st)
{
    (void)st;
    const char *good[] = { "0", "1763800000000", "1763800000000-0", "18446744073709551615",
                           "18446744073709551615-18446744073709551615", "00000000000000000001-1" };
    const char *bad[] = { "", "-1", "1-", "-", "1-2-3", "1.5", "abc", " 1", "1 ", "+1",
                          "18446744073709551616", "1-18446744073709551616",
                          "99999999999999999999999", "000000000000000000001",
                          "1763800000000-0x", NULL };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(chat_log_id_valid(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(chat_log_id_valid(bad[i]));
}

/* --since also takes the id a message was sent with (what `vigil chat
 * send` prints); anything shaped like a log id is a log id, so an
 * out-of-range one is refused rather than looked up as a message. */
static void test_since_kind(void **st)
{
    (void)st;
    char longest[CHAT_EVID_MAX + 2];
    memset(longest, 'a', sizeof longest);
    longest[CHAT_EVID_MAX] = '\0';
    const char *log_ids[] = { "0", "1763800000000-0", "18446744073709551615-18446744073709551615" };
    const char *msg_ids[] = { "cli-1763800000000-42-0a1b2c3d", "x", "h-0123456789abcdef",
                              "stop-0123456789abcdef", "m 1", "1.5", "a-1", longest };
    const char *bad[] = { "", "18446744073709551616", "1-18446744073709551616", "1-2-3", "-",
                          "-1", "a/b", "a+b", "a#b", "tab\there", "caf\xc3\xa9", NULL };
    for (size_t i = 0; i < sizeof log_ids / sizeof *log_ids; i++)
        assert_int_equal(chat_since_kind_of(log_ids[i]), CHAT_SINCE_LOG_ID);
    for (size_t i = 0; i < sizeof msg_ids / sizeof *msg_ids; i++)
        assert_int_equal(chat_since_kind_of(msg_ids[i]), CHAT_SINCE_MESSAGE_ID);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(chat_since_kind_of(bad[i]), CHAT_SINCE_BAD);
    longest[CHAT_EVID_MAX] = 'a';
    longest[CHAT_EVID_MAX + 1] = '\0';
    assert_int_equal(chat_since_kind_of(longest), CHAT_SINCE_BAD);
}

static void test_delete_if_inactive(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "hello"), 5000);
    chat_input in = control("d1", CHAT_CTL_DELETE);
    in.ctl.if_inactive_since = 5000; /* a message at 5000: keep */
    chat_result r;
    sim_apply(&s, &in, 6000, &r);
    assert_false(has_action(&r, CHAT_ACT_KEY_DELETE, NULL));
    chat_result_free(&r);
    assert_int_equal(json_i64(s.state, "count"), 1);
    in.ctl.id = "d2";
    in.ctl.if_inactive_since = 5001;
    sim_apply(&s, &in, 6001, &r);
    assert_true(has_action(&r, CHAT_ACT_KEY_DELETE, "log:general"));
    chat_result_free(&r);
    assert_int_equal(json_i64(s.state, "deleted"), 6001);
    sim_free(&s);
}

/* cleanup's conditional delete keeps a paused room's queued notifications
 * even when its log is empty; a plain delete still takes them */
static void test_delete_if_inactive_keeps_a_queue(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_control(&s, "p", CHAT_CTL_PAUSE, false, 1000);
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya hello"), 2000);
    assert_int_equal(json_i64(s.state, "queued"), 1);
    chat_input in = control("d1", CHAT_CTL_DELETE);
    in.ctl.if_inactive_since = 5000; /* no message since: only the queue keeps it */
    chat_result r;
    sim_apply(&s, &in, 6000, &r);
    assert_false(has_action(&r, CHAT_ACT_KEY_DELETE, NULL));
    chat_result_free(&r);
    assert_int_equal(json_i64(s.state, "queued"), 1);
    in.ctl.id = "d2";
    in.ctl.if_inactive_since = 0;
    sim_apply(&s, &in, 6001, &r);
    assert_true(has_action(&r, CHAT_ACT_KEY_DELETE, "queue:general"));
    chat_result_free(&r);
    sim_free(&s);
}

static void test_delete_unknown_room_leaves_no_record(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "ghost");
    sim_control(&s, "d", CHAT_CTL_DELETE, false, 1);
    assert_null(s.state);
    sim_free(&s);
}

static void test_global_flag_writer_only(void **st)
{
    (void)st;
    chat_config cfg;
    chat_config_init(&cfg);
    chat_input in = control("pa", CHAT_CTL_PAUSE);
    in.ctl.all = true;
    in.ctl.topic_room = CHAT_ALL_ROOM;
    chat_result r;
    char err[100];
    chat_result_init(&r);
    assert_int_equal(chat_apply(&cfg, CHAT_ALL_ROOM, NULL, &in, 1, &r, err, sizeof err), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.v[0].kind, CHAT_ACT_KEY_SET);
    assert_string_equal(r.v[0].name, CHAT_KEY_PAUSED_ALL);
    assert_string_equal(r.v[0].value, "1");
    assert_null(r.new_state); /* the topic room is not created */
    chat_result_free(&r);
    /* another room's key does not write the flag */
    chat_result_init(&r);
    assert_int_equal(chat_apply(&cfg, "general", NULL, &in, 1, &r, err, sizeof err), 0);
    assert_int_equal(r.n, 0);
    chat_result_free(&r);
}

static void test_resume_all_continuation(void **st)
{
    (void)st;
    chat_config cfg;
    chat_config_init(&cfg);
    chat_input in = control("ra", CHAT_CTL_RESUME);
    in.ctl.all = true;
    in.ctl.topic_room = CHAT_ALL_ROOM;
    in.ctl.more = true;
    chat_result r;
    char err[100];
    chat_result_init(&r);
    assert_int_equal(chat_apply(&cfg, CHAT_ALL_ROOM, NULL, &in, 7, &r, err, sizeof err), 0);
    assert_true(has_action(&r, CHAT_ACT_KEY_DELETE, CHAT_KEY_PAUSED_ALL));
    const chat_action *pub = NULL;
    for (size_t i = 0; i < r.n; i++)
        if (r.v[i].kind == CHAT_ACT_PUBLISH)
            pub = &r.v[i];
    assert_non_null(pub);
    assert_string_equal(pub->topic, "room/_all/control");
    char id[200], action[32];
    json_s(pub->value, "id", id, sizeof id);
    assert_null(strchr(id, '/'));
    assert_true(strncmp(id, "more-", 5) == 0);
    assert_string_equal(json_s(pub->value, "action", action, sizeof action), "resume");
    assert_true(json_flag(pub->value, "all"));
    chat_result_free(&r);
}

static void test_log_entry(void **st)
{
    (void)st;
    const char *raw = "{\"room\":\"g\",\"sender\":\"joel\",\"text\":\"a/b\"}";
    json_object *body = json_tokener_parse(raw);
    char *e = chat_log_entry_json(body, raw, strlen(raw), "h-0123", 77);
    assert_string_equal(e, "{\"id\":\"h-0123\",\"room\":\"g\",\"sender\":\"joel\",\"text\":\"a/b\",\"ts\":77}");
    free(e);
    /* the input is untouched */
    assert_int_equal(json_object_object_length(body), 3);
    json_object_put(body);
    /* with id and ts: the payload's own bytes, without the whitespace around
     * them (not NUL-terminated: the length bounds it) */
    raw = " \n{ \"id\": \"m1\", \"ts\": 5, \"text\": \"\\u00e9\" }\r\n\tTAIL";
    size_t n = strlen(raw) - strlen("TAIL");
    body = json_tokener_parse(raw);
    e = chat_log_entry_json(body, raw, n, "ignored", 99);
    assert_string_equal(e, "{ \"id\": \"m1\", \"ts\": 5, \"text\": \"\\u00e9\" }");
    free(e);
    /* without the payload's bytes: the object written again */
    e = chat_log_entry_json(body, NULL, 0, "ignored", 99);
    assert_string_equal(e, "{\"id\":\"m1\",\"ts\":5,\"text\":\"\u00e9\"}");
    free(e);
    json_object_put(body);
}

static void test_ids(void **st)
{
    (void)st;
    char a[200], b[200];
    chat_derived_id(a, sizeof a, "stop", "m1", "general");
    chat_derived_id(b, sizeof b, "stop", "m1", "general");
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), 5 + 16);
    chat_derived_id(b, sizeof b, "stop", "m1", "other");
    assert_string_not_equal(a, b);
    /* notification ids are deterministic per input, distinct per rank */
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya @gendry"), 1);
    json_s(s.outbox[0].payload, "id", a, sizeof a);
    json_s(s.outbox[1].payload, "id", b, sizeof b);
    assert_string_equal(a, "m1:general:0");
    assert_string_equal(b, "m1:general:1");
    sim_free(&s);
    /* the same message id in another room: other ids (a message id is
     * unique only within its room) */
    static sim o;
    sim_init(&o, "ops");
    sim_send(&o, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya @gendry"), 1);
    json_s(o.outbox[0].payload, "id", a, sizeof a);
    assert_string_equal(a, "m1:ops:0");
    sim_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_unreadable_record_is_replaced),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_delete_if_inactive),
        cmocka_unit_test(test_delete_if_inactive_keeps_a_queue),
        cmocka_unit_test(test_delete_stops_the_chain),
        cmocka_unit_test(test_log_id_valid),
        cmocka_unit_test(test_since_kind),
        cmocka_unit_test(test_delete_unknown_room_leaves_no_record),
        cmocka_unit_test(test_global_flag_writer_only),
        cmocka_unit_test(test_resume_all_continuation),
        cmocka_unit_test(test_log_entry),
        cmocka_unit_test(test_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
