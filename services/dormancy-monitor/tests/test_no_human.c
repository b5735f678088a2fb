/* Rule 1: one mention-only suggestion per persona per quiet period after the
 * no-human threshold; yes / no / snooze / no answer (default yes). */
#include "dm_test.h"

#define NO_HUMAN_5MIN DM_NO_HUMAN_TEXT("5min")

/* Specified scenario: 6 minutes of AI-only messages give a mention-only
 * suggestion. */
static void suggests_mention_only_after_5min_no_human_activity(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    for (int i = 0; i < 12; i++) { /* simulateAIOnlyMessages(6 min) */
        dm_ai(f, i % 2 ? "bob" : "ann", "chatting");
        dm_advance(f, 30000);
    }
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    assert_non_null(s);
    assert_int_equal(s->suggest, DORMANCY_SUGGEST_NO_HUMAN);
    assert_int_equal(s->level, DORMANCY_MENTION_ONLY);
    assert_string_equal(s->text, NO_HUMAN_5MIN);
    assert_int_equal(s->default_after_ms, 30000);
    assert_non_null(dm_last(f, DORMANCY_OUT_SUGGESTION, "bob"));
    /* rendered as the contract's payload */
    json_object *o = dormancy_suggestion_json(s, "general", f->now);
    assert_string_equal(json_object_get_string(json_object_object_get(o, "suggest")), "mention-only");
    assert_string_equal(json_object_get_string(json_object_object_get(o, "trigger")), "no-human");
    assert_string_equal(json_object_get_string(json_object_object_get(o, "default")), "yes");
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "options")),
                        "[ \"yes\", \"no\", \"snooze\" ]");
    assert_string_equal(json_object_get_string(json_object_object_get(o, "id")), s->id);
    json_object_put(o);
    dm_free(f);
}

static void fires_exactly_at_threshold_from_first_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_advance(f, 10 * MIN_MS); /* no message seen yet: no quiet period */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_ai(f, "ann", "first message");
    dm_advance(f, 5 * MIN_MS - 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_advance(f, 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_free(f);
}

static void counted_from_last_human_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_human(f, "hello");
    dm_advance(f, 4 * MIN_MS);
    dm_human(f, "still here"); /* pushes the deadline */
    dm_advance(f, 4 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_advance(f, MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 1);
    dm_free(f);
}

static void yes_switches_to_mention_only(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    char id[DORMANCY_EVID_MAX + 1];
    snprintf(id, sizeof id, "%s", s->id);
    dm_clear(f);
    dm_answer(f, "ann", DORMANCY_ANSWER_YES, id);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_NO_HUMAN);
    assert_int_equal(c->previous, DORMANCY_ACTIVE);
    /* the default timer is gone */
    dm_advance(f, MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, "ann"), 1);
    dm_free(f);
}

static void no_answer_applies_default_yes(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS + 29999);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_advance(f, 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_SUGGESTION_DEFAULT);
    assert_int_equal(dm_p(f, "ann")->cause, DORMANCY_CAUSE_ABSENCE);
    dm_free(f);
}

static void no_keeps_active_and_is_not_asked_again(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    dm_answer(f, "ann", DORMANCY_ANSWER_NO, NULL);
    for (int i = 0; i < 20; i++) { /* more AI talk, still no human */
        dm_ai(f, "ann", "more");
        dm_advance(f, 20000);
    }
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_free(f);
}

static void no_then_quiet_again_after_human_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    dm_answer(f, "ann", DORMANCY_ANSWER_NO, NULL);
    dm_advance(f, MIN_MS);
    dm_human(f, "hi");
    dm_advance(f, 5 * MIN_MS - 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_advance(f, 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 2);
    dm_free(f);
}

static void snooze_then_still_quiet_asks_again(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.ai_only_ms = 60 * MIN_MS; /* keep rule 2 out of the way */
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    dm_answer(f, "ann", DORMANCY_ANSWER_SNOOZE, NULL);
    assert_int_equal(dm_p(f, "ann")->snoozed_until, f->now + 5 * MIN_MS);
    const dormancy_action *st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_int_equal(st->snoozed_until, f->now + 5 * MIN_MS);
    dm_advance(f, 5 * MIN_MS - 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE); /* no default while snoozed */
    dm_advance(f, 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 2);
    /* snooze again, then yes */
    dm_answer(f, "ann", DORMANCY_ANSWER_SNOOZE, NULL);
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 3);
    dm_answer(f, "ann", DORMANCY_ANSWER_YES, NULL);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    dm_free(f);
}

