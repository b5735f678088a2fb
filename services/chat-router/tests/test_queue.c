/* test_queue.c - pause and resume: while paused, messages are logged and
 * their notifications queued in order; resume delivers the queue in order
 * before anything live; the global pause covers the room until resume-all. */
#include "sim.h"

/* "<topic> <message_id>" of outbox entry i, in a static buffer. */
static const char *out_at(const sim *s, int i)
{
    static char buf[512];
    char mid[CHAT_EVID_MAX + 1];
    json_s(s->outbox[i].payload, "message_id", mid, sizeof mid);
    snprintf(buf, sizeof buf, "%s %s", s->outbox[i].topic, mid);
    return buf;
}

static void test_pause_queues_resume_delivers_in_order(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("m0", "joel", CHAT_SENDER_HUMAN, "@arya hi"), 1);
    assert_int_equal(s.n_out, 1);

    sim_control(&s, "p1", CHAT_CTL_PAUSE, false, 2);
    assert_true(json_flag(s.state, "paused"));
    assert_true(sim_in_set(&s, CHAT_KEY_PAUSED, "general"));

    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya @gendry one"), 3);
    sim_send(&s, sim_msg_in("m2", "joel", CHAT_SENDER_HUMAN, "no mention"), 4);
    sim_send(&s, sim_msg_in("m3", "arya", CHAT_SENDER_AI, "@gendry two"), 5);
    sim_send(&s, sim_msg_in("m4", "joel", CHAT_SENDER_HUMAN, "@sansa three"), 6);
    assert_int_equal(s.n_out, 1);   /* nothing published while paused */
    assert_int_equal(s.n_log, 5);   /* but everything logged */
    assert_int_equal(s.n_queue, 4);
    assert_int_equal(json_i64(s.state, "queued"), 4);
    assert_true(sim_in_set(&s, CHAT_KEY_QUEUED, "general"));

    sim_control(&s, "r1", CHAT_CTL_RESUME, false, 7);
    assert_false(json_flag(s.state, "paused"));
    assert_int_equal(json_i64(s.state, "queued"), 0);
    assert_false(sim_in_set(&s, CHAT_KEY_PAUSED, "general"));
    assert_false(sim_in_set(&s, CHAT_KEY_QUEUED, "general"));
    assert_int_equal(s.n_queue, 0);
    assert_int_equal(s.n_out, 5);
    assert_string_equal(out_at(&s, 1), "persona/arya/notify m1");
    assert_string_equal(out_at(&s, 2), "persona/gendry/notify m1");
    assert_string_equal(out_at(&s, 3), "persona/gendry/notify m3");
    assert_string_equal(out_at(&s, 4), "persona/sansa/notify m4");

    sim_send(&s, sim_msg_in("m5", "joel", CHAT_SENDER_HUMAN, "@arya live"), 8);
    assert_int_equal(s.n_out, 6);
    assert_string_equal(out_at(&s, 5), "persona/arya/notify m5");
    sim_free(&s);
}

static void test_pause_and_resume_are_idempotent(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_control(&s, "p1", CHAT_CTL_PAUSE, false, 1); /* creates the room, paused */
    assert_true(sim_in_set(&s, CHAT_KEY_ROOMS, "general"));
    chat_input in;
    memset(&in, 0, sizeof in);
    in.kind = CHAT_IN_CONTROL;
    in.ctl.action = CHAT_CTL_PAUSE;
    in.ctl.id = "p2";
    chat_result r;
    sim_apply(&s, &in, 2, &r);
    assert_int_equal(r.n, 0); /* already paused: no set change */
    chat_result_free(&r);
    in.ctl.action = CHAT_CTL_RESUME;
    sim_apply(&s, &in, 3, &r);
    assert_int_equal(r.n, 1); /* the paused set only: nothing queued */
    assert_int_equal(r.v[0].kind, CHAT_ACT_SET_REMOVE);
    chat_result_free(&r);
    sim_apply(&s, &in, 4, &r);
    assert_int_equal(r.n, 0);
    chat_result_free(&r);
    sim_free(&s);
}

static void test_resume_unknown_room_creates_nothing(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "nowhere");
    sim_control(&s, "r1", CHAT_CTL_RESUME, false, 1);
    assert_null(s.state);
    assert_int_equal(s.n_sets, 0);
    sim_free(&s);
}

