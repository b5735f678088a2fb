/* test_msg_persona.c - the readers of persona/{persona}/meta (with the
 * `dormancy` overrides), state and command against the schema's example and
 * counter-examples. */
#include "msg_test.h"
#include <vigil/msg_persona.h>

/* The counter-examples' bounds: 2 rooms at most, `now` 1000. */
static int read_meta(json_object *o, vigil_error *err)
{
    vigil_persona_meta m;
    int rc = vigil_persona_meta_read(o, 2, &m, err);
    vigil_persona_meta_release(&m);
    return rc;
}

static int read_state(json_object *o, vigil_error *err)
{
    vigil_persona_state s;
    int rc = vigil_persona_state_read(o, 2, &s, err);
    vigil_persona_state_release(&s);
    return rc;
}

static int read_command(json_object *o, vigil_error *err)
{
    vigil_persona_command c;
    return vigil_persona_command_read(o, 1000, &c, err);
}

/* ---- meta ------------------------------------------------------------- */

static void meta_example_reads(void **state)
{
    (void)state;
    json_object *o = example("persona-meta");
    vigil_persona_meta m;
    vigil_error err = {0};
    assert_int_equal(vigil_persona_meta_read(o, 64, &m, &err), 0);
    assert_string_equal(m.name, "Helper AI");
    assert_string_equal(m.role, "general-help");
    assert_int_equal(m.n_rooms, 2);
    assert_string_equal(m.rooms[0], "general");
    assert_string_equal(m.rooms[1], "dev");
    assert_int_equal(m.n_domains, 3);
    assert_string_equal(m.domains[2], "testing");
    assert_int_equal(m.n_conf, 3);
    assert_string_equal(m.conf_domains[0], "typescript");
    assert_true(m.conf_values[0] > 0.89 && m.conf_values[0] < 0.91);
    assert_int_equal(m.parameters, 70000000000LL);
    assert_false(m.has_tier);
    assert_string_equal(m.model, "llama3.1:70b");
    assert_true(m.availability > 0.79 && m.availability < 0.81);
    assert_string_equal(m.mood, "focused");
    assert_int_equal(m.dormancy.has, VIGIL_OV_NO_HUMAN);
    assert_int_equal(m.dormancy.no_human_ms, 180000);
    vigil_persona_meta_release(&m);
    json_object_put(o);
}

static void meta_minimal_is_accepted(void **state)
{
    (void)state;
    json_object *o = payload("{\"rooms\":[\"general\"],\"tier\":\"mid\"}");
    vigil_persona_meta m;
    vigil_error err = {0};
    assert_int_equal(vigil_persona_meta_read(o, 64, &m, &err), 0);
    assert_null(m.name);
    assert_true(m.has_tier);
    assert_int_equal(m.tier, VIGIL_TIER_MID);
    assert_int_equal(m.parameters, -1);
    assert_true(m.availability < 0);
    assert_int_equal(m.dormancy.has, 0u);
    vigil_persona_meta_release(&m);
    json_object_put(o);
}

/* The specification's PersonaMetadata names read as the contract's when
 * those are absent; where both are given the contract's name wins. */
static void meta_spec_names_are_read(void **state)
{
    (void)state;
    json_object *o = payload("{\"rooms\":[\"general\"],\"role\":\"code-review\","
                             "\"expertiseDomains\":[\"typescript\",\"testing\"],"
                             "\"confidenceLevels\":{\"typescript\":0.9},"
                             "\"availabilityHeuristic\":0.4,\"currentMood\":\"tired\"}");
    vigil_persona_meta m;
    vigil_error err = {0};
    assert_int_equal(vigil_persona_meta_read(o, 64, &m, &err), 0);
    assert_int_equal(m.n_domains, 2);
    assert_string_equal(m.domains[1], "testing");
    assert_int_equal(m.n_conf, 1);
    assert_string_equal(m.conf_domains[0], "typescript");
    assert_true(m.conf_values[0] > 0.89 && m.conf_values[0] < 0.91);
    assert_true(m.availability > 0.39 && m.availability < 0.41);
    assert_string_equal(m.mood, "tired");
    vigil_persona_meta_release(&m);
    json_object_put(o);

    o = payload("{\"mood\":\"focused\",\"currentMood\":\"tired\",\"availability\":0.8,"
                "\"availabilityHeuristic\":0.1,\"expertise_domains\":[\"go\"],"
                "\"expertiseDomains\":[\"ts\",\"css\"]}");
    assert_int_equal(vigil_persona_meta_read(o, 64, &m, &err), 0);
    assert_string_equal(m.mood, "focused");
    assert_true(m.availability > 0.79 && m.availability < 0.81);
    assert_int_equal(m.n_domains, 1);
    assert_string_equal(m.domains[0], "go");
    vigil_persona_meta_release(&m);
    json_object_put(o);
}