static void snooze_ended_by_human_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    dm_answer(f, "ann", DORMANCY_ANSWER_SNOOZE, NULL);
    dm_advance(f, MIN_MS);
    dm_human(f, "hi");
    assert_int_equal(dm_p(f, "ann")->snoozed_until, 0);
    dm_advance(f, 4 * MIN_MS + 1); /* the snooze end is not a reason to ask */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_advance(f, MIN_MS); /* the new quiet period's threshold is */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 2);
    dm_free(f);
}

static void rule_1_not_repeated(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    dm_answer(f, "bob", DORMANCY_ANSWER_NO, NULL);
    dm_advance(f, 60 * MIN_MS); /* an hour of silence */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "bob"), 1);
    /* ann was woken by a mention later in the same quiet period: not asked again */
    dm_ai(f, "bob", "@ann are you there?");
    dm_advance(f, 60 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    assert_int_equal(f->n_store, 0); /* nothing pending: no timers */
    dm_free(f);
}

static void human_message_cancels_pending_suggestion(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    char id[DORMANCY_EVID_MAX + 1];
    snprintf(id, sizeof id, "%s", s->id);
    dm_advance(f, 10000);
    dm_human(f, "I'm here");
    assert_int_equal(dm_p(f, "ann")->sugg.kind, DORMANCY_SUGGEST_NONE);
    dm_advance(f, 30000); /* the default would have applied by now */
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_clear(f);
    dm_answer(f, "ann", DORMANCY_ANSWER_YES, id); /* a late answer is refused */
    assert_int_equal(dm_count(f, DORMANCY_OUT_REJECTED, "ann"), 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void answer_to_other_suggestion_is_refused(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    dm_clear(f);
    dm_answer(f, "ann", DORMANCY_ANSWER_YES, "not-the-id");
    assert_int_equal(dm_count(f, DORMANCY_OUT_REJECTED, "ann"), 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_not_equal(dm_p(f, "ann")->sugg.kind, DORMANCY_SUGGEST_NONE);
    dm_free(f);
}

static void only_active_personas_are_asked(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_command(f, "bob", DORMANCY_CMD_DORMANT, DORMANCY_HUMAN_ONLY, 0, "bob");
    dm_sleep(f, "cara");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "bob"), 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "cara"), 0);
    dm_free(f);
}

/* Per-persona override: helper at 3 min, teacher at 10 min. */
static void per_persona_override_3min_vs_10min(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides helper = {0}, teacher = {0};
    helper.has = VIGIL_OV_NO_HUMAN;
    helper.no_human_ms = 180000;
    teacher.has = VIGIL_OV_NO_HUMAN;
    teacher.no_human_ms = 600000;
    dm_meta(f, "helper-ai", &helper);
    dm_meta(f, "teacher-ai", &teacher);
    dm_meta(f, "plain-ai", NULL);
    dm_human(f, "hello");
    dm_advance(f, 3 * MIN_MS);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "helper-ai");
    assert_non_null(s);
    assert_string_equal(s->text, DM_NO_HUMAN_TEXT("3min"));
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 1);
    dm_advance(f, 2 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "plain-ai"), 1);
    dm_advance(f, 5 * MIN_MS - 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "teacher-ai"), 0);
    dm_advance(f, 1);
    s = dm_last(f, DORMANCY_OUT_SUGGESTION, "teacher-ai");
    assert_non_null(s);
    assert_string_equal(s->text, DM_NO_HUMAN_TEXT("10min"));
    dm_free(f);
}

static void sub_minute_threshold_text(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.no_human_ms = 3000;
    f->cfg.suggestion_timeout_ms = 500;
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 3000);
    assert_string_equal(dm_last(f, DORMANCY_OUT_SUGGESTION, "ann")->text,
                        DM_NO_HUMAN_TEXT("3s"));
    dm_advance(f, 500);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    assert_string_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->text,
                        "\xF0\x9F\x92\xA4 No answer within 500ms. Switching to mention-only.");
    dm_free(f);
}

/* A deadline that fires late, or after the situation changed, is judged
 * on the record and the time it actually fires. */
