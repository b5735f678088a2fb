/* Quiet hours in the user's time zone: windows across midnight, several
 * zones (whole and half-hour offsets, both hemispheres), and the daylight
 * saving changes, all with an injected clock and zone data handed in (the
 * core never calls localtime/tzset). */
#include "hb_test.h"

static int off_h(const char *zone, int64_t ms)
{
    return hb_tz_offset(test_lookup(NULL, zone), ms / 1000, NULL);
}

static void fixed_offsets(void **st)
{
    (void)st;
    int64_t t = utc_ms(2026, 7, 1, 12, 0);
    assert_int_equal(off_h("UTC", t), 0);
    assert_int_equal(off_h("Asia/Jakarta", t), 7 * 3600);
    assert_int_equal(off_h("Asia/Kolkata", t), 5 * 3600 + 1800);
    assert_int_equal(hb_tz_offset(NULL, t / 1000, NULL), 0); /* no zone: UTC */
}

static void new_york_spring_forward_and_fall_back(void **st)
{
    (void)st;
    bool dst;
    const hb_tz *ny = test_lookup(NULL, "America/New_York");
    /* 2026-03-08 02:00 EST -> 03:00 EDT, at 07:00 UTC */
    assert_int_equal(hb_tz_offset(ny, utc_ms(2026, 3, 8, 6, 59) / 1000, &dst), -5 * 3600);
    assert_false(dst);
    assert_int_equal(hb_tz_offset(ny, utc_ms(2026, 3, 8, 7, 0) / 1000, &dst), -4 * 3600);
    assert_true(dst);
    /* 2026-11-01 02:00 EDT -> 01:00 EST, at 06:00 UTC */
    assert_int_equal(hb_tz_offset(ny, utc_ms(2026, 11, 1, 5, 59) / 1000, NULL), -4 * 3600);
    assert_int_equal(hb_tz_offset(ny, utc_ms(2026, 11, 1, 6, 0) / 1000, NULL), -5 * 3600);
    /* local clock across the jump: 01:59 then 03:00 */
    hb_local a = hb_local_time(ny, utc_ms(2026, 3, 8, 6, 59));
    hb_local b = hb_local_time(ny, utc_ms(2026, 3, 8, 7, 0));
    assert_int_equal(a.hour * 100 + a.minute, 159);
    assert_int_equal(b.hour * 100 + b.minute, 300);
    assert_int_equal(b.wday, 0); /* a Sunday */
    assert_int_equal(b.day, 8);
    /* far past the transition table: the footer rule still applies */
    assert_int_equal(hb_tz_offset(ny, utc_ms(2101, 7, 1, 12, 0) / 1000, NULL), -4 * 3600);
    assert_int_equal(hb_tz_offset(ny, utc_ms(2101, 1, 15, 12, 0) / 1000, NULL), -5 * 3600);
}

static void berlin_and_sydney(void **st)
{
    (void)st;
    /* Europe/Berlin: last Sunday of March at 01:00 UTC, of October at 01:00 UTC */
    assert_int_equal(off_h("Europe/Berlin", utc_ms(2026, 3, 29, 0, 59)), 3600);
    assert_int_equal(off_h("Europe/Berlin", utc_ms(2026, 3, 29, 1, 0)), 7200);
    assert_int_equal(off_h("Europe/Berlin", utc_ms(2026, 10, 25, 0, 59)), 7200);
    assert_int_equal(off_h("Europe/Berlin", utc_ms(2026, 10, 25, 1, 0)), 3600);
    /* Australia/Sydney: DST across the new year; ends first Sunday of April
     * (03:00 AEDT = 16:00 UTC the day before), starts first Sunday of October */
    assert_int_equal(off_h("Australia/Sydney", utc_ms(2026, 1, 10, 0, 0)), 11 * 3600);
    assert_int_equal(off_h("Australia/Sydney", utc_ms(2026, 4, 4, 15, 59)), 11 * 3600);
    assert_int_equal(off_h("Australia/Sydney", utc_ms(2026, 4, 4, 16, 0)), 10 * 3600);
    assert_int_equal(off_h("Australia/Sydney", utc_ms(2026, 7, 1, 0, 0)), 10 * 3600);
    assert_int_equal(off_h("Australia/Sydney", utc_ms(2026, 10, 3, 15, 59)), 10 * 3600);
    assert_int_equal(off_h("Australia/Sydney", utc_ms(2026, 10, 3, 16, 0)), 11 * 3600);
}

