/* HEARTBEAT_OK recognition, the specified rule: an answer holding the token
 * anywhere (alone, with punctuation, at the start, in the middle, glued to
 * other characters, with any amount of other text) is a no-action run, and
 * nothing holding it is ever sent; the reading of the model's other
 * answers (JSON, fenced JSON, plain text, JSON cut short). */
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
    assert_true(ack("heartbeat_ok")); /* any case: the same answer */
    assert_false(ack("HEARTBEAT OK"));
    assert_false(ack("HEARTBEAT_O"));
    assert_false(ack("Time for a short break?"));
    assert_false(ack(""));
    assert_false(hb_is_ack(NULL, 0));
}

/* `response.includes(HEARTBEAT_OK_MARKER)`: where it stands and what else
 * the answer says do not matter. */
static void anywhere_with_any_amount_of_other_text(void **st)
{
    (void)st;
    assert_true(ack("HEARTBEAT_OK - nothing needs attention right now."));
    assert_true(ack("Checked the list; all quiet.\nHEARTBEAT_OK"));
    assert_true(ack("Nothing pressing, HEARTBEAT_OK, though the build is red."));
    assert_true(ack("Reminder - HEARTBEAT_OK - the review is at 15:00"));
    assert_true(ack("HEARTBEAT_OKAY"));
    assert_true(ack("NO_HEARTBEAT_OK_HERE"));
    char *longer = repeat("x", 5000), buf[5100];
    snprintf(buf, sizeof buf, "HEARTBEAT_OK %s", longer);
    assert_true(ack(buf));
    snprintf(buf, sizeof buf, "%s HEARTBEAT_OK %s", longer + 2500, longer + 2500);
    assert_true(ack(buf));
    free(longer);
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

/* Cutting a token out must not join what is around it into another: the
 * kept context would carry the token into the next prompt (found by
 * fuzzing). */
static void strip_leaves_no_token_behind(void **st)
{
    (void)st;
    char out[128];
    const char *t = "**HEARTBEATHEARTBEAT_OK_OK** notnoHEARTBEAT_OK po add";
    size_t n = hb_strip_token(t, strlen(t), out, sizeof out);
    assert_false(hb_is_ack(out, n));
    assert_string_equal(out, "**** notno po add");
    t = "HEARTBEAT_heartbeat_okOK!";
    n = hb_strip_token(t, strlen(t), out, sizeof out);
    assert_false(hb_is_ack(out, n));
    assert_string_equal(out, "!");
}

static void read(const char *text, hb_reply *r)
{
    hb_reply_read(text, strlen(text), r);
}

/* The kind of reply text is read as. */
static hb_reply_kind kind_of(const char *text)
{
    hb_reply r;
    read(text, &r);
    hb_reply_kind k = r.kind;
    hb_reply_clear(&r);
    return k;
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
    /* an array holding one answer is that answer; two are one too many */
    read("[{\"message\": \"Stand-up in 5\", \"priority\": \"urgent\"}]", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "Stand-up in 5");
    assert_int_equal(r.priority, HB_PRIO_URGENT);
    hb_reply_clear(&r);
    read("```json\n[{\"message\": \"a\"}, {\"message\": \"b\"}]\n```", &r);
    assert_int_equal(r.kind, HB_REPLY_UNUSABLE);
    assert_string_equal(r.why, "a JSON array of 2 answers where one object is expected (one "
                               "proactive message per run)");
    hb_reply_clear(&r);
    read("[]", &r);
    assert_int_equal(r.kind, HB_REPLY_UNUSABLE);
    hb_reply_clear(&r);
    /* brackets in a plain text stay text */
    read("[Reminder] stand-up at 10", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "[Reminder] stand-up at 10");
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
    /* the token hidden from the raw text by JSON escapes is still seen */
    assert_int_equal(kind_of("{\"message\": \"HEARTBEAT\\u005fOK\"}"), HB_REPLY_ACK);
    /* a blank message: neither the token nor something to say */
    assert_int_equal(kind_of("{\"message\": \"  \"}"), HB_REPLY_UNUSABLE);
    /* JSON cut short (max_tokens): never sent as half an object */
    read("{\"message\": \"Stand-up starts in", &r);
    assert_int_equal(r.kind, HB_REPLY_UNUSABLE);
    assert_non_null(strstr(r.why, "does not parse"));
    hb_reply_clear(&r);
    assert_int_equal(kind_of("Sure! {\"message\": \"Stand-up starts in"), HB_REPLY_UNUSABLE);
    assert_int_equal(kind_of("```json\n{\"message\": \"Stand-up\", \"priority\":\n```"),
                     HB_REPLY_UNUSABLE);
    /* plain text is trimmed, otherwise whole */
    read("\n  Time for a short break?  \n", &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_string_equal(r.message, "Time for a short break?");
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

/* The answers the token-cutting once sent ("Nothing pressing, , though
 * ...", "AY"): each is an ack now, whole, in text or in JSON. */
static void the_token_never_reaches_a_message(void **st)
{
    (void)st;
    const char *answers[] = {
        "Nothing pressing, HEARTBEAT_OK, though the build is red.",
        "HEARTBEAT_OKAY",
        "The deploy HEARTBEAT_OK window closes at 5",
        "{\"message\": \"ping heartbeat_ok pong and a lot more words after it\", \"priority\": "
        "\"urgent\"}",
        "{\"message\": \"Stand-up in 5\", \"category\": \"reminder\"} HEARTBEAT_OK",
    };
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++)
        assert_int_equal(kind_of(answers[i]), HB_REPLY_ACK);
}

/* Through the engine: an answer holding the token is an `ok` run (counted
 * as a skip, stretching the normal interval), and nothing goes to the room. */
static void an_answer_holding_the_token_is_an_ok_run(void **st)
{
    (void)st;
    hb_fx f;
    int64_t t0 = utc_ms(2026, 7, 1, 14, 0);
    started(&f, NULL, t0, t0 + 2 * MIN_MS);
    json_object *ev = answer(&f.s, &f.c, "Nothing pressing, HEARTBEAT_OK, though the build is red.",
                             t0 + 2 * MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "ok");
    assert_int_equal(jint(ev, "consecutive_skips"), 1);
    assert_int_equal(jint(ev, "next_in_ms"), 2 * MIN_MS); /* active: never stretched */
    assert_int_equal(f.out.n_msg, 1);                     /* the run event alone */
    assert_string_equal(f.out.run.outcome, "ok");
    assert_int_equal(f.out.run.consecutive_skips, 1);
    json_object_put(ev);
    fire(&f.s, &f.c, t0 + 5 * MIN_MS, &f.out);
    ev = answer(&f.s, &f.c, "HEARTBEAT_OKAY", t0 + 5 * MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "ok");
    assert_int_equal(jint(ev, "consecutive_skips"), 2);
    assert_null(out_json(&f.out, "/message"));
    json_object_put(ev);
    hb_fx_free(&f);
    test_zones_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alone_and_with_punctuation),
        cmocka_unit_test(anywhere_with_any_amount_of_other_text),
        cmocka_unit_test(strip_removes_every_occurrence),
        cmocka_unit_test(strip_leaves_no_token_behind),
        cmocka_unit_test(replies_json_fenced_and_plain),
        cmocka_unit_test(the_token_never_reaches_a_message),
        cmocka_unit_test(an_answer_holding_the_token_is_an_ok_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
