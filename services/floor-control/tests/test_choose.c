/* test_choose.c - the choice order: mentions (always, even beyond K), then
 * domain/role matches by confidence, then least recently spoken; dormant
 * personas never unless mentioned; ties on the id; K=0 off. */
#include "fl_test.h"

/* Fifteen personas, two of them know kubernetes. */
static void room15(fl_fx *f)
{
    char id[16];
    for (int i = 0; i < 15; i++) {
        snprintf(id, sizeof id, "p%02d", i);
        fl_meta(f, id, "cooking,poetry", "0.9,0.9");
        fl_tick(f, 1);
    }
    fl_meta(f, "p03", "kubernetes,networking", "0.6,0.9");
    fl_meta(f, "p11", "kubernetes", "0.95");
}

static void test_domain_experts_get_the_floor(void **state)
{
    fl_fx *f = fl_new();
    room15(f);
    fl_human(f, "Why does my Kubernetes pod restart?");
    assert_string_equal(fl_granted(f), "p11,p03"); /* higher confidence first */
    assert_int_equal(f->d.n_granted, 2);
    assert_int_equal(f->d.n, 15);
    assert_int_equal(fl_pick(f, "p11")->why, FLOOR_WHY_DOMAIN);
    assert_non_null(strstr(fl_pick(f, "p11")->reason, "kubernetes"));
    assert_non_null(strstr(fl_pick(f, "p11")->reason, "0.95"));
    assert_int_equal(fl_pick(f, "p00")->why, FLOOR_HELD_FULL);
    fl_free(f);
}

static void test_mention_adds_beyond_k(void **state)
{
    fl_fx *f = fl_new();
    room15(f);
    fl_human(f, "Why does my kubernetes pod restart? @p07 you saw this too");
    assert_string_equal(fl_granted(f), "p07,p11,p03");
    assert_int_equal(fl_pick(f, "p07")->why, FLOOR_WHY_MENTION);
    fl_free(f);
}

static void test_many_mentions_all_granted(void **state)
{
    fl_fx *f = fl_new();
    room15(f);
    const char *ms[] = {"p01", "p02"};
    assert_int_equal(fl_decide_full(f, "joel", FLOOR_SENDER_HUMAN, "@p05 @p06 and you", ms, 2),
                     FLOOR_DECIDED);
    /* four mentions (two by the array) with K=2: all four, and K more
     * besides them (by recency: nobody matches) */
    assert_string_equal(fl_granted(f), "p01,p02,p05,p06,p00,p03");
    fl_free(f);
}

static void test_mention_by_display_name(void **state)
{
    fl_fx *f = fl_new();
    fl_meta_full(f, "helper-ai", "Helper", NULL, NULL, NULL);
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_meta(f, "cid", NULL, NULL);
    fl_human(f, "@Helper can you look?");
    assert_int_equal(fl_pick(f, "helper-ai")->why, FLOOR_WHY_MENTION);
    assert_true(fl_pick(f, "helper-ai")->granted);
    assert_int_equal(f->d.n_granted, 3); /* K=2 besides the mention, filled by recency */
    fl_free(f);
}

static void test_recency_fills_when_nothing_matches(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_meta(f, "cid", NULL, NULL);
    fl_meta(f, "dan", NULL, NULL);
    fl_spoke(f, "ann");
    fl_tick(f, 1000);
    fl_spoke(f, "cid");
    fl_tick(f, 1000);
    fl_spoke(f, "bob");
    fl_tick(f, 1000);
    /* dan never spoke: longest ago; then ann (oldest), then cid, bob */
    fl_human(f, "hello everyone");
    assert_string_equal(fl_granted(f), "dan,ann");
    assert_int_equal(fl_pick(f, "dan")->why, FLOOR_WHY_RECENCY);
    assert_non_null(strstr(fl_pick(f, "dan")->reason, "not spoken"));
    assert_non_null(strstr(fl_pick(f, "ann")->reason, "least recently"));
    /* after they answer, the floor rotates to the others */
    fl_spoke(f, "dan");
    fl_tick(f, 10);
    fl_spoke(f, "ann");
    fl_tick(f, 10);
    fl_human(f, "and now?");
    assert_string_equal(fl_granted(f), "cid,bob");
    fl_free(f);
}

