/* The adaptive interval: 2 min after recent activity, 10 min
 * normally, 30 min after an hour of inactivity; consecutive `ok` runs
 * stretch the normal and inactive ones x1.5 up to the inactive interval (the
 * active one never); no idle cap unless one is set. */
#include "hb_test.h"

static void active_normal_inactive_by_the_users_last_activity(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    int64_t t = 1000 * HOUR_MS;
    assert_int_equal(hb_interval_ms(&c, t, t, 0), 2 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, t - 5 * MIN_MS + 1, 0), 2 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, t - 5 * MIN_MS, 0), 10 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, t - HOUR_MS, 0), 10 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, t - HOUR_MS - 1, 0), 30 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, t - 40 * HOUR_MS, 0), 30 * MIN_MS);
    /* activity "in the future" (clock skew) counts as now */
    assert_int_equal(hb_interval_ms(&c, t, t + MIN_MS, 0), 2 * MIN_MS);
}

static void consecutive_oks_stretch_by_one_and_a_half_up_to_the_inactive_interval(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    int64_t t = 1000 * HOUR_MS;
    int64_t idle = t - 10 * MIN_MS; /* the normal interval's range */
    assert_int_equal(hb_interval_ms(&c, t, idle, 1), 15 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, idle, 2), 1350 * 1000);
    assert_int_equal(hb_interval_ms(&c, t, idle, 3), 30 * MIN_MS); /* capped */
    assert_int_equal(hb_interval_ms(&c, t, idle, 1000), 30 * MIN_MS);
    assert_int_equal(hb_interval_ms(&c, t, t - 2 * HOUR_MS, 5), 30 * MIN_MS);
    c.skip_stretch = 1.2;
    assert_int_equal(hb_interval_ms(&c, t, idle, 2), 864 * 1000);
}

/* The active interval is never stretched: while the user was active under
 * 5 min ago a run comes every 2 min, however many `ok`s came before, so the
 * break-reminder line added to the checklist after a silent run is acted on
 * within 2 min ("wait 2 minutes: a reminder is sent"). */
static void the_active_interval_is_never_stretched(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    int64_t t = 1000 * HOUR_MS;
    for (int oks = 0; oks < 1000; oks = oks * 2 + 1) {
        assert_int_equal(hb_interval_ms(&c, t, t, oks), 2 * MIN_MS);
        assert_int_equal(hb_interval_ms(&c, t, t - 5 * MIN_MS + 1, oks), 2 * MIN_MS);
    }
    c.skip_stretch = 100.0;
    assert_int_equal(hb_interval_ms(&c, t, t - 3 * MIN_MS, 50), 2 * MIN_MS);
    /* past the recent window the stretch applies again */
    assert_int_equal(hb_interval_ms(&c, t, t - 5 * MIN_MS, 1), 30 * MIN_MS);
}

/* The break-reminder test through the engine with an injected clock:
 * configured at t0, a silent run at t0+2 min, the checklist edited just
 * after it; the next run comes 2 min after the silent one (not 3), so it
 * reasons with the edited checklist within 2 min of the edit. */
