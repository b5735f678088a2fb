/* test_secrets.c - secrets from the environment or from files
 * (VIGIL_MQTT_PASSWORD_FILE, VIGIL_REDIS_URL_FILE, VIGIL_LLM_API_KEY_FILE):
 * one trailing newline stripped, both set is an error, unreadable / empty /
 * too long files are errors naming the variable and the path but never the
 * content, and every value read is masked by the redaction. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vigil/config.h"
#include "vigil/llm.h"
#include "vigil/redact.h"

static char g_dir[64];

static const char *const VARS[] = {
    "VIGIL_MQTT_PASSWORD", "VIGIL_MQTT_PASSWORD_FILE", "VIGIL_REDIS_URL", "VIGIL_REDIS_URL_FILE",
    "VIGIL_LLM_API_KEY",   "VIGIL_LLM_API_KEY_FILE",   "VIGIL_TEST_S",    "VIGIL_TEST_S_FILE",
    "VIGIL_MQTT_USER",     NULL,
};

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/vigil-secrets-XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int clean(void **state)
{
    (void)state;
    for (int i = 0; VARS[i]; i++)
        unsetenv(VARS[i]);
    vigil_redact_clear();
    return 0;
}

/* Writes n bytes of content to g_dir/name; returns the path (static). */
static const char *write_file(const char *name, const char *content, size_t n)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(content, 1, n, f), n);
    fclose(f);
    return path;
}

static const char *masked(const char *line)
{
    static char out[256];
    vigil_redact(line, out, sizeof out);
    return out;
}

static void test_direct_value_registered(void **state)
{
    (void)state;
    char v[64], err[256] = "";
    setenv("VIGIL_TEST_S", "s3cr3t-direct", 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "s3cr3t-direct");
    assert_string_equal(masked("pw=s3cr3t-direct."), "pw=***.");
    unsetenv("VIGIL_TEST_S");
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "dflt", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "dflt");
}

static void test_file_one_newline_stripped(void **state)
{
    (void)state;
    char v[64], err[256] = "";
    setenv("VIGIL_TEST_S_FILE", write_file("a", "s3cr3t-file\n", 12), 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "s3cr3t-file");
    assert_string_equal(masked("x s3cr3t-file y"), "x *** y");
    /* only one newline goes; a second one is part of the value */
    setenv("VIGIL_TEST_S_FILE", write_file("b", "two\n\n", 5), 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "two\n");
    /* CRLF as written by an editor on another system */
    setenv("VIGIL_TEST_S_FILE", write_file("c", "crlf-pw\r\n", 9), 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "crlf-pw");
    /* no newline at all */
    setenv("VIGIL_TEST_S_FILE", write_file("d", "p@ss/w:rd", 9), 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "p@ss/w:rd");
    /* exactly as long as fits */
    setenv("VIGIL_TEST_S_FILE", write_file("e", "12345678\n", 9), 1);
    char small[9];
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", small, sizeof small, err, sizeof err),
                     0);
    assert_string_equal(small, "12345678");
}

/* Each error names the variable and the path and never the content. */
static void expect_file_error(const char *path, const char *what)
{
    char v[16], err[256] = "";
    setenv("VIGIL_TEST_S_FILE", path, 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), -1);
    if (!strstr(err, "VIGIL_TEST_S_FILE") || !strstr(err, path) || !strstr(err, what))
        fail_msg("unexpected message: %s", err);
    assert_null(strstr(err, "s3cr3t"));
}

static void test_file_errors(void **state)
{
    (void)state;
    char missing[128];
    snprintf(missing, sizeof missing, "%s/missing", g_dir);
    expect_file_error(missing, "No such file");
    expect_file_error(write_file("empty", "", 0), "empty");
    expect_file_error(write_file("nl", "\n", 1), "empty");
    expect_file_error(write_file("long", "s3cr3t-0123456789\n", 18), "longer than");
    expect_file_error(write_file("nul", "s3cr3t\0x", 8), "NUL");
    expect_file_error(g_dir, "cannot read"); /* a directory: read fails */
    const char *locked = write_file("locked", "s3cr3t", 6);
    chmod(locked, 0);
    if (geteuid() != 0) /* root reads it anyway */
        expect_file_error(locked, "Permission denied");
}

