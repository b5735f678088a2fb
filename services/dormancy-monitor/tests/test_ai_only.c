/* Rule 2: extended AI-only discussion forces every AI persona to sleep. */
#include "dm_test.h"

/* Specified scenario: 16 minutes of AI-only messages put the persona to sleep. */
static void auto_sleeps_after_15min_ai_only_discussion(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    for (int i = 0; i < 32; i++) { /* simulateAIOnlyMessages(16 min) */
        dm_ai(f, i % 2 ? "bob" : "ann", "meta-discussion");
        dm_advance(f, 30000);
    }
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_AI_ONLY);
    assert_string_equal(c->text, "\xF0\x9F\x92\xA4 Auto-sleeping due to extended AI-only discussion. "
                                 "You'll wake when a human sends any message.");
    json_object *o = dormancy_change_json(c, "general", f->now);
    assert_string_equal(json_object_get_string(json_object_object_get(o, "trigger")), "ai-only");
    assert_string_equal(json_object_get_string(json_object_object_get(o, "level")), "sleep");
    assert_non_null(json_object_object_get(o, "previous"));
    /* the specified reason, byte for byte */
    assert_string_equal(json_object_get_string(json_object_object_get(o, "reason")),
                        "Extended AI-only discussion (15min)");
    json_object_put(o);
    dm_free(f);
}

static void sleeps_exactly_at_threshold(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "start");
    dm_advance(f, 15 * MIN_MS - 1);
    assert_int_not_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dm_advance(f, 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dm_free(f);
}

static void rule_2_forces_mention_only_personas_to_sleep_too(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_MENTION_ONLY, 0, "ann");
    dm_command(f, "bob", DORMANCY_CMD_DORMANT, DORMANCY_HUMAN_ONLY, 0, "bob");
    dm_ai(f, "cara", "talking");
    dm_advance(f, 15 * MIN_MS);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_SLEEP);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->previous, DORMANCY_MENTION_ONLY);
    /* and they wake on the next human message (absence-caused) */
    dm_human(f, "hi");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void human_message_resets_the_stretch(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    f->cfg.auto_suggest = false;
    dm_ai(f, "ann", "a");
    dm_advance(f, 10 * MIN_MS);
    dm_human(f, "b");
    dm_advance(f, 10 * MIN_MS); /* quiet, but no AI message since the human one */
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_ai(f, "ann", "c");
    dm_advance(f, 15 * MIN_MS - 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_advance(f, 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dm_free(f);
}

static void mention_during_stretch_is_not_put_back_to_sleep(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_ai(f, "ann", "a");
    dm_advance(f, 16 * MIN_MS);
    dm_ai(f, "bob", "@ann wake up please");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->trigger, DORMANCY_TRIGGER_MENTION);
    dm_advance(f, 30 * MIN_MS);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void already_asleep_by_choice_stays_chosen(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_sleep(f, "ann");
    dm_ai(f, "bob", "a");
    dm_advance(f, 15 * MIN_MS);
    assert_int_equal(dm_p(f, "ann")->cause, DORMANCY_CAUSE_CHOICE);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, "ann"), 1); /* only its own */
    dm_human(f, "hi"); /* bob and cara wake (absence): ann stays */
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void per_persona_ai_only_threshold(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_AI_ONLY;
    ov.ai_only_ms = 5 * MIN_MS;
    dm_meta(f, "quick", &ov);
    dm_meta(f, "slow", NULL);
    f->cfg.auto_suggest = false;
    dm_ai(f, "slow", "a");
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_level(f, "quick"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "slow"), DORMANCY_ACTIVE);
    dm_advance(f, 10 * MIN_MS);
    assert_int_equal(dm_level(f, "slow"), DORMANCY_SLEEP);
    dm_free(f);
}

/* The usual text promises a wake on any human message: a persona whose
 * auto-wake is off is told what does wake it, and that is what happens. */
static void auto_sleep_text_is_truthful_without_auto_wake(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_AUTO_WAKE;
    ov.auto_wake = false;
    dm_meta(f, "ann", &ov);
    dm_personas(f, 2, "bob", "cara");
    f->cfg.auto_suggest = false;
    f->cfg.min_awake = 0;
    dm_ai(f, "bob", "a");
    dm_advance(f, 15 * MIN_MS);
    assert_string_equal(dm_last(f, DORMANCY_OUT_CHANGE, "bob")->text,
                        "\xF0\x9F\x92\xA4 Auto-sleeping due to extended AI-only discussion. "
                        "You'll wake when a human sends any message.");
    assert_string_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->text,
                        "\xF0\x9F\x92\xA4 Auto-sleeping due to extended AI-only discussion. "
                        "You'll wake when mentioned or woken by a wake decision or command.");
    dm_human(f, "back");
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dm_human(f, "@ann you too");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->trigger, DORMANCY_TRIGGER_MENTION);
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_sleeps_after_15min_ai_only_discussion),
        cmocka_unit_test(sleeps_exactly_at_threshold),
        cmocka_unit_test(rule_2_forces_mention_only_personas_to_sleep_too),
        cmocka_unit_test(human_message_resets_the_stretch),
        cmocka_unit_test(mention_during_stretch_is_not_put_back_to_sleep),
        cmocka_unit_test(already_asleep_by_choice_stays_chosen),
        cmocka_unit_test(per_persona_ai_only_threshold),
        cmocka_unit_test(auto_sleep_text_is_truthful_without_auto_wake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
