/* Rule 8: the DormancyConfig feature switches, globally and per persona,
 * and the meta `dormancy` overrides parser. */
#include "dm_test.h"

static void auto_suggest_off(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.auto_suggest = false;
    dm_personas(f, 4, "ann", "bob", "cara", "dan");
    dm_human(f, "q");
    dm_ai(f, "ann", "1");
    dm_ai(f, "bob", "2");
    dm_ai(f, "cara", "3"); /* would be a pile-on suggestion */
    dm_advance(f, 10 * MIN_MS); /* would be a no-human suggestion */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_free(f);
}

static void auto_sleep_off(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.auto_sleep = false;
    f->cfg.auto_suggest = false;
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    dm_advance(f, 60 * MIN_MS);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(f->n_store, 0);
    dm_free(f);
}

static void auto_wake_off(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.auto_wake = false;
    dm_personas(f, 2, "ann", "bob");
    dm_ai(f, "ann", "x");
    dm_advance(f, 15 * MIN_MS);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dm_human(f, "I'm back");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP); /* neither rule 3 nor min-awake */
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    dm_human(f, "@ann hello?"); /* a mention still wakes */
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void per_persona_switches(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides quiet = {0}, insomniac = {0};
    quiet.has = VIGIL_OV_AUTO_SUGGEST | VIGIL_OV_AUTO_WAKE;
    quiet.auto_suggest = false;
    quiet.auto_wake = false;
    insomniac.has = VIGIL_OV_AUTO_SLEEP;
    insomniac.auto_sleep = false;
    dm_meta(f, "quiet", &quiet);
    dm_meta(f, "insomniac", &insomniac);
    dm_meta(f, "plain", NULL);
    dm_ai(f, "plain", "x");
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "quiet"), 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "plain"), 1);
    dm_answer(f, "plain", DORMANCY_ANSWER_NO, NULL);
    dm_answer(f, "insomniac", DORMANCY_ANSWER_NO, NULL);
    dm_advance(f, 10 * MIN_MS);
    assert_int_equal(dm_level(f, "quiet"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "plain"), DORMANCY_SLEEP);
    assert_int_equal(dm_level(f, "insomniac"), DORMANCY_ACTIVE);
    dm_human(f, "back");
    assert_int_equal(dm_level(f, "plain"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "quiet"), DORMANCY_SLEEP);
    dm_free(f);
}

/* The overrides libshared reads from the meta are what the core applies
 * (the reader's own cases are in tests/unit/test_msg_persona.c). */
static void overrides_parse_and_round_trip(void **state)
{
    (void)state;
    vigil_error err = {0};
    dormancy_overrides ov;
    json_object *o = json_tokener_parse(
        "{\"noHumanActivityThreshold\":180000,\"enableAutoSleep\":false,"
        "\"wakeConfidenceThreshold\":0.9,\"aiOnlyDiscussionThreshold\":6e5,\"unknownKey\":1}");
    assert_int_equal(vigil_dormancy_overrides_read(o, &ov, &err), 0);
    assert_int_equal(ov.has, VIGIL_OV_NO_HUMAN | VIGIL_OV_AUTO_SLEEP |
                                 VIGIL_OV_WAKE_CONFIDENCE | VIGIL_OV_AI_ONLY);
    dormancy_config base, c;
    dormancy_config_init(&base);
    c = dormancy_config_effective(&base, &ov);
    assert_int_equal(c.no_human_ms, 180000);
    assert_int_equal(c.ai_only_ms, 600000);
    assert_false(c.auto_sleep);
    assert_true(c.auto_suggest);
    assert_true(c.wake_confidence > 0.89 && c.wake_confidence < 0.91);
    json_object *back = vigil_dormancy_overrides_to_json(&ov);
    dormancy_overrides ov2;
    assert_int_equal(vigil_dormancy_overrides_read(back, &ov2, &err), 0);
    assert_int_equal(ov2.has, ov.has);
    assert_int_equal(ov2.no_human_ms, 180000);
    json_object_put(back);
    json_object_put(o);
    assert_int_equal(vigil_dormancy_overrides_read(NULL, &ov, &err), 0);
    assert_int_equal(ov.has, 0);
}