/* A cleared meta (vigil_persona_meta_init) is what "{}" reads as. */
static void meta_init_is_the_empty_meta(void **state)
{
    (void)state;
    json_object *o = payload("{}");
    vigil_persona_meta m, e;
    vigil_error err = {0};
    memset(&e, 0x5a, sizeof e);
    assert_int_equal(vigil_persona_meta_read(o, 64, &m, &err), 0);
    vigil_persona_meta_init(&e);
    const vigil_persona_meta *both[] = {&m, &e};
    for (int i = 0; i < 2; i++) {
        const vigil_persona_meta *x = both[i];
        assert_true(!x->name && !x->role && !x->model && !x->mood);
        assert_true(!x->rooms && !x->domains && !x->conf_domains && !x->conf_values);
        assert_int_equal(x->n_rooms + x->n_domains + x->n_conf, 0);
        assert_false(x->has_tier);
        assert_int_equal(x->parameters, -1);
        assert_true(x->availability < 0);
        assert_memory_equal(&x->dormancy, &m.dormancy, sizeof m.dormancy);
        assert_int_equal(x->dormancy.has, 0u);
    }
    vigil_persona_meta_release(&m);
    vigil_persona_meta_release(&e);
    json_object_put(o);
}

static void meta_counter_examples(void **state)
{
    (void)state;
    static const reject_case CASES[] = {
        {"{\"name\":7}", VIGIL_REJECT_WRONG_TYPE, "name"},
        {"{\"rooms\":\"general\"}", VIGIL_REJECT_WRONG_TYPE, "rooms"},
        {"{\"rooms\":[\"a b\"]}", VIGIL_REJECT_BAD_ID, "rooms[0]"},
        {"{\"rooms\":[\"a\",\"b\",\"c\"]}", VIGIL_REJECT_BAD_VALUE, "rooms"}, /* max_rooms 2 */
        {"{\"rooms\":[\"a\",\"a\"]}", VIGIL_REJECT_BAD_VALUE, "'a' is listed twice"}, /* unique */
        {"{\"tier\":\"huge\"}", VIGIL_REJECT_BAD_VALUE, "tier"},
        {"{\"parameters\":-5}", VIGIL_REJECT_BAD_VALUE, "parameters"},
        {"{\"parameters\":-1}", VIGIL_REJECT_BAD_VALUE, "parameters"},
        {"{\"parameters\":\"70b\"}", VIGIL_REJECT_WRONG_TYPE, "parameters"},
        {"{\"availability\":1.5}", VIGIL_REJECT_BAD_VALUE, "availability"},
        {"{\"expertise_domains\":[1]}", VIGIL_REJECT_WRONG_TYPE, "expertise_domains"},
        /* the specification's names are checked as the contract's */
        {"{\"expertiseDomains\":\"ts\"}", VIGIL_REJECT_WRONG_TYPE, "expertiseDomains"},
        {"{\"availabilityHeuristic\":1.5}", VIGIL_REJECT_BAD_VALUE, "availabilityHeuristic"},
        {"{\"confidenceLevels\":[]}", VIGIL_REJECT_WRONG_TYPE, "confidenceLevels"},
        {"{\"currentMood\":3}", VIGIL_REJECT_WRONG_TYPE, "currentMood"},
        {"{\"confidence_levels\":{\"go\":2}}", VIGIL_REJECT_BAD_VALUE, "confidence_levels.go"},
        {"{\"confidence_levels\":{\"go\":\"high\"}}", VIGIL_REJECT_WRONG_TYPE, "confidence_levels.go"},
        {"{\"dormancy\":[]}", VIGIL_REJECT_WRONG_TYPE, "dormancy"},
        {"{\"dormancy\":{\"enableAutoWake\":1}}", VIGIL_REJECT_WRONG_TYPE, "dormancy.enableAutoWake"},
        {"{\"dormancy\":{\"noHumanActivityThreshold\":-1}}", VIGIL_REJECT_BAD_VALUE, "dormancy.noHumanActivityThreshold"},
        /* 0 ms: the matching VIGIL_DORMANCY_* variables start at 1 too */
        {"{\"dormancy\":{\"noHumanActivityThreshold\":0}}", VIGIL_REJECT_BAD_VALUE,
         "dormancy.noHumanActivityThreshold"},
        {"{\"dormancy\":{\"aiOnlyDiscussionThreshold\":0}}", VIGIL_REJECT_BAD_VALUE,
         "dormancy.aiOnlyDiscussionThreshold"},
        {"{\"dormancy\":{\"suggestionTimeout\":0}}", VIGIL_REJECT_BAD_VALUE,
         "dormancy.suggestionTimeout"},
        {"{\"dormancy\":{\"snoozeDuration\":0}}", VIGIL_REJECT_BAD_VALUE,
         "dormancy.snoozeDuration"},
        {"{\"dormancy\":{\"noHumanActivityThreshold\":1e20}}", VIGIL_REJECT_BAD_VALUE, "dormancy.noHumanActivityThreshold"},
        {"{\"dormancy\":{\"aiOnlyDiscussionThreshold\":2592000001}}", VIGIL_REJECT_BAD_VALUE, "dormancy.aiOnlyDiscussionThreshold"},
        {"{\"dormancy\":{\"redundantResponseKeep\":1001}}", VIGIL_REJECT_BAD_VALUE, "dormancy.redundantResponseKeep"},
        {"{\"dormancy\":{\"wakeConfidenceThreshold\":1.2}}", VIGIL_REJECT_BAD_VALUE, "dormancy.wakeConfidenceThreshold"},
        {"{\"dormancy\":{\"wakeConfidenceThreshold\":\"x\"}}", VIGIL_REJECT_WRONG_TYPE, "dormancy.wakeConfidenceThreshold"},
    };
    assert_rejects_all(CASES, sizeof CASES / sizeof CASES[0], read_meta);
}