static void posix_rules_alone(void **st)
{
    (void)st;
    char err[128];
    hb_tz *tz = hb_tz_from_posix("EST5EDT,M3.2.0,M11.1.0", err, sizeof err);
    assert_non_null(tz);
    assert_int_equal(hb_tz_offset(tz, utc_ms(2030, 3, 10, 6, 59) / 1000, NULL), -5 * 3600);
    assert_int_equal(hb_tz_offset(tz, utc_ms(2030, 3, 10, 7, 0) / 1000, NULL), -4 * 3600);
    hb_tz_free(tz);
    tz = hb_tz_from_posix("<+07>-7", err, sizeof err);
    assert_non_null(tz);
    assert_int_equal(hb_tz_offset(tz, 0, NULL), 7 * 3600);
    hb_tz_free(tz);
    tz = hb_tz_from_posix("<-0330>3:30", err, sizeof err);
    assert_non_null(tz);
    assert_int_equal(hb_tz_offset(tz, 0, NULL), -(3 * 3600 + 1800));
    hb_tz_free(tz);
    /* Julian day forms: J60 is always March 1; 59 (zero-based) is Feb 29 or Mar 1 */
    tz = hb_tz_from_posix("AAA0BBB,J60/0,J300/0", err, sizeof err);
    assert_non_null(tz);
    assert_int_equal(hb_tz_offset(tz, utc_ms(2028, 2, 29, 23, 0) / 1000, NULL), 0);
    assert_int_equal(hb_tz_offset(tz, utc_ms(2028, 3, 1, 0, 30) / 1000, NULL), 3600);
    hb_tz_free(tz);
    const char *bad[] = {"", "E5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.2.0",
                         "EST5EDT,M3.6.0,M11.1.0", "EST99", "<+07-7", "EST5 trailing"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tz = hb_tz_from_posix(bad[i], err, sizeof err);
        if (tz)
            fail_msg("accepted '%s'", bad[i]);
    }
}

static void bad_tzif_is_refused(void **st)
{
    (void)st;
    char err[128];
    unsigned char junk[64] = "TZif2 not really";
    assert_null(hb_tz_from_tzif(junk, sizeof junk, err, sizeof err));
    assert_null(hb_tz_from_tzif((const unsigned char *)"nope", 4, err, sizeof err));
    /* a real file cut short */
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    if (!f)
        skip();
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 200);
    assert_null(hb_tz_from_tzif(buf, 100, err, sizeof err));
    hb_tz *whole = hb_tz_from_tzif(buf, n, err, sizeof err);
    assert_non_null(whole);
    hb_tz_free(whole);
}

static void windows_across_midnight_and_within_a_day(void **st)
{
    (void)st;
    hb_quiet night = {true, hb_parse_hhmm("22:00"), hb_parse_hhmm("07:00")};
    assert_true(hb_quiet_contains(&night, 22 * 60));
    assert_true(hb_quiet_contains(&night, 23 * 60 + 30));
    assert_true(hb_quiet_contains(&night, 0));
    assert_true(hb_quiet_contains(&night, 6 * 60 + 59));
    assert_false(hb_quiet_contains(&night, 7 * 60));
    assert_false(hb_quiet_contains(&night, 21 * 60 + 59));
    assert_false(hb_quiet_contains(&night, 12 * 60));
    hb_quiet lunch = {true, 13 * 60, 14 * 60};
    assert_true(hb_quiet_contains(&lunch, 13 * 60));
    assert_false(hb_quiet_contains(&lunch, 14 * 60));
    assert_false(hb_quiet_contains(&lunch, 0));
    hb_quiet empty = {true, 8 * 60, 8 * 60};
    assert_false(hb_quiet_contains(&empty, 8 * 60));
    hb_quiet none = {false, 0, 0};
    assert_false(hb_quiet_contains(&none, 0));
    hb_local l = {0};
    l.hour = 23;
    assert_int_equal(hb_quiet_remaining_ms(&night, &l), 8 * HOUR_MS);
    l.hour = 6, l.minute = 59, l.second = 30;
    assert_int_equal(hb_quiet_remaining_ms(&night, &l), 30 * 1000);
    l.hour = 12;
    assert_int_equal(hb_quiet_remaining_ms(&night, &l), 0);
    assert_int_equal(hb_parse_hhmm("24:00"), -1);
    assert_int_equal(hb_parse_hhmm("7:00"), -1);
    assert_int_equal(hb_parse_hhmm("07:60"), -1);
    assert_int_equal(hb_parse_hhmm("23:59"), 23 * 60 + 59);
}

