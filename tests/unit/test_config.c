/* Unit tests of config.c: defaults, each validation error (naming the
 * variable and the value), the typed getters, shard parsing and the
 * --help / --version command line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil/config.h"

static const char *const ALL_COMMON[] = {
    "VIGIL_MQTT_URL",     "VIGIL_MQTT_USER",   "VIGIL_MQTT_PASSWORD", "VIGIL_REDIS_URL",
    "VIGIL_REDIS_PREFIX", "VIGIL_HTTP_ADDR",   "VIGIL_LOG_LEVEL",     "VIGIL_INSTANCE",
    "VIGIL_MAX_PAYLOAD",  "VIGIL_SHARD",       "VIGIL_TICK_MS",       "VIGIL_TIMER_LEASE_MS",
    "VIGIL_OUTBOX_RETRY_MS", "VIGIL_OUTBOX_DEAD_LETTER_AFTER", "VIGIL_OUTBOX_REPLAY_MS",
    "VIGIL_OUTBOX_SKIP_SUPERSEDED", "VIGIL_MQTT_INTAKE_GATHER_US", "VIGIL_OUTBOX_HOLD_US",
    "VIGIL_MQTT_SESSION_EXPIRY_S", "VIGIL_DEDUPE_TTL_S",
    "VIGIL_OUTBOX_CONNECTIONS", "VIGIL_OUTBOX_PROCESS",
    "VIGIL_MQTT_INTAKE", "VIGIL_LIVENESS_MS",
    "VIGIL_MQTT_PASSWORD_FILE", "VIGIL_REDIS_URL_FILE", "VIGIL_MQTT_CA_FILE",
    "VIGIL_MQTT_CERT_FILE", "VIGIL_MQTT_KEY_FILE", "VIGIL_TOPIC_PREFIX",
    NULL,
};

/* Every test starts from an environment without any VIGIL_ variable. */
static int clean_env(void **state)
{
    (void)state;
    for (int i = 0; ALL_COMMON[i]; i++)
        unsetenv(ALL_COMMON[i]);
    unsetenv("VIGIL_TEST_X");
    return 0;
}

/* Loads with one variable set; returns the load result, err filled. */
static int load_with(const char *name, const char *value, vigil_common_config *c, char *err,
                     size_t errlen)
{
    setenv(name, value, 1);
    vigil_common_config_init(c, 9100);
    int r = vigil_common_config_load(c, err, errlen);
    unsetenv(name);
    return r;
}

/* Asserts that name=value is refused with a message naming both. */
static void expect_error(const char *name, const char *value, const char *quoted)
{
    vigil_common_config c;
    char err[256] = "";
    if (load_with(name, value, &c, err, sizeof err) == 0)
        fail_msg("%s=%s accepted", name, value);
    if (strncmp(err, name, strlen(name)) != 0)
        fail_msg("message does not name %s: %s", name, err);
    if (quoted && !strstr(err, quoted))
        fail_msg("message does not show '%s': %s", quoted, err);
}

static void expect_ok(const char *name, const char *value, vigil_common_config *c)
{
    char err[256] = "";
    if (load_with(name, value, c, err, sizeof err) != 0)
        fail_msg("%s=%s refused: %s", name, value, err);
}

static void test_common_vars_table(void **state)
{
    (void)state;
    int n = 0;
    for (const vigil_config_var *v = VIGIL_COMMON_VARS; v->name; v++, n++) {
        assert_string_equal(v->name, ALL_COMMON[n]);
        assert_non_null(v->def);
        assert_non_null(v->help);
        assert_true(v->help[0] != '\0');
    }
    assert_int_equal(n, 30);
    assert_string_equal(VIGIL_COMMON_VARS[0].def, "mqtt://127.0.0.1:1883");
    assert_string_equal(VIGIL_COMMON_VARS[3].def, "redis://127.0.0.1:6379/0");
    assert_string_equal(VIGIL_COMMON_VARS[4].def, "vigil:");
    assert_string_equal(VIGIL_COMMON_VARS[6].def, "info");
    assert_string_equal(VIGIL_COMMON_VARS[8].def, "65536");
    assert_string_equal(VIGIL_COMMON_VARS[9].def, "0/1");
    assert_string_equal(VIGIL_COMMON_VARS[10].def, "1000");
    assert_string_equal(VIGIL_COMMON_VARS[11].def, "30000");
}

