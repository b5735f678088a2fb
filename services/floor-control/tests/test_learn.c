/* test_learn.c - the room view: meta joins and leaves, levels and speakers
 * learned, the bound on personas, the record's JSON round trip and the
 * wake-trigger list. */
#include "fl_test.h"

static void test_meta_join_leave(void **state)
{
    fl_fx *f = fl_new();
    const char *rooms[] = {"general"};
    const char *other[] = {"elsewhere"};
    floor_meta m = {.persona = "ann", .rooms = rooms, .n_rooms = 1};
    bool joined, left;
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, &joined, &left));
    assert_true(joined);
    assert_false(left);
    assert_int_equal(f->room->n, 1);
    /* meta moves ann to another room: she leaves this one */
    m.rooms = other;
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, &joined, &left));
    assert_true(left);
    assert_int_equal(f->room->n, 0);
    /* meta that never listed the room changes nothing */
    assert_false(floor_learn_meta(f->room, &f->cfg, &m, f->now, &joined, &left));
    fl_free(f);
}

static void test_speaker_stays_after_meta_leaves(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "rust", NULL);
    fl_spoke(f, "ann");
    const char *other[] = {"elsewhere"};
    floor_meta m = {.persona = "ann", .rooms = other, .n_rooms = 1};
    bool left;
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, &left));
    assert_false(left);
    assert_int_equal(f->room->n, 1);
    assert_false(f->room->personas[0].in_meta);
    fl_free(f);
}

static void test_speaker_and_level_join(void **state)
{
    fl_fx *f = fl_new();
    bool joined;
    assert_true(floor_learn_spoke(f->room, &f->cfg, "ann", f->now, &joined));
    assert_true(joined);
    assert_true(floor_learn_level(f->room, &f->cfg, "bob", FLOOR_SLEEP, "ai-only", f->now, &joined));
    assert_true(joined);
    assert_true(floor_learn_level(f->room, &f->cfg, "bob", FLOOR_ACTIVE, "human-reentry", f->now, &joined));
    assert_false(joined);
    assert_int_equal(floor_room_find(f->room, "bob")->level, FLOOR_ACTIVE);
    assert_string_equal(floor_room_find(f->room, "bob")->trigger, "human-reentry");
    assert_int_equal(floor_room_find(f->room, "ann")->last_spoke, T0);
    fl_free(f);
}

static void test_view_is_bounded(void **state)
{
    fl_fx *f = fl_new();
    f->cfg.max_personas = 3;
    fl_meta(f, "a", NULL, NULL);
    fl_tick(f, 1);
    fl_meta(f, "b", NULL, NULL);
    fl_tick(f, 1);
    fl_meta(f, "c", NULL, NULL);
    fl_tick(f, 1);
    fl_spoke(f, "a"); /* a is seen again: b is now the stalest */
    fl_tick(f, 1);
    fl_meta(f, "d", NULL, NULL);
    assert_int_equal(f->room->n, 3);
    assert_null(floor_room_find(f->room, "b"));
    assert_non_null(floor_room_find(f->room, "a"));
    assert_non_null(floor_room_find(f->room, "d"));
    fl_free(f);
}

static void test_roundtrip_keeps_everything(void **state)
{
    fl_fx *f = fl_new();
    fl_meta_full(f, "ann", "Ann", "code-review", "typescript,testing", "0.9,0.25");
    fl_meta(f, "bob", "go", NULL);
    fl_level(f, "ann", FLOOR_HUMAN_ONLY, "manual");
    fl_tick(f, 7);
    fl_spoke(f, "bob");
    fl_roundtrip(f);
    floor_persona *a = floor_room_find(f->room, "ann");
    floor_persona *b = floor_room_find(f->room, "bob");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a->name, "Ann");
    assert_string_equal(a->role, "code-review");
    assert_int_equal(a->n_domains, 2);
    assert_string_equal(a->domains[1], "testing");
    assert_true(a->confidence[0] > 0.89 && a->confidence[0] < 0.91);
    assert_true(a->confidence[1] > 0.24 && a->confidence[1] < 0.26);
    assert_int_equal(a->level, FLOOR_HUMAN_ONLY);
    assert_string_equal(a->trigger, "manual");
    assert_true(a->in_meta);
    assert_true(b->confidence[0] == FLOOR_CONFIDENCE_UNSET);
    assert_int_equal(b->last_spoke, T0 + 7);
    assert_int_equal(b->seen, T0 + 7);
    fl_free(f);
}