/* Every override key, read and written back to the same overrides. */
static void overrides_round_trip(void **state)
{
    (void)state;
    json_object *o = payload(
        "{\"enableAutoSuggestions\":false,\"enableAutoSleep\":false,\"enableAutoWake\":true,"
        "\"noHumanActivityThreshold\":1000,\"aiOnlyDiscussionThreshold\":2000,"
        "\"redundantResponseWindow\":3000,\"enableLLMWakeDecisions\":false,"
        "\"wakeConfidenceThreshold\":0.25,\"enablePresenceChecking\":true,"
        "\"enableAdaptiveThresholds\":true,\"suggestionTimeout\":4000,\"snoozeDuration\":5000,"
        "\"redundantResponseKeep\":3,\"unknownKey\":\"ignored\"}");
    vigil_dormancy_overrides ov, back;
    vigil_error err = {0};
    assert_int_equal(vigil_dormancy_overrides_read(o, &ov, &err), 0);
    assert_int_equal(ov.has, (1u << 13) - 1);
    assert_false(ov.auto_suggest);
    assert_true(ov.adaptive);
    assert_int_equal(ov.no_human_ms, 1000);
    assert_int_equal(ov.snooze_ms, 5000);
    assert_int_equal(ov.redundant_keep, 3);
    assert_true(ov.wake_confidence == 0.25);
    json_object *j = vigil_dormancy_overrides_to_json(&ov);
    assert_non_null(j);
    assert_int_equal(vigil_dormancy_overrides_read(j, &back, &err), 0);
    assert_memory_equal(&ov, &back, sizeof ov);
    assert_true(vigil_dormancy_overrides_equal(&ov, &back));
    back.snooze_ms++;
    assert_false(vigil_dormancy_overrides_equal(&ov, &back));
    back.snooze_ms--;
    back.has &= ~VIGIL_OV_SNOOZE;
    assert_false(vigil_dormancy_overrides_equal(&ov, &back));
    json_object_put(j);
    json_object_put(o);
    /* the pile-on window may be 0, as VIGIL_DORMANCY_REDUNDANT_WINDOW_MS */
    o = payload("{\"redundantResponseWindow\":0,\"snoozeDuration\":1}");
    assert_int_equal(vigil_dormancy_overrides_read(o, &ov, &err), 0);
    assert_int_equal(ov.has, VIGIL_OV_REDUNDANT_WINDOW | VIGIL_OV_SNOOZE);
    assert_int_equal(ov.redundant_window_ms, 0);
    assert_int_equal(ov.snooze_ms, 1);
    json_object_put(o);
    /* an integer given as a whole double (JavaScript producers) */
    o = payload("{\"snoozeDuration\":60000.0}");
    assert_int_equal(vigil_dormancy_overrides_read(o, &ov, &err), 0);
    assert_int_equal(ov.snooze_ms, 60000);
    json_object_put(o);
    assert_int_equal(vigil_dormancy_overrides_read(NULL, &ov, &err), 0);
    assert_int_equal(ov.has, 0u);
}

