/* test_msg_room.c - the readers of room/{room}/message, control and
 * presence against the schema's example and counter-examples. */
#include "msg_test.h"
#include <vigil/msg_room.h>

static int read_message(json_object *o, vigil_error *err)
{
    vigil_room_message m;
    int rc = vigil_room_message_read(o, &m, err);
    vigil_room_message_release(&m);
    return rc;
}

static int read_control(json_object *o, vigil_error *err)
{
    vigil_room_control c;
    return vigil_room_control_read(o, &c, err);
}

static int read_presence(json_object *o, vigil_error *err)
{
    vigil_room_presence p;
    return vigil_room_presence_read(o, &p, err);
}

/* ---- room/{room}/message ---------------------------------------------- */

static void message_example_reads(void **state)
{
    (void)state;
    json_object *o = example("room-message");
    vigil_room_message m;
    vigil_error err = {0};
    assert_int_equal(vigil_room_message_read(o, &m, &err), 0);
    assert_string_equal(m.sender, "joel");
    assert_int_equal(m.sender_type, VIGIL_SENDER_HUMAN);
    assert_non_null(strstr(m.text, "@helper"));
    assert_int_equal(m.n_mentions, 1);
    assert_string_equal(m.mentions[0], "helper");
    assert_null(m.mentions[1]);
    assert_true(m.has_depth);
    assert_int_equal(m.depth, 0);
    assert_false(m.proactive);
    assert_null(m.reply_to);
    vigil_room_message_release(&m);
    json_object_put(o);
}

static void message_minimal_and_optional_fields(void **state)
{
    (void)state;
    json_object *o = payload("{\"sender\":\"ann\",\"sender_type\":\"system\",\"text\":\"\","
                             "\"reply_to\":\"m 1\",\"depth\":7,\"proactive\":true,"
                             "\"about\":\"bob\",\"reason\":\"r\",\"event\":\"e\"}");
    vigil_room_message m;
    vigil_error err = {0};
    assert_int_equal(vigil_room_message_read(o, &m, &err), 0);
    assert_int_equal(m.sender_type, VIGIL_SENDER_SYSTEM);
    assert_string_equal(m.reply_to, "m 1");
    assert_true(m.has_depth);
    assert_int_equal(m.depth, 7);
    assert_true(m.proactive);
    assert_string_equal(m.about, "bob");
    assert_null(m.mentions);
    assert_int_equal(m.n_mentions, 0);
    vigil_room_message_release(&m);
    json_object_put(o);

    o = payload("{\"sender\":\"ann\",\"sender_type\":\"ai\",\"text\":\"hi\"}");
    assert_int_equal(vigil_room_message_read(o, &m, &err), 0);
    assert_false(m.has_depth);
    vigil_room_message_release(&m);
    json_object_put(o);
}

/* One counter-example per rule of the schema (and of the reader's bounds). */
static void message_counter_examples(void **state)
{
    (void)state;
    static const reject_case CASES[] = {
        {"{\"sender_type\":\"ai\",\"text\":\"x\"}", VIGIL_REJECT_MISSING_FIELD, "sender"},
        {"{\"sender\":\"a/b\",\"sender_type\":\"ai\",\"text\":\"x\"}", VIGIL_REJECT_BAD_ID, "sender"},
        {"{\"sender\":\"a\",\"text\":\"x\"}", VIGIL_REJECT_MISSING_FIELD, "sender_type"},
        {"{\"sender\":\"a\",\"sender_type\":\"robot\",\"text\":\"x\"}", VIGIL_REJECT_BAD_VALUE, "sender_type"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\"}", VIGIL_REJECT_MISSING_FIELD, "text"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":5}", VIGIL_REJECT_WRONG_TYPE, "text"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"depth\":-1}", VIGIL_REJECT_BAD_VALUE, "depth"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"depth\":1.5}", VIGIL_REJECT_WRONG_TYPE, "depth"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"depth\":\"3\"}", VIGIL_REJECT_WRONG_TYPE, "depth"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"proactive\":1}", VIGIL_REJECT_WRONG_TYPE, "proactive"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"mentions\":\"bob\"}", VIGIL_REJECT_WRONG_TYPE, "mentions"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"mentions\":[\"ok\",\"$x\"]}", VIGIL_REJECT_BAD_ID, "mentions[1]"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"reply_to\":\"\"}", VIGIL_REJECT_BAD_VALUE, "reply_to"},
        {"{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"about\":\"a b\"}", VIGIL_REJECT_BAD_ID, "about"},
    };
    assert_rejects_all(CASES, sizeof CASES / sizeof CASES[0], read_message);
}