static void test_unreadable_record(void **state)
{
    char err[200];
    assert_null(floor_room_from_json("not json", "r", err, sizeof err));
    assert_null(floor_room_from_json("{\"personas\":5}", "r", err, sizeof err));
    assert_null(floor_room_from_json("{\"personas\":[1]}", "r", err, sizeof err));
    assert_null(floor_room_from_json("{\"personas\":[{\"id\":\"\"}]}", "r", err, sizeof err));
    floor_room *r = floor_room_from_json("{\"personas\":[{\"id\":\"x\",\"level\":\"bogus\"}]}", "r",
                                         err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->personas[0].level, FLOOR_ACTIVE);
    floor_room_free(r);
}

static void test_wake_trigger_list(void **state)
{
    floor_config c;
    floor_config_init(&c);
    assert_int_equal(c.k, 2);
    assert_int_equal(c.n_wake_triggers, 3);
    assert_string_equal(c.wake_triggers[1], "ai-only");
    assert_int_equal(floor_config_set_wake_triggers(&c, "no-human"), 0);
    assert_int_equal(c.n_wake_triggers, 1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a,,b"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a,"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a,b,c,d,e,f,g,h,i"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a-very-long-trigger-name-beyond-limit"), -1);
}

static void test_match_whole_words(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "test,machine learning", "0.7,0.9");
    floor_persona *p = floor_room_find(f->room, "ann");
    const char *d;
    double s;
    assert_int_equal(floor_match(p, "attest this", &d, &s), -1);
    assert_int_equal(floor_match(p, "please TEST it!", &d, &s), FLOOR_WHY_DOMAIN);
    assert_string_equal(d, "test");
    /* two domains: the higher confidence names the match */
    assert_int_equal(floor_match(p, "test my machine learning model", &d, &s), FLOOR_WHY_DOMAIN);
    assert_string_equal(d, "machine learning");
    assert_true(s > 0.89);
    assert_int_equal(floor_match(p, NULL, &d, &s), -1);
    fl_free(f);
}

static void test_forget_unless_active_since(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    floor_learn_message(f->room, T0 + 100);
    floor_learn_message(f->room, T0 + 50); /* an older one does not go back */
    fl_roundtrip(f);
    assert_int_equal(f->room->last_message, T0 + 100);
    /* cleanup of rooms inactive since T0+100: this one had a message then */
    assert_false(floor_may_forget(f->room, T0 + 100));
    assert_true(floor_may_forget(f->room, T0 + 101));
    assert_true(floor_may_forget(f->room, 0)); /* unconditional */
    floor_forget(f->room);
    fl_roundtrip(f);
    assert_int_equal(f->room->n, 0);
    fl_human(f, "anyone?");
    assert_int_equal(f->d.n, 0);
    fl_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_join_leave),
        cmocka_unit_test(test_speaker_stays_after_meta_leaves),
        cmocka_unit_test(test_speaker_and_level_join),
        cmocka_unit_test(test_view_is_bounded),
        cmocka_unit_test(test_roundtrip_keeps_everything),
        cmocka_unit_test(test_unreadable_record),
        cmocka_unit_test(test_wake_trigger_list),
        cmocka_unit_test(test_match_whole_words),
        cmocka_unit_test(test_forget_unless_active_since),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