/* ---- state ------------------------------------------------------------ */

static void state_example_reads(void **state)
{
    (void)state;
    json_object *o = example("persona-state");
    vigil_persona_state s;
    vigil_error err = {0};
    assert_int_equal(vigil_persona_state_read(o, 64, &s, &err), 0);
    assert_int_equal(s.n_rooms, 4);
    const vigil_persona_room_state *g = vigil_persona_state_room(&s, "general");
    const vigil_persona_room_state *d = vigil_persona_state_room(&s, "dev");
    const vigil_persona_room_state *n = vigil_persona_state_room(&s, "night");
    assert_non_null(g);
    assert_non_null(d);
    assert_non_null(n);
    assert_null(vigil_persona_state_room(&s, "lobby"));
    assert_int_equal(n->level, VIGIL_LEVEL_SLEEP);
    /* the fields a reader does not know (reason, pending, until) are ignored */
    assert_int_equal(vigil_persona_state_room(&s, "ops")->level, VIGIL_LEVEL_ACTIVE);
    assert_int_equal(g->level, VIGIL_LEVEL_ACTIVE);
    assert_true(g->has_since);
    assert_int_equal(g->since, 1763800000012LL);
    assert_string_equal(g->trigger, "human-reentry");
    assert_int_equal(d->level, VIGIL_LEVEL_MENTION_ONLY);
    assert_int_equal(d->snoozed_until, 1763800300000LL);
    vigil_persona_state_release(&s);
    json_object_put(o);

    o = payload("{\"rooms\":{}}");
    assert_int_equal(vigil_persona_state_read(o, 64, &s, &err), 0);
    assert_int_equal(s.n_rooms, 0);
    vigil_persona_state_release(&s);
    json_object_put(o);
}

static void state_counter_examples(void **state)
{
    (void)state;
    static const reject_case CASES[] = {
        {"{\"persona\":\"p\"}", VIGIL_REJECT_MISSING_FIELD, "rooms"},
        {"{\"rooms\":[]}", VIGIL_REJECT_WRONG_TYPE, "rooms"},
        {"{\"rooms\":{\"a/b\":{\"level\":\"sleep\"}}}", VIGIL_REJECT_BAD_ID, "rooms"},
        {"{\"rooms\":{\"g\":\"sleep\"}}", VIGIL_REJECT_WRONG_TYPE, "rooms.g"},
        {"{\"rooms\":{\"g\":{}}}", VIGIL_REJECT_MISSING_FIELD, "rooms.g"},
        {"{\"rooms\":{\"g\":{\"level\":\"asleep\"}}}", VIGIL_REJECT_BAD_VALUE, "rooms.g"},
        {"{\"rooms\":{\"g\":{\"level\":\"sleep\",\"since\":-1}}}", VIGIL_REJECT_BAD_VALUE, "since"},
        {"{\"rooms\":{\"g\":{\"level\":\"sleep\",\"trigger\":1}}}", VIGIL_REJECT_WRONG_TYPE, "trigger"},
        {"{\"rooms\":{\"a\":{\"level\":\"sleep\"},\"b\":{\"level\":\"sleep\"},"
         "\"c\":{\"level\":\"sleep\"}}}", VIGIL_REJECT_BAD_VALUE, "more than 2"},
    };
    assert_rejects_all(CASES, sizeof CASES / sizeof CASES[0], read_state);
}

/* ---- command ---------------------------------------------------------- */

