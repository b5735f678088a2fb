/* test_assess.c - every row of the confidence table, both recency
 * penalties, each validation rule, is_active, tier windows and the in_tool
 * stretch (as made exact by issue 12). */
#include "st_test.h"

static stall_config cfg;

static int setup(void **state)
{
    (void)state;
    stall_config_init(&cfg);
    return 0;
}

/* Rows of the table, straight. */
static void test_table_rows(void **state)
{
    (void)state;
    assert_int_equal(stall_base_confidence(2, 0, 0), 900);
    assert_int_equal(stall_base_confidence(5, 3, 1), 900);
    assert_int_equal(stall_base_confidence(1, 0, 0), 700);
    assert_int_equal(stall_base_confidence(1, 4, 2), 700);
    assert_int_equal(stall_base_confidence(0, 2, 0), 700);
    assert_int_equal(stall_base_confidence(0, 3, 5), 700);
    assert_int_equal(stall_base_confidence(0, 1, 0), 500);
    assert_int_equal(stall_base_confidence(0, 1, 7), 500);
    assert_int_equal(stall_base_confidence(0, 0, 1), 300);
    assert_int_equal(stall_base_confidence(0, 0, 9), 300);
    assert_int_equal(stall_base_confidence(0, 0, 0), 0);
}

static void test_penalties(void **state)
{
    (void)state;
    assert_int_equal(stall_recency_penalty(&cfg, 900, 30 * MIN_MS), 900);     /* not over 30 */
    assert_int_equal(stall_recency_penalty(&cfg, 900, 30 * MIN_MS + 1), 765); /* x 0.85 */
    assert_int_equal(stall_recency_penalty(&cfg, 700, 45 * MIN_MS), 595);
    assert_int_equal(stall_recency_penalty(&cfg, 500, 60 * MIN_MS), 425);     /* not over 60 */
    assert_int_equal(stall_recency_penalty(&cfg, 900, 60 * MIN_MS + 1), 630); /* x 0.7 */
    assert_int_equal(stall_recency_penalty(&cfg, 700, 90 * MIN_MS), 490);
    assert_int_equal(stall_recency_penalty(&cfg, 300, 0), 300);
    /* they follow the tier-1 / tier-2 windows */
    stall_config c = cfg;
    c.tier_window_ms[0] = 20000;
    c.tier_window_ms[1] = 10000;
    assert_int_equal(stall_recency_penalty(&c, 900, 10000), 900);
    assert_int_equal(stall_recency_penalty(&c, 900, 10001), 765);
    assert_int_equal(stall_recency_penalty(&c, 900, 20001), 630);
}

/* Each row through stall_assess with real signals. */
static void test_rows_through_assess(void **state)
{
    (void)state;
    struct {
        int sources[4];
        int n;
        int want;
        bool active;
    } rows[] = {
        {{STALL_SRC_GIT_COMMIT, STALL_SRC_TEST_EXECUTION}, 2, 900, true},
        {{STALL_SRC_TELEMETRY_EVENT}, 1, 700, true},
        {{STALL_SRC_CONTRACT_CLAIMED, STALL_SRC_FILE_MODIFICATION}, 2, 700, true},
        {{STALL_SRC_FILE_MODIFICATION, STALL_SRC_DEVLOG_CREATED}, 2, 700, true},
        {{STALL_SRC_INBOX_PROCESSING}, 1, 500, true},      /* 0.5 >= 0.5 */
        {{STALL_SRC_STATUS_UPDATE, STALL_SRC_MESSAGE_QUEUE}, 2, 500, true},
        {{STALL_SRC_MESSAGE_QUEUE}, 1, 300, false},       /* tier 3 only: no validation */
        {{STALL_SRC_MESSAGE_QUEUE, STALL_SRC_WORKSPACE_ACCESS}, 2, 300, false},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        stall_agent *a = st_agent("a");
        for (int i = 0; i < rows[r].n; i++)
            st_sig(a, &cfg, rows[r].sources[i], 5 * MIN_MS, "work", false);
        a = st_roundtrip(a);
        stall_assessment as = st_assess(a, &cfg, T0);
        assert_int_equal(as.confidence_milli, rows[r].want);
        assert_int_equal(as.is_active, rows[r].active);
        free(a);
    }
    stall_agent *a = st_agent("none");
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_int_equal(as.confidence_milli, 0);
    assert_false(as.is_active);
    assert_false(as.validation_passed);
    assert_int_equal(as.last_activity, 0);
    free(a);
}