/* Fires a run of a persona with quiet hours 22:00-07:00 in zone at utc;
 * returns whether it was skipped for quiet hours. */
static bool quiet_at(const char *zone, int64_t utc)
{
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    char extra[200];
    snprintf(extra, sizeof extra,
             "\"quiet_hours\":{\"start\":\"22:00\",\"end\":\"07:00\",\"timezone\":\"%s\"},", zone);
    configured(&s, &c, extra, utc - 3 * MIN_MS);
    json_object *ev = fire(&s, &c, utc, &out);
    bool quiet = ev && strcmp(jstr(ev, "reason"), "quiet-hours") == 0;
    if (!quiet)
        assert_non_null(out.job); /* otherwise the run goes ahead */
    json_object_put(ev);
    hb_out_clear(&out);
    hb_state_free(&s);
    return quiet;
}

static void quiet_hours_in_several_zones(void **st)
{
    (void)st;
    /* 15:30 UTC = 22:30 in Jakarta, 11:30 in New York (EDT), 21:00 in Kolkata */
    int64_t t = utc_ms(2026, 7, 1, 15, 30);
    assert_true(quiet_at("Asia/Jakarta", t));
    assert_false(quiet_at("America/New_York", t));
    assert_false(quiet_at("Asia/Kolkata", t));
    assert_false(quiet_at("UTC", t));
    /* 16:45 UTC = 22:15 in Kolkata (a half-hour zone) */
    assert_true(quiet_at("Asia/Kolkata", utc_ms(2026, 7, 1, 16, 45)));
    /* 00:30 UTC = 07:30 in Jakarta: the window has ended */
    assert_false(quiet_at("Asia/Jakarta", utc_ms(2026, 7, 2, 0, 30)));
    /* 23:59 UTC and 00:00 UTC are both inside in UTC itself */
    assert_true(quiet_at("UTC", utc_ms(2026, 7, 1, 23, 59)));
    assert_true(quiet_at("UTC", utc_ms(2026, 7, 2, 0, 0)));
}

static void quiet_hours_follow_daylight_saving(void **st)
{
    (void)st;
    /* New York, 2026-03-08 (spring forward at 07:00 UTC): 11:30 UTC is
     * 07:30 EDT (awake), though it would be 06:30 in EST; 10:30 UTC is
     * 06:30 EDT (quiet) */
    assert_false(quiet_at("America/New_York", utc_ms(2026, 3, 8, 11, 30)));
    assert_true(quiet_at("America/New_York", utc_ms(2026, 3, 8, 10, 30)));
    /* the day before, still EST: 11:30 UTC is 06:30, quiet */
    assert_true(quiet_at("America/New_York", utc_ms(2026, 3, 7, 11, 30)));
    /* fall back, 2026-11-01: 11:30 UTC is 06:30 EST (quiet), a week
     * earlier 07:30 EDT (awake) */
    assert_true(quiet_at("America/New_York", utc_ms(2026, 11, 1, 11, 30)));
    assert_false(quiet_at("America/New_York", utc_ms(2026, 10, 25, 11, 30)));
    /* Berlin: 2026-03-29 05:30 UTC is 07:30 CEST (awake); 2026-03-28 05:30 UTC
     * is 06:30 CET (quiet) */
    assert_false(quiet_at("Europe/Berlin", utc_ms(2026, 3, 29, 5, 30)));
    assert_true(quiet_at("Europe/Berlin", utc_ms(2026, 3, 28, 5, 30)));
    /* Sydney in January (AEDT, +11): 20:30 UTC = 07:30, awake; in July (+10) 06:30, quiet */
    assert_false(quiet_at("Australia/Sydney", utc_ms(2026, 1, 14, 20, 30)));
    assert_true(quiet_at("Australia/Sydney", utc_ms(2026, 7, 14, 20, 30)));
}

