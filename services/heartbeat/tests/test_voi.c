/* The value-of-information table (README, "A run"), the > 0.3 gate, peak
 * hours, and the allow list; then the gate applied to a model's message at
 * a given local time: the test checklist's break reminder, answered in plain
 * text as the specified prompt asks, is sent at every hour outside quiet hours. */
#include "hb_test.h"

static void the_table(void **st)
{
    (void)st;
    assert_int_equal(hb_voi_probability(HB_PRIO_URGENT), 900);
    assert_int_equal(hb_voi_probability(HB_PRIO_NORMAL), 600);
    assert_int_equal(hb_voi_probability(HB_PRIO_LOW), 300);
    assert_int_equal(hb_voi_benefit(HB_CAT_REMINDER), 1000);
    assert_int_equal(hb_voi_benefit(HB_CAT_DEADLINE), 1000);
    assert_int_equal(hb_voi_benefit(HB_CAT_ALERT), 800);
    assert_int_equal(hb_voi_benefit(HB_CAT_NOTIFICATION), 500);
    assert_int_equal(hb_voi_benefit(HB_CAT_CHECK_IN), 400);
    assert_int_equal(hb_voi_benefit(HB_CAT_UPDATE), 300);
    assert_int_equal(hb_voi_benefit(HB_CAT_DEFAULT), 1000); /* no category: plain text */
    assert_int_equal(hb_voi_disturbance(HB_DIST_QUIET), 600);
    assert_int_equal(hb_voi_disturbance(HB_DIST_OFF_PEAK), 200);
    assert_int_equal(hb_voi_disturbance(HB_DIST_PEAK), 100);
}

static void scores_and_the_gate(void **st)
{
    (void)st;
    /* 0.9 x 1.0 - 0.1 = 0.8 */
    assert_int_equal(hb_voi(HB_PRIO_URGENT, HB_CAT_REMINDER, HB_DIST_PEAK), 800);
    assert_false(hb_voi_send(300));
    assert_true(hb_voi_send(301));
    /* a normal reminder passes at peak (0.5) and off-peak (0.4) */
    assert_int_equal(hb_voi(HB_PRIO_NORMAL, HB_CAT_DEADLINE, HB_DIST_OFF_PEAK), 400);
    assert_true(hb_voi_send(hb_voi(HB_PRIO_NORMAL, HB_CAT_REMINDER, HB_DIST_PEAK)));
    /* the specified plain-text answer (normal, no category): 0.5 / 0.4, never 0 */
    assert_int_equal(hb_voi(HB_PRIO_NORMAL, HB_CAT_DEFAULT, HB_DIST_PEAK), 500);
    assert_int_equal(hb_voi(HB_PRIO_NORMAL, HB_CAT_DEFAULT, HB_DIST_OFF_PEAK), 400);
    /* 0.9 x 0.8 - 0.2 = 0.52; a normal alert off-peak 0.28 is not sent */
    assert_int_equal(hb_voi(HB_PRIO_URGENT, HB_CAT_ALERT, HB_DIST_OFF_PEAK), 520);
    assert_false(hb_voi_send(hb_voi(HB_PRIO_NORMAL, HB_CAT_ALERT, HB_DIST_OFF_PEAK)));
    /* 0.9 x 1.0 - 0.6 = 0.3: nothing in quiet hours, not even urgent */
    for (int p = 0; p < HB_PRIO__COUNT; p++)
        for (int c = 0; c < HB_CAT__COUNT; c++)
            assert_false(hb_voi_send(hb_voi((hb_priority)p, (hb_category)c, HB_DIST_QUIET)));
    /* low priority never passes: at most 0.3 - 0.1 */
    for (int c = 0; c < HB_CAT__COUNT; c++)
        assert_false(hb_voi_send(hb_voi(HB_PRIO_LOW, (hb_category)c, HB_DIST_PEAK)));
    /* check-ins and updates never pass, even urgent at peak: 0.36 - 0.1 */
    assert_int_equal(hb_voi(HB_PRIO_URGENT, HB_CAT_CHECK_IN, HB_DIST_PEAK), 260);
    assert_false(hb_voi_send(hb_voi(HB_PRIO_URGENT, HB_CAT_UPDATE, HB_DIST_PEAK)));
}