/* Tier windows: 60 / 30 / 15 min, inclusive. */
static void test_tier_windows(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 60 * MIN_MS, "c", false);        /* counts */
    st_sig(a, &cfg, STALL_SRC_FILE_MODIFICATION, 31 * MIN_MS, "f", false); /* outside 30 */
    st_sig(a, &cfg, STALL_SRC_MESSAGE_QUEUE, 16 * MIN_MS, "m", false);     /* outside 15 */
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_int_equal(as.n_tier[0], 1);
    assert_int_equal(as.n_tier[1], 0);
    assert_int_equal(as.n_tier[2], 0);
    /* one tier 1 (0.7), newest counted 60 min old: x 0.85 */
    assert_int_equal(as.confidence_milli, 595);
    assert_true(as.is_active);
    /* a minute later the commit leaves its window: nothing counts */
    as = st_assess(a, &cfg, T0 + MIN_MS + 1);
    assert_int_equal(as.n_counted, 0);
    assert_int_equal(as.confidence_milli, 0);
    assert_false(as.is_active);
    free(a);

    a = st_agent("b");
    st_sig(a, &cfg, STALL_SRC_FILE_MODIFICATION, 30 * MIN_MS, "f", false);
    st_sig(a, &cfg, STALL_SRC_WORKSPACE_ACCESS, 15 * MIN_MS, "w", false);
    as = st_assess(a, &cfg, T0);
    assert_int_equal(as.n_tier[1], 1);
    assert_int_equal(as.n_tier[2], 1);
    /* base 0.5 (one tier 2); newest counted 15 min: no penalty */
    assert_int_equal(as.confidence_milli, 500);
    free(a);
}

/* The penalty follows the newest counted signal, not the newest signal. */
static void test_penalty_on_newest_counted(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 40 * MIN_MS, "c1", false);
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 50 * MIN_MS, "c2", false);
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_int_equal(as.base_milli, 900);
    assert_int_equal(as.confidence_milli, 765); /* 0.9 x 0.85 */
    assert_true(as.is_active);
    free(a);
}

/* Validation rule: the newest signal must be inside the lookback. */
static void test_validation_recency(void **state)
{
    (void)state;
    stall_config c = cfg;
    c.lookback_ms = 20 * MIN_MS; /* shorter than tier 1's window */
    stall_agent *a = st_agent("a");
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 25 * MIN_MS, "c1", false);
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 26 * MIN_MS, "c2", false);
    stall_assessment as = st_assess(a, &c, T0);
    assert_int_equal(as.confidence_milli, 900);
    assert_false(as.validation_passed); /* 25 min > 20 min lookback */
    assert_false(as.is_active);
    free(a);
}

/* Validation rule: at least one tier 1 or tier 2 signal counted. */
static void test_validation_reliability(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_MESSAGE_QUEUE, 1 * MIN_MS, "q", false);
    st_sig(a, &cfg, STALL_SRC_WORKSPACE_ACCESS, 2 * MIN_MS, "w", false);
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_false(as.validation_passed);
    free(a);
    a = st_agent("b");
    st_sig(a, &cfg, STALL_SRC_STATUS_UPDATE, 2 * MIN_MS, "s", false);
    as = st_assess(a, &cfg, T0);
    assert_true(as.validation_passed);
    free(a);
}

/* Validation rule 1: only the last 24 h is considered. */
static void test_temporal_window(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 10 * MIN_MS, "c", false);
    stall_assessment as = st_assess(a, &cfg, T0 + 24 * HOUR_MS - 10 * MIN_MS);
    assert_int_equal(as.n_considered, 1);
    as = st_assess(a, &cfg, T0 + 24 * HOUR_MS - 10 * MIN_MS + 1);
    assert_int_equal(as.n_considered, 0);
    assert_int_equal(as.last_activity, T0 - 10 * MIN_MS); /* still known */
    /* and a signal older than 24 h is not accepted */
    assert_int_equal(stall_agent_add_signal(a, &cfg, "old", STALL_SRC_GIT_COMMIT, "c", false,
                                            T0 - 24 * HOUR_MS - 1, T0),
                     STALL_SIGNAL_EXPIRED);
    free(a);
}

/* 0.7 x 0.7 = 0.49 is not active: the threshold is exact. (A tier-1
 * signal older than its window counts only inside a tool call.) */
static void test_is_active_threshold(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 61 * MIN_MS, "c", true);
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_int_equal(as.confidence_milli, 490);
    assert_true(as.validation_passed);
    assert_false(as.is_active);
    free(a);
}