static void message_mentions_bounded(void **state)
{
    (void)state;
    char buf[8192];
    int n = snprintf(buf, sizeof buf, "{\"sender\":\"a\",\"sender_type\":\"ai\",\"text\":\"x\",\"mentions\":[");
    for (int i = 0; i <= VIGIL_MSG_MAX_MENTIONS; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\"p%d\"", i ? "," : "", i);
    snprintf(buf + n, sizeof buf - (size_t)n, "]}");
    json_object *o = payload(buf);
    vigil_room_message m;
    vigil_error err = {0};
    assert_reject(vigil_room_message_read(o, &m, &err), err, VIGIL_REJECT_BAD_VALUE, "mentions");
    json_object_put(o);
}

/* ---- room/{room}/control ---------------------------------------------- */

static void control_example_reads(void **state)
{
    (void)state;
    json_object *o = example("room-control");
    vigil_room_control c;
    vigil_error err = {0};
    assert_int_equal(vigil_room_control_read(o, &c, &err), 0);
    assert_int_equal(c.action, VIGIL_CONTROL_WAKE);
    assert_true(c.all);
    assert_string_equal(c.by, "joel");
    assert_null(c.persona);
    assert_int_equal(c.if_inactive_since, 0);
    json_object_put(o);

    o = payload("{\"action\":\"pause\",\"if_inactive_since\":5}");
    assert_int_equal(vigil_room_control_read(o, &c, &err), 0);
    assert_int_equal(c.action, VIGIL_CONTROL_PAUSE);
    assert_false(c.all);
    assert_int_equal(c.if_inactive_since, 5);
    json_object_put(o);

    o = payload("{\"action\":\"wake\",\"persona\":\"ann\",\"by\":\"joel\"}");
    assert_int_equal(vigil_room_control_read(o, &c, &err), 0);
    assert_string_equal(c.persona, "ann");
    json_object_put(o);
}

static void control_counter_examples(void **state)
{
    (void)state;
    static const reject_case CASES[] = {
        {"{\"by\":\"joel\"}", VIGIL_REJECT_MISSING_FIELD, "action"},
        {"{\"action\":\"stop\"}", VIGIL_REJECT_BAD_VALUE, "action"},
        {"{\"action\":\"pause\",\"all\":\"yes\"}", VIGIL_REJECT_WRONG_TYPE, "all"},
        {"{\"action\":\"pause\",\"by\":\"jo el\"}", VIGIL_REJECT_BAD_ID, "by"},
        {"{\"action\":\"pause\",\"if_inactive_since\":-3}", VIGIL_REJECT_BAD_VALUE, "if_inactive_since"},
        {"{\"action\":\"wake\"}", VIGIL_REJECT_BAD_VALUE, "wake"},
        {"{\"action\":\"wake\",\"persona\":\"#\"}", VIGIL_REJECT_BAD_ID, "persona"},
        {"{\"action\":\"delete\",\"all\":true}", VIGIL_REJECT_BAD_VALUE, "delete"},
    };
    assert_rejects_all(CASES, sizeof CASES / sizeof CASES[0], read_control);
}

/* ---- room/{room}/presence --------------------------------------------- */

static void presence_example_reads(void **state)
{
    (void)state;
    json_object *o = example("room-presence");
    vigil_room_presence p;
    vigil_error err = {0};
    assert_int_equal(vigil_room_presence_read(o, &p, &err), 0);
    assert_string_equal(p.user, "joel");
    assert_string_equal(p.session, "browser-tab-1");
    assert_int_equal(p.status, VIGIL_PRESENCE_ACTIVE);
    assert_true(p.has_last_activity);
    assert_int_equal(p.last_activity, 1763799996000LL);
    json_object_put(o);

    /* lenient: last_activity may be omitted */
    o = payload("{\"user\":\"joel\",\"session\":\"s\",\"status\":\"away\"}");
    assert_int_equal(vigil_room_presence_read(o, &p, &err), 0);
    assert_false(p.has_last_activity);
    assert_int_equal(p.status, VIGIL_PRESENCE_AWAY);
    json_object_put(o);

    /* lenient: the camelCase spelling of a browser heartbeat */
    o = payload("{\"userId\":\"joel-id\",\"sessionId\":\"browser-tab-1\",\"status\":\"idle\","
                "\"lastActivity\":1763799996000}");
    assert_int_equal(vigil_room_presence_read(o, &p, &err), 0);
    assert_string_equal(p.user, "joel-id");
    assert_string_equal(p.session, "browser-tab-1");
    assert_int_equal(p.status, VIGIL_PRESENCE_IDLE);
    assert_true(p.has_last_activity);
    assert_int_equal(p.last_activity, 1763799996000LL);
    json_object_put(o);

    /* neither spelling: the error names the documented field */
    o = payload("{\"session\":\"s\",\"status\":\"away\"}");
    assert_int_equal(vigil_room_presence_read(o, &p, &err), -1);
    assert_non_null(strstr(err.detail, "user"));
    json_object_put(o);
}

