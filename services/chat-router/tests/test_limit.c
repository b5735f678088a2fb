/* test_limit.c - the depth limit: a two-persona chain is forwarded up to
 * depth max-1; the message at depth max is logged, nobody is notified, and
 * one system message (never forwarded itself) says why. */
#include "sim.h"

static int count_topic(const sim *s, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < s->n_out; i++)
        if (strncmp(s->outbox[i].topic, prefix, strlen(prefix)) == 0)
            n++;
    return n;
}

/* Plays both personas: each notification is answered by its persona with
 * depth = notify depth + 1, reply_to = the message, mentioning the other. */
static void run_chain(sim *s, int64_t max)
{
    s->cfg.max_depth = max;
    sim_send(s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya solve X"), 1000);
    static char ids[SIM_MAX][96], texts[SIM_MAX][128];
    int answered = 0;
    for (int i = 0; i < s->n_out; i++) {
        if (strncmp(s->outbox[i].topic, "persona/", 8) != 0)
            continue;
        char persona[CHAT_ID_MAX + 1], mid[CHAT_EVID_MAX + 1];
        json_s(s->outbox[i].payload, "persona", persona, sizeof persona);
        json_s(s->outbox[i].payload, "message_id", mid, sizeof mid);
        int64_t d = json_i64(s->outbox[i].payload, "depth");
        const char *other = strcmp(persona, "arya") == 0 ? "gendry" : "arya";
        snprintf(ids[answered], sizeof ids[0], "%s-%lld", persona, (long long)d + 1);
        snprintf(texts[answered], sizeof texts[0], "@%s depth %lld", other, (long long)d + 1);
        chat_input in = sim_msg_in(ids[answered], persona, CHAT_SENDER_AI, texts[answered]);
        in.msg.has_depth = true;
        in.msg.depth = d + 1;
        in.msg.reply_to = mid;
        answered++;
        sim_send(s, in, 1000 + answered);
    }
}

static void test_chain_stops_at_100(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    run_chain(&s, 100);
    /* human (0) + AI depths 1..100 logged; notifications for depths 0..99 */
    assert_int_equal(s.n_log, 101);
    assert_int_equal(count_topic(&s, "persona/"), 100);
    assert_int_equal(count_topic(&s, "room/general/message"), 1);
    const char *stop = s.outbox[s.n_out - 1].payload;
    char buf[512];
    assert_string_equal(s.outbox[s.n_out - 1].topic, "room/general/message");
    assert_string_equal(json_s(stop, "sender", buf, sizeof buf), "chat-router");
    assert_string_equal(json_s(stop, "sender_type", buf, sizeof buf), "system");
    assert_string_equal(json_s(stop, "reason", buf, sizeof buf), "max_depth");
    assert_int_equal(json_i64(stop, "depth"), 100);
    json_s(stop, "text", buf, sizeof buf);
    assert_non_null(strstr(buf, "depth 100"));
    assert_null(strchr(buf, '@')); /* no mention for anyone to act on */
    /* the stop message coming back is logged and triggers nothing */
    char sid[CHAT_EVID_MAX + 1];
    json_s(stop, "id", sid, sizeof sid);
    chat_input in = sim_msg_in(sid, "chat-router", CHAT_SENDER_SYSTEM, buf);
    in.msg.has_depth = true;
    in.msg.depth = 100;
    int before = s.n_out;
    sim_send(&s, in, 5000);
    assert_int_equal(s.n_out, before);
    assert_int_equal(s.n_log, 102);
    /* an AI answering the stop message is still past the limit */
    in = sim_msg_in("late", "arya", CHAT_SENDER_AI, "@gendry one more?");
    in.msg.reply_to = sid;
    sim_send(&s, in, 5001);
    assert_int_equal(count_topic(&s, "persona/"), 100);
    assert_int_equal(count_topic(&s, "room/general/message"), 2);
    assert_int_equal(json_i64(s.state, "stopped"), 2);
    /* a human starts a new chain */
    sim_send(&s, sim_msg_in("h2", "joel", CHAT_SENDER_HUMAN, "@arya again"), 6000);
    assert_int_equal(count_topic(&s, "persona/"), 101);
    sim_free(&s);
}

static void test_other_limits(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "r");
    run_chain(&s, 3);
    assert_int_equal(count_topic(&s, "persona/"), 3);
    assert_int_equal(count_topic(&s, "room/r/message"), 1);
    assert_int_equal(s.n_log, 4);
    sim_free(&s);
    sim_init(&s, "r");
    run_chain(&s, 0); /* 0: nothing is ever forwarded */
    assert_int_equal(count_topic(&s, "persona/"), 0);
    assert_int_equal(count_topic(&s, "room/r/message"), 1);
    sim_free(&s);
}

/* No mentions at the limit: the chain ended by itself, no system message. */
static void test_no_stop_without_mentions(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "r");
    chat_input in = sim_msg_in("deep", "arya", CHAT_SENDER_AI, "I am done, thanks all");
    in.msg.has_depth = true;
    in.msg.depth = 150;
    sim_send(&s, in, 1);
    assert_int_equal(s.n_out, 0);
    assert_int_equal(s.n_log, 1);
    sim_free(&s);
}

/* VIGIL_CHAT_MAX_MENTIONS: the first max personas are notified and the
 * result says the limit cut the list (the service then publishes a limit
 * refusal); at exactly max nothing is cut. */
static void test_mentions_past_the_limit_are_reported(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "r");
    s.cfg.max_mentions = 3;
    chat_result r;
    chat_input in = sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@a @b @c please");
    sim_apply(&s, &in, 1, &r);
    assert_false(r.mentions_capped);
    assert_int_equal(r.notified, 3);
    chat_result_free(&r);
    in = sim_msg_in("m2", "joel", CHAT_SENDER_HUMAN, "@a @b @c @d @e please");
    sim_apply(&s, &in, 2, &r);
    assert_true(r.mentions_capped);
    assert_int_equal(r.notified, 3);
    chat_result_free(&r);
    sim_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_stops_at_100),
        cmocka_unit_test(test_mentions_past_the_limit_are_reported),
        cmocka_unit_test(test_other_limits),
        cmocka_unit_test(test_no_stop_without_mentions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
