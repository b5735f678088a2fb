/* Unit tests of envelope.c: topic rules, id and ts found or derived, the
 * topic-id check and its mismatch reasons, a clear, and cleanup on every
 * path. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/envelope.h"

#define MAX 65536
#define NOW 1700000000000LL

/* Parses topic/payload; on success returns 0 with *in filled. */
static int parse(const char *topic, const char *payload, vigil_input *in, vigil_error *err)
{
    return vigil_input_parse(topic, payload, strlen(payload), MAX, NOW, in, err);
}

static void expect_topic_rejected(const char *topic)
{
    vigil_input in;
    vigil_error err = {0};
    if (parse(topic, "{}", &in, &err) == 0) {
        vigil_input_clear(&in);
        fail_msg("topic '%s' accepted", topic);
    }
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_null(in.body);
}

static void test_parse_ok_with_id_and_ts(void **state)
{
    (void)state;
    vigil_input in;
    vigil_error err = {0};
    const char *p = "{\"id\":\"m-1\",\"room\":\"general\",\"ts\":1699999999999}";
    assert_int_equal(parse("room/general/message", p, &in, &err), 0);
    assert_string_equal(in.topic, "room/general/message");
    assert_int_equal(in.nparts, 3);
    assert_string_equal(in.parts[0], "room");
    assert_string_equal(in.parts[1], "general");
    assert_string_equal(in.parts[2], "message");
    assert_string_equal(in.id, "m-1");
    assert_int_equal(in.ts, 1699999999999LL);
    assert_int_equal(in.received_ms, NOW);
    assert_ptr_equal(in.raw, p);
    assert_int_equal(in.raw_len, strlen(p));
    assert_int_equal(in.retained, 0);
    assert_non_null(in.body);
    vigil_input_clear(&in);
    assert_null(in.body);
    vigil_input_clear(&in); /* twice is harmless */
}

static void test_derived_id_and_default_ts(void **state)
{
    (void)state;
    vigil_input in;
    vigil_error err = {0};
    const char *topic = "room/general/message";
    const char *p = "{\"room\":\"general\",\"text\":\"hi\"}";
    assert_int_equal(parse(topic, p, &in, &err), 0);
    assert_int_equal(in.ts, NOW);

    char joined[256];
    int n = snprintf(joined, sizeof joined, "%s\n%s", topic, p);
    char want[32];
    snprintf(want, sizeof want, "h-%016llx", (unsigned long long)vigil_hash64(joined, (size_t)n));
    assert_string_equal(in.id, want);
    assert_int_equal(strlen(in.id), 18);
    vigil_input_clear(&in);

    /* same bytes on another topic: another id; same both: same id */
    assert_int_equal(parse("room/other/message", p, &in, &err), 0);
    assert_string_not_equal(in.id, want);
    vigil_input_clear(&in);
    assert_int_equal(parse(topic, p, &in, &err), 0);
    assert_string_equal(in.id, want);
    vigil_input_clear(&in);

    /* "id": null is treated as absent */
    assert_int_equal(parse(topic, "{\"id\":null}", &in, &err), 0);
    assert_true(strncmp(in.id, "h-", 2) == 0);
    vigil_input_clear(&in);
}

