/* test_config_durability.c - the durability settings: the MQTT session
 * expiry (7 days by default, as the broker's persistent_client_expiration)
 * and the liveness bound of /healthz; defaults, overrides, bounds, --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "vigil/config.h"

static void test_defaults(void **state)
{
    (void)state;
    unsetenv("VIGIL_MQTT_SESSION_EXPIRY_S");
    unsetenv("VIGIL_LIVENESS_MS");
    vigil_common_config c;
    char err[256];
    vigil_common_config_init(&c, 9101);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.mqtt_session_expiry_s, 604800);
    assert_int_equal(c.liveness_ms, 60000);
}

static void test_overrides_and_bounds(void **state)
{
    (void)state;
    vigil_common_config c;
    char err[256];
    setenv("VIGIL_MQTT_SESSION_EXPIRY_S", "3600", 1);
    setenv("VIGIL_LIVENESS_MS", "5000", 1);
    vigil_common_config_init(&c, 9101);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), 0);
    assert_int_equal(c.mqtt_session_expiry_s, 3600);
    assert_int_equal(c.liveness_ms, 5000);
    setenv("VIGIL_MQTT_SESSION_EXPIRY_S", "0", 1);
    vigil_common_config_init(&c, 9101);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_SESSION_EXPIRY_S"));
    unsetenv("VIGIL_MQTT_SESSION_EXPIRY_S");
    setenv("VIGIL_LIVENESS_MS", "10", 1);
    vigil_common_config_init(&c, 9101);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_LIVENESS_MS"));
    unsetenv("VIGIL_LIVENESS_MS");
}

static void test_listed_for_help(void **state)
{
    (void)state;
    bool expiry = false, liveness = false;
    for (const vigil_config_var *v = VIGIL_COMMON_VARS; v->name; v++) {
        if (strcmp(v->name, "VIGIL_MQTT_SESSION_EXPIRY_S") == 0)
            expiry = strcmp(v->def, "604800") == 0;
        if (strcmp(v->name, "VIGIL_LIVENESS_MS") == 0)
            liveness = strcmp(v->def, "60000") == 0;
    }
    assert_true(expiry);
    assert_true(liveness);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_overrides_and_bounds),
        cmocka_unit_test(test_listed_for_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
