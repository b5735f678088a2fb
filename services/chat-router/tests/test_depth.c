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
    chat_room_free(r);
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
        cmocka_unit_test(test_memory_is_bounded),
        cmocka_unit_test(test_memory_survives_odd_ids),
        cmocka_unit_test(test_kept_text_equals_the_entries_written_again),
        cmocka_unit_test(test_depth_in_notifications),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