static void test_defaults(void **state)
{
    (void)state;
    vigil_common_config c;
    char err[256] = "";
    vigil_common_config_init(&c, 9100);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.mqtt_url, "mqtt://127.0.0.1:1883");
    assert_string_equal(c.mqtt_user, "");
    assert_string_equal(c.mqtt_password, "");
    assert_string_equal(c.redis_url, "redis://127.0.0.1:6379/0");
    assert_string_equal(c.redis_prefix, "vigil:");
    assert_string_equal(c.http_addr, "127.0.0.1:9100");
    assert_string_equal(c.log_level, "info");
    assert_true(c.instance[0] != '\0');
    assert_int_equal(c.max_payload, 65536);
    assert_int_equal(c.shard_index, 0);
    assert_int_equal(c.shard_count, 1);
    assert_int_equal(c.tick_ms, 1000);
    assert_int_equal(c.timer_lease_ms, 30000);
    assert_int_equal(c.dedupe_ttl_s, 604800);

    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0 && strlen(host) <= 64 &&
        strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
            strlen(host))
        assert_string_equal(c.instance, host);
}

static void test_overrides(void **state)
{
    (void)state;
    vigil_common_config c;
    char err[256] = "";
    setenv("VIGIL_MQTT_URL", "tcp://broker:1884", 1);
    setenv("VIGIL_MQTT_USER", "dormancy", 1);
    setenv("VIGIL_MQTT_PASSWORD", "s3cret", 1);
    setenv("VIGIL_REDIS_URL", "redis://:pw@redis:6380/2", 1);
    setenv("VIGIL_REDIS_PREFIX", "test:", 1);
    setenv("VIGIL_HTTP_ADDR", ":9200", 1);
    setenv("VIGIL_LOG_LEVEL", "DEBUG", 1);
    setenv("VIGIL_INSTANCE", "replica-2", 1);
    setenv("VIGIL_MAX_PAYLOAD", "1024", 1);
    setenv("VIGIL_SHARD", "2/3", 1);
    setenv("VIGIL_TICK_MS", "50", 1);
    setenv("VIGIL_TIMER_LEASE_MS", "100", 1);
    vigil_common_config_init(&c, 9100);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.mqtt_url, "tcp://broker:1884");
    assert_string_equal(c.mqtt_user, "dormancy");
    assert_string_equal(c.mqtt_password, "s3cret");
    assert_string_equal(c.redis_url, "redis://:pw@redis:6380/2");
    assert_string_equal(c.redis_prefix, "test:");
    assert_string_equal(c.http_addr, ":9200");
    assert_string_equal(c.log_level, "debug");
    assert_string_equal(c.instance, "replica-2");
    assert_int_equal(c.max_payload, 1024);
    assert_int_equal(c.shard_index, 2);
    assert_int_equal(c.shard_count, 3);
    assert_int_equal(c.tick_ms, 50);
    assert_int_equal(c.timer_lease_ms, 100);
    clean_env(NULL);
}