static void test_match_beats_recency(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "rust", NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_meta(f, "cid", NULL, NULL);
    fl_spoke(f, "ann");
    fl_tick(f, 1000);
    fl_human(f, "a question about Rust lifetimes");
    /* ann matches (spoke most recently, still first), one slot by recency */
    assert_string_equal(fl_granted(f), "ann,bob");
    fl_free(f);
}

static void test_ties_fall_to_id(void **state)
{
    fl_fx *f = fl_new();
    /* same confidence, never spoke: id order, whatever the join order */
    fl_meta(f, "zed", "go", "0.8");
    fl_meta(f, "amy", "go", "0.8");
    fl_meta(f, "kim", "go", "0.8");
    fl_human(f, "go question");
    assert_string_equal(fl_granted(f), "amy,kim");
    /* same confidence: the one that spoke least recently wins over the id */
    fl_spoke(f, "amy");
    fl_tick(f, 5);
    fl_human(f, "go question");
    assert_string_equal(fl_granted(f), "kim,zed");
    fl_free(f);
}

static void test_unset_confidence_counts_half(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "sql", NULL);      /* 0.5 */
    fl_meta(f, "bob", "sql", "0.4");
    fl_meta(f, "cid", "sql", "0.6");
    fl_human(f, "slow SQL query");
    assert_string_equal(fl_granted(f), "cid,ann");
    fl_free(f);
}

static void test_role_matches(void **state)
{
    fl_fx *f = fl_new();
    fl_meta_full(f, "rev", NULL, "code-review", NULL, NULL);
    fl_meta_full(f, "tch", NULL, "teaching", NULL, NULL);
    fl_meta(f, "a", NULL, NULL);
    fl_meta(f, "b", NULL, NULL);
    fl_human(f, "can someone do a code review of my patch");
    assert_int_equal(fl_pick(f, "rev")->why, FLOOR_WHY_ROLE);
    assert_true(fl_pick(f, "rev")->granted);
    assert_string_equal(fl_granted(f), "rev,a");
    fl_free(f);
}

static void test_dormant_never_granted(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "rust", "0.9");
    fl_meta(f, "bob", "rust", "0.8");
    fl_meta(f, "cid", "rust", "0.7");
    fl_meta(f, "dan", NULL, NULL);
    fl_level(f, "ann", FLOOR_SLEEP, "manual");
    fl_level(f, "bob", FLOOR_MENTION_ONLY, "redundant");
    fl_human(f, "rust question");
    assert_string_equal(fl_granted(f), "cid,dan");
    assert_int_equal(fl_pick(f, "ann")->why, FLOOR_HELD_SLEEP);
    assert_int_equal(fl_pick(f, "bob")->why, FLOOR_HELD_MENTION_ONLY);
    assert_false(fl_pick(f, "ann")->granted);
    /* everyone dormant by choice: nobody gets the floor, unless
     * dormancy-monitor's minimum-awake guarantee wakes some (off here) */
    fl_level(f, "cid", FLOOR_SLEEP, "autopilot");
    fl_level(f, "dan", FLOOR_SLEEP, "manual");
    f->cfg.wake.min_awake = 0;
    fl_human(f, "rust question");
    assert_int_equal(f->d.n_granted, 0);
    assert_int_equal(f->d.n, 4);
    fl_free(f);
}

static void test_mentioned_sleeper_granted(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_level(f, "ann", FLOOR_SLEEP, "manual");
    fl_level(f, "bob", FLOOR_MENTION_ONLY, "manual");
    fl_human(f, "@ann and @bob, wake up");
    assert_string_equal(fl_granted(f), "ann,bob");
    fl_free(f);
}