static void test_topic_rules(void **state)
{
    (void)state;
    expect_topic_rejected("");
    expect_topic_rejected("/room/a");
    expect_topic_rejected("room/a/");
    expect_topic_rejected("room//message");
    expect_topic_rejected("room/+/message");
    expect_topic_rejected("room/#");
    expect_topic_rejected("room/a+b/message");
    expect_topic_rejected("$SYS/broker");
    expect_topic_rejected("a/b/c/d/e/f/g/h/i"); /* 9 levels */
    expect_topic_rejected("room/\xff/message");
    char long_topic[VIGIL_TOPIC_MAX + 8];
    memset(long_topic, 'a', sizeof long_topic - 1);
    long_topic[sizeof long_topic - 1] = '\0';
    expect_topic_rejected(long_topic);

    vigil_input in;
    vigil_error err = {0};
    assert_int_equal(vigil_input_parse(NULL, "{}", 2, MAX, NOW, &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);

    /* limits that are fine: 8 levels, 255 bytes, a '$' not in front */
    assert_int_equal(parse("a/b/c/d/e/f/g/h", "{}", &in, &err), 0);
    assert_int_equal(in.nparts, 8);
    assert_string_equal(in.parts[7], "h");
    vigil_input_clear(&in);
    long_topic[VIGIL_TOPIC_MAX - 1] = '\0';
    assert_int_equal(parse(long_topic, "{}", &in, &err), 0);
    assert_int_equal(in.nparts, 1);
    assert_int_equal(strlen(in.parts[0]), VIGIL_TOPIC_MAX - 1);
    vigil_input_clear(&in);
    assert_int_equal(parse("room/$x/message", "{}", &in, &err), 0);
    vigil_input_clear(&in);
    assert_int_equal(parse("planner/task", "{}", &in, &err), 0);
    assert_int_equal(in.nparts, 2);
    vigil_input_clear(&in);
}

static void test_topic_detail(void **state)
{
    (void)state;
    vigil_input in;
    vigil_error err = {0};
    assert_int_equal(parse("room//message", "{}", &in, &err), -1);
    assert_string_equal(err.detail, "topic 'room//message' has an empty level");
    /* every topic error quotes the topic (the quote is made only then) */
    assert_int_equal(parse("$SYS/x", "{}", &in, &err), -1);
    assert_string_equal(err.detail, "topic '$SYS/x' starts with '$'");
    assert_int_equal(parse("room/+/message", "{}", &in, &err), -1);
    assert_string_equal(err.detail, "topic 'room/+/message' contains a wildcard");
    assert_int_equal(parse("room/\xff/message", "{}", &in, &err), -1);
    assert_string_equal(err.detail, "topic 'room/\\xff/message' is not valid UTF-8");
    char deep[64] = "a";
    for (int i = 1; i <= VIGIL_TOPIC_PARTS; i++)
        strcat(deep, "/a");
    assert_int_equal(parse(deep, "{}", &in, &err), -1);
    char want[160];
    snprintf(want, sizeof want, "topic '%s' has more than %d levels", deep, VIGIL_TOPIC_PARTS);
    assert_string_equal(err.detail, want);
    char long_topic[VIGIL_TOPIC_MAX + 1];
    memset(long_topic, 'x', VIGIL_TOPIC_MAX);
    long_topic[VIGIL_TOPIC_MAX] = '\0';
    assert_int_equal(parse(long_topic, "{}", &in, &err), -1);
    snprintf(want, sizeof want, "topic '%.60s...' is longer than %d bytes", long_topic,
             VIGIL_TOPIC_MAX - 1);
    assert_string_equal(err.detail, want);
}

static void test_payload_errors_propagate(void **state)
{
    (void)state;
    vigil_input in;
    vigil_error err = {0};
    assert_int_equal(parse("room/a/message", "{\"a\":1", &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_NOT_JSON);
    assert_null(in.body);
    assert_int_equal(parse("room/a/message", "[1]", &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_NOT_OBJECT);
    assert_int_equal(parse("room/a/message", "{\"t\":\"\xc0\x80\"}", &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_UTF8);
    assert_int_equal(vigil_input_parse("room/a/message", "{\"a\":12}", 8, 7, NOW, &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_OVERSIZE);
}

static void test_bad_ids(void **state)
{
    (void)state;
    static const char *const BAD[] = {
        "{\"id\":\"\"}",       "{\"id\":\"a/b\"}",   "{\"id\":\"a+b\"}",
        "{\"id\":\"a#b\"}",    "{\"id\":\"a\\nb\"}", "{\"id\":\"caf\xc3\xa9\"}",
        "{\"id\":5}",          "{\"id\":true}",      "{\"id\":\"x\\u0000y\"}",
        NULL,
    };
    vigil_input in;
    vigil_error err = {0};
    for (int i = 0; BAD[i]; i++) {
        if (parse("room/a/message", BAD[i], &in, &err) == 0) {
            vigil_input_clear(&in);
            fail_msg("payload %s accepted", BAD[i]);
        }
        assert_int_equal(err.reason, VIGIL_REJECT_BAD_ID);
        assert_null(in.body); /* freed on the error path */
    }
    /* 128 characters is the limit; space and '$' are printable */
    char p[300];
    char id[140];
    memset(id, 'x', 129);
    id[128] = '\0';
    snprintf(p, sizeof p, "{\"id\":\"%s\"}", id);
    assert_int_equal(parse("room/a/message", p, &in, &err), 0);
    assert_string_equal(in.id, id);
    vigil_input_clear(&in);
    id[128] = 'x';
    id[129] = '\0';
    snprintf(p, sizeof p, "{\"id\":\"%s\"}", id);
    assert_int_equal(parse("room/a/message", p, &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_ID);
    assert_int_equal(parse("room/a/message", "{\"id\":\"$a b~\"}", &in, &err), 0);
    assert_string_equal(in.id, "$a b~");
    vigil_input_clear(&in);
}

static void test_ts_rules(void **state)
{
    (void)state;
    vigil_input in;
    vigil_error err = {0};
    assert_int_equal(parse("room/a/message", "{\"ts\":\"yesterday\"}", &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_null(in.body);
    assert_int_equal(parse("room/a/message", "{\"ts\":1.5}", &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(parse("room/a/message", "{\"ts\":-1}", &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_int_equal(parse("room/a/message", "{\"ts\":0}", &in, &err), 0);
    assert_int_equal(in.ts, 0);
    vigil_input_clear(&in);
    assert_int_equal(parse("room/a/message", "{\"ts\":1.7e12}", &in, &err), 0);
    assert_int_equal(in.ts, 1700000000000LL);
    vigil_input_clear(&in);
    assert_int_equal(parse("room/a/message", "{\"ts\":null}", &in, &err), 0);
    assert_int_equal(in.ts, NOW);
    vigil_input_clear(&in);
}

/* Parses topic room/<part>/message with payload and checks part 1. */
static int topic_id(const char *part, const char *payload, const char *field, const char **out,
                    vigil_error *err)
{
    char topic[VIGIL_TOPIC_MAX];
    snprintf(topic, sizeof topic, "room/%s/message", part);
    vigil_input in;
    if (parse(topic, payload, &in, err) != 0)
        fail_msg("parse of %s failed: %s", topic, err->detail);
    int r = vigil_input_topic_id(&in, 1, field, out, err);
    if (r == 0 && out)
        assert_ptr_equal(*out, in.parts[1]);
    vigil_input_clear(&in);
    return r;
}

/* A clear (an empty payload where the service takes it as one): the
 * topic is checked as always, no body, no id, ts the receive time; an
 * empty payload parsed as an input stays not_json. */
static void test_parse_cleared(void **state)
{
    (void)state;
    vigil_input in;
    vigil_error err = {0};
    assert_int_equal(vigil_input_parse_cleared("agent/ann/status", NOW, &in, &err), 0);
    assert_true(in.cleared);
    assert_null(in.body);
    assert_string_equal(in.id, "");
    assert_int_equal(in.ts, NOW);
    assert_int_equal(in.received_ms, NOW);
    assert_int_equal(in.nparts, 3);
    assert_string_equal(in.parts[1], "ann");
    const char *out = NULL;
    assert_int_equal(vigil_input_topic_id(&in, 1, "agent", &out, &err), 0);
    assert_string_equal(out, "ann");
    vigil_input_clear(&in);
    assert_false(in.cleared);
    assert_int_equal(vigil_input_parse_cleared("agent/+/status", NOW, &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_false(in.cleared);
    memset(&err, 0, sizeof err);
    assert_int_equal(vigil_input_parse("agent/ann/status", "", 0, MAX, NOW, &in, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_NOT_JSON);
}

/* On a topic that also takes clears, a derived id is this delivery's own
 * (the same meta again after a clear is applied again); a payload's own
 * id is kept, and a clear keeps none. */
static void test_id_per_delivery(void **state)
{
    (void)state;
    static const char meta[] = "{\"rooms\":[\"general\"]}";
    vigil_input a, b;
    vigil_error err = {0};
    assert_int_equal(
        vigil_input_parse("persona/ann/meta", meta, strlen(meta), MAX, NOW, &a, &err), 0);
    assert_int_equal(
        vigil_input_parse("persona/ann/meta", meta, strlen(meta), MAX, NOW + 1, &b, &err), 0);
    assert_true(a.id_derived && b.id_derived);
    assert_string_equal(a.id, b.id); /* a redelivery, as far as the payload says */
    char plain[sizeof a.id];
    strcpy(plain, a.id);
    vigil_input_id_per_delivery(&a);
    vigil_input_id_per_delivery(&b);
    assert_string_not_equal(a.id, b.id);
    assert_int_equal(strncmp(a.id, plain, strlen(plain)), 0);
    assert_true(vigil_event_id_valid(a.id, strlen(a.id)));
    vigil_input_clear(&a);
    vigil_input_clear(&b);
    static const char given[] = "{\"id\":\"m-7\",\"rooms\":[]}";
    assert_int_equal(
        vigil_input_parse("persona/ann/meta", given, strlen(given), MAX, NOW, &a, &err), 0);
    assert_false(a.id_derived);
    vigil_input_id_per_delivery(&a);
    assert_string_equal(a.id, "m-7");
    vigil_input_clear(&a);
    assert_int_equal(vigil_input_parse_cleared("persona/ann/meta", NOW, &a, &err), 0);
    vigil_input_id_per_delivery(&a);
    assert_string_equal(a.id, "");
    vigil_input_clear(&a);
}

static void test_topic_id_valid(void **state)
{
    (void)state;
    vigil_error err = {0};
    const char *out = NULL;
    assert_int_equal(topic_id("general", "{\"room\":\"general\"}", "room", &out, &err), 0);
    assert_int_equal(topic_id("general", "{}", "room", &out, &err), 0);
    assert_int_equal(topic_id("general", "{\"room\":null}", "room", &out, &err), 0);
    assert_int_equal(topic_id("general", "{\"room\":\"x\"}", NULL, &out, &err), 0);
    assert_int_equal(topic_id(".", "{}", NULL, NULL, &err), 0);
    assert_int_equal(topic_id("_", "{}", NULL, NULL, &err), 0);
    assert_int_equal(topic_id("-", "{}", NULL, NULL, &err), 0);
    char id[80];
    memset(id, 'r', 64);
    id[64] = '\0';
    assert_int_equal(topic_id(id, "{}", NULL, NULL, &err), 0);
}

static void test_topic_id_invalid(void **state)
{
    (void)state;
    vigil_error err = {0};
    const char *out = NULL;
    assert_int_equal(topic_id("$x", "{}", "room", &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_string_equal(err.detail, "topic id '$x' is not a valid id");
    char id[80];
    memset(id, 'r', 65);
    id[65] = '\0';
    assert_int_equal(topic_id(id, "{}", NULL, &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_int_equal(topic_id("caf\xc3\xa9", "{}", NULL, &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_int_equal(topic_id("a b", "{}", NULL, &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_int_equal(topic_id("a:b", "{}", NULL, &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);

    /* index out of range */
    vigil_input in;
    assert_int_equal(parse("planner/task", "{}", &in, &err), 0);
    assert_int_equal(vigil_input_topic_id(&in, 2, NULL, &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    assert_int_equal(vigil_input_topic_id(&in, -1, NULL, &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_TOPIC);
    vigil_input_clear(&in);
}

static void test_topic_mismatch(void **state)
{
    (void)state;
    vigil_error err = {0};
    const char *out = NULL;
    assert_int_equal(topic_id("a", "{\"room\":\"b\"}", "room", &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_TOPIC_MISMATCH);
    assert_string_equal(err.detail, "payload room 'b' disagrees with topic 'a'");
    /* case matters */
    assert_int_equal(topic_id("a", "{\"room\":\"A\"}", "room", &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_TOPIC_MISMATCH);
    assert_int_equal(topic_id("a", "{\"room\":7}", "room", &out, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
}

/* The shard is decided from the topic only where the topic alone names
 * the key: room/{valid id}/message, nothing else. */
static void test_topic_key_room_message(void **state)
{
    (void)state;
    char key[16];
    assert_true(vigil_topic_key_room_message("room/general/message", key, sizeof key));
    assert_string_equal(key, "general");
    assert_true(vigil_topic_key_room_message("room/a.b_c-9/message", key, sizeof key));
    assert_string_equal(key, "a.b_c-9");
    const char *no[] = {
        "room/general/control", "room/general/message/x", "room/general", "room//message",
        "room/gen+eral/message", "room/#/message", "room/$sys/message", "rooms/general/message",
        "persona/p/message", "room/general/messages", "/room/general/message", "",
        "room/sixteen-chars-xy/message", /* 17 bytes with its NUL: does not fit */
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        strcpy(key, "untouched");
        assert_false(vigil_topic_key_room_message(no[i], key, sizeof key));
        assert_string_equal(key, "untouched");
    }
    assert_false(vigil_topic_key_room_message(NULL, key, sizeof key));
    /* exactly fits: 15 characters and the NUL */
    assert_true(vigil_topic_key_room_message("room/fifteen-chars-x/message", key, sizeof key));
    assert_string_equal(key, "fifteen-chars-x");
}

/* clear_topic's matcher: exactly head/{one non-empty level}/tail. */
static void test_topic_is_kind(void **state)
{
    (void)state;
    assert_true(vigil_topic_is_kind("persona/ann/meta", "persona", "meta"));
    assert_true(vigil_topic_is_kind("persona/a/meta", "persona", "meta"));
    assert_true(vigil_topic_is_kind("heartbeat/b.c-d_e/config", "heartbeat", "config"));
    const char *no[] = {
        "persona//meta", "persona/ann/meta/x", "persona/ann", "persona/ann/state",
        "personas/ann/meta", "xpersona/ann/meta", "persona/a/b/meta", "persona/ann/metax",
        "persona/ann/xmeta", "/persona/ann/meta", "persona/meta", "personameta", "", "meta",
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(vigil_topic_is_kind(no[i], "persona", "meta"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok_with_id_and_ts),
        cmocka_unit_test(test_derived_id_and_default_ts),
        cmocka_unit_test(test_topic_rules),
        cmocka_unit_test(test_topic_detail),
        cmocka_unit_test(test_payload_errors_propagate),
        cmocka_unit_test(test_bad_ids),
        cmocka_unit_test(test_ts_rules),
        cmocka_unit_test(test_topic_id_valid),
        cmocka_unit_test(test_topic_id_invalid),
        cmocka_unit_test(test_topic_mismatch),
        cmocka_unit_test(test_topic_key_room_message),
        cmocka_unit_test(test_topic_is_kind),
        cmocka_unit_test(test_parse_cleared),
        cmocka_unit_test(test_id_per_delivery),
    };
    return cmocka_run_group_tests_name("envelope", tests, NULL, NULL);
}
