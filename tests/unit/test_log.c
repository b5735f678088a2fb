/* Unit tests of log.c: every line is one valid JSON object with the fixed
 * fields, whatever bytes a message holds; level parsing and filtering; the
 * write path puts exactly one line on stderr. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil/json.h"
#include "vigil/log.h"

/* Parses a rendered line strictly (through vigil_json_parse_object, so
 * invalid UTF-8 or bad escapes fail the test). */
static json_object *parse_line(const char *line)
{
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(line, strlen(line), 1 << 20, &err);
    if (!o)
        fail_msg("not a JSON object (%s): %s", err.detail, line);
    return o;
}

static const char *str_field(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v))
        return NULL;
    return json_object_is_type(v, json_type_null) ? "(null)" : json_object_get_string(v);
}

/* Runs first: before any vigil_log_init the service is "vigil". */
static void test_default_service_before_init(void **state)
{
    (void)state;
    char buf[512];
    int n = vigil_log_format(buf, sizeof buf, 5, VIGIL_LOG_INFO, "hello", NULL, 0);
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    json_object *o = parse_line(buf);
    assert_string_equal(str_field(o, "service"), "vigil");
    assert_string_equal(str_field(o, "instance"), "");
    json_object_put(o);
}

static void test_format_fields_in_order(void **state)
{
    (void)state;
    vigil_log_init("chat-router", "host-1", VIGIL_LOG_INFO);
    char buf[512];
    const char *kv[] = {"room", "general", "reason", NULL};
    int n = vigil_log_format(buf, sizeof buf, 1700000000123LL, VIGIL_LOG_WARN, "committed", kv, 2);
    assert_true(n > 0);
    assert_string_equal(buf, "{\"ts\":1700000000123,\"level\":\"warn\",\"service\":\"chat-router\","
                             "\"instance\":\"host-1\",\"msg\":\"committed\",\"room\":\"general\","
                             "\"reason\":null}");
}

static void test_level_names(void **state)
{
    (void)state;
    static const char *const NAMES[] = {"debug", "info", "warn", "error"};
    char buf[256];
    for (int i = 0; i < 4; i++) {
        assert_true(vigil_log_format(buf, sizeof buf, 0, (vigil_log_level)i, "m", NULL, 0) > 0);
        json_object *o = parse_line(buf);
        assert_string_equal(str_field(o, "level"), NAMES[i]);
        json_object_put(o);
    }
}

static void test_escaping_round_trips(void **state)
{
    (void)state;
    vigil_log_init("svc \"q\"", "in\\st", VIGIL_LOG_INFO);
    const char *msg = "quote\" backslash\\ nl\n cr\r tab\t bell\x07 del\x7f emoji\xf0\x9f\x92\xa4 /";
    const char *kv[] = {"k\"ey", "v\x01", NULL, NULL};
    char buf[1024];
    assert_true(vigil_log_format(buf, sizeof buf, 1, VIGIL_LOG_INFO, msg, kv, 1) > 0);
    assert_null(strchr(buf, '\n'));
    json_object *o = parse_line(buf);
    assert_string_equal(str_field(o, "msg"), msg);
    assert_string_equal(str_field(o, "service"), "svc \"q\"");
    assert_string_equal(str_field(o, "instance"), "in\\st");
    assert_string_equal(str_field(o, "k\"ey"), "v\x01");
    json_object_put(o);
    vigil_log_init("svc", "i", VIGIL_LOG_INFO);
}

static void test_invalid_utf8_still_valid_json(void **state)
{
    (void)state;
    vigil_log_init("svc", "i", VIGIL_LOG_INFO);
    const char *msg = "bad \xff \xc0\x80 \xed\xa0\x80 cut \xe2\x9c";
    char buf[512];
    assert_true(vigil_log_format(buf, sizeof buf, 1, VIGIL_LOG_ERROR, msg, NULL, 0) > 0);
    assert_true(vigil_utf8_valid(buf, strlen(buf)));
    json_object *o = parse_line(buf);
    assert_string_equal(str_field(o, "msg"),
                        "bad \\xff \\xc0\\x80 \\xed\\xa0\\x80 cut \\xe2\\x9c");
    json_object_put(o);
}

static void test_format_too_small(void **state)
{
    (void)state;
    char buf[40];
    memset(buf, 'z', sizeof buf);
    assert_int_equal(vigil_log_format(buf, sizeof buf, 1, VIGIL_LOG_INFO, "a long enough message", NULL, 0), -1);
    assert_string_equal(buf, "");
    /* the exact size needed fits (length + NUL) */
    char big[256];
    int n = vigil_log_format(big, sizeof big, 1, VIGIL_LOG_INFO, "m", NULL, 0);
    assert_true(n > 0);
    char *exact = malloc((size_t)n + 1);
    assert_int_equal(vigil_log_format(exact, n + 1, 1, VIGIL_LOG_INFO, "m", NULL, 0), n);
    assert_string_equal(exact, big);
    assert_int_equal(vigil_log_format(exact, n, 1, VIGIL_LOG_INFO, "m", NULL, 0), -1);
    free(exact);
    assert_int_equal(vigil_log_format(NULL, 10, 1, VIGIL_LOG_INFO, "m", NULL, 0), -1);
}

