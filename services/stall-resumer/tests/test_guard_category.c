/* test_guard_category.c - the guard (no resume to an active agent, resume
 * for an inactive one or a failed validation, fail open on an internal
 * error) and every category boundary. */
#include "st_test.h"

static void test_category_boundaries(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    assert_int_equal(stall_category_of_age(&c, 0), STALL_CAT_FRESH);
    assert_int_equal(stall_category_of_age(&c, 2 * HOUR_MS - 1), STALL_CAT_FRESH);
    assert_int_equal(stall_category_of_age(&c, 2 * HOUR_MS), STALL_CAT_WARNING);
    assert_int_equal(stall_category_of_age(&c, 6 * HOUR_MS - 1), STALL_CAT_WARNING);
    assert_int_equal(stall_category_of_age(&c, 6 * HOUR_MS), STALL_CAT_CRITICAL);
    assert_int_equal(stall_category_of_age(&c, 12 * HOUR_MS), STALL_CAT_CRITICAL);
    assert_int_equal(stall_category_of_age(&c, 12 * HOUR_MS + 1), STALL_CAT_AUTO_RESUME);
    /* configurable */
    c.warning_ms = 1000;
    c.critical_ms = 2000;
    c.autoresume_ms = 3000;
    assert_int_equal(stall_category_of_age(&c, 999), STALL_CAT_FRESH);
    assert_int_equal(stall_category_of_age(&c, 1000), STALL_CAT_WARNING);
    assert_int_equal(stall_category_of_age(&c, 2000), STALL_CAT_CRITICAL);
    assert_int_equal(stall_category_of_age(&c, 3001), STALL_CAT_AUTO_RESUME);
    assert_string_equal(stall_category_name(STALL_CAT_AUTO_RESUME), "auto-resume");
    assert_string_equal(stall_category_name(STALL_CAT_FRESH), "fresh");
}

/* The limits must be in order (equal allowed): what the service and
 * `vigil agents status` both refuse, in the same words. */
static void test_config_check_order(void **state)
{
    (void)state;
    stall_config c;
    char err[160] = "";
    stall_config_init(&c);
    assert_int_equal(stall_config_check(&c, err, sizeof err), 0);
    c.warning_ms = c.critical_ms = c.autoresume_ms = 1000;
    assert_int_equal(stall_config_check(&c, err, sizeof err), 0);
    c.warning_ms = 1001;
    assert_int_equal(stall_config_check(&c, err, sizeof err), -1);
    assert_string_equal(err, "VIGIL_STALL_WARNING_MS <= VIGIL_STALL_CRITICAL_MS <= "
                             "VIGIL_STALL_AUTORESUME_MS is required");
    c.warning_ms = 1000;
    c.critical_ms = 1001;
    assert_int_equal(stall_config_check(&c, err, sizeof err), -1);
}

/* The status checker's ages are cut down, never rounded up: an age just
 * under a category limit never reads as the limit. */
static void test_age_text(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    char t[32];
    stall_age_text(42999, t, sizeof t);
    assert_string_equal(t, "42s");
    stall_age_text(17 * MIN_MS + 59999, t, sizeof t);
    assert_string_equal(t, "17m");
    stall_age_text(2 * HOUR_MS - 1, t, sizeof t);
    assert_string_equal(t, "1h59m");
    assert_int_equal(stall_category_of_age(&c, 2 * HOUR_MS - 1), STALL_CAT_FRESH);
    stall_age_text(6 * HOUR_MS - 1, t, sizeof t);
    assert_string_equal(t, "5h59m");
    assert_int_equal(stall_category_of_age(&c, 6 * HOUR_MS - 1), STALL_CAT_WARNING);
    stall_age_text(12 * HOUR_MS - 30000, t, sizeof t);
    assert_string_equal(t, "11h59m");
    stall_age_text(13 * HOUR_MS + 61000, t, sizeof t);
    assert_string_equal(t, "13h01m");
    stall_age_text(-5, t, sizeof t);
    assert_string_equal(t, "0s");
}

/* Status age decides; detected activity makes it fresh; no status: the
 * newest signal's age. */
