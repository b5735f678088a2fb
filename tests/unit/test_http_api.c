/* test_http_api.c - application routes and streams beside the health
 * paths (vigil/http_api.h), driven with libcurl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_body.h"
#include "vigil/http.h"
#include "vigil/http_api.h"
#include "vigil/log.h"

typedef struct resp {
    long status;
    char body[4096];
    size_t len;
    char xtest[64];
} resp;

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    resp *r = ud;
    size_t total = size * n;
    if (total > 8 && strncasecmp(p, "X-Test: ", 8) == 0)
        snprintf(r->xtest, sizeof r->xtest, "%.*s", (int)strcspn(p + 8, "\r\n"), p + 8);
    return total;
}

static CURLcode request(int port, const char *method, const char *path, const char *body, resp *r)
{
    memset(r, 0, sizeof *r);
    char url[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    vt_body body_buf = {r->body, sizeof r->body, &r->len};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vt_body_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body_buf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    return rc;
}

typedef struct stream_state {
    int step;
    bool fail;
} stream_state;

static ssize_t stream_fn(void *cls, char *buf, size_t max)
{
    stream_state *s = cls;
    static const char *const parts[] = {"data: one\n\n", "data: two\n\n"};
    if (s->step < 2) {
        size_t n = strlen(parts[s->step]);
        assert_true(n <= max);
        memcpy(buf, parts[s->step++], n);
        return (ssize_t)n;
    }
    return s->fail ? VIGIL_HTTP_STREAM_ERROR : VIGIL_HTTP_STREAM_END;
}

static int freed;
static void stream_free(void *cls)
{
    free(cls);
    freed++;
}

/* Routes: /echo (method, query a, header X-In, body length), /big (413 when
 * flagged), /none (no reply), /stream and /broken (streams). */
static void handle(void *ctx, vigil_http_req *req)
{
    (void)ctx;
    const char *path = vigil_http_req_path(req);
    if (strcmp(path, "/echo") == 0) {
        size_t len;
        const char *body = vigil_http_req_body(req, &len);
        char out[512];
        const char *q = vigil_http_req_query(req, "a");
        const char *h = vigil_http_req_header(req, "X-In");
        const char *ck = vigil_http_req_cookie(req, "k");
        snprintf(out, sizeof out, "%s a=%s h=%s k=%s len=%zu body=%s too_large=%d",
                 vigil_http_req_method(req), q ? q : "-", h ? h : "-", ck ? ck : "-", len, body,
                 vigil_http_req_too_large(req));
        vigil_http_req_add_header(req, "X-Test", "yes");
        vigil_http_respond(req, 200, "text/plain", out, strlen(out));
        return;
    }
    if (strcmp(path, "/big") == 0) {
        if (vigil_http_req_too_large(req)) {
            vigil_http_respond(req, 413, "text/plain", "too large", 9);
            return;
        }
        vigil_http_respond(req, 200, "text/plain", "fits", 4);
        return;
    }
    if (strcmp(path, "/stream") == 0 || strcmp(path, "/broken") == 0) {
        stream_state *s = calloc(1, sizeof *s);
        s->fail = strcmp(path, "/broken") == 0;
        vigil_http_respond_stream(req, 200, "text/event-stream", stream_fn, s, stream_free, 5);
        return;
    }
    if (strcmp(path, "/json") == 0) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "ok", json_object_new_boolean(1));
        vigil_http_respond_json(req, 201, o);
        json_object_put(o);
        return;
    }
    /* /none: no reply -> 500 */
}

static void test_routes_beside_health(void **st)
{
    (void)st;
    vigil_http_api api = {.handle = handle, .max_body = 100};
    char err[256];
    vigil_http *h = vigil_http_start_api("127.0.0.1:0", NULL, NULL, &api, err, sizeof err);
    assert_non_null(h);
    int port = vigil_http_port(h);
    resp r;
    assert_int_equal(request(port, NULL, "/healthz", NULL, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok\n");
    assert_int_equal(request(port, NULL, "/metrics", NULL, &r), CURLE_OK);
    assert_int_equal(r.status, 200);

    assert_int_equal(request(port, NULL, "/echo?a=1%202", NULL, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "GET a=1 2 h=- k=- len=0 body= too_large=0");
    assert_string_equal(r.xtest, "yes");

    assert_int_equal(request(port, NULL, "/echo", "0123456789", &r), CURLE_OK);
    assert_string_equal(r.body, "POST a=- h=- k=- len=10 body=0123456789 too_large=0");

    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(request(port, NULL, "/big", big, &r), CURLE_OK);
    assert_int_equal(r.status, 413);
    big[100] = '\0'; /* exactly max_body fits */
    assert_int_equal(request(port, NULL, "/big", big, &r), CURLE_OK);
    assert_int_equal(r.status, 200);

    assert_int_equal(request(port, NULL, "/none", NULL, &r), CURLE_OK);
    assert_int_equal(r.status, 500);
    assert_int_equal(request(port, NULL, "/json", NULL, &r), CURLE_OK);
    assert_int_equal(r.status, 201);
    assert_string_equal(r.body, "{\"ok\":true}");

    freed = 0;
    assert_int_equal(request(port, NULL, "/stream", NULL, &r), CURLE_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "data: one\n\ndata: two\n\n");
    /* an aborted stream: the client sees a transfer error after the data */
    CURLcode rc = request(port, NULL, "/broken", NULL, &r);
    assert_int_not_equal(rc, CURLE_OK);
    assert_non_null(strstr(r.body, "data: one"));
    vigil_http_stop(h);
    assert_int_equal(freed, 2);
}

int main(void)
{
    vigil_log_init("test", "t", VIGIL_LOG_ERROR);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_beside_health),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
