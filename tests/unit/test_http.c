/* test_http.c - the health/metrics endpoint, driven with libcurl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_body.h"
#include "vigil/http.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

typedef struct resp {
    long status;
    char body[8192];
    size_t len;
    char ctype[128];
    char allow[64];
} resp;

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    resp *r = ud;
    size_t total = size * n;
    char line[256];
    size_t l = total < sizeof line - 1 ? total : sizeof line - 1;
    memcpy(line, p, l);
    line[l] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (strncasecmp(line, "Content-Type: ", 14) == 0)
        snprintf(r->ctype, sizeof r->ctype, "%.127s", line + 14);
    if (strncasecmp(line, "Allow: ", 7) == 0)
        snprintf(r->allow, sizeof r->allow, "%.63s", line + 7);
    return total;
}

/* One request with bounded timeouts; method NULL = GET. */
static void request(int port, const char *method, const char *path, resp *r)
{
    memset(r, 0, sizeof *r);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    vt_body body_buf = {r->body, sizeof r->body, &r->len};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vt_body_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body_buf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (method && strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (method && strcmp(method, "POST") == 0)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
    else if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        fprintf(stderr, "curl %s: %s\n", url, curl_easy_strerror(rc));
    assert_int_equal(rc, CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
}

static atomic_bool g_ready;

static bool ready_fn(void *ctx, char *why, size_t whylen)
{
    assert_ptr_equal(ctx, &g_ready);
    if (atomic_load(&g_ready))
        return true;
    snprintf(why, whylen, "mqtt disconnected");
    return false;
}

static vigil_http *start_any_port(void)
{
    char err[256];
    vigil_http *h = vigil_http_start("127.0.0.1:0", ready_fn, &g_ready, err, sizeof err);
    if (!h)
        fprintf(stderr, "vigil_http_start: %s\n", err);
    assert_non_null(h);
    assert_true(vigil_http_port(h) > 0);
    return h;
}

static void test_healthz(void **state)
{
    (void)state;
    vigil_http *h = start_any_port();
    resp r;
    request(vigil_http_port(h), NULL, "/healthz", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok\n");
    request(vigil_http_port(h), "HEAD", "/healthz", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 0);
    vigil_http_stop(h);
}

static void test_readyz_both_states(void **state)
{
    (void)state;
    vigil_http *h = start_any_port();
    resp r;
    atomic_store(&g_ready, false);
    request(vigil_http_port(h), NULL, "/readyz", &r);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.body, "not ready: mqtt disconnected\n");
    atomic_store(&g_ready, true);
    request(vigil_http_port(h), NULL, "/readyz", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ready\n");
    vigil_http_stop(h);

    /* No ready function: always ready. */
    char err[256];
    h = vigil_http_start("127.0.0.1:0", NULL, NULL, err, sizeof err);
    assert_non_null(h);
    request(vigil_http_port(h), NULL, "/readyz", &r);
    assert_int_equal(r.status, 200);
    vigil_http_stop(h);
}

static void test_metrics(void **state)
{
    (void)state;
    vigil_counter_add("vigil_http_test_total", "A counter for the HTTP test", NULL, 3);
    vigil_http *h = start_any_port();
    resp r;
    request(vigil_http_port(h), NULL, "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
    assert_non_null(strstr(r.body, "# TYPE vigil_http_test_total counter"));
    assert_non_null(strstr(r.body, "\nvigil_http_test_total 3"));
    vigil_http_stop(h);
}

static void test_not_found_and_method(void **state)
{
    (void)state;
    vigil_http *h = start_any_port();
    resp r;
    request(vigil_http_port(h), NULL, "/nope", &r);
    assert_int_equal(r.status, 404);
    request(vigil_http_port(h), NULL, "/healthz/extra", &r);
    assert_int_equal(r.status, 404);
    request(vigil_http_port(h), "POST", "/healthz", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.allow, "GET, HEAD");
    request(vigil_http_port(h), "DELETE", "/metrics", &r);
    assert_int_equal(r.status, 405);
    /* Still serving after the refusals. */
    request(vigil_http_port(h), NULL, "/healthz", &r);
    assert_int_equal(r.status, 200);
    vigil_http_stop(h);
}

static void test_address_forms(void **state)
{
    (void)state;
    char err[256];
    const char *good[] = { "localhost:0", ":0", "0", "0.0.0.0:0", "127.0.0.1:0" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        vigil_http *h = vigil_http_start(good[i], NULL, NULL, err, sizeof err);
        if (!h)
            fprintf(stderr, "%s: %s\n", good[i], err);
        assert_non_null(h);
        resp r;
        request(vigil_http_port(h), NULL, "/healthz", &r);
        assert_int_equal(r.status, 200);
        vigil_http_stop(h);
    }
    const char *bad[] = { "", "example.com:80", "1.2.3.4.5:80", "127.0.0.1:70000",
                          "127.0.0.1:-1", "127.0.0.1:", "127.0.0.1:8x", "abc" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_null(vigil_http_start(bad[i], NULL, NULL, err, sizeof err));
        assert_true(err[0] != '\0');
    }
    assert_null(vigil_http_start(NULL, NULL, NULL, err, sizeof err));
}

static void test_port_in_use(void **state)
{
    (void)state;
    vigil_http *h = start_any_port();
    char addr[32], err[256] = "";
    snprintf(addr, sizeof addr, "127.0.0.1:%d", vigil_http_port(h));
    assert_null(vigil_http_start(addr, NULL, NULL, err, sizeof err));
    assert_non_null(strstr(err, addr));
    vigil_http_stop(h);
    vigil_http_stop(NULL);
}

int main(void)
{
    vigil_log_init("test_http", "t", VIGIL_LOG_ERROR);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    atomic_init(&g_ready, true);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthz),
        cmocka_unit_test(test_readyz_both_states),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_not_found_and_method),
        cmocka_unit_test(test_address_forms),
        cmocka_unit_test(test_port_in_use),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