/* in_tool on the newest signal stretches the lookback and the windows to
 * the in-tool window until a signal without it arrives. */
static void test_in_tool_stretch(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_TELEMETRY_EVENT, 100 * MIN_MS, "long build", true);
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_true(as.in_tool);
    assert_int_equal(as.n_tier[0], 1);
    assert_int_equal(as.confidence_milli, 490); /* 0.7 x 0.7: counted, but penalised */
    assert_true(as.validation_passed);          /* 100 min inside the 120 min stretch */
    /* two tier-1 in tool: 0.9 x 0.7 = 0.63 -> active */
    st_sig(a, &cfg, STALL_SRC_TEST_EXECUTION, 90 * MIN_MS, "tests running", true);
    as = st_assess(a, &cfg, T0);
    assert_int_equal(as.confidence_milli, 630);
    assert_true(as.is_active);
    /* beyond the in-tool window: inactive */
    as = st_assess(a, &cfg, T0 + 31 * MIN_MS);
    assert_false(as.is_active);
    /* a newer signal without in_tool ends the stretch */
    st_sig(a, &cfg, STALL_SRC_MESSAGE_QUEUE, 1 * MIN_MS, "msg", false);
    as = st_assess(a, &cfg, T0);
    assert_false(as.in_tool);
    assert_int_equal(as.n_tier[0], 0);
    assert_false(as.is_active);
    free(a);
}

/* A status report with meaningful content (a mission or tasks) is a
 * STATUS_UPDATE signal, tier 2, at the report's own time: alone it gives
 * 0.5 and an active agent; a bare state, an acknowledgement for a mission
 * or a noisy one is not activity; a redelivered report adds nothing. */
static void status_with(stall_status *st, const char *fsm, const char *mission, int64_t age_ms)
{
    memset(st, 0, sizeof *st);
    snprintf(st->fsm_state, sizeof st->fsm_state, "%s", fsm);
    snprintf(st->mission, sizeof st->mission, "%s", mission);
    st->ts = T0 - age_ms;
}

static void test_status_update_is_a_tier2_signal(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    stall_status st;
    status_with(&st, "EXECUTING", "Harden the uploader", 5 * MIN_MS);
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(a->n_sig, 1);
    assert_int_equal(a->sig[0].source, STALL_SRC_STATUS_UPDATE);
    assert_int_equal(a->sig[0].ts, T0 - 5 * MIN_MS);
    assert_string_equal(a->progress, ""); /* a mission is not progress */
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_int_equal(as.n_tier[1], 1);
    assert_int_equal(as.confidence_milli, 500);
    assert_true(as.validation_passed);
    assert_true(as.is_active);
    assert_int_equal(as.last_activity, T0 - 5 * MIN_MS);
    /* redelivered: nothing new */
    assert_false(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(a->n_sig, 1);
    /* a newer report with the same content is a newer sign of life */
    st.ts = T0 - MIN_MS;
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(a->n_sig, 2);
    as = st_assess(a, &cfg, T0);
    assert_int_equal(as.confidence_milli, 700); /* two tier 2 */
    /* out of the 30 min tier-2 window it no longer counts */
    as = st_assess(a, &cfg, T0 + 31 * MIN_MS);
    assert_int_equal(as.n_counted, 0);
    assert_false(as.is_active);
    free(a);

    /* a report dated after our clock is taken at our time; the broker
     * sends the retained one again on each connect, and that copy is not
     * a newer sign of life, through the record too. A new report is. */
    a = st_agent("skew");
    status_with(&st, "EXECUTING", "Harden the uploader", 0);
    st.ts = T0 + 10 * MIN_MS;
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(a->status.ts, T0);
    a = st_roundtrip(a);
    assert_false(stall_agent_set_status(a, &cfg, &st, T0 + MIN_MS));
    assert_int_equal(a->n_sig, 1);
    assert_int_equal(a->status.ts, T0);
    st.ts = T0 + 11 * MIN_MS;
    assert_true(stall_agent_set_status(a, &cfg, &st, T0 + 2 * MIN_MS));
    assert_int_equal(a->n_sig, 2);
    assert_int_equal(a->status.ts, T0 + 2 * MIN_MS);
    free(a);

    /* tasks alone are content too */
    a = st_agent("b");
    status_with(&st, "EXECUTING", "", MIN_MS);
    snprintf(st.tasks[0], sizeof st.tasks[0], "retry on 5xx");
    st.n_tasks = 1;
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(a->n_sig, 1);
    free(a);

    /* no content, an acknowledgement, noise: a status, not activity */
    const char *empty[] = {"", "  ", "ok", "inactivity detected", "[stall-recovery] resume"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        a = st_agent("c");
        status_with(&st, "EXECUTING", empty[i], MIN_MS);
        assert_true(stall_agent_set_status(a, &cfg, &st, T0));
        assert_int_equal(a->n_sig, 0);
        as = st_assess(a, &cfg, T0);
        assert_false(as.is_active);
        assert_true(a->status.present);
        free(a);
    }
    a = st_agent("d");
    status_with(&st, "#no-reply", "Harden the uploader", MIN_MS);
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(a->n_sig, 0);
    free(a);
}

/* A report says nothing about tool calls: it keeps the stretch of a long
 * tool call going rather than ending it. */
static void test_status_update_keeps_in_tool(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_TELEMETRY_EVENT, 100 * MIN_MS, "long build", true);
    st_sig(a, &cfg, STALL_SRC_TEST_EXECUTION, 90 * MIN_MS, "tests running", true);
    stall_status st;
    status_with(&st, "TESTING", "Run the full suite", 80 * MIN_MS);
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_true(as.in_tool);
    assert_int_equal(as.n_tier[0], 2);
    assert_true(as.is_active);
    /* and it survives the record's round trip */
    a = st_roundtrip(a);
    assert_int_equal(a->sig[0].source, STALL_SRC_STATUS_UPDATE);
    assert_true(a->sig[0].in_tool);
    free(a);
}