static void peak_hours(void **st)
{
    (void)st;
    int peak[] = {9, 10, 14, 15, 19}, off[] = {0, 8, 11, 12, 13, 20, 23};
    for (size_t i = 0; i < sizeof peak / sizeof peak[0]; i++)
        assert_true(hb_is_peak(peak[i]));
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        assert_false(hb_is_peak(off[i]));
}

static void names(void **st)
{
    (void)st;
    assert_int_equal(hb_category_parse("check-in"), HB_CAT_CHECK_IN);
    assert_int_equal(hb_category_parse("notification"), HB_CAT_NOTIFICATION);
    assert_int_equal(hb_category_parse("nope"), -1);
    assert_int_equal(hb_priority_parse("urgent"), HB_PRIO_URGENT);
    assert_int_equal(hb_priority_parse("URGENT"), -1);
    assert_string_equal(hb_category_name(HB_CAT_CHECK_IN), "check-in");
}

static void allow_list(void **st)
{
    (void)st;
    assert_true(hb_permitted(HB_ALLOW_ALL, HB_CAT_UPDATE));
    assert_false(hb_permitted(0, HB_CAT_REMINDER));
    unsigned m = (1u << HB_CAT_REMINDER) | (1u << HB_CAT_DEADLINE);
    assert_true(hb_permitted(m, HB_CAT_DEADLINE));
    assert_false(hb_permitted(m, HB_CAT_ALERT));
}

/* A run whose model answers `text` at UTC instant t (zone UTC): its event. */
static json_object *judged(const char *extra, const char *text, int64_t t, hb_out *out)
{
    hb_config c;
    test_config(&c);
    hb_state s;
    configured(&s, &c, extra, t - 3 * MIN_MS);
    hb_out_init(out);
    fire(&s, &c, t, out);
    assert_non_null(out->job);
    json_object *ev = answer(&s, &c, text, t, out);
    hb_state_free(&s);
    return ev;
}

static double jdouble(json_object *o, const char *k)
{
    return json_object_get_double(json_object_object_get(o, k));
}