static void test_absence_dormancy_counts_as_awake_for_humans(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_meta(f, "cid", NULL, NULL);
    fl_level(f, "ann", FLOOR_SLEEP, "ai-only");
    fl_level(f, "bob", FLOOR_MENTION_ONLY, "no-human");
    fl_level(f, "cid", FLOOR_SLEEP, "manual");
    fl_human(f, "I'm back");
    assert_string_equal(fl_granted(f), "ann,bob");
    assert_non_null(strstr(fl_pick(f, "ann")->reason, "woken by this human message"));
    assert_int_equal(fl_pick(f, "cid")->why, FLOOR_HELD_SLEEP);
    /* with the trigger list emptied, they stay dormant (the minimum-awake
     * guarantee off) */
    assert_int_equal(floor_config_set_wake_triggers(&f->cfg, ""), 0);
    f->cfg.wake.min_awake = 0;
    fl_human(f, "I'm back");
    assert_int_equal(f->d.n_granted, 0);
    fl_free(f);
}

static void test_human_only_and_ai_messages(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_meta(f, "cid", NULL, NULL);
    fl_level(f, "bob", FLOOR_HUMAN_ONLY, "manual");
    /* AI messages are not decided by default */
    assert_int_equal(fl_decide_full(f, "ann", FLOOR_SENDER_AI, "hi", NULL, 0), FLOOR_NO_DECISION);
    assert_int_equal(fl_decide_full(f, "sys", FLOOR_SENDER_SYSTEM, "hi", NULL, 0), FLOOR_NO_DECISION);
    f->cfg.on_ai = true;
    assert_int_equal(fl_decide_full(f, "ann", FLOOR_SENDER_AI, "hi", NULL, 0), FLOOR_DECIDED);
    /* the sender is never a candidate, human-only bob is held */
    assert_null(fl_pick(f, "ann"));
    assert_string_equal(fl_granted(f), "cid");
    assert_int_equal(fl_pick(f, "bob")->why, FLOOR_HELD_HUMAN_ONLY);
    /* a human message reaches human-only bob */
    fl_human(f, "hi");
    assert_true(fl_pick(f, "bob")->granted);
    fl_free(f);
}

static void test_k_zero_is_off_and_k_bounds(void **state)
{
    fl_fx *f = fl_new();
    room15(f);
    f->cfg.k = 0;
    assert_int_equal(fl_decide_full(f, "joel", FLOOR_SENDER_HUMAN, "kubernetes", NULL, 0),
                     FLOOR_NO_DECISION);
    f->cfg.k = 1;
    fl_human(f, "kubernetes");
    assert_string_equal(fl_granted(f), "p11");
    f->cfg.k = 5;
    fl_human(f, "kubernetes");
    assert_int_equal(f->d.n_granted, 5); /* two experts, three by recency */
    f->cfg.k = 100;
    fl_human(f, "kubernetes");
    assert_int_equal(f->d.n_granted, 15);
    fl_free(f);
}

static void test_empty_room(void **state)
{
    fl_fx *f = fl_new();
    fl_human(f, "anyone?");
    assert_int_equal(f->d.n, 0);
    assert_int_equal(f->d.n_granted, 0);
    fl_free(f);
}

static void test_rendered_events(void **state)
{
    fl_fx *f = fl_new();
    room15(f);
    fl_human(f, "kubernetes?");
    f->d.source = "rules";
    f->d.fallback = "the LLM did not answer within 800 ms";
    json_object *o = floor_room_event_json(f->room, &f->cfg, &f->d, "m1:general:0", "m1", T0);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(s, "\"granted\":[\"p11\",\"p03\"]"));
    assert_non_null(strstr(s, "\"source\":\"rules\""));
    assert_non_null(strstr(s, "\"fallback\":\"the LLM did not answer within 800 ms\""));
    assert_non_null(strstr(s, "\"k\":2"));
    json_object *held, *reasons;
    assert_true(json_object_object_get_ex(o, "held", &held));
    assert_int_equal(json_object_array_length(held), 13);
    assert_true(json_object_object_get_ex(o, "reasons", &reasons));
    assert_int_equal(json_object_object_length(reasons), 15);
    json_object_put(o);
    /* the persona copies: granted first, then held */
    o = floor_persona_event_json(f->room, &f->cfg, &f->d, 0, "m1:general:1", "m1", T0);
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(s, "\"persona\":\"p11\""));
    assert_non_null(strstr(s, "\"has_floor\":true"));
    json_object_put(o);
    o = floor_persona_event_json(f->room, &f->cfg, &f->d, 14, "m1:general:15", "m1", T0);
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(s, "\"has_floor\":false"));
    assert_non_null(strstr(s, "\"granted\":[\"p11\",\"p03\"]"));
    json_object_put(o);
    fl_free(f);
}

