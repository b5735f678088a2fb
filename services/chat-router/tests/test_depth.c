/* test_depth.c - chain depth: humans start at 0, AI messages are one
 * deeper than what they answer (their depth field or the remembered
 * reply_to), the larger wins, 1 when nothing is known; the bounded memory
 * of message ids. */
#include "sim.h"

static chat_message msg(chat_sender_type t, const char *reply_to, bool has_depth, int64_t depth)
{
    chat_message m = { .id = "x", .sender = "s", .sender_type = t, .text = "",
                       .reply_to = reply_to, .has_depth = has_depth, .depth = depth };
    return m;
}

static void test_rules(void **st)
{
    (void)st;
    chat_room *r = chat_room_new("general");
    assert_int_equal(chat_room_remember(r, "h1", 0, 16), 0);
    assert_int_equal(chat_room_remember(r, "a7", 7, 16), 0);

    chat_message m = msg(CHAT_SENDER_HUMAN, "a7", true, 42);
    assert_int_equal(chat_depth_of(r, &m), 0); /* a human always starts a chain */
    m = msg(CHAT_SENDER_AI, "h1", false, 0);
    assert_int_equal(chat_depth_of(r, &m), 1);
    m = msg(CHAT_SENDER_AI, "a7", false, 0);
    assert_int_equal(chat_depth_of(r, &m), 8);
    m = msg(CHAT_SENDER_AI, NULL, true, 5);
    assert_int_equal(chat_depth_of(r, &m), 5);
    m = msg(CHAT_SENDER_AI, "a7", true, 3); /* cannot make the chain shallower */
    assert_int_equal(chat_depth_of(r, &m), 8);
    m = msg(CHAT_SENDER_AI, "a7", true, 20); /* a deeper claim is taken */
    assert_int_equal(chat_depth_of(r, &m), 20);
    m = msg(CHAT_SENDER_AI, "unknown", false, 0);
    assert_int_equal(chat_depth_of(r, &m), 1);
    m = msg(CHAT_SENDER_AI, NULL, false, 0); /* proactive: one hop from a human */
    assert_int_equal(chat_depth_of(r, &m), 1);
    m = msg(CHAT_SENDER_AI, NULL, true, 0);
    assert_int_equal(chat_depth_of(r, &m), 0);
    m = msg(CHAT_SENDER_SYSTEM, "a7", true, 100);
    assert_int_equal(chat_depth_of(r, &m), 100);
    m = msg(CHAT_SENDER_SYSTEM, NULL, false, 0);
    assert_int_equal(chat_depth_of(r, &m), 0);

    /* sender "s" was notified at 40: without a remembered reply_to its
     * message is at least 41, whatever depth it states */
    chat_room_note_notified(r, "s", 40);
    m = msg(CHAT_SENDER_AI, NULL, true, 1);
    assert_int_equal(chat_depth_of(r, &m), 41);
    m = msg(CHAT_SENDER_AI, "unknown", true, 0);
    assert_int_equal(chat_depth_of(r, &m), 41);
    m = msg(CHAT_SENDER_AI, NULL, true, 60); /* a deeper claim is taken */
    assert_int_equal(chat_depth_of(r, &m), 60);
    m = msg(CHAT_SENDER_AI, "a7", true, 3); /* a remembered reply_to decides: 8 */
    assert_int_equal(chat_depth_of(r, &m), 8);
    chat_room_free(r);
}

/* A `depth` field may be any integer >= 0: a chain at INT64_MAX stays
 * there (past the limit) instead of wrapping to a negative depth and
 * restarting at 1. A damaged record's counters near INT64_MAX read as
 * absent, so the next message's count cannot overflow. Found with the
 * fuzz target. */
static void test_deepest_chain_saturates(void **st)
{
    (void)st;
    chat_room *r = chat_room_new("general");
    assert_int_equal(chat_room_remember(r, "deep", INT64_MAX, 16), 0);
    chat_room_note_notified(r, "s", INT64_MAX);
    chat_message m = msg(CHAT_SENDER_AI, "deep", false, 0);
    assert_int_equal(chat_depth_of(r, &m), INT64_MAX);
    m = msg(CHAT_SENDER_AI, NULL, false, 0); /* from its last notification */
    assert_int_equal(chat_depth_of(r, &m), INT64_MAX);
    chat_room_free(r);

    sim s;
    sim_init(&s, "general");
    s.state = strdup("{\"created\":1,\"count\":9223372036854775807,"
                     "\"queued\":9223372036854775807,\"stopped\":9223372036854775807}");
    chat_input in = sim_msg_in("a1", "arya", CHAT_SENDER_AI, "@gendry deep");
    in.msg.has_depth = true;
    in.msg.depth = INT64_MAX;
    sim_send(&s, in, 1000);
    assert_int_equal(json_i64(s.state, "count"), 1);
    assert_int_equal(json_i64(s.state, "stopped"), 1);
    in = sim_msg_in("a2", "gendry", CHAT_SENDER_AI, "@arya deeper");
    in.msg.reply_to = "a1";
    sim_send(&s, in, 2000);
    assert_int_equal(json_i64(s.state, "stopped"), 2); /* still past the limit */
    sim_free(&s);
}