static void the_gate_on_model_messages(void **st)
{
    (void)st;
    hb_out out;
    const char *reminder = "{\"message\":\"Review at 15:00\",\"priority\":\"normal\",\"category\":\"reminder\"}";
    /* 14:10 UTC is peak: 0.5, sent */
    json_object *ev = judged(NULL, reminder, utc_ms(2026, 7, 1, 14, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    assert_true(jdouble(ev, "voi") == 0.5);
    json_object *msg = out_json(&out, "/message");
    assert_non_null(msg);
    assert_string_equal(jstr(msg, "text"), "Review at 15:00");
    assert_true(json_object_get_boolean(json_object_object_get(msg, "proactive")));
    assert_string_equal(jstr(msg, "sender"), "helper");
    assert_string_equal(jstr(msg, "id"), jstr(ev, "message_id"));
    json_object_put(msg);
    json_object_put(ev);
    hb_out_clear(&out);
    /* 12:10 UTC is off-peak: 0.4, sent too */
    ev = judged(NULL, reminder, utc_ms(2026, 7, 1, 12, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    assert_non_null(strstr(jstr(ev, "detail"), "off-peak"));
    json_object_put(ev);
    hb_out_clear(&out);
    /* a low-value message is blocked, and the shell is told the score */
    ev = judged(NULL, "{\"message\":\"trivia\",\"priority\":\"low\",\"category\":\"update\"}",
                utc_ms(2026, 7, 1, 12, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "voi-blocked");
    assert_null(out_json(&out, "/message"));
    assert_string_equal(out.run.outcome, "voi-blocked");
    assert_string_equal(out.run.voi, "-0.11"); /* 0.3 x 0.3 - 0.2 */
    assert_non_null(strstr(out.run.detail, "VoI -0.11 <= 0.3"));
    json_object_put(ev);
    hb_out_clear(&out);
    /* allowed by VoI, refused by the allow list */
    ev = judged("\"allow_proactive\":[\"alert\"],", reminder, utc_ms(2026, 7, 1, 14, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "permission-blocked");
    assert_null(out_json(&out, "/message"));
    assert_string_equal(out.run.outcome, "permission-blocked");
    json_object_put(ev);
    hb_out_clear(&out);
    ev = judged("\"allow_proactive\":false,", reminder, utc_ms(2026, 7, 1, 14, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "permission-blocked");
    json_object_put(ev);
    hb_out_clear(&out);
}

/* The break-reminder test: "If more than 2 minutes have passed, remind the
 * user to take a break." with a model answering in plain text, as the specified prompt
 * asks: sent at every hour of the day (quiet hours turned off), as a normal message, with its score
 * published as the detail shows it; inside configured quiet hours (a
 * window that began while the model answered) it is not. */
static void the_break_reminder_in_plain_text_is_sent_at_any_hour(void **st)
{
    (void)st;
    const char *cl = "\"checklist\":\"- If more than 2 minutes have passed, remind the user "
                     "to take a break.\",";
    const char *text = "You have been at it for a while: time for a short break?";
    char awake[300]; /* no quiet hours at all, not even the night */
    snprintf(awake, sizeof awake, "%s\"quiet_hours\":false,", cl);
    for (int h = 0; h < 24; h++) {
        hb_out out;
        json_object *ev = judged(awake, text, utc_ms(2026, 7, 1, h, 30), &out);
        assert_string_equal(jstr(ev, "outcome"), "sent");
        assert_string_equal(jstr(ev, "priority"), "normal");
        assert_string_equal(jstr(ev, "category"), "default");
        double voi = jdouble(ev, "voi");
        assert_true(voi == (hb_is_peak(h) ? 0.5 : 0.4));
        json_object *msg = out_json(&out, "/message");
        assert_string_equal(jstr(msg, "text"), text);
        json_object_put(msg);
        /* the number as written: 0.4, not 0.40000000000000002 */
        const char *run = NULL;
        for (int i = 0; i < out.n_msg; i++)
            if (strstr(out.msg[i].topic, "/run"))
                run = out.msg[i].payload;
        assert_non_null(strstr(run, hb_is_peak(h) ? "\"voi\":0.5," : "\"voi\":0.4,"));
        json_object_put(ev);
        hb_out_clear(&out);
    }
    hb_fx f;
    char quiet[300];
    snprintf(quiet, sizeof quiet, "%s\"quiet_hours\":\"22:00-07:00\",", cl);
    int64_t t = utc_ms(2026, 7, 1, 22, 0);
    started(&f, quiet, t - 3 * MIN_MS, t - 10 * 1000); /* 21:59:50, outside the window */
    json_object *ev = answer(&f.s, &f.c, text, t + 10 * 1000, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "voi-blocked");
    assert_true(jdouble(ev, "voi") == 0.0);
    assert_non_null(strstr(jstr(ev, "detail"), "quiet hours"));
    assert_null(out_json(&f.out, "/message"));
    json_object_put(ev);
    hb_fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_table),
        cmocka_unit_test(scores_and_the_gate),
        cmocka_unit_test(peak_hours),
        cmocka_unit_test(names),
        cmocka_unit_test(allow_list),
        cmocka_unit_test(the_gate_on_model_messages),
        cmocka_unit_test(the_break_reminder_in_plain_text_is_sent_at_any_hour),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