static void test_accepted_boundaries(void **state)
{
    (void)state;
    vigil_common_config c;
    expect_ok("VIGIL_MQTT_URL", "mqtts://b:8883", &c);
    expect_ok("VIGIL_MQTT_URL", "ssl://b:8883", &c);
    expect_ok("VIGIL_MAX_PAYLOAD", "1", &c);
    assert_int_equal(c.max_payload, 1);
    expect_ok("VIGIL_MAX_PAYLOAD", "16777216", &c);
    assert_int_equal(c.max_payload, 16777216);
    expect_ok("VIGIL_TICK_MS", "1", &c);
    expect_ok("VIGIL_TICK_MS", "60000", &c);
    expect_ok("VIGIL_TIMER_LEASE_MS", "3600000", &c);
    expect_ok("VIGIL_DEDUPE_TTL_S", "0", &c);
    assert_int_equal(c.dedupe_ttl_s, 0);
    expect_ok("VIGIL_OUTBOX_RETRY_MS", "1", &c);
    expect_ok("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "1", &c);
    expect_error("VIGIL_OUTBOX_RETRY_MS", "0", NULL);
    expect_error("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "0", NULL);
    expect_error("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "x", NULL);
    expect_ok("VIGIL_OUTBOX_REPLAY_MS", "0", &c); /* off */
    expect_ok("VIGIL_OUTBOX_REPLAY_MS", "600000", &c);
    assert_int_equal(c.outbox_connections, 4); /* the default */
    expect_ok("VIGIL_OUTBOX_CONNECTIONS", "1", &c);
    assert_int_equal(c.outbox_connections, 1);
    expect_ok("VIGIL_OUTBOX_CONNECTIONS", "16", &c);
    assert_int_equal(c.outbox_connections, 16);
    expect_error("VIGIL_OUTBOX_CONNECTIONS", "0", NULL);
    expect_error("VIGIL_OUTBOX_CONNECTIONS", "17", NULL);
    assert_false(c.outbox_process); /* the default: the publisher thread */
    expect_ok("VIGIL_OUTBOX_PROCESS", "1", &c);
    assert_true(c.outbox_process);
    expect_ok("VIGIL_OUTBOX_PROCESS", "off", &c);
    assert_false(c.outbox_process);
    assert_true(c.mqtt_intake_link); /* the default: Vigil's own client */
    expect_ok("VIGIL_MQTT_INTAKE", "paho", &c);
    assert_false(c.mqtt_intake_link);
    expect_ok("VIGIL_MQTT_INTAKE", "LINK", &c);
    assert_true(c.mqtt_intake_link);
    expect_error("VIGIL_MQTT_INTAKE", "mosquitto", "link");
    expect_error("VIGIL_OUTBOX_REPLAY_MS", "-1", NULL);
    expect_error("VIGIL_OUTBOX_REPLAY_MS", "600001", NULL);
    expect_ok("VIGIL_OUTBOX_SKIP_SUPERSEDED", "0", &c);
    expect_ok("VIGIL_OUTBOX_SKIP_SUPERSEDED", "1", &c);
    expect_error("VIGIL_OUTBOX_SKIP_SUPERSEDED", "2", NULL);
    expect_error("VIGIL_OUTBOX_SKIP_SUPERSEDED", "yes", NULL);
    expect_ok("VIGIL_MQTT_INTAKE_GATHER_US", "0", &c);
    expect_ok("VIGIL_MQTT_INTAKE_GATHER_US", "100000", &c);
    expect_error("VIGIL_MQTT_INTAKE_GATHER_US", "-1", NULL);
    expect_error("VIGIL_MQTT_INTAKE_GATHER_US", "100001", NULL);
    expect_ok("VIGIL_OUTBOX_HOLD_US", "0", &c);
    expect_ok("VIGIL_OUTBOX_HOLD_US", "100000", &c);
    expect_error("VIGIL_OUTBOX_HOLD_US", "-1", NULL);
    expect_error("VIGIL_OUTBOX_HOLD_US", "100001", NULL);
    expect_ok("VIGIL_SHARD", "1023/1024", &c);
    assert_int_equal(c.shard_index, 1023);
    expect_ok("VIGIL_SHARD", "", &c); /* empty = default */
    assert_int_equal(c.shard_count, 1);
    expect_ok("VIGIL_TICK_MS", "", &c);
    assert_int_equal(c.tick_ms, 1000);
    expect_ok("VIGIL_HTTP_ADDR", "[::1]:0", &c);
    char prefix[64];
    memset(prefix, 'p', 63);
    prefix[63] = '\0';
    expect_ok("VIGIL_REDIS_PREFIX", prefix, &c);
    assert_string_equal(c.redis_prefix, prefix);
    char inst[65];
    memset(inst, 'i', 64);
    inst[64] = '\0';
    expect_ok("VIGIL_INSTANCE", inst, &c);
}

static void test_errors_name_variable_and_value(void **state)
{
    (void)state;
    expect_error("VIGIL_LOG_LEVEL", "verbose", "verbose");
    expect_error("VIGIL_OUTBOX_PROCESS", "2", "2");
    expect_error("VIGIL_MQTT_URL", "http://broker:1883", "http://broker:1883");
    expect_error("VIGIL_MQTT_URL", "", NULL);
    expect_error("VIGIL_REDIS_URL", "rediss://x:6379", "rediss://x:6379");
    expect_error("VIGIL_REDIS_PREFIX", "", NULL);
    expect_error("VIGIL_HTTP_ADDR", "localhost", "localhost");
    expect_error("VIGIL_HTTP_ADDR", "127.0.0.1:70000", "70000");
    expect_error("VIGIL_INSTANCE", "a/b", "a/b");
    expect_error("VIGIL_INSTANCE", "", NULL);
    expect_error("VIGIL_MAX_PAYLOAD", "0", "'0'");
    expect_error("VIGIL_MAX_PAYLOAD", "16777217", "16777217");
    expect_error("VIGIL_MAX_PAYLOAD", "64k", "64k");
    expect_error("VIGIL_MAX_PAYLOAD", "-5", "-5");
    expect_error("VIGIL_SHARD", "1024/2", "1024/2");
    expect_error("VIGIL_SHARD", "0/0", "0/0");
    expect_error("VIGIL_SHARD", "0/1025", "0/1025");
    expect_error("VIGIL_SHARD", "1", "1");
    expect_error("VIGIL_SHARD", "-1/2", "-1/2");
    expect_error("VIGIL_TICK_MS", "0", "'0'");
    expect_error("VIGIL_TICK_MS", "60001", "60001");
    expect_error("VIGIL_TICK_MS", "1.5", "1.5");
    expect_error("VIGIL_TIMER_LEASE_MS", "99", "99");
    expect_error("VIGIL_TIMER_LEASE_MS", "3600001", "3600001");
    expect_error("VIGIL_DEDUPE_TTL_S", "-1", "-1");
    char inst[66];
    memset(inst, 'i', 65);
    inst[65] = '\0';
    expect_error("VIGIL_INSTANCE", inst, NULL);
}

static void test_exact_messages(void **state)
{
    (void)state;
    vigil_common_config c;
    char err[256] = "";
    assert_int_equal(load_with("VIGIL_SHARD", "3/0", &c, err, sizeof err), -1);
    assert_string_equal(err, "VIGIL_SHARD: expected i/N with 0 <= i < 1024 and 1 <= N <= 1024, got 3/0");
    assert_int_equal(load_with("VIGIL_TICK_MS", "0", &c, err, sizeof err), -1);
    assert_string_equal(err, "VIGIL_TICK_MS: expected an integer in 1..60000, got '0'");
    assert_int_equal(load_with("VIGIL_LOG_LEVEL", "loud", &c, err, sizeof err), -1);
    assert_string_equal(err, "VIGIL_LOG_LEVEL: expected debug, info, warn or error, got 'loud'");
}

/* Too long for the buffer is an error, never a truncation; the message
 * gives the length, not the (possibly secret) value. */
static void test_too_long_strings(void **state)
{
    (void)state;
    char prefix[65];
    memset(prefix, 'p', 64);
    prefix[64] = '\0';
    expect_error("VIGIL_REDIS_PREFIX", prefix, "64 bytes");
    char pw[200];
    memset(pw, 's', 199);
    pw[199] = '\0';
    vigil_common_config c;
    char err[256] = "";
    assert_int_equal(load_with("VIGIL_MQTT_PASSWORD", pw, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_PASSWORD"));
    assert_null(strstr(err, "ssssssss"));
    char url[300] = "mqtt://";
    memset(url + 7, 'h', 260);
    url[267] = '\0';
    expect_error("VIGIL_MQTT_URL", url, "too long");
}

static void test_url_credentials_masked(void **state)
{
    (void)state;
    vigil_common_config c;
    char err[256] = "";
    assert_int_equal(load_with("VIGIL_REDIS_URL", "http://:hunter2@redis:6379", &c, err, sizeof err), -1);
    assert_null(strstr(err, "hunter2"));
    assert_non_null(strstr(err, "VIGIL_REDIS_URL"));
    assert_non_null(strstr(err, "http://***@redis:6379"));
}

static void test_env_int64(void **state)
{
    (void)state;
    char err[128] = "";
    int64_t v = -1;
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), 0);
    assert_int_equal(v, 7);
    setenv("VIGIL_TEST_X", "", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), 0);
    assert_int_equal(v, 7);
    setenv("VIGIL_TEST_X", "10", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), 0);
    assert_int_equal(v, 10);
    setenv("VIGIL_TEST_X", "11", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_TEST_X"));
    assert_int_equal(v, 10); /* untouched */
    setenv("VIGIL_TEST_X", "99999999999999999999", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, INT64_MAX, &v, err, sizeof err), -1);
    setenv("VIGIL_TEST_X", "5 ", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), -1);
    setenv("VIGIL_TEST_X", "0x5", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), -1);
    setenv("VIGIL_TEST_X", "-3", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, -5, 10, &v, err, sizeof err), 0);
    assert_int_equal(v, -3);
    /* NULL err is allowed */
    setenv("VIGIL_TEST_X", "abc", 1);
    assert_int_equal(vigil_env_int64("VIGIL_TEST_X", 7, 0, 10, &v, NULL, 0), -1);
}

