/* Rule 7: the no-human threshold adapts to velocity and AI-to-human ratio:
 * 3/5 of it above 5 msg/min with ratio above 3, 7/5 below 1 msg/min. */
#include "dm_test.h"

static void metrics_over_the_window(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_human(f, "h");
    for (int i = 0; i < 9; i++)
        dm_ai(f, "ann", "a");
    /* 10 messages in a room 0 s old: measured over a fifth of the 5 min window */
    dormancy_metrics m = dormancy_room_metrics(f->room, &f->cfg, f->now);
    assert_true(m.velocity_per_min > 9.99 && m.velocity_per_min < 10.01);
    assert_true(m.ai_to_human_ratio > 8.99 && m.ai_to_human_ratio < 9.01);
    json_object *o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "velocity_per_min")), "10.00");
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "ai_to_human_ratio")), "9.00");
    json_object_put(o);
    dm_advance(f, 5 * MIN_MS); /* all out of the window */
    m = dormancy_room_metrics(f->room, &f->cfg, f->now);
    assert_true(m.velocity_per_min == 0.0);
    o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "velocity_per_min")), "0.00");
    assert_null(json_object_object_get(o, "ai_to_human_ratio")); /* no human message: null */
    json_object_put(o);
    dm_free(f);
}

/* The window is (now - window, now]: a time on its opening edge, before
 * it or after now is not counted, whatever its size. */
static void metrics_window_edges(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_human(f, "h");
    dormancy_room *r = f->room;
    int64_t w = f->cfg.velocity_window_ms, now = f->now;
    const int64_t ts[] = {INT64_MIN, now - w - 1, now - w, now - w + 1, now - 1,
                          now,       now + 1,     INT64_MAX};
    const bool human[] = {true, true, true, true, false, true, false, true};
    r->n_recent = (int)(sizeof ts / sizeof ts[0]);
    for (int i = 0; i < r->n_recent; i++) {
        r->recent_ts[i] = ts[i];
        r->recent_human[i] = human[i];
    }
    dormancy_metrics m = dormancy_room_metrics(r, &f->cfg, now);
    assert_int_equal(m.humans, 2); /* now - w + 1 and now */
    assert_int_equal(m.ais, 1);    /* now - 1 */
    r->n_recent = 0;
    dm_free(f);
}

static void adaptive_fast_band_3_of_5(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.adaptive = true;
    dm_personas(f, 2, "ann", "bob");
    dm_human(f, "start");
    for (int i = 0; i < 24; i++) { /* 8 AI messages a minute for 3 min */
        dm_advance(f, 7500);
        dm_ai(f, i % 2 ? "ann" : "bob", "fast");
    }
    assert_int_equal(f->now, T0 + 3 * MIN_MS);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    assert_non_null(s);
    assert_string_equal(s->text, DM_NO_HUMAN_TEXT("3min"));
    dm_free(f);
}

static void adaptive_slow_band_7_of_5(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.adaptive = true;
    dm_personas(f, 1, "ann");
    dm_human(f, "start"); /* then nothing: below 1 msg/min */
    dm_advance(f, 7 * MIN_MS - 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_advance(f, 1);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    assert_non_null(s);
    assert_string_equal(s->text, DM_NO_HUMAN_TEXT("7min"));
    dm_free(f);
}

static void adaptive_middle_band_keeps_5(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.adaptive = true;
    dm_personas(f, 2, "ann", "bob");
    dm_human(f, "start");
    for (int i = 0; i < 10; i++) { /* 2 messages a minute */
        dm_advance(f, 30000);
        dm_ai(f, i % 2 ? "ann" : "bob", "steady");
    }
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 2);
    assert_string_equal(dm_last(f, DORMANCY_OUT_SUGGESTION, "ann")->text,
                        DM_NO_HUMAN_TEXT("5min"));
    dm_free(f);
}

static void fast_but_human_heavy_is_not_fast_band(void **state)
{
    (void)state;
    dormancy_config base, eff;
    dormancy_config_init(&base);
    eff = base;
    eff.adaptive = true;
    dormancy_room *r = dormancy_room_new("general");
    r->first_seen = T0;
    for (int i = 0; i < 40; i++) { /* 8/min for 5 min, 1 human per 3 AI */
        r->recent_ts[r->n_recent] = T0 + i * 7500;
        r->recent_human[r->n_recent++] = i % 4 == 0;
    }
    int64_t now = T0 + 5 * MIN_MS - 1;
    assert_int_equal(dormancy_no_human_threshold(r, &eff, &base, now), 300000);
    for (int i = 0; i < r->n_recent; i++)
        r->recent_human[i] = i % 5 == 0; /* ratio 4 */
    assert_int_equal(dormancy_no_human_threshold(r, &eff, &base, now), 180000);
    for (int i = 0; i < r->n_recent; i++)
        r->recent_human[i] = false; /* no human at all */
    assert_int_equal(dormancy_no_human_threshold(r, &eff, &base, now), 180000);
    eff.adaptive = false;
    assert_int_equal(dormancy_no_human_threshold(r, &eff, &base, now), 300000);
    /* the bands scale a per-persona threshold too */
    eff.adaptive = true;
    eff.no_human_ms = 600000;
    assert_int_equal(dormancy_no_human_threshold(r, &eff, &base, now), 360000);
    dormancy_room_free(r);
}

static void adaptive_off_keeps_5(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_human(f, "start");
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metrics_over_the_window),
        cmocka_unit_test(metrics_window_edges),
        cmocka_unit_test(adaptive_fast_band_3_of_5),
        cmocka_unit_test(adaptive_slow_band_7_of_5),
        cmocka_unit_test(adaptive_middle_band_keeps_5),
        cmocka_unit_test(fast_but_human_heavy_is_not_fast_band),
        cmocka_unit_test(adaptive_off_keeps_5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
