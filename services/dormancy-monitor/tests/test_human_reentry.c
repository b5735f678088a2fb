/* Rule 3: a human message ends the quiet period and wakes absence-caused
 * dormancy; chosen dormancy stays unless the minimum-awake guarantee needs
 * it; VIGIL_DORMANCY_HUMAN_WAKES=all restores the literal rule. */
#include "dm_test.h"

/* Specified scenario: sleeping personas wake when a human writes. */
static void auto_wakes_on_human_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_ai(f, "ann", "let's discuss");
    dm_advance(f, 16 * MIN_MS); /* rule 2 puts everyone to sleep */
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_SLEEP);
    dm_clear(f);
    dm_human(f, "I'm back");
    const char *names[] = {"ann", "bob", "cara"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(dm_level(f, names[i]), DORMANCY_ACTIVE);
        const dormancy_action *a = dm_last(f, DORMANCY_OUT_CHANGE, names[i]);
        assert_non_null(a);
        assert_int_equal(a->trigger, DORMANCY_TRIGGER_HUMAN_REENTRY);
        assert_int_equal(a->previous, DORMANCY_SLEEP);
        assert_string_equal(a->text, "\xE2\x9C\xA8 Human activity detected. Waking from dormancy.");
        assert_string_equal(a->message_id, f->last_msg_id);
        char want[160];
        snprintf(want, sizeof want, "human message %s from joel", f->last_msg_id);
        assert_string_equal(a->reason, want);
    }
    dm_free(f);
}

static void accepted_no_human_suggestion_is_absence_and_wakes(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_ai(f, "ann", "hello");
    dm_advance(f, 5 * MIN_MS);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "bob");
    assert_non_null(s);
    dm_answer(f, "bob", DORMANCY_ANSWER_YES, s->id);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_p(f, "bob")->cause, DORMANCY_CAUSE_ABSENCE);
    dm_human(f, "hi all");
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void chosen_dormancy_stays_on_human_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 4, "ann", "bob", "cara", "dan");
    dm_sleep(f, "ann");
    dm_command(f, "bob", DORMANCY_CMD_DORMANT, DORMANCY_MENTION_ONLY, 0, "bob");
    dm_clear(f);
    dm_human(f, "question for the room");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 0);
    dm_free(f);
}

static void absence_and_chosen_mixed(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 4, "ann", "bob", "cara", "dan");
    dm_ai(f, "ann", "talk");
    dm_advance(f, 5 * MIN_MS); /* four no-human suggestions */
    dm_answer(f, "ann", DORMANCY_ANSWER_YES, NULL); /* absence */
    dm_answer(f, "bob", DORMANCY_ANSWER_NO, NULL);
    dm_answer(f, "cara", DORMANCY_ANSWER_NO, NULL);
    dm_answer(f, "dan", DORMANCY_ANSWER_NO, NULL);
    dm_sleep(f, "bob"); /* choice */
    dm_human(f, "back");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_ACTIVE);
    dm_free(f);
}

/* Everyone asleep by choice: the two that answered humans most recently
 * are woken so the human is not left in a dead chat. */
static void min_awake_wakes_most_recent_answerers(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 4, "ann", "bob", "cara", "dan");
    dm_human(f, "first question");
    dm_advance(f, 1000);
    dm_ai(f, "cara", "answer from cara");
    dm_advance(f, 1000);
    dm_ai(f, "ann", "answer from ann");
    dm_advance(f, 60000);
    dm_human(f, "second question");
    dm_advance(f, 1000);
    dm_ai(f, "dan", "answer from dan");
    const char *all[] = {"ann", "bob", "cara", "dan"};
    for (int i = 0; i < 4; i++)
        dm_sleep(f, all[i]);
    dm_clear(f);
    dm_human(f, "anyone?");
    assert_int_equal(dm_level(f, "dan"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    const dormancy_action *a = dm_last(f, DORMANCY_OUT_CHANGE, "dan");
    assert_int_equal(a->trigger, DORMANCY_TRIGGER_HUMAN_REENTRY);
    assert_string_equal(a->message_id, f->last_msg_id);
    char want[200];
    snprintf(want, sizeof want, "human message %s would meet fewer than 2 personas able to answer",
             f->last_msg_id);
    assert_string_equal(a->reason, want);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 2);
    dm_free(f);
}

