/* test_access.c - tokens, bearer/cookie decisions, the per-token rate
 * limit (token bucket, injected clock), the failed authentications per
 * client address (bucket, eviction) and CORS origins. */
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
    /* one token for two users: refused, naming both users, never the token */
    const char *dup = "tok-0123456789 joel\ntok-other-0123 ann\ntok-0123456789 bob\n";
    assert_int_equal(gw_tokens_parse(dup, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "given twice"));
    assert_non_null(strstr(err, "'joel'"));
    assert_non_null(strstr(err, "'bob'"));
    assert_null(strstr(err, "tok-0123456789"));
    assert_int_equal(gw_tokens_parse("tok-0123456789 joel\ntok-0123456789 joel\n", &t, err,
                                     sizeof err), -1);
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

/* A token typed by hand may hold characters a cookie value cannot
 * (; , " backslash) and '%': the file takes them, the cookie carries them
 * %-encoded and reads back as the token; other tokens are their own
 * cookie. Control and non-ASCII bytes stay refused in the file. */
static void test_cookie_of_any_token(void **s)
{
    (void)s;
    static const char file[] = "tok;a,b\"c\\d%e=f joel\n\"quoted-token\" ann\n"
                               "plain-0123456789 bob\n";
    gw_tokens t;
    char err[200], v[GW_COOKIE_VALUE_MAX];
    assert_int_equal(gw_tokens_parse(file, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 3);
    assert_int_equal(gw_cookie_encode("tok;a,b\"c\\d%e=f", v, sizeof v), 0);
    assert_string_equal(v, "tok%3Ba%2Cb%22c%5Cd%25e=f");
    int i;
    assert_int_equal(gw_auth_decide(&t, NULL, v, &i), GW_AUTH_OK);
    assert_int_equal(i, 0);
    assert_int_equal(gw_cookie_encode("\"quoted-token\"", v, sizeof v), 0);
    assert_string_equal(v, "%22quoted-token%22");
    assert_int_equal(gw_auth_decide(&t, NULL, v, &i), GW_AUTH_OK);
    assert_int_equal(i, 1);
    /* a token a cookie can hold is its own cookie, as before */
    assert_int_equal(gw_cookie_encode("plain-0123456789", v, sizeof v), 0);
    assert_string_equal(v, "plain-0123456789");
    assert_int_equal(gw_auth_decide(&t, NULL, v, &i), GW_AUTH_OK);
    assert_int_equal(i, 2);
    /* the bearer header takes such a token as it is */
    assert_int_equal(gw_auth_decide(&t, "Bearer tok;a,b\"c\\d%e=f", NULL, &i), GW_AUTH_OK);
    assert_int_equal(i, 0);
    /* decoded, a cookie must still be a token: no NUL or control byte */
    assert_int_equal(gw_auth_decide(&t, NULL, "plain-0123456789%00x", &i), GW_AUTH_UNKNOWN);
    assert_int_equal(gw_auth_decide(&t, NULL, "plain-0123456789%0A", &i), GW_AUTH_UNKNOWN);
    /* '%' without two hex digits stands for itself (a cookie set before
     * the encoding); the escape's hex digits in either case */
    assert_int_equal(gw_auth_decide(&t, NULL, "tok%3ba%2cb%22c%5cd%e=f", &i), GW_AUTH_OK);
    assert_int_equal(i, 0);
    /* the longest token, every byte escaped, fits; a smaller buffer is -1 */
    char longest[GW_TOKEN_MAX + 1];
    memset(longest, ';', GW_TOKEN_MAX);
    longest[GW_TOKEN_MAX] = '\0';
    assert_int_equal(gw_cookie_encode(longest, v, sizeof v), 0);
    assert_int_equal(strlen(v), 3 * GW_TOKEN_MAX);
    assert_int_equal(gw_cookie_encode(longest, v, sizeof v - 1), -1);
    gw_tokens_free(&t);
    /* still refused in the file: control and non-ASCII bytes */
    const char *bad[] = {"tok\x01-0123456789 joel\n", "tok\xc3\xa9-0123456789 joel\n",
                         "tok\x7f-0123456789 joel\n"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(gw_tokens_parse(bad[k], &t, err, sizeof err), -1);
        assert_non_null(strstr(err, "line 1: a token is 8-256 printable ASCII characters"));
    }
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
    /* a rate below one a second still passes one request, then one per
     * 1/rate seconds (the burst is at least one) */
    gw_bucket slow = {0};
    assert_true(gw_rate_take(&slow, 0.5, now, &retry));
    assert_false(gw_rate_take(&slow, 0.5, now, &retry));
    assert_int_equal(retry, 2001);
    assert_false(gw_rate_take(&slow, 0.5, now + 1999, &retry));
    assert_true(gw_rate_take(&slow, 0.5, now + 2000, &retry));
    assert_false(gw_rate_take(&slow, 0.5, now + 2000, &retry));
    /* rate 0 = unlimited */
    gw_bucket u = {0};
    for (int k = 0; k < 1000; k++)
        assert_true(gw_rate_take(&u, 0, now, &retry));
}

/* An address whose bytes are all b (enough to tell test addresses apart). */
static void addr_of(unsigned char a[16], unsigned char b)
{
    memset(a, b, 16);
}

static void test_auth_fail_bucket(void **s)
{
    (void)s;
    gw_fail_table t;
    assert_int_equal(gw_fail_table_init(&t, 4), 0);
    unsigned char a[16], b[16];
    addr_of(a, 1);
    addr_of(b, 2);
    int64_t now = 1000, retry = 0;
    /* a burst of GW_FAIL_BURST, then refused with the wait for one more */
    for (int i = 0; i < GW_FAIL_BURST; i++)
        assert_true(gw_fail_take(&t, a, 2, now, &retry));
    assert_false(gw_fail_take(&t, a, 2, now, &retry));
    assert_in_range(retry, 500, 501);
    /* another address has its own bucket */
    assert_true(gw_fail_take(&t, b, 2, now, &retry));
    /* refilled at 2 a second: one more after 500 ms, not before */
    assert_false(gw_fail_take(&t, a, 2, now + 499, &retry));
    assert_true(gw_fail_take(&t, a, 2, now + 500, &retry));
    assert_false(gw_fail_take(&t, a, 2, now + 500, &retry));
    /* full again after a long pause, but never more than the burst */
    int ok = 0;
    for (int i = 0; i < 3 * GW_FAIL_BURST; i++)
        ok += gw_fail_take(&t, a, 2, now + 600000, &retry);
    assert_int_equal(ok, GW_FAIL_BURST);
    /* rate 0 = off: nothing refused, nothing kept */
    gw_fail_table u;
    assert_int_equal(gw_fail_table_init(&u, 4), 0);
    for (int i = 0; i < 100; i++)
        assert_true(gw_fail_take(&u, a, 0, now, &retry));
    assert_int_equal(u.n, 0);
    gw_fail_table_free(&u);
    gw_fail_table_free(&t);
}

static void test_auth_fail_eviction(void **s)
{
    (void)s;
    gw_fail_table t;
    assert_int_equal(gw_fail_table_init(&t, 3), 0);
    unsigned char a[16];
    int64_t retry = 0;
    /* addresses 1, 2, 3 exhaust their buckets at t = 1, 2, 3 */
    for (unsigned char k = 1; k <= 3; k++) {
        addr_of(a, k);
        for (int i = 0; i < GW_FAIL_BURST; i++)
            assert_true(gw_fail_take(&t, a, 1, k, &retry));
        assert_false(gw_fail_take(&t, a, 1, k, &retry));
    }
    /* 1 seen again, so 2 is now the least recently seen */
    addr_of(a, 1);
    assert_false(gw_fail_take(&t, a, 1, 4, &retry));
    /* a fourth address fits only by pushing 2 out: the table stays at 3 */
    addr_of(a, 4);
    assert_true(gw_fail_take(&t, a, 1, 5, &retry));
    assert_int_equal(t.n, 3);
    /* 1 and 3 are still held to their empty buckets; 2 starts over */
    addr_of(a, 1);
    assert_false(gw_fail_take(&t, a, 1, 6, &retry));
    addr_of(a, 3);
    assert_false(gw_fail_take(&t, a, 1, 6, &retry));
    addr_of(a, 2);
    assert_true(gw_fail_take(&t, a, 1, 7, &retry));
    assert_int_equal(t.n, 3);
    gw_fail_table_free(&t);
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
        cmocka_unit_test(test_cookie_of_any_token),
        cmocka_unit_test(test_auth_decide),
        cmocka_unit_test(test_rate_bucket),
        cmocka_unit_test(test_auth_fail_bucket),
        cmocka_unit_test(test_auth_fail_eviction),
        cmocka_unit_test(test_origins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
