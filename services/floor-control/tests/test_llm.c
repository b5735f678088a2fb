/* test_llm.c - LLM relevance in the core: the prompt lists exactly the
 * personas the choice could grant; the LLM's ranking replaces the rules'
 * match but mentions, dormancy and K still rule; messages waiting for the
 * LLM survive the room record's round trip and are found by their timer.
 * Their bounds are in test_limits.c. */
#include "fl_test.h"

static void room(fl_fx *f)
{
    fl_meta_full(f, "ann", NULL, "sre", "kubernetes,networking", "0.9,0.4");
    fl_meta(f, "bob", "cooking", NULL);
    fl_meta(f, "cid", "poetry", "0.8");
    fl_meta(f, "dan", "history", NULL);
    fl_meta(f, "eve", "music", NULL);
}

static floor_message msg(const char *text, const char *const *rel, int n)
{
    floor_message m = {.id = "m1", .sender = "joel", .sender_type = FLOOR_SENDER_HUMAN,
                       .text = text, .ranked = rel != NULL, .relevant = rel, .n_relevant = n};
    return m;
}

static void test_prompt_lists_the_able(void **state)
{
    fl_fx *f = fl_new();
    room(f);
    fl_level(f, "dan", FLOOR_SLEEP, "manual");
    floor_message m = msg("my pods cannot reach the service, @eve any idea?", NULL, 0);
    assert_int_equal(floor_rankable(f->room, &f->cfg, &m, NULL), 3); /* ann, bob, cid */
    char *p = floor_llm_prompt(f->room, &f->cfg, &m);
    assert_non_null(p);
    assert_non_null(strstr(p, "- ann: role sre; expertise: kubernetes (confidence 0.90), networking (confidence 0.40)"));
    assert_non_null(strstr(p, "- bob: role none given; expertise: cooking\n"));
    assert_null(strstr(p, "- dan")); /* asleep */
    assert_null(strstr(p, "- eve")); /* mentioned: granted anyway */
    assert_non_null(strstr(p, "At most 2 of the personas"));
    assert_non_null(strstr(p, "Message from joel: \"my pods cannot reach the service, @eve any idea?\""));
    assert_non_null(strstr(p, "{\"relevant\": ["));
    free(p);
    fl_free(f);
}

static void test_ranking_replaces_the_match(void **state)
{
    fl_fx *f = fl_new();
    room(f);
    const char *rel[] = {"cid", "ghost", "bob", "ann"};
    floor_message m = msg("kubernetes question", rel, 4);
    fl_roundtrip(f);
    assert_int_equal(floor_choose(f->room, &f->cfg, &m, &f->d), FLOOR_DECIDED);
    /* the LLM's order, not the kubernetes match; unknown names ignored; K=2 */
    assert_string_equal(fl_granted(f), "cid,bob");
    assert_int_equal(fl_pick(f, "cid")->why, FLOOR_WHY_LLM);
    assert_string_equal(fl_pick(f, "cid")->reason, "relevant to the message (LLM, rank 1)");
    assert_non_null(strstr(fl_pick(f, "bob")->reason, "rank 3"));
    assert_int_equal(fl_pick(f, "ann")->why, FLOOR_HELD_FULL);
    fl_free(f);
}

static void test_ranking_keeps_mentions_dormancy_and_recency(void **state)
{
    fl_fx *f = fl_new();
    room(f);
    fl_level(f, "cid", FLOOR_SLEEP, "manual");
    const char *rel[] = {"cid"};
    floor_message m = msg("hello @dan", rel, 1);
    fl_roundtrip(f);
    assert_int_equal(floor_choose(f->room, &f->cfg, &m, &f->d), FLOOR_DECIDED);
    /* dan mentioned; cid asleep despite the LLM; K=2 besides dan by recency */
    assert_string_equal(fl_granted(f), "dan,ann,bob");
    assert_int_equal(fl_pick(f, "cid")->why, FLOOR_HELD_SLEEP);
    /* an empty ranking: nobody fits, recency fills to K */
    floor_decision_free(&f->d);
    m = msg("hello", rel, 0);
    assert_int_equal(floor_choose(f->room, &f->cfg, &m, &f->d), FLOOR_DECIDED);
    assert_string_equal(fl_granted(f), "ann,bob");
    assert_int_equal(fl_pick(f, "ann")->why, FLOOR_WHY_RECENCY);
    fl_free(f);
}