static void meta_leaving_a_room_removes_unless_spoken(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_ai(f, "bob", "I spoke here");
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_META;
    ev.meta.persona = "ann";
    dm_clear(f);
    dm_send(f, &ev); /* meta without this room */
    assert_null(dormancy_persona_find(f->room, "ann"));
    assert_int_equal(dm_count(f, DORMANCY_OUT_PERSONA_REMOVED, "ann"), 1);
    ev.meta.persona = "bob";
    dm_send(f, &ev);
    assert_non_null(dormancy_persona_find(f->room, "bob"));
    assert_false(dm_p(f, "bob")->via_meta);
    dm_free(f);
}

/* A cleared persona/{p}/meta reaches the core as the meta that says
 * nothing (vigil_persona_meta_init, route.c): the persona leaves the rooms
 * it was in through its meta alone; where it spoke it stays, without its
 * meta name and with the defaults again (here: the no-human threshold of
 * 5 min instead of its own hour, so its suggestion comes with the clear). */
static void a_cleared_meta_is_a_meta_that_says_nothing(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    static const char *const rooms[] = {"general"};
    dormancy_overrides hour = {0};
    hour.has = VIGIL_OV_NO_HUMAN;
    hour.no_human_ms = 60 * MIN_MS;
    const char *const personas[] = {"ann", "bob"};
    for (int i = 0; i < 2; i++) {
        dormancy_event ev = {0};
        ev.kind = DORMANCY_EV_META;
        ev.meta.persona = personas[i];
        ev.meta.name = i ? "Bobby" : "Annie";
        ev.meta.rooms = rooms;
        ev.meta.n_rooms = 1;
        ev.meta.ov = hour;
        dm_send(f, &ev);
    }
    dm_ai(f, "bob", "I spoke here");
    dm_ai(f, "cara", "so did I");
    dm_advance(f, 6 * MIN_MS);
    assert_non_null(dm_last(f, DORMANCY_OUT_SUGGESTION, "cara"));
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "bob"), 0);

    vigil_persona_meta cleared;
    vigil_persona_meta_init(&cleared);
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_META;
    ev.id = "meta-clear.ann.1";
    ev.meta.persona = "ann";
    ev.meta.name = cleared.name;
    ev.meta.rooms = cleared.rooms;
    ev.meta.n_rooms = cleared.n_rooms;
    ev.meta.ov = cleared.dormancy;
    dm_clear(f);
    dm_send(f, &ev);
    assert_null(dormancy_persona_find(f->room, "ann"));
    assert_int_equal(dm_count(f, DORMANCY_OUT_PERSONA_REMOVED, "ann"), 1);

    ev.id = "meta-clear.bob.1";
    ev.meta.persona = "bob";
    dm_clear(f);
    dm_send(f, &ev);
    dormancy_persona *bob = dm_p(f, "bob");
    assert_false(bob->via_meta);
    assert_true(bob->joined);
    assert_string_equal(bob->name, "");
    assert_int_equal(bob->ov.has, 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_PERSONA_REMOVED, NULL), 0);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "bob");
    assert_non_null(s);
    assert_int_equal(s->suggest, DORMANCY_SUGGEST_NO_HUMAN);

    /* cleared again, and for a persona never seen: nothing happens */
    dm_clear(f);
    dm_send(f, &ev);
    ev.meta.persona = "zed";
    dm_send(f, &ev);
    assert_int_equal(f->log.n, 0);
    assert_null(dormancy_persona_find(f->room, "zed"));
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(auto_suggest_off),
        cmocka_unit_test(auto_sleep_off),
        cmocka_unit_test(auto_wake_off),
        cmocka_unit_test(per_persona_switches),
        cmocka_unit_test(overrides_parse_and_round_trip),
        cmocka_unit_test(meta_leaving_a_room_removes_unless_spoken),
        cmocka_unit_test(a_cleared_meta_is_a_meta_that_says_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