static void late_or_stale_timer_rechecks(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_fire(f, "nohuman", T0 + 7 * MIN_MS); /* two minutes late */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    /* the default deadline counts from when the suggestion was made */
    assert_int_equal(dm_p(f, "ann")->sugg.default_at, T0 + 7 * MIN_MS + 30000);

    dm_fx *g = dm_new();
    dm_personas(g, 1, "ann");
    dm_ai(g, "ann", "x");
    /* a human message at 4 min moved the deadline; a stale firing at 5 min
     * (e.g. from a slow replica) does nothing but re-arm it */
    g->now += 4 * MIN_MS;
    dm_human(g, "hi");
    dormancy_ids ids = {dm_make_id, g};
    dormancy_actions a;
    dormancy_actions_init(&a);
    g->now = T0 + 5 * MIN_MS;
    assert_int_equal(dormancy_room_timer(g->room, "nohuman", T0 + 5 * MIN_MS, &g->cfg, g->now,
                                         &ids, &a), 0);
    int suggestions = 0, sets = 0;
    for (size_t i = 0; i < a.n; i++) {
        suggestions += a.v[i].kind == DORMANCY_OUT_SUGGESTION;
        if (a.v[i].kind == DORMANCY_OUT_TIMER_SET && strcmp(a.v[i].timer, "nohuman") == 0) {
            sets++;
            assert_int_equal(a.v[i].due, T0 + 9 * MIN_MS);
        }
    }
    dormancy_actions_free(&a);
    assert_int_equal(suggestions, 0);
    assert_int_equal(sets, 1);
    dm_free(f);
    dm_free(g);
}

/* The suggestion says how long its snooze lasts for that persona, in
 * `snooze_ms` and in its text ("[Snooze 2min]"); only a suggestion with a
 * snooze option does. */
static void suggestion_carries_its_snooze_length(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_SNOOZE;
    ov.snooze_ms = 2 * MIN_MS;
    dm_meta(f, "ann", &ov);
    dm_personas(f, 1, "bob");
    dm_ai(f, "ann", "x");
    dm_advance(f, 5 * MIN_MS);
    const int64_t want[] = {2 * MIN_MS, 5 * MIN_MS};
    const char *who[] = {"ann", "bob"};
    for (int i = 0; i < 2; i++) {
        const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, who[i]);
        assert_int_equal(s->snooze_ms, want[i]);
        json_object *o = dormancy_suggestion_json(s, "general", f->now);
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "snooze_ms")), want[i]);
        json_object_put(o);
    }
    /* ... and its text ends with the options as the notification shows them */
    assert_string_equal(dm_last(f, DORMANCY_OUT_SUGGESTION, "ann")->text,
                        "\xF0\x9F\x92\xA4 No human activity for 5min. Switch to mention-only? "
                        "[Yes] [No] [Snooze 2min]");
    assert_string_equal(dm_last(f, DORMANCY_OUT_SUGGESTION, "bob")->text, DM_NO_HUMAN_TEXT("5min"));
    dormancy_action r = *dm_last(f, DORMANCY_OUT_SUGGESTION, "bob");
    r.suggest = DORMANCY_SUGGEST_REDUNDANT; /* yes / no only */
    json_object *o = dormancy_suggestion_json(&r, "general", f->now);
    assert_false(json_object_object_get_ex(o, "snooze_ms", NULL));
    json_object_put(o);
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(suggests_mention_only_after_5min_no_human_activity),
        cmocka_unit_test(fires_exactly_at_threshold_from_first_message),
        cmocka_unit_test(counted_from_last_human_message),
        cmocka_unit_test(yes_switches_to_mention_only),
        cmocka_unit_test(no_answer_applies_default_yes),
        cmocka_unit_test(no_keeps_active_and_is_not_asked_again),
        cmocka_unit_test(no_then_quiet_again_after_human_message),
        cmocka_unit_test(snooze_then_still_quiet_asks_again),
        cmocka_unit_test(snooze_ended_by_human_message),
        cmocka_unit_test(rule_1_not_repeated),
        cmocka_unit_test(human_message_cancels_pending_suggestion),
        cmocka_unit_test(answer_to_other_suggestion_is_refused),
        cmocka_unit_test(only_active_personas_are_asked),
        cmocka_unit_test(per_persona_override_3min_vs_10min),
        cmocka_unit_test(sub_minute_threshold_text),
        cmocka_unit_test(late_or_stale_timer_rechecks),
        cmocka_unit_test(suggestion_carries_its_snooze_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