/* An inconsistent record (invalid source) is an error, not a guess. */
static void test_invalid_record_is_error(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, MIN_MS, "c", false);
    a->sig[0].source = 42;
    stall_assessment as;
    char err[160];
    assert_int_equal(stall_assess(a, &cfg, T0, &as, err, sizeof err), -1);
    assert_non_null(strstr(err, "invalid source"));
    free(a);
}

/* True when one of the assessment's reasons is exactly text. */
static bool has_reason(const stall_assessment *as, const char *text)
{
    for (int i = 0; i < as->n_reasons; i++)
        if (strcmp(as->reasons[i], text) == 0)
            return true;
    return false;
}

/* The reasons say the lookback and the windows in minutes, and in seconds
 * when VIGIL_STALL_* shrinks them under a minute (not "0 min"). */
static void test_reason_spans(void **state)
{
    (void)state;
    stall_agent *a = st_agent("a");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 13 * HOUR_MS, "c1", false);
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_true(has_reason(&as, "newest signal 780 min old, outside the 60 min lookback"));
    free(a);

    stall_config c = cfg;
    c.lookback_ms = 2000;
    c.in_tool_ms = 5000;
    a = st_agent("b");
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 4500, "c1", false);
    as = st_assess(a, &c, T0);
    assert_false(as.validation_passed);
    assert_true(has_reason(&as, "newest signal 4.5 s old, outside the 2 s lookback"));
    free(a);

    a = st_agent("c");
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 1000, "c1", true);
    as = st_assess(a, &c, T0);
    assert_true(has_reason(&as, "in a tool call: windows stretched to 5 s"));
    c.tier_window_ms[0] = c.tier_window_ms[1] = c.tier_window_ms[2] = 3000;
    as = st_assess(a, &c, T0 + 20000);
    assert_true(has_reason(&as, "newest signal 21 s old, outside the 5 s lookback"));
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_table_rows, setup),
        cmocka_unit_test_setup(test_penalties, setup),
        cmocka_unit_test_setup(test_rows_through_assess, setup),
        cmocka_unit_test_setup(test_tier_windows, setup),
        cmocka_unit_test_setup(test_penalty_on_newest_counted, setup),
        cmocka_unit_test_setup(test_validation_recency, setup),
        cmocka_unit_test_setup(test_validation_reliability, setup),
        cmocka_unit_test_setup(test_temporal_window, setup),
        cmocka_unit_test_setup(test_is_active_threshold, setup),
        cmocka_unit_test_setup(test_in_tool_stretch, setup),
        cmocka_unit_test_setup(test_invalid_record_is_error, setup),
        cmocka_unit_test_setup(test_status_update_is_a_tier2_signal, setup),
        cmocka_unit_test_setup(test_status_update_keeps_in_tool, setup),
        cmocka_unit_test_setup(test_reason_spans, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