static void test_memory_is_bounded(void **st)
{
    (void)st;
    chat_room *r = chat_room_new("general");
    char id[32];
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "m%d", i);
        assert_int_equal(chat_room_remember(r, id, i, 10), 0);
    }
    assert_int_equal(r->n_recent, 10);
    assert_int_equal(chat_room_recall(r, "m89"), -1);
    assert_int_equal(chat_room_recall(r, "m90"), 90);
    assert_int_equal(chat_room_recall(r, "m99"), 99);
    /* survives the record's JSON */
    char *json = chat_room_to_json(r);
    char err[100];
    chat_room *back = chat_room_from_json("general", json, err, sizeof err);
    assert_non_null(back);
    assert_int_equal(back->n_recent, 10);
    assert_string_equal(back->recent[0].id, "m90");
    assert_int_equal(chat_room_recall(back, "m95"), 95);
    /* a smaller memory after a restart with a new setting trims on the next add */
    assert_int_equal(chat_room_remember(back, "m100", 100, 4), 0);
    assert_int_equal(back->n_recent, 4);
    assert_int_equal(chat_room_recall(back, "m97"), 97);
    assert_int_equal(chat_room_recall(back, "m96"), -1);
    free(json);
    chat_room_free(back);
    chat_room_free(r);
}

/* The remembered ids travel as one "id depth ..." string in the record:
 * any id the contract allows survives it; an id with a space (which the
 * envelope lets through) is simply not remembered. */