static void test_env_int(void **state)
{
    (void)state;
    char err[128] = "";
    int v = -1;
    assert_int_equal(vigil_env_int("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), 0);
    assert_int_equal(v, 7);
    setenv("VIGIL_TEST_X", "-2147483648", 1);
    assert_int_equal(vigil_env_int("VIGIL_TEST_X", 7, INT_MIN, INT_MAX, &v, err, sizeof err), 0);
    assert_int_equal(v, INT_MIN);
    setenv("VIGIL_TEST_X", "11", 1);
    assert_int_equal(vigil_env_int("VIGIL_TEST_X", 7, 0, 10, &v, err, sizeof err), -1);
    assert_string_equal(err, "VIGIL_TEST_X: expected an integer in 0..10, got '11'");
    assert_int_equal(v, INT_MIN); /* untouched */
    setenv("VIGIL_TEST_X", "2147483648", 1);
    assert_int_equal(vigil_env_int("VIGIL_TEST_X", 7, 0, INT_MAX, &v, err, sizeof err), -1);
    assert_int_equal(v, INT_MIN);
}

static void test_env_ms(void **state)
{
    (void)state;
    char err[128] = "";
    int64_t v = -1;
    assert_int_equal(vigil_env_ms("VIGIL_TEST_X", 5000, 1, &v, err, sizeof err), 0);
    assert_int_equal(v, 5000);
    setenv("VIGIL_TEST_X", "2592000000", 1); /* 30 days */
    assert_int_equal(vigil_env_ms("VIGIL_TEST_X", 5000, 1, &v, err, sizeof err), 0);
    assert_int_equal(v, VIGIL_ENV_MS_MAX);
    setenv("VIGIL_TEST_X", "2592000001", 1);
    assert_int_equal(vigil_env_ms("VIGIL_TEST_X", 5000, 1, &v, err, sizeof err), -1);
    assert_string_equal(err,
                        "VIGIL_TEST_X: expected an integer in 1..2592000000, got '2592000001'");
    setenv("VIGIL_TEST_X", "0", 1);
    assert_int_equal(vigil_env_ms("VIGIL_TEST_X", 5000, 1, &v, err, sizeof err), -1);
    assert_int_equal(v, VIGIL_ENV_MS_MAX); /* untouched */
}

static void test_env_double(void **state)
{
    (void)state;
    char err[128] = "";
    double d = 0;
    assert_int_equal(vigil_env_double("VIGIL_TEST_X", 0.7, 0, 1, &d, err, sizeof err), 0);
    assert_true(d == 0.7);
    setenv("VIGIL_TEST_X", "0.25", 1);
    assert_int_equal(vigil_env_double("VIGIL_TEST_X", 0.7, 0, 1, &d, err, sizeof err), 0);
    assert_true(d == 0.25);
    setenv("VIGIL_TEST_X", "1.5", 1);
    assert_int_equal(vigil_env_double("VIGIL_TEST_X", 0.7, 0, 1, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "'1.5'"));
    setenv("VIGIL_TEST_X", "nan", 1);
    assert_int_equal(vigil_env_double("VIGIL_TEST_X", 0.7, 0, 1, &d, err, sizeof err), -1);
    setenv("VIGIL_TEST_X", "inf", 1);
    assert_int_equal(vigil_env_double("VIGIL_TEST_X", 0.7, 0, 1e300, &d, err, sizeof err), -1);
    setenv("VIGIL_TEST_X", "0.5x", 1);
    assert_int_equal(vigil_env_double("VIGIL_TEST_X", 0.7, 0, 1, &d, err, sizeof err), -1);
}

static void test_env_bool(void **state)
{
    (void)state;
    static const char *const YES[] = {"1", "true", "TRUE", "yes", "On", NULL};
    static const char *const NO[] = {"0", "false", "No", "off", NULL};
    char err[128] = "";
    bool b = false;
    assert_int_equal(vigil_env_bool("VIGIL_TEST_X", true, &b, err, sizeof err), 0);
    assert_true(b);
    for (int i = 0; YES[i]; i++) {
        setenv("VIGIL_TEST_X", YES[i], 1);
        b = false;
        assert_int_equal(vigil_env_bool("VIGIL_TEST_X", false, &b, err, sizeof err), 0);
        assert_true(b);
    }
    for (int i = 0; NO[i]; i++) {
        setenv("VIGIL_TEST_X", NO[i], 1);
        b = true;
        assert_int_equal(vigil_env_bool("VIGIL_TEST_X", true, &b, err, sizeof err), 0);
        assert_false(b);
    }
    setenv("VIGIL_TEST_X", "maybe", 1);
    assert_int_equal(vigil_env_bool("VIGIL_TEST_X", true, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_TEST_X"));
    assert_non_null(strstr(err, "maybe"));
    setenv("VIGIL_TEST_X", "", 1);
    assert_int_equal(vigil_env_bool("VIGIL_TEST_X", true, &b, err, sizeof err), 0);
    assert_true(b);
}

static void test_env_string(void **state)
{
    (void)state;
    char err[128] = "";
    char out[8];
    assert_int_equal(vigil_env_string("VIGIL_TEST_X", "dflt", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "dflt");
    assert_int_equal(vigil_env_string("VIGIL_TEST_X", NULL, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "");
    setenv("VIGIL_TEST_X", "", 1); /* set but empty is kept for strings */
    assert_int_equal(vigil_env_string("VIGIL_TEST_X", "dflt", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "");
    setenv("VIGIL_TEST_X", "1234567", 1);
    assert_int_equal(vigil_env_string("VIGIL_TEST_X", "dflt", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "1234567");
    setenv("VIGIL_TEST_X", "12345678", 1);
    strcpy(out, "keep");
    assert_int_equal(vigil_env_string("VIGIL_TEST_X", "dflt", out, sizeof out, err, sizeof err), -1);
    assert_string_equal(out, "keep");
    assert_non_null(strstr(err, "VIGIL_TEST_X"));
}

static void test_shard_parse(void **state)
{
    (void)state;
    int i = -1, n = -1;
    assert_int_equal(vigil_shard_parse("0/1", &i, &n), 0);
    assert_int_equal(i, 0);
    assert_int_equal(n, 1);
    assert_int_equal(vigil_shard_parse("5/8", &i, &n), 0);
    assert_int_equal(i, 5);
    assert_int_equal(n, 8);
    assert_int_equal(vigil_shard_parse("0/1024", &i, &n), 0);
    /* an index at or beyond N: a replica that drains while N shrinks */
    assert_int_equal(vigil_shard_parse("2/1", &i, &n), 0);
    assert_int_equal(i, 2);
    assert_int_equal(n, 1);
    static const char *const BAD[] = {"", "1", "/", "0/", "/1", "1024/1", "0/0", "0/1025",
                                      "-1/2", "+1/2", " 0/1", "0/1 ", "a/b", "0/1/2", "0.0/1",
                                      "00000/1", NULL};
    for (int k = 0; BAD[k]; k++) {
        i = n = -7;
        if (vigil_shard_parse(BAD[k], &i, &n) == 0)
            fail_msg("shard '%s' accepted", BAD[k]);
        assert_int_equal(i, -7);
    }
    assert_int_equal(vigil_shard_parse(NULL, &i, &n), -1);
}

/* Runs vigil_cli_handle with stdout and stderr captured into out/errout. */
static int run_cli(int argc, char **argv, const vigil_config_var *vars, char *out, size_t outlen,
                   char *errout, size_t errlen)
{
    fflush(stdout);
    fflush(stderr);
    FILE *o = tmpfile();
    FILE *e = tmpfile();
    int so = dup(STDOUT_FILENO), se = dup(STDERR_FILENO);
    dup2(fileno(o), STDOUT_FILENO);
    dup2(fileno(e), STDERR_FILENO);
    int r = vigil_cli_handle(argc, argv, "wake-evaluator", "Decides which dormant persona wakes.",
                             vars);
    fflush(stdout);
    fflush(stderr);
    dup2(so, STDOUT_FILENO);
    dup2(se, STDERR_FILENO);
    close(so);
    close(se);
    rewind(o);
    rewind(e);
    size_t n = fread(out, 1, outlen - 1, o);
    out[n] = '\0';
    n = fread(errout, 1, errlen - 1, e);
    errout[n] = '\0';
    fclose(o);
    fclose(e);
    return r;
}

static const vigil_config_var SERVICE_VARS[] = {
    {"VIGIL_LLM_URL", "", "OpenAI-compatible base URL ending in /v1"},
    {"VIGIL_DORMANCY_WAKE_CONFIDENCE", "0.7", "confidence needed to wake"},
    {NULL, NULL, NULL},
};

static void test_cli_help(void **state)
{
    (void)state;
    static char out[8192], errout[1024];
    char *argv[] = {"wake-evaluator", "--help", NULL};
    assert_int_equal(run_cli(2, argv, SERVICE_VARS, out, sizeof out, errout, sizeof errout), 1);
    assert_true(strncmp(out, "Usage: wake-evaluator [--help] [--version]\n", 43) == 0);
    assert_non_null(strstr(out, "Decides which dormant persona wakes."));
    char *env = strstr(out, "\nEnvironment:\n");
    assert_non_null(env);
    for (const vigil_config_var *v = VIGIL_COMMON_VARS; v->name; v++) {
        char *at = strstr(env, v->name);
        if (!at)
            fail_msg("--help does not list %s", v->name);
    }
    assert_non_null(strstr(env, "  VIGIL_MQTT_URL (default: mqtt://127.0.0.1:1883)  MQTT broker URL"));
    assert_non_null(strstr(env, "  VIGIL_TICK_MS (default: 1000)  "));
    assert_non_null(strstr(env, "  VIGIL_DORMANCY_WAKE_CONFIDENCE (default: 0.7)  confidence needed to wake\n"));
    assert_non_null(strstr(env, "  VIGIL_LLM_URL (default: empty)  "));
    assert_non_null(strstr(env, "  VIGIL_HTTP_ADDR (default: 127.0.0.1:<service port>)  "));
    assert_string_equal(errout, "");

    /* with the service's port known, --help shows it */
    vigil_cli_set_http_port(9102);
    assert_int_equal(run_cli(2, argv, SERVICE_VARS, out, sizeof out, errout, sizeof errout), 1);
    assert_non_null(strstr(out, "  VIGIL_HTTP_ADDR (default: 127.0.0.1:9102)  "));
    vigil_cli_set_http_port(0);

    char *argv2[] = {"wake-evaluator", "-h", NULL};
    assert_int_equal(run_cli(2, argv2, NULL, out, sizeof out, errout, sizeof errout), 1);
    assert_non_null(strstr(out, "VIGIL_TIMER_LEASE_MS"));
    assert_null(strstr(out, "VIGIL_LLM_URL"));
}

static void test_cli_version(void **state)
{
    (void)state;
    char out[256], errout[256];
    char *argv[] = {"wake-evaluator", "--version", NULL};
    assert_int_equal(run_cli(2, argv, NULL, out, sizeof out, errout, sizeof errout), 1);
    assert_string_equal(out, "wake-evaluator " VIGIL_VERSION "\n");
    char *argv2[] = {"wake-evaluator", "-V", NULL};
    assert_int_equal(run_cli(2, argv2, NULL, out, sizeof out, errout, sizeof errout), 1);
    assert_string_equal(out, "wake-evaluator " VIGIL_VERSION "\n");
}

static void test_cli_unknown_and_none(void **state)
{
    (void)state;
    char out[256], errout[256];
    char *argv[] = {"wake-evaluator", "--verbose", NULL};
    assert_int_equal(run_cli(2, argv, NULL, out, sizeof out, errout, sizeof errout), -1);
    assert_string_equal(out, "");
    assert_non_null(strstr(errout, "--verbose"));
    /* an unknown argument before --help is still an error */
    char *argv2[] = {"wake-evaluator", "x", "--help", NULL};
    assert_int_equal(run_cli(3, argv2, NULL, out, sizeof out, errout, sizeof errout), -1);
    char *argv3[] = {"wake-evaluator", NULL};
    assert_int_equal(run_cli(1, argv3, NULL, out, sizeof out, errout, sizeof errout), 0);
    assert_string_equal(out, "");
    assert_string_equal(errout, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_common_vars_table, clean_env),
        cmocka_unit_test_setup(test_defaults, clean_env),
        cmocka_unit_test_setup(test_overrides, clean_env),
        cmocka_unit_test_setup(test_accepted_boundaries, clean_env),
        cmocka_unit_test_setup(test_errors_name_variable_and_value, clean_env),
        cmocka_unit_test_setup(test_exact_messages, clean_env),
        cmocka_unit_test_setup(test_too_long_strings, clean_env),
        cmocka_unit_test_setup(test_url_credentials_masked, clean_env),
        cmocka_unit_test_setup(test_env_int64, clean_env),
        cmocka_unit_test_setup(test_env_int, clean_env),
        cmocka_unit_test_setup(test_env_ms, clean_env),
        cmocka_unit_test_setup(test_env_double, clean_env),
        cmocka_unit_test_setup(test_env_bool, clean_env),
        cmocka_unit_test_setup(test_env_string, clean_env),
        cmocka_unit_test_setup(test_shard_parse, clean_env),
        cmocka_unit_test_setup(test_cli_help, clean_env),
        cmocka_unit_test_setup(test_cli_version, clean_env),
        cmocka_unit_test_setup(test_cli_unknown_and_none, clean_env),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