static void after_a_silent_run_the_next_comes_on_the_active_interval(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    int64_t t0 = utc_ms(2026, 6, 1, 12, 0);
    configured(&s, &c, NULL, t0);
    assert_null(fire(&s, &c, t0 + 2 * MIN_MS, &out));
    json_object *ev = answer(&s, &c, "HEARTBEAT_OK", t0 + 2 * MIN_MS, &out);
    assert_int_equal(jint(ev, "consecutive_skips"), 1);
    assert_int_equal(jint(ev, "next_in_ms"), 2 * MIN_MS);
    assert_int_equal(out.timer, t0 + 4 * MIN_MS);
    json_object_put(ev);
    assert_null(fire(&s, &c, t0 + 4 * MIN_MS, &out)); /* a model call, not a skip */
    assert_non_null(out.job);
    ev = answer(&s, &c, "HEARTBEAT_OK", t0 + 4 * MIN_MS, &out);
    assert_int_equal(jint(ev, "consecutive_skips"), 2);
    assert_int_equal(out.timer, t0 + 6 * MIN_MS); /* still under 5 min since configuring */
    json_object_put(ev);
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* No idle cap by default: however long the user is away, the heartbeat
 * keeps waking on its inactive interval; a cap is opt-in. */
static void no_idle_cap_unless_one_is_set(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    int64_t t = 1000 * HOUR_MS;
    assert_int_equal(c.idle_cap_ms, 0);
    assert_false(hb_idle(&c, t, t - 48 * HOUR_MS));
    assert_false(hb_idle(&c, t, t - 480 * HOUR_MS));
    c.idle_cap_ms = 48 * HOUR_MS;
    assert_false(hb_idle(&c, t, t - 48 * HOUR_MS + 1));
    assert_true(hb_idle(&c, t, t - 48 * HOUR_MS));
}

/* A user away for days: each run still goes to the model and the next one
 * comes after the inactive interval (30 min), never a stop. */
static void a_user_away_for_days_is_looked_in_on_every_30_min(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    int64_t t0 = utc_ms(2026, 6, 1, 12, 0);
    configured(&s, &c, "\"quiet_hours\":false,", t0);
    for (int64_t t = t0 + 47 * HOUR_MS; t < t0 + 100 * HOUR_MS; t += 13 * HOUR_MS) {
        assert_null(fire(&s, &c, t, &out)); /* no skip: a model call */
        assert_non_null(out.job);
        json_object *ev = answer(&s, &c, "HEARTBEAT_OK", t + 1000, &out);
        assert_string_equal(jstr(ev, "outcome"), "ok");
        assert_int_equal(jint(ev, "next_in_ms"), 30 * MIN_MS);
        assert_int_equal(out.timer, t + 1000 + 30 * MIN_MS);
        json_object_put(ev);
    }
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* The schedule in the record: configuring starts on the active interval, a
 * run after an hour of silence waits 30 min, an `ok` stretches the next
 * (the active interval excepted). */
static void schedule_follows_activity_and_oks(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    int64_t t0 = utc_ms(2026, 6, 1, 12, 0);
    configured(&s, &c, NULL, t0);
    assert_int_equal(s.next_run, t0 + 2 * MIN_MS);
    json_object *ev = fire(&s, &c, t0 + 2 * MIN_MS, &out);
    assert_null(ev); /* started: a job, no event yet */
    assert_non_null(out.job);
    ev = answer(&s, &c, "HEARTBEAT_OK", t0 + 2 * MIN_MS + 500, &out);
    assert_string_equal(jstr(ev, "outcome"), "ok");
    assert_int_equal(jint(ev, "consecutive_skips"), 1);
    assert_int_equal(jint(ev, "next_in_ms"), 2 * MIN_MS); /* active: not stretched */
    assert_int_equal(out.timer, t0 + 2 * MIN_MS + 500 + 2 * MIN_MS);
    json_object_put(ev);
    /* an hour and more later (runs missed while the user is gone): 30 min */
    int64_t t1 = t0 + 2 * HOUR_MS;
    fire(&s, &c, t1, &out);
    ev = answer(&s, &c, "HEARTBEAT_OK", t1, &out);
    assert_int_equal(jint(ev, "next_in_ms"), 30 * MIN_MS);
    json_object_put(ev);
    /* the user is back: activity resets the stretch and reschedules at once */
    hb_message m = {"m1", "general", "joel", "morning!", true, false, t1 + MIN_MS};
    hb_out_clear(&out);
    assert_int_equal(hb_on_message(&s, &c, &m, t1 + MIN_MS, &out), HB_OK);
    assert_int_equal(s.consecutive_ok, 0);
    assert_int_equal(out.timer, t1 + 3 * MIN_MS);
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* As specified, consecutiveSkips = 0 on any answer that is not
 * HEARTBEAT_OK, before the VoI and permission checks: a message the gate or
 * the allow list blocked, and an unusable answer, reset the stretch; a
 * failed model call (no answer) leaves it. */
static void any_answer_but_ok_resets_the_stretch(void **st)
{
    (void)st;
    const char *answers[] = {
        "{\"message\":\"trivia\",\"priority\":\"low\",\"category\":\"update\"}", /* voi */
        "{\"message\":\"Stand-up\",\"priority\":\"urgent\",\"category\":\"reminder\"}",
        "{\"status\": \"fine\"}", /* unusable */
    };
    const char *outcomes[] = {"voi-blocked", "permission-blocked", "error"};
    for (int i = 0; i < 3; i++) {
        hb_fx f;
        int64_t t0 = utc_ms(2026, 6, 1, 12, 0), t = t0 + 2 * MIN_MS;
        started(&f, "\"allow_proactive\":[\"alert\"],", t0, t);
        json_object_put(answer(&f.s, &f.c, "HEARTBEAT_OK", t, &f.out));
        t += 3 * MIN_MS;
        fire(&f.s, &f.c, t, &f.out);
        json_object_put(answer(&f.s, &f.c, "HEARTBEAT_OK", t, &f.out));
        assert_int_equal(f.s.consecutive_ok, 2);
        t += 4 * MIN_MS + 30 * 1000; /* 9.5 min after configuring */
        fire(&f.s, &f.c, t, &f.out);
        json_object *ev = answer(&f.s, &f.c, answers[i], t, &f.out);
        assert_string_equal(jstr(ev, "outcome"), outcomes[i]);
        assert_int_equal(jint(ev, "consecutive_skips"), 0);
        assert_int_equal(f.s.consecutive_ok, 0);
        /* the normal interval (9.5 min since configuring), not stretched */
        assert_int_equal(jint(ev, "next_in_ms"), 10 * MIN_MS);
        json_object_put(ev);
        /* a failed call afterwards changes nothing of it */
        f.s.consecutive_ok = 1;
        t += 10 * MIN_MS;
        fire(&f.s, &f.c, t, &f.out);
        char run[128];
        snprintf(run, sizeof run, "%s", f.s.running);
        hb_run_result r = {run, false, NULL, 0, "LLM timeout", 0};
        hb_out_clear(&f.out);
        assert_int_equal(hb_on_result(&f.s, &f.c, &r, t, &f.out), HB_OK);
        assert_int_equal(f.s.consecutive_ok, 1);
        hb_fx_free(&f);
    }
}

/* Past an idle cap (VIGIL_HEARTBEAT_IDLE_CAP_MS) a run stops the schedule
 * (skipped, idle-cap, nothing next) until the user is back. */
static void idle_cap_stops_runs_until_the_user_is_back(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    c.idle_cap_ms = 48 * HOUR_MS;
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    int64_t t0 = utc_ms(2026, 6, 1, 12, 0);
    configured(&s, &c, NULL, t0);
    int64_t t1 = t0 + 48 * HOUR_MS;
    json_object *ev = fire(&s, &c, t1, &out);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "idle-cap");
    assert_int_equal(jint(ev, "next_in_ms"), 0);
    assert_int_equal(jint(ev, "next_run_ts"), -1);
    assert_int_equal(out.timer, HB_TIMER_CANCEL);
    assert_null(out.job);
    json_object_put(ev);
    hb_message m = {"m1", "general", "joel", "back", true, false, t1 + HOUR_MS};
    hb_out_clear(&out);
    hb_on_message(&s, &c, &m, t1 + HOUR_MS, &out);
    assert_int_equal(out.timer, t1 + HOUR_MS + 2 * MIN_MS);
    hb_out_clear(&out);
    hb_state_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(active_normal_inactive_by_the_users_last_activity),
        cmocka_unit_test(consecutive_oks_stretch_by_one_and_a_half_up_to_the_inactive_interval),
        cmocka_unit_test(the_active_interval_is_never_stretched),
        cmocka_unit_test(after_a_silent_run_the_next_comes_on_the_active_interval),
        cmocka_unit_test(no_idle_cap_unless_one_is_set),
        cmocka_unit_test(a_user_away_for_days_is_looked_in_on_every_30_min),
        cmocka_unit_test(schedule_follows_activity_and_oks),
        cmocka_unit_test(any_answer_but_ok_resets_the_stretch),
        cmocka_unit_test(idle_cap_stops_runs_until_the_user_is_back),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