static void test_memory_survives_odd_ids(void **st)
{
    (void)st;
    chat_room *r = chat_room_new("general");
    const char *ids[] = { "a\"b", "back\\slash", "h-0123456789abcdef", "x", "!~$%&'()*,-.:;<=>?@[]^_`{|}" };
    for (int i = 0; i < 5; i++)
        assert_int_equal(chat_room_remember(r, ids[i], 100 + i, 16), 0);
    assert_int_equal(chat_room_remember(r, "with space", 7, 16), 0);
    assert_int_equal(r->n_recent, 5);
    char *json = chat_room_to_json(r);
    char err[100];
    chat_room *back = chat_room_from_json("general", json, err, sizeof err);
    assert_non_null(back);
    assert_int_equal(back->n_recent, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(chat_room_recall(back, ids[i]), 100 + i);
    assert_int_equal(chat_room_recall(back, "with space"), -1);
    free(json);
    chat_room_free(back);
    /* a damaged list keeps what it can read */
    back = chat_room_from_json("general", "{\"recent\":\"m1 3 m2 x m3 5\"}", err, sizeof err);
    assert_non_null(back);
    assert_int_equal(chat_room_recall(back, "m1"), 3);
    chat_room_free(back);
    chat_room_free(r);
}

/* The record's list is kept as text beside the entries and updated with
 * them; after every remember it is exactly what writing each entry again
 * gives (the stale path), what a copy writes, and what a read of the
 * record writes back: through the bound, a smaller bound, ids that need
 * escaping and refused ids. */
static void test_kept_text_equals_the_entries_written_again(void **st)
{
    (void)st;
    chat_room *r = chat_room_new("general");
    const char *odd[] = { "q\"uote", "back\\slash", "tab\there", "ctl\x01" };
    char id[64], err[100];
    for (int i = 0; i < 700; i++) {
        if (i % 7 == 0)
            snprintf(id, sizeof id, "%s-%d", odd[(i / 7) % 4], i);
        else
            snprintf(id, sizeof id, "m%d", i);
        int memory = i < 500 ? 256 : i < 520 ? 5 : 64;
        if (i == 300)
            assert_int_equal(chat_room_remember(r, "with space", 1, memory), 0);
        assert_int_equal(chat_room_remember(r, id, i * 1000003LL - 7, memory), 0);
        assert_int_equal(vigil_tlist_count(&r->recent_text), r->n_recent);
        assert_int_equal(r->recent_text.rewrites, 0); /* kept in step, never written whole */
        char *kept = chat_room_to_json(r);
        assert_non_null(kept);
        chat_room *c = chat_room_clone(r);
        assert_non_null(c);
        char *copied = chat_room_to_json(c);
        vigil_tlist_stale(&c->recent_text);
        char *whole = chat_room_to_json(c);
        chat_room *back = chat_room_from_json("general", kept, err, sizeof err);
        assert_non_null(back);
        char *reread = chat_room_to_json(back);
        assert_string_equal(kept, whole);
        assert_string_equal(kept, copied);
        assert_string_equal(kept, reread);
        /* a stale list is written whole again by the next remember */
        assert_int_equal(chat_room_remember(c, "next", 1, memory), 0);
        assert_int_equal(vigil_tlist_count(&c->recent_text), c->n_recent);
        free(kept);
        free(copied);
        free(whole);
        free(reread);
        chat_room_free(c);
        chat_room_free(back);
    }
    assert_int_equal(r->n_recent, 64);
    assert_int_equal(chat_room_recall(r, "m699"), 699 * 1000003LL - 7);
    /* the ring wrapped many times: the last 64 are each found, the one
     * before them is gone */
    for (int i = 700 - 64; i < 700; i++) {
        if (i % 7 == 0)
            continue;
        snprintf(id, sizeof id, "m%d", i);
        assert_int_equal(chat_room_recall(r, id), i * 1000003LL - 7);
    }
    assert_int_equal(chat_room_recall(r, "m635"), -1);
    chat_room_free(r);
}

/* Through the whole decision: the depth the router computes and hands on
 * in each notification. */
/* One AI message into the sim; depth < 0 leaves the field out. Returns
 * the decision's depth; *stopped / *notified say what it did. */
static int64_t ai_say(sim *s, const char *id, const char *who, const char *text,
                      const char *reply_to, int64_t depth, int64_t now, int *notified)
{
    chat_input in = sim_msg_in(id, who, CHAT_SENDER_AI, text);
    in.msg.reply_to = reply_to;
    in.msg.has_depth = depth >= 0;
    in.msg.depth = depth;
    chat_result r;
    sim_apply(s, &in, now, &r);
    int64_t d = r.depth;
    *notified = r.notified;
    chat_result_free(&r);
    return d;
}

/* An AI message with no depth and no remembered reply_to continues from
 * the depth its sender was last notified at (kept in the room record):
 * leaving the depth out never restarts a chain at 1. A human message in
 * the room forgets those depths. */
static void test_depthless_ai_continues_from_its_notification(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    s.cfg.depth_memory = 4; /* the chain's early ids are forgotten */
    sim_send(&s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya go"), 1);
    static char ids[100][16];
    int notified = 0;
    snprintf(ids[0], sizeof ids[0], "h");
    for (int d = 1; d <= 99; d++) { /* arya on odd depths, gendry on even ones */
        snprintf(ids[d], sizeof ids[d], "m%d", d);
        bool arya = d % 2 == 1;
        assert_int_equal(ai_say(&s, ids[d], arya ? "arya" : "gendry",
                                arya ? "@gendry on" : "@arya on", ids[d - 1], d, 1 + d, &notified),
                         d);
        assert_int_equal(notified, 1);
    }
    /* gendry was notified at 99: its depth-less answer is at 100, stopped */
    assert_int_equal(ai_say(&s, "g1", "gendry", "@arya again", NULL, -1, 200, &notified), 100);
    assert_int_equal(notified, 0);
    assert_int_equal(json_i64(s.state, "stopped"), 1);
    /* so is one answering a message the room forgot (m1 is long gone) */
    assert_int_equal(ai_say(&s, "g2", "GENDRY", "@arya again", "m1", -1, 201, &notified), 100);
    assert_int_equal(notified, 0);
    /* arya was notified at 98: one more hop */
    assert_int_equal(ai_say(&s, "a1", "arya", "@gendry hm", NULL, -1, 202, &notified), 99);
    assert_int_equal(notified, 1);
    /* a persona the room never notified speaks on its own: one hop from a human */
    assert_int_equal(ai_say(&s, "b1", "bran", "@arya hi", NULL, -1, 203, &notified), 1);
    /* the depths are in the record (parsed again for every input here) */
    char err[100];
    chat_room *r = chat_room_from_json("general", s.state, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(chat_room_notified_depth(r, "gendry"), 99);
    assert_int_equal(chat_room_notified_depth(r, "Arya"), 1);
    chat_room_free(r);
    /* a human message starts new chains: the depths lapse */
    sim_send(&s, sim_msg_in("h2", "joel", CHAT_SENDER_HUMAN, "thanks all"), 300);
    assert_null(strstr(s.state, "\"notified\""));
    assert_int_equal(ai_say(&s, "g3", "gendry", "@arya new idea", NULL, -1, 301, &notified), 1);
    assert_int_equal(notified, 1);
    sim_free(&s);
}

/* A record written before the depths were kept has none (proactive, 1);
 * odd members are skipped; the list keeps the CHAT_NOTIFIED_MAX personas
 * notified last. */
static void test_notified_depths_in_the_record(void **st)
{
    (void)st;
    char err[100];
    chat_room *r = chat_room_from_json(
        "general", "{\"room\":\"general\",\"created\":1,\"count\":3,\"paused\":false,"
                   "\"recent\":\"a 1\"}", err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->n_notified, 0);
    chat_message m = { .id = "x", .sender = "arya", .sender_type = CHAT_SENDER_AI, .text = "" };
    assert_int_equal(chat_depth_of(r, &m), 1);
    chat_room_free(r);
    r = chat_room_from_json("general", "{\"room\":\"general\",\"notified\":{\"arya\":7,"
                                       "\"a/b\":3,\"bran\":\"x\",\"sansa\":-1}}",
                            err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->n_notified, 1);
    assert_int_equal(chat_depth_of(r, &m), 8);
    char name[16];
    for (int i = 0; i < CHAT_NOTIFIED_MAX + 6; i++) {
        snprintf(name, sizeof name, "p%d", i);
        chat_room_note_notified(r, name, i);
    }
    chat_room_note_notified(r, "p6", 70); /* noted again: now the newest */
    assert_int_equal(r->n_notified, CHAT_NOTIFIED_MAX);
    assert_int_equal(chat_room_notified_depth(r, "arya"), -1);
    assert_int_equal(chat_room_notified_depth(r, "p5"), -1);
    assert_int_equal(chat_room_notified_depth(r, "p7"), 7);
    assert_string_equal(r->notified[CHAT_NOTIFIED_MAX - 1].persona, "p6");
    char *json = chat_room_to_json(r);
    chat_room *back = chat_room_from_json("general", json, err, sizeof err);
    assert_non_null(back);
    assert_int_equal(back->n_notified, CHAT_NOTIFIED_MAX);
    for (int i = 0; i < CHAT_NOTIFIED_MAX; i++) {
        assert_string_equal(back->notified[i].persona, r->notified[i].persona);
        assert_int_equal(back->notified[i].depth, r->notified[i].depth);
    }
    free(json);
    chat_room_free(back);
    chat_room_free(r);
}

static void test_depth_in_notifications(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("h1", "joel", CHAT_SENDER_HUMAN, "@arya start"), 1000);
    assert_int_equal(s.n_out, 1);
    assert_int_equal(json_i64(s.outbox[0].payload, "depth"), 0);
    chat_input in = sim_msg_in("a1", "arya", CHAT_SENDER_AI, "@gendry your turn");
    in.msg.reply_to = "h1"; /* no depth field: from the reply */
    sim_send(&s, in, 1001);
    assert_int_equal(s.n_out, 2);
    assert_int_equal(json_i64(s.outbox[1].payload, "depth"), 1);
    in = sim_msg_in("g1", "gendry", CHAT_SENDER_AI, "@arya back to you");
    in.msg.has_depth = true;
    in.msg.depth = 2;
    in.msg.reply_to = "a1";
    sim_send(&s, in, 1002);
    assert_int_equal(json_i64(s.outbox[2].payload, "depth"), 2);
    char buf[128];
    assert_string_equal(json_s(s.outbox[2].payload, "message_id", buf, sizeof buf), "g1");
    assert_string_equal(json_s(s.outbox[2].payload, "from", buf, sizeof buf), "gendry");
    assert_string_equal(s.outbox[2].topic, "persona/arya/notify");
    sim_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_deepest_chain_saturates),
        cmocka_unit_test(test_memory_is_bounded),
        cmocka_unit_test(test_memory_survives_odd_ids),
        cmocka_unit_test(test_kept_text_equals_the_entries_written_again),
        cmocka_unit_test(test_depth_in_notifications),
        cmocka_unit_test(test_depthless_ai_continues_from_its_notification),
        cmocka_unit_test(test_notified_depths_in_the_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
