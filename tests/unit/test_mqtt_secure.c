/* test_mqtt_secure.c - the broker connection's security checks
 * (libshared/src/mqtt_secure.h): a failed CONNECT told apart as refused
 * credentials (MQTT 5 reason 134/135 in either field paho uses, MQTT 3
 * return codes 4/5) or an outage, the message naming broker and user and
 * never a password; the TLS file rules checked at configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../libshared/src/mqtt_secure.h"

static bool refusal(int code, int reason, const char *url, const char *user, char *out,
                    size_t outlen)
{
    MQTTAsync_failureData5 f = MQTTAsync_failureData5_initializer;
    f.code = code;
    f.reasonCode = (enum MQTTReasonCodes)reason;
    f.message = "CONNACK return code";
    return vigil_mqtt_refusal(&f, NULL, url, user, out, outlen);
}

static void test_refusals_named(void **state)
{
    (void)state;
    char out[320];
    assert_true(refusal(135, 0, "mqtt://broker:1883", "dormancy-monitor", out, sizeof out));
    assert_string_equal(out,
                        "MQTT broker mqtt://broker:1883 refused user 'dormancy-monitor': not authorized");
    assert_true(refusal(-1, 134, "mqtt://broker:1883", "u", out, sizeof out));
    assert_string_equal(out, "MQTT broker mqtt://broker:1883 refused user 'u': bad user name or password");
    assert_true(refusal(4, 0, "tcp://b:1", "u", out, sizeof out)); /* MQTT 3.1.1 */
    assert_non_null(strstr(out, "bad user name or password"));
    assert_true(refusal(5, 0, "tcp://b:1", "", out, sizeof out));
    assert_string_equal(out, "MQTT broker tcp://b:1 refused user '(anonymous)': not authorized");
    /* credentials written into the URL are masked */
    assert_true(refusal(135, 0, "mqtt://u:s3cr3t@b:1", "u", out, sizeof out));
    assert_null(strstr(out, "s3cr3t"));
}

static void test_outages_are_not_refusals(void **state)
{
    (void)state;
    char out[320] = "";
    assert_false(refusal(-1, 0, "mqtt://b:1", "u", out, sizeof out));  /* TCP connect failure */
    assert_false(refusal(-1, 0, "mqtts://b:1", "u", out, sizeof out)); /* no TLS state: unknown */
    assert_false(refusal(136, 0, "mqtt://b:1", "u", out, sizeof out)); /* server unavailable */
    assert_false(vigil_mqtt_refusal(NULL, NULL, "mqtt://b:1", "u", out, sizeof out));
}

static void test_tls_file_rules(void **state)
{
    (void)state;
    char err[300];
    const char *f = "/dev/null"; /* readable */
    assert_int_equal(vigil_mqtt_tls_check("mqtt://b:1", "", "", "", err, sizeof err), 0);
    assert_int_equal(vigil_mqtt_tls_check("mqtts://b:1", "", "", "", err, sizeof err), 0);
    assert_int_equal(vigil_mqtt_tls_check("mqtts://b:1", f, f, f, err, sizeof err), 0);
    assert_int_equal(vigil_mqtt_tls_check("ssl://b:1", f, NULL, NULL, err, sizeof err), 0);

    assert_int_equal(vigil_mqtt_tls_check("mqtt://b:1", f, "", "", err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_CA_FILE is set but VIGIL_MQTT_URL is not mqtts://"));
    assert_int_equal(vigil_mqtt_tls_check("tcp://b:1", NULL, NULL, f, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_KEY_FILE is set but"));
    assert_int_equal(vigil_mqtt_tls_check("mqtts://b:1", f, f, "", err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_CERT_FILE is set without VIGIL_MQTT_KEY_FILE"));
    assert_int_equal(vigil_mqtt_tls_check("mqtts://b:1", "", "", f, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_KEY_FILE is set without VIGIL_MQTT_CERT_FILE"));
    assert_int_equal(vigil_mqtt_tls_check("mqtts://b:1", "/nonexistent/ca.pem", "", "", err,
                                          sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_CA_FILE: cannot read '/nonexistent/ca.pem'"));
}

static void test_tls_options(void **state)
{
    (void)state;
    char err[300];
    vigil_mqtt_tls t;
    assert_int_equal(vigil_mqtt_tls_init(&t, "tcp://b:1", NULL, NULL, NULL, err, sizeof err), 0);
    assert_null(vigil_mqtt_tls_options(&t));
    vigil_mqtt_tls_free(&t);
    assert_int_equal(vigil_mqtt_tls_init(&t, "ssl://b:1", "/dev/null", NULL, NULL, err, sizeof err), 0);
    MQTTAsync_SSLOptions *o = vigil_mqtt_tls_options(&t);
    assert_non_null(o);
    assert_int_equal(o->enableServerCertAuth, 1); /* never off */
    assert_int_equal(o->verify, 1);               /* host name checked */
    assert_string_equal(o->trustStore, "/dev/null");
    assert_null(o->keyStore);
    assert_non_null(o->ssl_error_cb);
    vigil_mqtt_tls_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals_named),
        cmocka_unit_test(test_outages_are_not_refusals),
        cmocka_unit_test(test_tls_file_rules),
        cmocka_unit_test(test_tls_options),
    };
    return cmocka_run_group_tests_name("mqtt_secure", tests, NULL, NULL);
}
