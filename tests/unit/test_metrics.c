/* Unit tests of metrics.c: exact exposition text for a small registry,
 * cumulative histogram buckets, value formatting, label escaping, type
 * conflicts and invalid names ignored, and concurrent updates. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/metrics.h"

static int reset(void **state)
{
    (void)state;
    vigil_metrics_reset();
    return 0;
}

static void test_empty_registry(void **state)
{
    (void)state;
    char *s = vigil_metrics_render();
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
    assert_true(vigil_metric_value("nothing_total", NULL) == 0);
}

static void test_counters_and_gauges_exact(void **state)
{
    (void)state;
    vigil_counter_add("vigil_rejected_total", "Inputs rejected", "reason=\"not_json\"", 1);
    vigil_gauge_set("vigil_ready", "1 when connected", NULL, 1);
    vigil_counter_add("vigil_rejected_total", "other help is ignored", "reason=\"oversize\"", 2);
    vigil_counter_add("vigil_rejected_total", NULL, "reason=\"not_json\"", 1);
    vigil_gauge_set("vigil_ready", NULL, "", 0);
    vigil_gauge_set("vigil_lag_seconds", "Lag", NULL, 0.25);

    assert_true(vigil_metric_value("vigil_rejected_total", "reason=\"not_json\"") == 2);
    assert_true(vigil_metric_value("vigil_rejected_total", "reason=\"oversize\"") == 2);
    assert_true(vigil_metric_value("vigil_rejected_total", "reason=\"other\"") == 0);
    assert_true(vigil_metric_value("vigil_ready", NULL) == 0);

    char *s = vigil_metrics_render();
    assert_string_equal(s, "# HELP vigil_rejected_total Inputs rejected\n"
                           "# TYPE vigil_rejected_total counter\n"
                           "vigil_rejected_total{reason=\"not_json\"} 2\n"
                           "vigil_rejected_total{reason=\"oversize\"} 2\n"
                           "# HELP vigil_ready 1 when connected\n"
                           "# TYPE vigil_ready gauge\n"
                           "vigil_ready 0\n"
                           "# HELP vigil_lag_seconds Lag\n"
                           "# TYPE vigil_lag_seconds gauge\n"
                           "vigil_lag_seconds 0.25\n");
    free(s);
}

static void test_histogram_exact(void **state)
{
    (void)state;
    vigil_histogram_observe("vigil_commit_seconds", "Commit latency", "op=\"cas\"", 0.0005);
    vigil_histogram_observe("vigil_commit_seconds", NULL, "op=\"cas\"", 0.003);
    vigil_histogram_observe("vigil_commit_seconds", NULL, "op=\"cas\"", 0.75);
    vigil_histogram_observe("vigil_commit_seconds", NULL, "op=\"cas\"", 99);
    assert_true(vigil_metric_value("vigil_commit_seconds", "op=\"cas\"") == 4);

    char *s = vigil_metrics_render();
    const char *want =
        "# HELP vigil_commit_seconds Commit latency\n"
        "# TYPE vigil_commit_seconds histogram\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.0005\"} 1\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.001\"} 1\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.0025\"} 1\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.005\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.01\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.025\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.05\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.1\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.25\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"0.5\"} 2\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"1\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"2.5\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"5\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"10\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"20\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"30\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"60\"} 3\n"
        "vigil_commit_seconds_bucket{op=\"cas\",le=\"+Inf\"} 4\n"
        "vigil_commit_seconds_sum{op=\"cas\"} 99.7535\n"
        "vigil_commit_seconds_count{op=\"cas\"} 4\n";
    assert_string_equal(s, want);
    free(s);
}

static void test_histogram_without_labels(void **state)
{
    (void)state;
    vigil_histogram_observe("h_seconds", "H", NULL, 0.02);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "h_seconds_bucket{le=\"0.01\"} 0\n"));
    assert_non_null(strstr(s, "h_seconds_bucket{le=\"0.025\"} 1\n"));
    assert_non_null(strstr(s, "h_seconds_bucket{le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(s, "h_seconds_sum 0.02\n"));
    assert_non_null(strstr(s, "h_seconds_count 1\n"));
    free(s);
}

/* Every line is a comment or `name[{labels}] value` with a parseable value,
 * and each family's HELP/TYPE appears exactly once. */