static void the_skip_names_the_time_and_looks_again_at_the_end(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    configured(&s, &c, "\"quiet_hours\":\"22:00-07:00\",\"timezone\":\"Asia/Jakarta\",",
               utc_ms(2026, 7, 1, 15, 0));
    int64_t t = utc_ms(2026, 7, 1, 16, 0); /* 23:00 WIB */
    json_object *ev = fire(&s, &c, t, &out);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "quiet-hours");
    assert_non_null(strstr(jstr(ev, "detail"), "23:00 in Asia/Jakarta"));
    assert_int_equal(jint(ev, "next_in_ms"), 8 * HOUR_MS);
    assert_int_equal(out.timer, t + 8 * HOUR_MS);
    assert_null(out.job);
    json_object_put(ev);
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* The outcome of a run of persona configured with extra, fired at t: the
 * skip's reason, or "run" when it went to the model. */
static void night_run(const char *extra, int64_t t, char *reason, size_t len, int64_t *next_in)
{
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    configured(&s, &c, extra, t - 10 * MIN_MS);
    json_object *ev = fire(&s, &c, t, &out);
    snprintf(reason, len, "%s", ev ? jstr(ev, "reason") : "run");
    *next_in = ev ? jint(ev, "next_in_ms") : 0;
    json_object_put(ev);
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* `quiet_hours: true` is the night, 22:00-07:00 in the persona's time zone
 * (skipped until 07:00); without quiet hours (absent or false) a persona
 * runs at any hour. */
static void quiet_hours_true_is_the_night(void **st)
{
    (void)st;
    char why[64];
    int64_t next;
    const char *night = "\"quiet_hours\":true,";
    night_run(night, utc_ms(2026, 7, 1, 3, 0), why, sizeof why, &next); /* 03:00 UTC */
    assert_string_equal(why, "quiet-hours");
    assert_int_equal(next, 4 * HOUR_MS);
    night_run(night, utc_ms(2026, 7, 1, 5, 30), why, sizeof why, &next); /* dawn */
    assert_string_equal(why, "quiet-hours");
    assert_int_equal(next, 90 * MIN_MS);
    night_run(night, utc_ms(2026, 7, 1, 22, 0), why, sizeof why, &next);
    assert_string_equal(why, "quiet-hours");
    assert_int_equal(next, 9 * HOUR_MS);
    night_run(night, utc_ms(2026, 7, 1, 21, 59), why, sizeof why, &next);
    assert_string_equal(why, "run");
    night_run(night, utc_ms(2026, 7, 1, 7, 0), why, sizeof why, &next);
    assert_string_equal(why, "run");
    /* in the persona's own zone: 20:00 UTC is 03:00 in Jakarta, 03:00 UTC is 10:00 */
    night_run("\"quiet_hours\":true,\"timezone\":\"Asia/Jakarta\",", utc_ms(2026, 7, 1, 20, 0),
              why, sizeof why, &next);
    assert_string_equal(why, "quiet-hours");
    night_run("\"quiet_hours\":true,\"timezone\":\"Asia/Jakarta\",", utc_ms(2026, 7, 1, 3, 0),
              why, sizeof why, &next);
    assert_string_equal(why, "run");
    /* absent or false: no quiet hours, a run at 03:00 */
    night_run(NULL, utc_ms(2026, 7, 1, 3, 0), why, sizeof why, &next);
    assert_string_equal(why, "run");
    night_run("\"quiet_hours\":false,", utc_ms(2026, 7, 1, 3, 0), why, sizeof why, &next);
    assert_string_equal(why, "run");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_offsets),
        cmocka_unit_test(new_york_spring_forward_and_fall_back),
        cmocka_unit_test(berlin_and_sydney),
        cmocka_unit_test(posix_rules_alone),
        cmocka_unit_test(bad_tzif_is_refused),
        cmocka_unit_test(windows_across_midnight_and_within_a_day),
        cmocka_unit_test(quiet_hours_in_several_zones),
        cmocka_unit_test(quiet_hours_follow_daylight_saving),
        cmocka_unit_test(the_skip_names_the_time_and_looks_again_at_the_end),
        cmocka_unit_test(quiet_hours_true_is_the_night),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
