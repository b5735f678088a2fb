/* Unit tests of metrics_process.c and the registry additions it uses:
 * vigil_counter_set never moves back, a declared histogram renders every
 * bucket at zero, an LLM-sized latency (25 s) lands in the 30 s bucket, and
 * one collect exposes build info, the process figures with plausible
 * values and the zero series of the libshared counters. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil/config.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/metrics_process.h"

static int reset(void **state)
{
    (void)state;
    vigil_metrics_reset();
    return 0;
}

static void test_counter_set_is_monotone(void **state)
{
    (void)state;
    vigil_counter_set("x_seconds_total", "X", NULL, 2.5);
    vigil_counter_set("x_seconds_total", "X", NULL, 1.0);
    assert_true(vigil_metric_value("x_seconds_total", NULL) == 2.5);
    vigil_counter_set("x_seconds_total", "X", NULL, 4.0);
    assert_true(vigil_metric_value("x_seconds_total", NULL) == 4.0);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "# TYPE x_seconds_total counter\nx_seconds_total 4\n"));
    free(s);
}

static void test_declared_histogram_and_long_buckets(void **state)
{
    (void)state;
    vigil_histogram_declare("h_seconds", "H", NULL);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "h_seconds_bucket{le=\"60\"} 0\nh_seconds_bucket{le=\"+Inf\"} 0\n"
                              "h_seconds_sum 0\nh_seconds_count 0\n"));
    free(s);
    vigil_histogram_observe("h_seconds", "H", NULL, 25);
    s = vigil_metrics_render();
    assert_non_null(strstr(s, "h_seconds_bucket{le=\"20\"} 0\nh_seconds_bucket{le=\"30\"} 1\n"
                              "h_seconds_bucket{le=\"60\"} 1\n"));
    free(s);
}

static void test_collect(void **state)
{
    (void)state;
    vigil_log_init("unit-svc", "i-0", VIGIL_LOG_ERROR);
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = open("/dev/null", O_RDONLY);
    vigil_metrics_process_collect();
    double open1 = vigil_metric_value("process_open_fds", NULL);
    for (int i = 0; i < 4; i++)
        close(fds[i]);
    vigil_metrics_process_collect();
    double open2 = vigil_metric_value("process_open_fds", NULL);
    assert_true(open1 >= 7 && open2 == open1 - 4); /* stdio + our 4, exactly */
    assert_true(vigil_metric_value("process_resident_memory_bytes", NULL) > 1e6);
    assert_true(vigil_metric_value("process_cpu_seconds_total", NULL) >= 0);
    assert_true(vigil_metric_value("process_start_time_seconds", NULL) > 1.5e9);
    assert_true(vigil_metric_value("process_max_fds", NULL) >= 64);
    char labels[128];
    snprintf(labels, sizeof labels, "version=\"%s\",service=\"unit-svc\"", VIGIL_VERSION);
    assert_true(vigil_metric_value("vigil_build_info", labels) == 1);
    char *s = vigil_metrics_render();
    assert_non_null(strstr(s, "vigil_rejected_total{reason=\"not_json\"} 0\n"));
    assert_non_null(strstr(s, "vigil_rejected_total{reason=\"bad_value\"} 0\n"));
    assert_non_null(strstr(s, "# TYPE vigil_mqtt_reconnects_total counter\nvigil_mqtt_reconnects_total 0\n"));
    assert_non_null(strstr(s, "# TYPE process_cpu_seconds_total counter\n"));
    assert_non_null(strstr(s, "# TYPE process_resident_memory_bytes gauge\n"));
    assert_non_null(strstr(s, "vigil_handler_seconds_count 0\n"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_counter_set_is_monotone, reset),
        cmocka_unit_test_setup(test_declared_histogram_and_long_buckets, reset),
        cmocka_unit_test_setup(test_collect, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