static void test_render_parseable(void **state)
{
    (void)state;
    vigil_counter_add("a_total", "A", "x=\"1\"", 1);
    vigil_histogram_observe("b_seconds", "B", "y=\"2\"", 0.1);
    vigil_counter_add("a_total", "A", "x=\"2\"", 0.1);
    vigil_gauge_set("c", "C", NULL, -3.5);
    vigil_histogram_observe("b_seconds", "B", "y=\"3\"", 7);
    char *s = vigil_metrics_render();
    int types = 0;
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            if (strncmp(line, "# TYPE ", 7) == 0)
                types++;
            else
                assert_true(strncmp(line, "# HELP ", 7) == 0);
            continue;
        }
        char *sp = strrchr(line, ' ');
        assert_non_null(sp);
        char *end = NULL;
        strtod(sp + 1, &end);
        if (*end != '\0')
            fail_msg("unparseable value in '%s'", line);
        assert_true(line[0] >= 'a' && line[0] <= 'z');
    }
    assert_int_equal(types, 3);
    free(s);
}

static void test_value_formatting(void **state)
{
    (void)state;
    vigil_gauge_set("g", "G", "k=\"int\"", 1234567890123.0);
    vigil_gauge_set("g", "G", "k=\"tenth\"", 0.1);
    vigil_gauge_set("g", "G", "k=\"third\"", 1.0 / 3.0);
    vigil_gauge_set("g", "G", "k=\"neg\"", -2);
    vigil_gauge_set("g", "G", "k=\"inf\"", 1.0 / 0.0);
    vigil_gauge_set("g", "G", "k=\"nan\"", 0.0 / 0.0);
    vigil_gauge_set("g", "G", "k=\"big\"", 1e20);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "g{k=\"int\"} 1234567890123\n"));
    assert_non_null(strstr(s, "g{k=\"tenth\"} 0.1\n"));
    assert_non_null(strstr(s, "g{k=\"neg\"} -2\n"));
    assert_non_null(strstr(s, "g{k=\"inf\"} +Inf\n"));
    assert_non_null(strstr(s, "g{k=\"nan\"} NaN\n"));
    assert_non_null(strstr(s, "g{k=\"big\"} 1e+20\n"));
    char *third = strstr(s, "g{k=\"third\"} ");
    assert_non_null(third);
    assert_true(strtod(third + strlen("g{k=\"third\"} "), NULL) == 1.0 / 3.0);
    free(s);
}

static void test_counter_ignores_negative(void **state)
{
    (void)state;
    vigil_counter_add("n_total", "N", NULL, 5);
    vigil_counter_add("n_total", "N", NULL, -2);
    vigil_counter_add("n_total", "N", NULL, 0.0 / 0.0);
    assert_true(vigil_metric_value("n_total", NULL) == 5);
    assert_true(vigil_metric_value("n_total", "") == 5);
}

static void test_type_conflict_and_bad_names(void **state)
{
    (void)state;
    vigil_counter_add("x_total", "X", NULL, 1);
    vigil_gauge_set("x_total", "X", NULL, 100);          /* ignored */
    vigil_histogram_observe("x_total", "X", NULL, 1);     /* ignored */
    assert_true(vigil_metric_value("x_total", NULL) == 1);
    vigil_counter_add("9bad", "B", NULL, 1);
    vigil_counter_add("bad-name", "B", NULL, 1);
    vigil_counter_add("", "B", NULL, 1);
    vigil_counter_add(NULL, "B", NULL, 1);
    vigil_counter_add("ok:name_1", "B", NULL, 1);
    char *s = vigil_metrics_render();
    assert_null(strstr(s, "9bad"));
    assert_null(strstr(s, "bad-name"));
    assert_non_null(strstr(s, "ok:name_1 1\n"));
    assert_non_null(strstr(s, "x_total 1\n"));
    assert_non_null(strstr(s, "# TYPE x_total counter\n"));
    free(s);
}

