/* test_redact.c - credentials masked in text that leaves the process: URL
 * passwords anywhere in a line, registered secrets anywhere at all, and
 * the log lines themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "vigil/redact.h"

static char out[512];

static const char *r(const char *in)
{
    vigil_redact(in, out, sizeof out);
    return out;
}

static void test_url_passwords(void **state)
{
    (void)state;
    vigil_redact_clear();
    assert_string_equal(r("redis://:s3cret@10.0.0.7:6380/3"), "redis://:***@10.0.0.7:6380/3");
    assert_string_equal(r("mqtt://bob:pw@broker:1883"), "mqtt://bob:***@broker:1883");
    assert_string_equal(r("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
    assert_string_equal(r("redis://bob@cache:7000"), "redis://bob@cache:7000"); /* no password */
    /* inside a JSON log line, twice, with an '@' in the password */
    assert_string_equal(r("{\"a\":\"redis://:p@ss@h:1/0\",\"b\":\"mqtts://u:x@y\"}"),
                        "{\"a\":\"redis://:***@h:1/0\",\"b\":\"mqtts://u:***@y\"}");
    /* a colon after the authority is no password */
    assert_string_equal(r("see http://host/a:b@c"), "see http://host/a:b@c");
}

static void test_registered_secrets(void **state)
{
    (void)state;
    vigil_redact_clear();
    vigil_redact_add_secret("hunter22");
    vigil_redact_add_secret("ab"); /* too short: ignored */
    vigil_redact_add_secret("");
    vigil_redact_add_secret(NULL);
    assert_string_equal(r("auth failed for hunter22 (hunter22)"), "auth failed for *** (***)");
    assert_string_equal(r("ab abc"), "ab abc");
    vigil_redact_clear();
    assert_string_equal(r("hunter22"), "hunter22");
}

static void test_truncation(void **state)
{
    (void)state;
    char small[8];
    size_t n = vigil_redact("0123456789", small, sizeof small);
    assert_int_equal(n, 7);
    assert_string_equal(small, "0123456");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_passwords),
        cmocka_unit_test(test_registered_secrets),
        cmocka_unit_test(test_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