static void test_category_sources(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    stall_agent *a = st_agent("a");
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    stall_assessment as = st_assess(a, &c, T0);
    assert_int_equal(as.category, STALL_CAT_AUTO_RESUME);
    assert_true(as.category_from_status);
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, MIN_MS, "c1", false);
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 2 * MIN_MS, "c2", false);
    as = st_assess(a, &c, T0);
    assert_true(as.is_active);
    assert_int_equal(as.category, STALL_CAT_FRESH); /* active: not escalated */
    free(a);

    a = st_agent("b"); /* no status: aged from the newest signal */
    st_sig(a, &c, STALL_SRC_MESSAGE_QUEUE, 7 * HOUR_MS, "m", false);
    as = st_assess(a, &c, T0);
    assert_false(as.category_from_status);
    assert_int_equal(as.category, STALL_CAT_CRITICAL);
    free(a);
}

static void test_guard_active_blocks(void **state)
{
    (void)state;
    stall_assessment as;
    memset(&as, 0, sizeof as);
    as.is_active = true;
    as.validation_passed = true;
    as.confidence_milli = 700;
    stall_guard g = stall_should_send_resume(0, NULL, &as);
    assert_false(g.send);
    assert_false(g.failed_open);
    assert_non_null(strstr(g.reason, "active"));
}

static void test_guard_inactive_allows(void **state)
{
    (void)state;
    stall_assessment as;
    memset(&as, 0, sizeof as);
    as.validation_passed = true;
    as.confidence_milli = 300;
    stall_guard g = stall_should_send_resume(0, NULL, &as);
    assert_true(g.send);
    assert_non_null(strstr(g.reason, "inactive"));
    as.validation_passed = false;
    as.confidence_milli = 900; /* high but unvalidated */
    g = stall_should_send_resume(0, NULL, &as);
    assert_true(g.send);
    assert_non_null(strstr(g.reason, "validation failed"));
}

/* Fail open: an assessment error allows the resume and says so, also
 * through the scan, so a stalled agent with a broken record still gets
 * its resume. */
static void test_guard_fail_open(void **state)
{
    (void)state;
    stall_guard g = stall_should_send_resume(-1, "boom", NULL);
    assert_true(g.send);
    assert_true(g.failed_open);
    assert_non_null(strstr(g.reason, "boom"));
    assert_non_null(strstr(g.reason, "failing open"));
    g = stall_should_send_resume(-1, NULL, NULL);
    assert_true(g.send);
    assert_non_null(strstr(g.reason, "unknown error"));

    stall_config c;
    stall_config_init(&c);
    stall_agent *a = st_agent("a");
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, MIN_MS, "c1", false);
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 2 * MIN_MS, "c2", false);
    a->sig[0].source = 99; /* a corrupt record: the assessment fails */
    stall_scan_result r;
    stall_agent_scan(a, &c, T0, NULL, &r);
    assert_int_equal(r.assess_rc, -1);
    assert_true(r.guard.failed_open);
    assert_true(r.resume);
    assert_int_equal(r.seq, 1);
    json_object *o = stall_assessment_json(a, &r, T0);
    const char *txt = json_object_to_json_string(o);
    assert_non_null(strstr(txt, "failing open"));
    json_object_put(o);
    free(a);

    /* an unreadable stored record (reported by the shell): a fresh record
     * with nothing known is resumed, failing open, saying why */
    a = st_agent("b");
    stall_agent_scan(a, &c, T0, "agent record unreadable", &r);
    assert_true(r.guard.failed_open);
    assert_non_null(strstr(r.guard.reason, "agent record unreadable"));
    assert_int_equal(r.as.category, STALL_CAT_AUTO_RESUME);
    assert_true(r.resume);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_category_boundaries),
        cmocka_unit_test(test_config_check_order),
        cmocka_unit_test(test_category_sources),
        cmocka_unit_test(test_age_text),
        cmocka_unit_test(test_guard_active_blocks),
        cmocka_unit_test(test_guard_inactive_allows),
        cmocka_unit_test(test_guard_fail_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