static void test_both_set_is_error(void **state)
{
    (void)state;
    char v[64], err[256] = "";
    setenv("VIGIL_TEST_S", "s3cr3t-a", 1);
    setenv("VIGIL_TEST_S_FILE", write_file("both", "s3cr3t-b", 8), 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_TEST_S and VIGIL_TEST_S_FILE are both set"));
    assert_null(strstr(err, "s3cr3t"));
    /* an empty variable beside the file counts as unset (compose often
     * passes VAR= through) */
    setenv("VIGIL_TEST_S", "", 1);
    assert_int_equal(vigil_env_secret("VIGIL_TEST_S", "", v, sizeof v, err, sizeof err), 0);
    assert_string_equal(v, "s3cr3t-b");
}

static void test_common_config_from_files(void **state)
{
    (void)state;
    vigil_common_config c;
    char err[256] = "";
    setenv("VIGIL_MQTT_PASSWORD_FILE", write_file("mq", "s3cr3t-mqtt\n", 12), 1);
    setenv("VIGIL_REDIS_URL_FILE",
           write_file("rd", "redis://svc:s3cr3t%40redis@10.0.0.1:6380/2\n", 43), 1);
    /* a password without a user would be dropped silently: an error */
    vigil_common_config_init(&c, 9100);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_PASSWORD is set but VIGIL_MQTT_USER is empty"));
    setenv("VIGIL_MQTT_USER", "svc", 1);
    vigil_common_config_init(&c, 9100);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.mqtt_password, "s3cr3t-mqtt");
    assert_string_equal(c.redis_url, "redis://svc:s3cr3t%40redis@10.0.0.1:6380/2");
    /* both registered: the decoded Redis password too, not the whole URL */
    assert_string_equal(masked("a s3cr3t-mqtt b s3cr3t@redis c"), "a *** b *** c");
    assert_string_equal(masked("redis://svc:s3cr3t%40redis@10.0.0.1:6380/2"),
                        "redis://svc:***@10.0.0.1:6380/2");

    setenv("VIGIL_MQTT_PASSWORD", "s3cr3t-x", 1);
    vigil_common_config_init(&c, 9100);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_MQTT_PASSWORD_FILE"));
    unsetenv("VIGIL_MQTT_PASSWORD");

    /* a Redis URL the one parser refuses stops the start, quoting no
     * password */
    setenv("VIGIL_REDIS_URL_FILE", write_file("rd2", "redis://u:s3cr3t@h:99999/0", 26), 1);
    vigil_common_config_init(&c, 9100);
    assert_int_equal(vigil_common_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_REDIS_URL"));
    assert_null(strstr(err, "s3cr3t"));
}

static void test_llm_key_from_file(void **state)
{
    (void)state;
    vigil_llm_config c;
    char err[256] = "";
    setenv("VIGIL_LLM_API_KEY_FILE", write_file("key", "sk-s3cr3t-llm\n", 14), 1);
    vigil_llm_config_init(&c);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.api_key, "sk-s3cr3t-llm");
    assert_string_equal(masked("Bearer sk-s3cr3t-llm"), "Bearer ***");
    setenv("VIGIL_LLM_API_KEY", "sk-other", 1);
    vigil_llm_config_init(&c);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_LLM_API_KEY_FILE"));
    unsetenv("VIGIL_LLM_API_KEY");
    setenv("VIGIL_LLM_API_KEY_FILE", write_file("key0", "", 0), 1);
    vigil_llm_config_init(&c);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty"));
}

static void test_help_lists_file_variables(void **state)
{
    (void)state;
    bool mq = false, rd = false, llm = false;
    for (const vigil_config_var *v = VIGIL_COMMON_VARS; v->name; v++) {
        mq = mq || strcmp(v->name, "VIGIL_MQTT_PASSWORD_FILE") == 0;
        rd = rd || strcmp(v->name, "VIGIL_REDIS_URL_FILE") == 0;
    }
    for (const vigil_config_var *v = VIGIL_LLM_VARS; v->name; v++)
        llm = llm || strcmp(v->name, "VIGIL_LLM_API_KEY_FILE") == 0;
    assert_true(mq && rd && llm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_direct_value_registered, clean),
        cmocka_unit_test_setup(test_file_one_newline_stripped, clean),
        cmocka_unit_test_setup(test_file_errors, clean),
        cmocka_unit_test_setup(test_both_set_is_error, clean),
        cmocka_unit_test_setup(test_common_config_from_files, clean),
        cmocka_unit_test_setup(test_llm_key_from_file, clean),
        cmocka_unit_test_setup(test_help_lists_file_variables, clean),
    };
    return cmocka_run_group_tests_name("secrets", tests, group_setup, group_teardown);
}