static void test_help_escaped_and_optional(void **state)
{
    (void)state;
    vigil_counter_add("h_total", "line one\nback\\slash", NULL, 1);
    vigil_counter_add("nohelp_total", NULL, NULL, 1);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "# HELP h_total line one\\nback\\\\slash\n"));
    assert_null(strstr(s, "# HELP nohelp_total"));
    assert_non_null(strstr(s, "# TYPE nohelp_total counter\nnohelp_total 1\n"));
    free(s);
}

static void test_escape(void **state)
{
    (void)state;
    char out[64];
    vigil_metrics_escape("a\"b\\c\nd", out, sizeof out);
    assert_string_equal(out, "a\\\"b\\\\c\\nd");
    vigil_metrics_escape("plain", out, sizeof out);
    assert_string_equal(out, "plain");
    vigil_metrics_escape(NULL, out, sizeof out);
    assert_string_equal(out, "");
    char small[4];
    vigil_metrics_escape("ab\"", small, sizeof small); /* no room for \" */
    assert_string_equal(small, "ab");
    vigil_metrics_escape("abc", small, 1);
    assert_string_equal(small, "");

    char label[80];
    char esc[64];
    vigil_metrics_escape("room \"1\"", esc, sizeof esc);
    snprintf(label, sizeof label, "room=\"%s\"", esc);
    vigil_counter_add("esc_total", "E", label, 1);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "esc_total{room=\"room \\\"1\\\"\"} 1\n"));
    free(s);
}

static void test_reset(void **state)
{
    (void)state;
    vigil_counter_add("r_total", "R", NULL, 3);
    vigil_metrics_reset();
    assert_true(vigil_metric_value("r_total", NULL) == 0);
    char *s = vigil_metrics_render();
    assert_string_equal(s, "");
    free(s);
    vigil_gauge_set("r_total", "R", NULL, 1); /* the name is free again, as a gauge */
    s = vigil_metrics_render();
    assert_non_null(strstr(s, "# TYPE r_total gauge\n"));
    free(s);
}

/* A buffer written again with other labels (the same pointer, other
 * contents) counts each in its own series, the same labels from another
 * buffer count in the same one, and a name buffer reused for another
 * family counts there: the lookup's hints (by pointer) are checked by
 * content. */
static void test_reused_buffers_find_their_own_series(void **state)
{
    (void)state;
    char buf[32], other[32], name[32];
    for (int i = 0; i < 6; i++) {
        snprintf(buf, sizeof buf, "k=\"%d\"", i % 3);
        vigil_counter_add("buf_total", "B", buf, 1);
    }
    snprintf(other, sizeof other, "k=\"1\"");
    vigil_counter_add("buf_total", "B", other, 10);
    assert_true(vigil_metric_value("buf_total", "k=\"0\"") == 2);
    assert_true(vigil_metric_value("buf_total", "k=\"1\"") == 12);
    assert_true(vigil_metric_value("buf_total", "k=\"2\"") == 2);
    snprintf(name, sizeof name, "n_a_total");
    vigil_counter_add(name, "A", NULL, 1);
    snprintf(name, sizeof name, "n_b_total");
    vigil_counter_add(name, "B", NULL, 5);
    vigil_counter_add(name, "B", NULL, 1);
    assert_true(vigil_metric_value("n_a_total", NULL) == 1);
    assert_true(vigil_metric_value("n_b_total", NULL) == 6);
    /* no labels and empty labels are one series */
    vigil_counter_add("n_a_total", "A", "", 1);
    assert_true(vigil_metric_value("n_a_total", NULL) == 2);
}

