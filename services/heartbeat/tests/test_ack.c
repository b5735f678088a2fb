/* HEARTBEAT_OK recognition (alone, with punctuation, at the start, at the
 * end; not in the middle; not with a long tail) and the reading of the
 * model's answer (JSON, fenced JSON, plain text). The token never survives
 * into a message. */
#include "hb_test.h"

static bool ack(const char *t)
{
    return hb_is_ack(t, strlen(t));
}

static char *repeat(const char *unit, int n)
{
    size_t ul = strlen(unit);
    char *s = malloc(ul * (size_t)n + 1);
    for (int i = 0; i < n; i++)
        memcpy(s + ul * (size_t)i, unit, ul);
    s[ul * (size_t)n] = '\0';
    return s;
}

static void alone_and_with_punctuation(void **st)
{
    (void)st;
    assert_true(ack("HEARTBEAT_OK"));
    assert_true(ack("  HEARTBEAT_OK\n"));
    assert_true(ack("HEARTBEAT_OK."));
    assert_true(ack("HEARTBEAT_OK!"));
    assert_true(ack("**HEARTBEAT_OK**"));
    assert_true(ack("`HEARTBEAT_OK`"));
    assert_true(ack("\"HEARTBEAT_OK\""));
    assert_true(ack("heartbeat_ok"));
    assert_false(ack("HEARTBEAT_OKAY"));
    assert_false(ack("NO_HEARTBEAT_OK_HERE"));
    assert_false(ack("HEARTBEAT OK"));
    assert_false(ack(""));
    assert_false(hb_is_ack(NULL, 0));
}

static void at_the_start_or_end_with_up_to_300_other_characters(void **st)
{
    (void)st;
    assert_true(ack("HEARTBEAT_OK - nothing needs attention right now."));
    assert_true(ack("Checked the list; all quiet.\nHEARTBEAT_OK"));
    char *tail = repeat("x", 300), *longer = repeat("x", 301), *utf = repeat("é", 300);
    char buf[1024];
    snprintf(buf, sizeof buf, "HEARTBEAT_OK %s", tail);
    assert_true(ack(buf));
    snprintf(buf, sizeof buf, "HEARTBEAT_OK %s", longer);
    assert_false(ack(buf)); /* a long tail does not count */
    snprintf(buf, sizeof buf, "%s HEARTBEAT_OK", longer);
    assert_false(ack(buf));
    snprintf(buf, sizeof buf, "%s HEARTBEAT_OK.", tail);
    assert_true(ack(buf));
    snprintf(buf, sizeof buf, "HEARTBEAT_OK %s", utf); /* 300 characters, 600 bytes */
    assert_true(ack(buf));
    free(tail);
    free(longer);
    free(utf);
}

static void in_the_middle_it_does_not_count(void **st)
{
    (void)st;
    assert_false(ack("I checked: HEARTBEAT_OK, but the build is red."));
    assert_false(ack("Reminder - HEARTBEAT_OK - the review is at 15:00"));
}

static void strip_removes_every_occurrence(void **st)
{
    (void)st;
    char out[128];
    const char *t = "Reminder HEARTBEAT_OK: stand-up heartbeat_ok now";
    hb_strip_token(t, strlen(t), out, sizeof out);
    assert_string_equal(out, "Reminder : stand-up  now");
    t = "  HEARTBEAT_OK  ";
    assert_int_equal(hb_strip_token(t, strlen(t), out, sizeof out), 0);
}

static void read(const char *text, hb_reply *r)
{
    hb_reply_read(text, strlen(text), r);
}

static void replies_json_fenced_and_plain(void **st)
{
    (void)st;
    hb_reply r;
    read("{\"message\": \"Stand-up in 5\", \"priority\": \"urgent\", \"category\": \"deadline\"}", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "Stand-up in 5");
    assert_int_equal(r.priority, HB_PRIO_URGENT);
    assert_int_equal(r.category, HB_CAT_DEADLINE);
    hb_reply_clear(&r);
    read("```json\n{\"message\": \"CI is red\", \"priority\": \"low\", \"category\": \"alert\"}\n```", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "CI is red");
    assert_int_equal(r.priority, HB_PRIO_LOW);
    assert_int_equal(r.category, HB_CAT_ALERT);
    hb_reply_clear(&r);
    /* prose around the JSON (small models do that) */
    read("Sure! Here it is: {\"message\": \"Lunch at 12\", \"priority\": \"urgent\", "
         "\"category\": \"reminder\"} Hope that helps.", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "Lunch at 12");
    assert_int_equal(r.priority, HB_PRIO_URGENT);
    hb_reply_clear(&r);
    /* braces without a message object stay text */
    read("Use {curly} braces wisely", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "Use {curly} braces wisely");
    hb_reply_clear(&r);
    /* plain text: a normal-priority message of the default category */
    read("Don't forget to drink some water.", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "Don't forget to drink some water.");
    assert_int_equal(r.priority, HB_PRIO_NORMAL);
    assert_int_equal(r.category, HB_CAT_DEFAULT);
    hb_reply_clear(&r);
    /* unknown priority/category: the defaults */
    read("{\"message\": \"hi\", \"priority\": \"asap\", \"category\": \"gossip\"}", &r);
    assert_int_equal(r.priority, HB_PRIO_NORMAL);
    assert_int_equal(r.category, HB_CAT_DEFAULT);
    hb_reply_clear(&r);
    read("{\"message\": \"HEARTBEAT_OK\"}", &r);
    assert_int_equal(r.kind, HB_REPLY_ACK);
    hb_reply_clear(&r);
    read("{\"status\": \"fine\"}", &r);
    assert_int_equal(r.kind, HB_REPLY_UNUSABLE);
    hb_reply_clear(&r);
    read(" \n  ", &r);
    assert_int_equal(r.kind, HB_REPLY_UNUSABLE);
    hb_reply_clear(&r);
    read("", &r);
    assert_int_equal(r.kind, HB_REPLY_UNUSABLE);
    hb_reply_clear(&r);
}

static void the_token_never_reaches_a_message(void **st)
{
    (void)st;
    hb_reply r;
    char *longer = repeat("y", 320), buf[512];
    snprintf(buf, sizeof buf, "HEARTBEAT_OK %s", longer);
    read(buf, &r); /* a long tail: a message, without the token */
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_null(strstr(r.message, "HEARTBEAT"));
    assert_string_equal(r.message, longer);
    hb_reply_clear(&r);
    read("The deploy HEARTBEAT_OK window closes at 5", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "The deploy  window closes at 5");
    hb_reply_clear(&r);
    read("{\"message\": \"ping heartbeat_ok pong and a lot more words after it\", \"priority\": \"urgent\"}", &r);
    assert_null(strstr(r.message, "heartbeat_ok"));
    hb_reply_clear(&r);
    free(longer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alone_and_with_punctuation),
        cmocka_unit_test(at_the_start_or_end_with_up_to_300_other_characters),
        cmocka_unit_test(in_the_middle_it_does_not_count),
        cmocka_unit_test(strip_removes_every_occurrence),
        cmocka_unit_test(replies_json_fenced_and_plain),
        cmocka_unit_test(the_token_never_reaches_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