static void test_global_pause(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("m0", "joel", CHAT_SENDER_HUMAN, "hello"), 1);
    sim_control(&s, "pa", CHAT_CTL_PAUSE, true, 2);
    assert_true(s.paused_all);
    assert_false(json_flag(s.state, "paused")); /* the room's own flag is untouched */
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya one"), 3);
    sim_send(&s, sim_msg_in("m2", "joel", CHAT_SENDER_HUMAN, "@gendry two"), 4);
    assert_int_equal(s.n_out, 0);
    assert_int_equal(s.n_queue, 2);
    /* resuming the room alone does not lift the global pause */
    sim_control(&s, "r1", CHAT_CTL_RESUME, false, 5);
    assert_int_equal(s.n_out, 0);
    assert_int_equal(s.n_queue, 2);
    /* resume-all clears the flag and delivers the queue in order */
    sim_control(&s, "ra", CHAT_CTL_RESUME, true, 6);
    assert_false(s.paused_all);
    assert_int_equal(s.n_out, 2);
    assert_string_equal(out_at(&s, 0), "persona/arya/notify m1");
    assert_string_equal(out_at(&s, 1), "persona/gendry/notify m2");
    sim_free(&s);
}

/* resume-all also resumes rooms paused one by one. */
static void test_resume_all_resumes_paused_rooms(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_control(&s, "p", CHAT_CTL_PAUSE, false, 1);
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya one"), 2);
    chat_input in;
    memset(&in, 0, sizeof in);
    in.kind = CHAT_IN_CONTROL;
    in.ctl.id = "ra";
    in.ctl.action = CHAT_CTL_RESUME;
    in.ctl.all = true;
    in.ctl.topic_room = CHAT_ALL_ROOM; /* this key is a member room, not the flag writer */
    chat_result r;
    sim_apply(&s, &in, 3, &r);
    for (size_t i = 0; i < r.n; i++)
        assert_false(r.v[i].kind == CHAT_ACT_KEY_DELETE &&
                     strcmp(r.v[i].name, CHAT_KEY_PAUSED_ALL) == 0);
    chat_result_free(&r);
    assert_false(json_flag(s.state, "paused"));
    assert_int_equal(s.n_out, 1);
    sim_free(&s);
}

/* A room that is live again delivers its old queue before a new message's
 * notifications, even without a resume reaching it (a resume that raced a
 * message on another replica). */
static void test_queued_first_then_live(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    s.paused_all = true;
    sim_send(&s, sim_msg_in("m1", "joel", CHAT_SENDER_HUMAN, "@arya one"), 1);
    sim_send(&s, sim_msg_in("m2", "joel", CHAT_SENDER_HUMAN, "@arya two"), 2);
    assert_int_equal(s.n_queue, 2);
    s.paused_all = false; /* cleared by another replica */
    sim_send(&s, sim_msg_in("m3", "joel", CHAT_SENDER_HUMAN, "@arya three"), 3);
    assert_int_equal(s.n_out, 3);
    assert_string_equal(out_at(&s, 0), "persona/arya/notify m1");
    assert_string_equal(out_at(&s, 1), "persona/arya/notify m2");
    assert_string_equal(out_at(&s, 2), "persona/arya/notify m3");
    assert_int_equal(json_i64(s.state, "queued"), 0);
    sim_free(&s);
}

/* The depth limit applies while paused too: nothing past it is queued. */
static void test_limit_while_paused(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_control(&s, "p", CHAT_CTL_PAUSE, false, 1);
    chat_input in = sim_msg_in("deep", "arya", CHAT_SENDER_AI, "@gendry more");
    in.msg.has_depth = true;
    in.msg.depth = 100;
    sim_send(&s, in, 2);
    assert_int_equal(s.n_queue, 0);
    assert_int_equal(s.n_out, 1);
    assert_string_equal(s.outbox[0].topic, "room/general/message");
    sim_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_queues_resume_delivers_in_order),
        cmocka_unit_test(test_pause_and_resume_are_idempotent),
        cmocka_unit_test(test_resume_unknown_room_creates_nothing),
        cmocka_unit_test(test_global_pause),
        cmocka_unit_test(test_resume_all_resumes_paused_rooms),
        cmocka_unit_test(test_queued_first_then_live),
        cmocka_unit_test(test_limit_while_paused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