static void *hammer(void *arg)
{
    char labels[32];
    snprintf(labels, sizeof labels, "t=\"%d\"", *(int *)arg);
    for (int i = 0; i < 5000; i++) {
        vigil_counter_add("c_total", "C", NULL, 1);
        vigil_counter_add("c_total", "C", labels, 1);
        vigil_histogram_observe("lat_seconds", "L", NULL, 0.001);
        if (i % 1000 == 0)
            free(vigil_metrics_render());
    }
    return NULL;
}

static void test_concurrent_updates(void **state)
{
    (void)state;
    pthread_t th[4];
    int ids[4] = {0, 1, 2, 3};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, &ids[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_true(vigil_metric_value("c_total", NULL) == 20000);
    assert_true(vigil_metric_value("c_total", "t=\"2\"") == 5000);
    assert_true(vigil_metric_value("lat_seconds", NULL) == 20000);
}

/* What the outbox publisher child forwards to the service process
 * (outbox_process.h): every counter increment and gauge value, with its
 * name, help and labels, besides the local registry. */
static char fwd_ops[8];
static double fwd_vals[8];
static int fwd_n;
static char fwd_last_labels[64];

static void fwd_record(char op, const char *name, const char *help, const char *labels, double v)
{
    assert_non_null(name);
    assert_non_null(help);
    if (fwd_n < 8) {
        fwd_ops[fwd_n] = op;
        fwd_vals[fwd_n] = v;
        fwd_n++;
    }
    snprintf(fwd_last_labels, sizeof fwd_last_labels, "%s", labels ? labels : "");
}

static void test_forward_sees_counters_and_gauges(void **state)
{
    (void)state;
    fwd_n = 0;
    vigil_metrics_set_forward(fwd_record);
    vigil_counter_add("fwd_total", "h", "k=\"v\"", 2);
    vigil_counter_add("fwd_total", "h", NULL, -1); /* dropped: counters only go up */
    vigil_gauge_set("fwd_gauge", "h", NULL, 7.5);
    vigil_histogram_observe("fwd_seconds", "h", NULL, 0.1); /* not forwarded */
    vigil_metrics_set_forward(NULL);
    vigil_counter_add("fwd_total", "h", NULL, 1); /* after NULL: local only */
    assert_int_equal(fwd_n, 2);
    assert_int_equal(fwd_ops[0], 'c');
    assert_true(fwd_vals[0] == 2);
    assert_int_equal(fwd_ops[1], 'g');
    assert_true(fwd_vals[1] == 7.5);
    assert_string_equal(fwd_last_labels, "");
    assert_true(vigil_metric_value("fwd_total", "k=\"v\"") == 2);
    assert_true(vigil_metric_value("fwd_gauge", NULL) == 7.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_empty_registry, reset),
        cmocka_unit_test_setup(test_forward_sees_counters_and_gauges, reset),
        cmocka_unit_test_setup(test_counters_and_gauges_exact, reset),
        cmocka_unit_test_setup(test_histogram_exact, reset),
        cmocka_unit_test_setup(test_histogram_without_labels, reset),
        cmocka_unit_test_setup(test_render_parseable, reset),
        cmocka_unit_test_setup(test_value_formatting, reset),
        cmocka_unit_test_setup(test_counter_ignores_negative, reset),
        cmocka_unit_test_setup(test_type_conflict_and_bad_names, reset),
        cmocka_unit_test_setup(test_help_escaped_and_optional, reset),
        cmocka_unit_test_setup(test_escape, reset),
        cmocka_unit_test_setup(test_reset, reset),
        cmocka_unit_test_setup(test_reused_buffers_find_their_own_series, reset),
        cmocka_unit_test_setup(test_concurrent_updates, reset),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