/* The model's answer read in the core: its ids in its order; what is not
 * an id skipped as an unknown name is; no "relevant" list is no ranking. */
static void test_relevant_ids_read_from_the_answer(void **state)
{
    const char **ids = NULL;
    json_object *a = json_tokener_parse("{\"relevant\": [\"cid\", 7, \"bad/id\", null, \"\", \"ann\"]}");
    assert_int_equal(floor_llm_relevant(a, &ids), 2);
    assert_string_equal(ids[0], "cid");
    assert_string_equal(ids[1], "ann");
    assert_null(ids[2]);
    free(ids);
    json_object_put(a);
    a = json_tokener_parse("{\"relevant\": []}");
    assert_int_equal(floor_llm_relevant(a, &ids), 0);
    free(ids);
    json_object_put(a);
    a = json_tokener_parse("{\"relevant\": \"ann\"}");
    assert_int_equal(floor_llm_relevant(a, &ids), FLOOR_RELEVANT_NONE);
    assert_null(ids);
    json_object_put(a);
    a = json_tokener_parse("{\"ranking\": [\"ann\"]}");
    assert_int_equal(floor_llm_relevant(a, &ids), FLOOR_RELEVANT_NONE);
    json_object_put(a);
}

/* A string from the model holding a NUL is not an id: "ann\u0000x" is not
 * ann (read as a C string it would be), so it is skipped like any name
 * that is not an id, and ann does not get the model's rank from it. */
static void test_relevant_id_with_a_nul_is_not_an_id(void **state)
{
    const char **ids = NULL;
    json_object *a = json_tokener_parse("{\"relevant\": [\"ann\\u0000x\", \"cid\", \"\\u0000\"]}");
    assert_non_null(a);
    assert_int_equal(floor_llm_relevant(a, &ids), 1);
    assert_string_equal(ids[0], "cid");
    assert_null(ids[1]);
    free(ids);
    json_object_put(a);
    a = json_tokener_parse("{\"relevant\": [\"ann\\u0000\"]}");
    assert_int_equal(floor_llm_relevant(a, &ids), 0);
    free(ids);
    json_object_put(a);
}

static void test_pending_roundtrip_and_timer(void **state)
{
    fl_fx *f = fl_new();
    room(f);
    const char *ms[] = {"bob"};
    floor_message m = {.id = "msg-1", .sender = "joel", .sender_type = FLOOR_SENDER_HUMAN,
                       .text = "ünïcode text", .mentions = ms, .n_mentions = 1};
    assert_int_equal(floor_pending_add(f->room, &m, T0 + 800, NULL), 0);
    assert_int_equal(floor_pending_add(f->room, &m, T0 + 900, NULL), 0); /* the same id: once */
    assert_int_equal(f->room->n_pending, 1);
    fl_roundtrip(f);
    floor_pending *p = floor_pending_find(f->room, "msg-1");
    assert_non_null(p);
    assert_int_equal(p->due, T0 + 800);
    assert_string_equal(p->text, "ünïcode text");
    char name[FLOOR_TIMER_NAME_MAX];
    floor_timer_name("msg-1", name, sizeof name);
    assert_int_equal(strlen(name), 20);
    assert_ptr_equal(floor_pending_by_timer(f->room, name), p);
    assert_null(floor_pending_by_timer(f->room, "llm.0000000000000000"));
    const char *ptrs[FLOOR_MAX_MENTIONS];
    floor_message back;
    floor_pending_message(p, ptrs, &back);
    assert_int_equal(back.n_mentions, 1);
    assert_string_equal(back.mentions[0], "bob");
    assert_int_equal(floor_choose(f->room, &f->cfg, &back, &f->d), FLOOR_DECIDED);
    assert_true(fl_pick(f, "bob")->granted);
    floor_pending_remove(f->room, "msg-1");
    assert_int_equal(f->room->n_pending, 0);
    fl_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_lists_the_able),
        cmocka_unit_test(test_ranking_replaces_the_match),
        cmocka_unit_test(test_ranking_keeps_mentions_dormancy_and_recency),
        cmocka_unit_test(test_pending_roundtrip_and_timer),
        cmocka_unit_test(test_relevant_ids_read_from_the_answer),
        cmocka_unit_test(test_relevant_id_with_a_nul_is_not_an_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