/* A mention-only persona by choice (a defaulted pile-on suggestion) stays
 * mention-only after a human message: dormancy-monitor keeps it, so the
 * floor goes to the active ones, not to it as "woken"; the same trigger
 * after a no-human suggestion (cause absence) is woken. */
static void test_cause_choice_stays_absence_wakes(void **state)
{
    fl_fx *f = fl_new();
    const char *ids[] = {"ann", "bob", "cid", "dan", "eve"};
    for (int i = 0; i < 5; i++)
        fl_meta(f, ids[i], i >= 2 ? "kubernetes" : NULL, i >= 2 ? "0.9" : NULL);
    for (int i = 2; i < 5; i++)
        fl_state(f, ids[i], FLOOR_MENTION_ONLY, "suggestion-default", VIGIL_CAUSE_CHOICE, i, 0);
    fl_human(f, "my kubernetes pod keeps restarting");
    assert_string_equal(fl_granted(f), "ann,bob");
    assert_int_equal(fl_pick(f, "cid")->why, FLOOR_HELD_MENTION_ONLY);
    /* the same trigger, cause absence: woken, and the expert gets the floor */
    fl_state(f, "cid", FLOOR_MENTION_ONLY, "suggestion-default", VIGIL_CAUSE_ABSENCE, 2, 0);
    fl_human(f, "my kubernetes pod keeps restarting");
    assert_string_equal(fl_granted(f), "cid,ann");
    assert_non_null(strstr(fl_pick(f, "cid")->reason, "woken by this human message"));
    /* human_wakes_all: every dormancy is undone */
    f->cfg.wake.human_wakes_all = true;
    fl_human(f, "my kubernetes pod keeps restarting");
    assert_string_equal(fl_granted(f), "cid,dan");
    fl_free(f);
}

/* Auto-wake off (meta dormancy.enableAutoWake false, or the variable): an
 * absence sleeper stays asleep; the minimum-awake guarantee wakes the ones
 * that answered a human most recently instead, and the floor goes to them. */
static void test_auto_wake_off_and_min_awake(void **state)
{
    fl_fx *f = fl_new();
    const char *rooms[] = {"general"};
    floor_meta m = {.persona = "oak9", .rooms = rooms, .n_rooms = 1, .has_auto_wake = true,
                    .auto_wake = false};
    floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, NULL);
    fl_meta(f, "ash9", NULL, NULL);
    fl_meta(f, "elm9", NULL, NULL);
    fl_meta(f, "fir9", NULL, NULL);
    fl_state(f, "oak9", FLOOR_SLEEP, "ai-only", VIGIL_CAUSE_ABSENCE, 0, 900);
    fl_state(f, "ash9", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 1, 100);
    fl_state(f, "elm9", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 2, 200);
    fl_state(f, "fir9", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 3, 50);
    fl_human(f, "anyone?");
    assert_string_equal(fl_granted(f), "ash9,elm9");
    assert_int_equal(fl_pick(f, "oak9")->why, FLOOR_HELD_SLEEP);
    assert_int_equal(fl_pick(f, "fir9")->why, FLOOR_HELD_SLEEP);
    assert_non_null(strstr(fl_pick(f, "elm9")->reason, "(min awake 2)"));
    /* ties on answered_human go to dormancy-monitor's arrival order, not
     * the view's: fir9 arrived first there */
    fl_state(f, "ash9", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 5, 0);
    fl_state(f, "elm9", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 4, 0);
    fl_state(f, "fir9", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 1, 0);
    fl_human(f, "anyone?");
    assert_string_equal(fl_granted(f), "elm9,fir9");
    /* the variable off: nobody wakes for the rule, min awake still does
     * only with auto-wake on: nobody at all */
    f->cfg.wake.auto_wake = false;
    fl_human(f, "anyone?");
    assert_int_equal(f->d.n_granted, 0);
    fl_free(f);
}

/* A mention counts as able: with one mention-only persona mentioned and
 * one active, the guarantee is met and nobody else is woken. */