static void test_level_parse(void **state)
{
    (void)state;
    vigil_log_level l = VIGIL_LOG_ERROR;
    assert_int_equal(vigil_log_level_parse("debug", &l), 0);
    assert_int_equal(l, VIGIL_LOG_DEBUG);
    assert_int_equal(vigil_log_level_parse("INFO", &l), 0);
    assert_int_equal(l, VIGIL_LOG_INFO);
    assert_int_equal(vigil_log_level_parse("Warn", &l), 0);
    assert_int_equal(l, VIGIL_LOG_WARN);
    assert_int_equal(vigil_log_level_parse("error", &l), 0);
    assert_int_equal(l, VIGIL_LOG_ERROR);
    assert_int_equal(vigil_log_level_parse("warning", &l), -1);
    assert_int_equal(vigil_log_level_parse("", &l), -1);
    assert_int_equal(vigil_log_level_parse(NULL, &l), -1);
    assert_int_equal(l, VIGIL_LOG_ERROR); /* untouched on failure */
}

/* Runs fn with stderr redirected to a temporary file; returns what was
 * written (caller frees). */
static char *capture_stderr(void (*fn)(void))
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    fn();
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    fseek(tmp, 0, SEEK_END);
    long n = ftell(tmp);
    assert_true(n >= 0);
    rewind(tmp);
    char *out = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(out, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return out;
}

static void emit_levels(void)
{
    vigil_log_init("svc", "i", VIGIL_LOG_WARN);
    vigil_log(VIGIL_LOG_DEBUG, "dropped %d", 1);
    vigil_log(VIGIL_LOG_INFO, "dropped %d", 2);
    vigil_log(VIGIL_LOG_WARN, "kept %d", 3);
    vigil_log_kv(VIGIL_LOG_ERROR, "kv line", "room", "r1", "who", NULL, NULL);
    vigil_log_kv(VIGIL_LOG_INFO, "dropped kv", "a", "b", NULL);
}

static void test_log_writes_filtered_lines(void **state)
{
    (void)state;
    char *out = capture_stderr(emit_levels);
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    *nl = '\0';
    json_object *o = parse_line(out);
    assert_string_equal(str_field(o, "msg"), "kept 3");
    assert_string_equal(str_field(o, "level"), "warn");
    json_object_put(o);
    char *second = nl + 1;
    nl = strchr(second, '\n');
    assert_non_null(nl);
    *nl = '\0';
    o = parse_line(second);
    assert_string_equal(str_field(o, "msg"), "kv line");
    assert_string_equal(str_field(o, "room"), "r1");
    assert_string_equal(str_field(o, "who"), "(null)");
    json_object *ts = NULL;
    assert_true(json_object_object_get_ex(o, "ts", &ts));
    assert_true(json_object_get_int64(ts) > 1600000000000LL);
    json_object_put(o);
    assert_string_equal(nl + 1, ""); /* nothing else */
    free(out);
    vigil_log_init("svc", "i", VIGIL_LOG_INFO);
}

/* A message far beyond the stack buffers still comes out whole, as one
 * line. */
static void emit_long(void)
{
    vigil_log_init("svc", "i", VIGIL_LOG_INFO);
    size_t n = 100000;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = (i % 10 == 0) ? '"' : 'x';
    big[n] = '\0';
    vigil_log(VIGIL_LOG_INFO, "%s", big);
    vigil_log_kv(VIGIL_LOG_INFO, "kv", "big", big, NULL);
    free(big);
}

static void test_log_long_lines(void **state)
{
    (void)state;
    char *out = capture_stderr(emit_long);
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    *nl = '\0';
    json_object *o = parse_line(out);
    assert_int_equal(strlen(str_field(o, "msg")), 100000);
    json_object_put(o);
    char *second = nl + 1;
    nl = strchr(second, '\n');
    assert_non_null(nl);
    *nl = '\0';
    o = parse_line(second);
    assert_int_equal(strlen(str_field(o, "big")), 100000);
    json_object_put(o);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_service_before_init),
        cmocka_unit_test(test_format_fields_in_order),
        cmocka_unit_test(test_level_names),
        cmocka_unit_test(test_escaping_round_trips),
        cmocka_unit_test(test_invalid_utf8_still_valid_json),
        cmocka_unit_test(test_format_too_small),
        cmocka_unit_test(test_level_parse),
        cmocka_unit_test(test_log_writes_filtered_lines),
        cmocka_unit_test(test_log_long_lines),
    };
    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
