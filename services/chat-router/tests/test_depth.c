/* test_depth.c - chain depth: humans start at 0, AI messages are one
 * deeper than what they answer (their depth field or the remembered
 * reply_to), the larger wins, 1 when nothing is known; at least one
 * deeper than the sender's last notification when the reply_to is
 * forgotten or older than the message behind it; the bounded memory of
 * message ids. */
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
    chat_room_note_notified(r, "s", 40, -1);
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
    chat_room_note_notified(r, "s", INT64_MAX, -1);
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
        chat_room_note_notified(r, name, i, -1);
    }
    chat_room_note_notified(r, "p6", 70, -1); /* noted again: now the newest */
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

/* Seed: the depth limit (100 per chain) stops infinite AI-to-AI chains.
 * Two personas that always answer the human's message (remembered, depth
 * 0) with `depth: 1` while mentioning each other were each at depth 1
 * forever. Each is notified by the other's message, newer than the one it
 * names, so each answer is one deeper than that notification: the chain
 * reaches 100 and stops there, with one stop message. */
static void test_answering_an_older_message_does_not_climb_back_up(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    sim_send(&s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya go"), 1);
    char id[16];
    int notified = 0;
    for (int d = 1; d <= 100; d++) {
        snprintf(id, sizeof id, "m%d", d);
        bool arya = d % 2 == 1;
        assert_int_equal(ai_say(&s, id, arya ? "arya" : "gendry", arya ? "@gendry on" : "@arya on",
                                "h", 1, 1 + d, &notified),
                         d);
        assert_int_equal(notified, d < 100 ? 1 : 0);
    }
    assert_int_equal(json_i64(s.state, "stopped"), 1);
    /* stopped it stays: gendry (notified at 99 by m99) answers h again */
    assert_int_equal(ai_say(&s, "m101", "gendry", "@arya on", "h", 1, 200, &notified), 100);
    assert_int_equal(notified, 0);
    assert_int_equal(json_i64(s.state, "stopped"), 2);
    sim_free(&s);
}

/* What is not floored: a reply to the very message that notified the
 * persona, or to a newer one, takes today's rule; only a reply to an
 * older one continues from the notification. */
static void test_only_a_reply_older_than_the_notification_is_floored(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    int notified = 0;
    sim_send(&s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya go"), 1);
    assert_int_equal(ai_say(&s, "a1", "arya", "@gendry yours", "h", -1, 2, &notified), 1);
    assert_int_equal(ai_say(&s, "a2", "arya", "@gendry and", "a1", 2, 3, &notified), 2);
    /* gendry was notified at 2 by a2; bran (never notified) posts a
     * shallow message after it */
    assert_int_equal(ai_say(&s, "b1", "bran", "hello all", NULL, 0, 4, &notified), 0);
    /* the very message that notified it: today's rule */
    assert_int_equal(ai_say(&s, "g1", "gendry", "ok", "a2", -1, 5, &notified), 3);
    /* a newer message than its notification: today's rule, from b1 */
    assert_int_equal(ai_say(&s, "g2", "gendry", "hi bran", "b1", -1, 6, &notified), 1);
    /* older ones (a1, h): at least its notification + 1 */
    assert_int_equal(ai_say(&s, "g3", "gendry", "back to a1", "a1", -1, 7, &notified), 3);
    assert_int_equal(ai_say(&s, "g4", "gendry", "back to h", "h", 1, 8, &notified), 3);
    /* a deeper claim is still taken */
    assert_int_equal(ai_say(&s, "g5", "gendry", "deep", "h", 40, 9, &notified), 40);
    sim_free(&s);
}

/* One human message mentioning two personas: the one that answers the
 * human after the other pulled it further comes out one deeper (accepted:
 * it has been notified at 1 since), the other one's chain is untouched;
 * neither is cut far below the limit. */
static void test_one_human_message_to_two_personas(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    int notified = 0;
    sim_send(&s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya @gendry solve X"), 1);
    assert_int_equal(ai_say(&s, "a1", "arya", "@gendry idea", "h", 1, 2, &notified), 1);
    assert_int_equal(ai_say(&s, "g1", "gendry", "@arya mine", "h", 1, 3, &notified), 2);
    assert_int_equal(ai_say(&s, "g2", "gendry", "@arya on idea", "a1", 2, 4, &notified), 2);
    assert_int_equal(ai_say(&s, "a2", "arya", "@gendry on mine", "g1", 3, 5, &notified), 3);
    sim_free(&s);
}

/* The message behind a notification may have an id the memory cannot keep
 * (a space: the envelope allows it): it still has a position, after every
 * message remembered before it, so answering an older message is floored
 * and answering a later one is not. */
static void test_a_notification_from_an_unremembered_id(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    int notified = 0;
    sim_send(&s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya go"), 1);
    assert_int_equal(ai_say(&s, "a 1", "arya", "@gendry yours", "h", 1, 2, &notified), 1);
    assert_int_equal(ai_say(&s, "g1", "gendry", "@arya back", "h", 1, 3, &notified), 2);
    assert_int_equal(ai_say(&s, "b1", "bran", "hello", NULL, 0, 4, &notified), 0);
    sim_send(&s, sim_msg_in("h2", "joel", CHAT_SENDER_HUMAN, "@arya again"), 5);
    assert_int_equal(ai_say(&s, "a 2", "arya", "@gendry yours", "h2", 1, 6, &notified), 1);
    assert_int_equal(ai_say(&s, "b2", "bran", "hello", NULL, 0, 7, &notified), 0);
    assert_int_equal(ai_say(&s, "g2", "gendry", "hi bran", "b2", -1, 8, &notified), 1);
    sim_free(&s);
}

/* The record keeps, beside each notified depth, the position of the
 * message behind it (`notified_at`) and how many ids the memory has taken
 * (`remembered`). A record without them (an earlier version's) keeps
 * today's rule for a remembered reply_to; odd positions are unknown. */
static void test_notification_positions_in_the_record(void **st)
{
    (void)st;
    static sim s;
    sim_init(&s, "general");
    int notified = 0;
    sim_send(&s, sim_msg_in("h", "joel", CHAT_SENDER_HUMAN, "@arya go"), 1);
    assert_int_equal(ai_say(&s, "a1", "arya", "@gendry yours", "h", 1, 2, &notified), 1);
    assert_non_null(strstr(s.state, "\"remembered\":2"));
    assert_non_null(strstr(s.state, "\"notified_at\":{\"arya\":0,\"gendry\":1}"));
    /* parsed again (not the kept room): gendry answering h is floored */
    sim_forget(&s);
    assert_int_equal(ai_say(&s, "g1", "gendry", "@arya back", "h", 1, 3, &notified), 2);
    sim_free(&s);

    const char *old = "{\"room\":\"general\",\"created\":1,\"count\":2,\"paused\":false,"
                      "\"queued\":0,\"stopped\":0,\"recent\":\"h 0 a1 1\","
                      "\"notified\":{\"arya\":0,\"gendry\":1}}";
    sim_init(&s, "general");
    s.state = strdup(old);
    assert_int_equal(ai_say(&s, "g1", "gendry", "@arya back", "h", 1, 3, &notified), 1);
    /* its own notification gets a position: the next answer of h is floored */
    assert_non_null(strstr(s.state, "\"remembered\":3"));
    assert_int_equal(ai_say(&s, "a2", "arya", "@gendry back", "h", 1, 4, &notified), 2);
    sim_free(&s);

    char err[100];
    chat_room *r = chat_room_from_json(
        "general", "{\"recent\":\"h 0 a1 1\",\"remembered\":2,"
                   "\"notified\":{\"p1\":1,\"p2\":1,\"p3\":1,\"p4\":1,\"p5\":1},"
                   "\"notified_at\":{\"p1\":\"1\",\"p2\":-4,\"p3\":3,\"p4\":1.5,\"p5\":1}}",
        err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->remembered, 2);
    const char *who[] = { "p1", "p2", "p3", "p4", "p5" };
    for (int i = 0; i < 5; i++) {
        chat_message m = { .id = "x", .sender = who[i], .sender_type = CHAT_SENDER_AI, .text = "",
                           .reply_to = "h" };
        assert_int_equal(chat_depth_of(r, &m), i == 4 ? 2 : 1);
        assert_int_equal(chat_room_notified(r, who[i])->at, i == 4 ? 1 : -1);
    }
    char *json = chat_room_to_json(r);
    assert_non_null(strstr(json, "\"notified_at\":{\"p5\":1}"));
    free(json);
    chat_room_free(r);
    /* remembered below the ids held (damage) counts from them */
    r = chat_room_from_json("general", "{\"recent\":\"h 0 a1 1\",\"remembered\":1}", err,
                            sizeof err);
    assert_non_null(r);
    assert_int_equal(r->remembered, 2);
    int64_t at = -1;
    assert_int_equal(chat_room_recall_at(r, "a1", &at), 1);
    assert_int_equal(at, 1);
    chat_room_free(r);
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
        cmocka_unit_test(test_answering_an_older_message_does_not_climb_back_up),
        cmocka_unit_test(test_only_a_reply_older_than_the_notification_is_floored),
        cmocka_unit_test(test_one_human_message_to_two_personas),
        cmocka_unit_test(test_a_notification_from_an_unremembered_id),
        cmocka_unit_test(test_notification_positions_in_the_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