static void test_min_awake_counts_mentions(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_meta(f, "cid", NULL, NULL);
    fl_state(f, "bob", FLOOR_MENTION_ONLY, "redundant", VIGIL_CAUSE_CHOICE, 1, 0);
    fl_state(f, "cid", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 2, 0);
    fl_human(f, "@bob what do you think?");
    assert_string_equal(fl_granted(f), "bob,ann");
    assert_false(fl_pick(f, "cid")->granted);
    fl_free(f);
}

/* A mentioned persona the view has never seen is granted all the same
 * (chat-router notifies it), by the text or the `mentions` array, once. */
static void test_unknown_mention_granted(void **state)
{
    fl_fx *f = fl_new();
    fl_meta_full(f, "helper-ai", "Helper AI", NULL, NULL, NULL);
    fl_meta(f, "ann", NULL, NULL);
    const char *ms[] = {"Zed", "yan"};
    assert_int_equal(fl_decide_full(f, "joel", FLOOR_SENDER_HUMAN,
                                    "@zed and @Helper AI, please look", ms, 2),
                     FLOOR_DECIDED);
    /* helper-ai by its display name, zed by text and array (once), yan by
     * the array; "helper" is no other persona; then K=2 besides them */
    assert_string_equal(fl_granted(f), "helper-ai,yan,zed,ann");
    assert_int_equal(fl_pick(f, "zed")->index, -1);
    assert_string_equal(fl_pick(f, "zed")->reason, "@mentioned");
    json_object *o = floor_persona_event_json(f->room, &f->cfg, &f->d, 2, "m1:general:3", "m1", T0);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(s, "\"persona\":\"zed\""));
    assert_non_null(strstr(s, "\"has_floor\":true"));
    json_object_put(o);
    /* the human sender is not a mention of itself */
    assert_int_equal(fl_decide_full(f, "joel", FLOOR_SENDER_HUMAN, "@joel here", NULL, 0),
                     FLOOR_DECIDED);
    assert_null(fl_pick(f, "joel"));
    fl_free(f);
}

/* K counts the personas granted besides the mentioned ones, in the
 * expertise step and the recency step alike. */
static void test_k_besides_mentions_in_both_steps(void **state)
{
    fl_fx *f = fl_new();
    room15(f);
    /* expertise: two experts and a mentioned third */
    fl_human(f, "kubernetes? @p07");
    assert_string_equal(fl_granted(f), "p07,p11,p03");
    /* recency: nothing matches, a mention and two more */
    fl_human(f, "hello @p07");
    assert_string_equal(fl_granted(f), "p07,p00,p01");
    /* mixed: one expert, then one by recency, the mention on top */
    fl_human(f, "networking @p07");
    assert_string_equal(fl_granted(f), "p07,p03,p00");
    fl_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_domain_experts_get_the_floor),
        cmocka_unit_test(test_mention_adds_beyond_k),
        cmocka_unit_test(test_many_mentions_all_granted),
        cmocka_unit_test(test_mention_by_display_name),
        cmocka_unit_test(test_recency_fills_when_nothing_matches),
        cmocka_unit_test(test_match_beats_recency),
        cmocka_unit_test(test_ties_fall_to_id),
        cmocka_unit_test(test_unset_confidence_counts_half),
        cmocka_unit_test(test_role_matches),
        cmocka_unit_test(test_dormant_never_granted),
        cmocka_unit_test(test_mentioned_sleeper_granted),
        cmocka_unit_test(test_absence_dormancy_counts_as_awake_for_humans),
        cmocka_unit_test(test_human_only_and_ai_messages),
        cmocka_unit_test(test_k_zero_is_off_and_k_bounds),
        cmocka_unit_test(test_empty_room),
        cmocka_unit_test(test_rendered_events),
        cmocka_unit_test(test_cause_choice_stays_absence_wakes),
        cmocka_unit_test(test_auto_wake_off_and_min_awake),
        cmocka_unit_test(test_min_awake_counts_mentions),
        cmocka_unit_test(test_unknown_mention_granted),
        cmocka_unit_test(test_k_besides_mentions_in_both_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
