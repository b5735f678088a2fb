/* test_access.c - tokens, bearer/cookie decisions, the per-token rate
 * limit (token bucket, injected clock) and CORS origins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "gateway.h"

static const char FILE_TEXT[] = "# tokens\n\ntok-joel-0123456789 joel\r\n  tok-ann-0123456789\tann\n";

static void test_tokens_parse(void **s)
{
    (void)s;
    gw_tokens t;
    char err[200];
    assert_int_equal(gw_tokens_parse(FILE_TEXT, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.v[1].user, "ann");
    assert_int_equal(gw_tokens_find(&t, "tok-ann-0123456789"), 1);
    assert_int_equal(gw_tokens_find(&t, "tok-ann-012345678"), -1);
    assert_int_equal(gw_tokens_find(&t, NULL), -1);
    gw_tokens_free(&t);
    const char *bad[] = {"short joel\n", "tok-0123456789\n", "tok-0123456789 joel extra\n",
                         "tok-0123456789 jo/el\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gw_tokens_parse(bad[i], &t, err, sizeof err), -1);
        assert_non_null(strstr(err, "line 1"));
    }
}

static void test_auth_decide(void **s)
{
    (void)s;
    gw_tokens t;
    char err[200];
    assert_int_equal(gw_tokens_parse(FILE_TEXT, &t, err, sizeof err), 0);
    int i;
    assert_int_equal(gw_auth_decide(&t, NULL, NULL, &i), GW_AUTH_MISSING);
    assert_int_equal(gw_auth_decide(&t, "", "", &i), GW_AUTH_MISSING);
    assert_int_equal(gw_auth_decide(&t, "Basic abc", NULL, &i), GW_AUTH_MALFORMED);
    assert_int_equal(gw_auth_decide(&t, "Bearer ", NULL, &i), GW_AUTH_MALFORMED);
    assert_int_equal(gw_auth_decide(&t, "Bearer nope-nope-nope", NULL, &i), GW_AUTH_UNKNOWN);
    assert_int_equal(gw_auth_decide(&t, "Bearer tok-joel-0123456789", NULL, &i), GW_AUTH_OK);
    assert_int_equal(i, 0);
    assert_int_equal(gw_auth_decide(&t, "bearer tok-ann-0123456789", NULL, &i), GW_AUTH_OK);
    assert_int_equal(i, 1);
    /* the cookie when there is no header; the header wins over it */
    assert_int_equal(gw_auth_decide(&t, NULL, "tok-ann-0123456789", &i), GW_AUTH_OK);
    assert_int_equal(i, 1);
    assert_int_equal(gw_auth_decide(&t, "Bearer tok-joel-0123456789", "tok-ann-0123456789", &i), GW_AUTH_OK);
    assert_int_equal(i, 0);
    assert_int_equal(gw_auth_decide(&t, NULL, "wrong-cookie-value", &i), GW_AUTH_UNKNOWN);
    /* a bearer token is at most 256 characters: past it the answer says so */
    char h[7 + 258] = "Bearer ";
    memset(h + 7, 'x', 256);
    h[7 + 256] = '\0';
    assert_int_equal(gw_auth_decide(&t, h, NULL, &i), GW_AUTH_UNKNOWN);
    h[7 + 256] = 'x';
    h[7 + 257] = '\0';
    assert_int_equal(gw_auth_decide(&t, h, NULL, &i), GW_AUTH_MALFORMED);
    assert_non_null(strstr(gw_auth_reason(GW_AUTH_MALFORMED), "a token of 8-256 printable characters"));
    gw_tokens_free(&t);
}

static void test_rate_bucket(void **s)
{
    (void)s;
    gw_bucket b = {0};
    int64_t now = 1000, retry = 0;
    for (int k = 0; k < 5; k++)
        assert_true(gw_rate_take(&b, 5, now, &retry));
    assert_false(gw_rate_take(&b, 5, now, &retry));
    assert_in_range(retry, 1, 201);
    /* 200 ms later one more token */
    assert_true(gw_rate_take(&b, 5, now + 200, &retry));
    assert_false(gw_rate_take(&b, 5, now + 200, &retry));
    /* a long pause refills only up to the burst */
    int ok = 0;
    for (int k = 0; k < 20; k++)
        ok += gw_rate_take(&b, 5, now + 60000, &retry);
    assert_int_equal(ok, 5);
    /* rate 0 = unlimited */
    gw_bucket u = {0};
    for (int k = 0; k < 1000; k++)
        assert_true(gw_rate_take(&u, 0, now, &retry));
}

static void test_origins(void **s)
{
    (void)s;
    assert_true(gw_origin_allowed("", NULL, "127.0.0.1:8080"));
    assert_true(gw_origin_allowed("", "http://127.0.0.1:8080", "127.0.0.1:8080"));
    assert_false(gw_origin_allowed("", "http://evil.example", "127.0.0.1:8080"));
    assert_true(gw_origin_allowed("http://a.example, http://b.example", "http://b.example", "x"));
    assert_false(gw_origin_allowed("http://a.example", "http://a.example.evil", "x"));
    assert_false(gw_origin_allowed("http://a.example", "http://a.exampl", "x"));
    assert_true(gw_origin_allowed("*", "http://anything", "x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_parse),
        cmocka_unit_test(test_auth_decide),
        cmocka_unit_test(test_rate_bucket),
        cmocka_unit_test(test_origins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