static void command_example_reads(void **state)
{
    (void)state;
    json_object *o = example("persona-command");
    vigil_persona_command c;
    vigil_error err = {0};
    assert_int_equal(vigil_persona_command_read(o, 1763800305000LL, &c, &err), 0);
    assert_int_equal(c.cmd, VIGIL_COMMAND_ANSWER);
    assert_string_equal(c.room, "general");
    assert_string_equal(c.suggestion_id, "timer.nohuman.1763800300000:general:0");
    assert_true(c.has_answer);
    assert_int_equal(c.answer, VIGIL_ANSWER_SNOOZE);
    assert_string_equal(c.by, "helper");
    json_object_put(o);

    o = payload("{\"cmd\":\"dormant\",\"level\":\"sleep\",\"until\":2000}");
    assert_int_equal(vigil_persona_command_read(o, 1000, &c, &err), 0);
    assert_int_equal(c.cmd, VIGIL_COMMAND_DORMANT);
    assert_true(c.has_level);
    assert_int_equal(c.level, VIGIL_LEVEL_SLEEP);
    assert_int_equal(c.until, 2000);
    json_object_put(o);

    /* the buttons' words, whatever their case */
    o = payload("{\"cmd\":\"answer\",\"answer\":\"Yes\"}");
    assert_int_equal(vigil_persona_command_read(o, 1000, &c, &err), 0);
    assert_int_equal(c.answer, VIGIL_ANSWER_YES);
    json_object_put(o);
    o = payload("{\"cmd\":\"answer\",\"answer\":\"SNOOZE\"}");
    assert_int_equal(vigil_persona_command_read(o, 1000, &c, &err), 0);
    assert_int_equal(c.answer, VIGIL_ANSWER_SNOOZE);
    json_object_put(o);
    /* the snooze button's whole label, as the seed's options name it */
    static const char *const labels[] = {"Snooze 5min", "snooze 30s", "SNOOZE 1500ms",
                                         "Snooze 1h"};
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
        char body[80];
        snprintf(body, sizeof body, "{\"cmd\":\"answer\",\"answer\":\"%s\"}", labels[i]);
        o = payload(body);
        assert_int_equal(vigil_persona_command_read(o, 1000, &c, &err), 0);
        assert_int_equal(c.answer, VIGIL_ANSWER_SNOOZE);
        json_object_put(o);
    }

    o = payload("{\"cmd\":\"awake\"}");
    assert_int_equal(vigil_persona_command_read(o, 1000, &c, &err), 0);
    assert_false(c.has_level);
    assert_false(c.has_answer);
    assert_null(c.room);
    json_object_put(o);
}

static void command_counter_examples(void **state)
{
    (void)state;
    static const reject_case CASES[] = {
        {"{}", VIGIL_REJECT_MISSING_FIELD, "cmd"},
        {"{\"cmd\":\"sleep\"}", VIGIL_REJECT_BAD_VALUE, "cmd"},
        {"{\"cmd\":\"dormant\"}", VIGIL_REJECT_MISSING_FIELD, "level"},
        {"{\"cmd\":\"dormant\",\"level\":\"active\"}", VIGIL_REJECT_BAD_VALUE, "level"},
        {"{\"cmd\":\"dormant\",\"level\":\"nap\"}", VIGIL_REJECT_BAD_VALUE, "level"},
        {"{\"cmd\":\"dormant\",\"level\":\"sleep\",\"until\":999}", VIGIL_REJECT_BAD_VALUE, "until"},
        {"{\"cmd\":\"awake\",\"until\":-1}", VIGIL_REJECT_BAD_VALUE, "until"},
        {"{\"cmd\":\"answer\"}", VIGIL_REJECT_MISSING_FIELD, "answer"},
        {"{\"cmd\":\"answer\",\"answer\":\"maybe\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        {"{\"cmd\":\"answer\",\"answer\":\"Snooze 5min later\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        {"{\"cmd\":\"answer\",\"answer\":\"Snooze\u00a05min\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        {"{\"cmd\":\"answer\",\"answer\":\"Snooze min\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        {"{\"cmd\":\"answer\",\"answer\":\"Yes 5min\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        /* a NUL is no answer: never the word before it */
        {"{\"cmd\":\"answer\",\"answer\":\"Yes\\u0000no\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        {"{\"cmd\":\"answer\",\"answer\":\"snooze 5min\\u0000x\"}", VIGIL_REJECT_BAD_VALUE, "answer"},
        {"{\"cmd\":\"status\",\"room\":\"a+b\"}", VIGIL_REJECT_BAD_ID, "room"},
        {"{\"cmd\":\"status\",\"by\":\"\"}", VIGIL_REJECT_BAD_ID, "by"},
        {"{\"cmd\":\"answer\",\"answer\":\"yes\",\"suggestion_id\":\"\"}", VIGIL_REJECT_BAD_VALUE, "suggestion_id"},
    };
    assert_rejects_all(CASES, sizeof CASES / sizeof CASES[0], read_command);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(meta_example_reads),
        cmocka_unit_test(meta_minimal_is_accepted),
        cmocka_unit_test(meta_spec_names_are_read),
        cmocka_unit_test(meta_init_is_the_empty_meta),
        cmocka_unit_test(meta_counter_examples),
        cmocka_unit_test(overrides_round_trip),
        cmocka_unit_test(state_example_reads),
        cmocka_unit_test(state_counter_examples),
        cmocka_unit_test(command_example_reads),
        cmocka_unit_test(command_counter_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
