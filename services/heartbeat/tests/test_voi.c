/* The value-of-information table of the Orion project (the seed's VoI
 * calculator), the > 0.3 gate, peak hours, and the allow list; then the
 * gate applied to a model's message at a given local time. */
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
    assert_int_equal(hb_voi_benefit(HB_CAT_DEFAULT), 500);
    assert_int_equal(hb_voi_disturbance(HB_DIST_QUIET), 500);
    assert_int_equal(hb_voi_disturbance(HB_DIST_OFF_PEAK), 200);
    assert_int_equal(hb_voi_disturbance(HB_DIST_PEAK), 100);
}

static void scores_and_the_gate(void **st)
{
    (void)st;
    /* 0.9 x 1.0 - 0.1 - 0.1 = 0.7 */
    assert_int_equal(hb_voi(HB_PRIO_URGENT, HB_CAT_REMINDER, HB_DIST_PEAK), 700);
    /* 0.6 x 1.0 - 0.1 - 0.2 = 0.3 exactly: not above the threshold */
    assert_int_equal(hb_voi(HB_PRIO_NORMAL, HB_CAT_DEADLINE, HB_DIST_OFF_PEAK), 300);
    assert_false(hb_voi_send(300));
    assert_true(hb_voi_send(301));
    /* 0.6 x 1.0 - 0.1 - 0.1 = 0.4: sent at peak */
    assert_true(hb_voi_send(hb_voi(HB_PRIO_NORMAL, HB_CAT_REMINDER, HB_DIST_PEAK)));
    /* 0.9 x 0.8 - 0.1 - 0.2 = 0.42 */
    assert_int_equal(hb_voi(HB_PRIO_URGENT, HB_CAT_ALERT, HB_DIST_OFF_PEAK), 420);
    /* 0.9 x 1.0 - 0.1 - 0.5 = 0.3: not even urgent reminders in quiet hours */
    assert_false(hb_voi_send(hb_voi(HB_PRIO_URGENT, HB_CAT_REMINDER, HB_DIST_QUIET)));
    /* low priority never passes: at most 0.3 - 0.1 - 0.1 */
    for (int c = 0; c < HB_CAT__COUNT; c++)
        assert_false(hb_voi_send(hb_voi(HB_PRIO_LOW, (hb_category)c, HB_DIST_PEAK)));
    /* 0.6 x 0.5 - 0.1 - 0.1 = 0.1: plain text (default) is blocked */
    assert_int_equal(hb_voi(HB_PRIO_NORMAL, HB_CAT_DEFAULT, HB_DIST_PEAK), 100);
    /* 0.9 x 0.3 - 0.1 - 0.1 = 0.07 */
    assert_int_equal(hb_voi(HB_PRIO_URGENT, HB_CAT_UPDATE, HB_DIST_PEAK), 70);
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

static void the_gate_on_model_messages(void **st)
{
    (void)st;
    hb_out out;
    const char *reminder = "{\"message\":\"Review at 15:00\",\"priority\":\"normal\",\"category\":\"reminder\"}";
    /* 14:10 UTC is peak: 0.4, sent */
    json_object *ev = judged(NULL, reminder, utc_ms(2026, 7, 1, 14, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    assert_true(json_object_get_double(json_object_object_get(ev, "voi")) > 0.39);
    json_object *msg = out_json(&out, "/message");
    assert_non_null(msg);
    assert_string_equal(jstr(msg, "text"), "Review at 15:00");
    assert_true(json_object_get_boolean(json_object_object_get(msg, "proactive")));
    assert_string_equal(jstr(msg, "sender"), "helper");
    assert_string_equal(jstr(msg, "id"), jstr(ev, "message_id"));
    json_object_put(msg);
    json_object_put(ev);
    hb_out_clear(&out);
    /* 12:10 UTC is off-peak: 0.3, blocked, nothing sent */
    ev = judged(NULL, reminder, utc_ms(2026, 7, 1, 12, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "voi-blocked");
    assert_null(out_json(&out, "/message"));
    assert_non_null(strstr(jstr(ev, "detail"), "off-peak"));
    json_object_put(ev);
    hb_out_clear(&out);
    /* allowed by VoI, refused by the allow list */
    ev = judged("\"allow_proactive\":[\"alert\"],", reminder, utc_ms(2026, 7, 1, 14, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "permission-blocked");
    assert_null(out_json(&out, "/message"));
    json_object_put(ev);
    hb_out_clear(&out);
    ev = judged("\"allow_proactive\":false,", reminder, utc_ms(2026, 7, 1, 14, 10), &out);
    assert_string_equal(jstr(ev, "outcome"), "permission-blocked");
    json_object_put(ev);
    hb_out_clear(&out);
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
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