static void presence_counter_examples(void **state)
{
    (void)state;
    static const reject_case CASES[] = {
        {"{\"session\":\"s\",\"status\":\"idle\"}", VIGIL_REJECT_MISSING_FIELD, "user"},
        {"{\"user\":\"u\",\"status\":\"idle\"}", VIGIL_REJECT_MISSING_FIELD, "session"},
        {"{\"user\":\"u\",\"session\":\"s/1\",\"status\":\"idle\"}", VIGIL_REJECT_BAD_ID, "session"},
        {"{\"user\":\"u\",\"session\":\"s\",\"status\":\"busy\"}", VIGIL_REJECT_BAD_VALUE, "status"},
        {"{\"user\":\"u\",\"session\":\"s\",\"status\":\"idle\",\"last_activity\":-1}", VIGIL_REJECT_BAD_VALUE, "last_activity"},
        {"{\"user\":\"u\",\"session\":\"s\",\"status\":\"idle\",\"last_activity\":\"now\"}", VIGIL_REJECT_WRONG_TYPE, "last_activity"},
    };
    assert_rejects_all(CASES, sizeof CASES / sizeof CASES[0], read_presence);
}

/* The writer's output is what the reader accepts, field for field. */
static void writer_output_reads_back(void **state)
{
    (void)state;
    vigil_room_message_out out = {.id = "m-1:general:0", .room = "general", .sender = "vigil",
                                  .sender_type = VIGIL_SENDER_SYSTEM, .text = "\u26d4 stopped",
                                  .reply_to = "m-1", .reason = "max_depth", .has_depth = true,
                                  .depth = 100, .ts = 5};
    json_object *o = vigil_room_message_json(&out);
    assert_non_null(o);
    vigil_room_message m;
    vigil_error err = {0};
    assert_int_equal(vigil_room_message_read(o, &m, &err), 0);
    assert_string_equal(m.sender, "vigil");
    assert_int_equal(m.sender_type, VIGIL_SENDER_SYSTEM);
    assert_string_equal(m.reply_to, "m-1");
    assert_string_equal(m.reason, "max_depth");
    assert_true(m.has_depth);
    assert_int_equal(m.depth, 100);
    assert_null(m.about);
    assert_false(m.proactive);
    json_object *v;
    assert_true(json_object_object_get_ex(o, "ts", &v));
    assert_int_equal(json_object_get_int64(v), 5);
    assert_false(json_object_object_get_ex(o, "about", &v)); /* NULL leaves a field out */
    vigil_room_message_release(&m);
    json_object_put(o);

    vigil_room_message_out ai = {.id = "h1", .room = "r", .sender = "bot",
                                 .sender_type = VIGIL_SENDER_AI, .text = NULL, .proactive = true};
    o = vigil_room_message_json(&ai);
    assert_int_equal(vigil_room_message_read(o, &m, &err), 0);
    assert_true(m.proactive);
    assert_string_equal(m.text, "");
    assert_false(m.has_depth);
    vigil_room_message_release(&m);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(message_example_reads),
        cmocka_unit_test(message_minimal_and_optional_fields),
        cmocka_unit_test(message_counter_examples),
        cmocka_unit_test(message_mentions_bounded),
        cmocka_unit_test(control_example_reads),
        cmocka_unit_test(control_counter_examples),
        cmocka_unit_test(presence_example_reads),
        cmocka_unit_test(presence_counter_examples),
        cmocka_unit_test(writer_output_reads_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