static void min_awake_counts_human_only_and_mentioned(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_HUMAN_ONLY, 0, "ann");
    dm_command(f, "bob", DORMANCY_CMD_DORMANT, DORMANCY_MENTION_ONLY, 0, "bob");
    dm_sleep(f, "cara");
    dm_clear(f);
    dm_human(f, "@bob can you look?"); /* ann (human-only) + bob (mentioned) = 2 */
    assert_int_equal(dm_level(f, "cara"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 0);
    dm_human(f, "and now?"); /* only ann can answer: one more is woken */
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 1);
    dm_free(f);
}

static void min_awake_configurable(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.min_awake = 0;
    dm_personas(f, 2, "ann", "bob");
    dm_sleep(f, "ann");
    dm_sleep(f, "bob");
    dm_human(f, "hello?");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    f->cfg.min_awake = 3;
    dm_human(f, "hello??");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void human_wakes_all_restores_literal_rule(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.human_wakes_all = true;
    dm_personas(f, 4, "ann", "bob", "cara", "dan");
    dm_sleep(f, "ann");
    dm_command(f, "bob", DORMANCY_CMD_DORMANT, DORMANCY_MENTION_ONLY, 0, "bob");
    dm_command(f, "cara", DORMANCY_CMD_DORMANT, DORMANCY_HUMAN_ONLY, 0, "cara");
    dm_human(f, "hi");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void human_message_ends_quiet_period(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    assert_int_equal(f->room->ai_only_since, T0);
    dm_advance(f, 10000);
    dm_human(f, "y");
    assert_int_equal(f->room->ai_only_since, 0);
    assert_int_equal(f->room->last_human, T0 + 10000);
    assert_int_equal(dormancy_quiet_since(f->room), T0 + 10000);
    dm_free(f);
}

static void system_messages_are_ignored(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_sleep(f, "ann");
    dm_clear(f);
    dm_msg(f, DORMANCY_SENDER_SYSTEM, "dormancy-monitor", "@ann is asleep", NULL, NULL);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(f->room->first_seen, 0);
    assert_int_equal(f->room->n_recent, 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 0);
    dm_free(f);
}

/* A human's @mention of a persona asleep for lack of humans wakes it as
 * any human message does (re-entry text); the mention wakes only what
 * rule 3 leaves asleep, such as a chosen sleep. */
static void human_mention_of_absence_sleeper_is_a_reentry(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    f->cfg.auto_suggest = false;
    dm_ai(f, "ann", "let's discuss");
    dm_advance(f, 15 * MIN_MS); /* rule 2: all asleep for lack of humans */
    dm_sleep(f, "cara");        /* cara's sleep is now her choice */
    dm_clear(f);
    dm_human(f, "@ann @cara are you there?");
    const char *woken[] = {"ann", "bob"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, woken[i]), 1);
        const dormancy_action *a = dm_last(f, DORMANCY_OUT_CHANGE, woken[i]);
        assert_int_equal(a->trigger, DORMANCY_TRIGGER_HUMAN_REENTRY);
        assert_string_equal(a->text, DORMANCY_TEXT_HUMAN_WAKE);
        assert_string_equal(a->message_id, f->last_msg_id);
    }
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, "cara"), 1);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "cara");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_MENTION);
    assert_string_equal(c->text, "\xE2\x9C\xA8 Mentioned by joel. Waking from sleep.");
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_wakes_on_human_message),
        cmocka_unit_test(accepted_no_human_suggestion_is_absence_and_wakes),
        cmocka_unit_test(chosen_dormancy_stays_on_human_message),
        cmocka_unit_test(absence_and_chosen_mixed),
        cmocka_unit_test(min_awake_wakes_most_recent_answerers),
        cmocka_unit_test(min_awake_counts_human_only_and_mentioned),
        cmocka_unit_test(min_awake_configurable),
        cmocka_unit_test(human_wakes_all_restores_literal_rule),
        cmocka_unit_test(human_message_ends_quiet_period),
        cmocka_unit_test(system_messages_are_ignored),
        cmocka_unit_test(human_mention_of_absence_sleeper_is_a_reentry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
