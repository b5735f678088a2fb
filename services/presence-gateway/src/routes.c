/* routes.c - every HTTP request's way through the gateway: CORS origin,
 * then (for /api/) who is calling, the rate limit, the body size, and
 * the route. Errors are JSON {"error", "detail"}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <vigil/clock.h>
#include <vigil/json.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

static const char *error_name(unsigned status)
{
    switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 429: return "rate_limited";
    case 503: return "unavailable";
    default: return "internal";
    }
}

void gateway_error(vigil_http_req *req, unsigned status, const char *detail)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(error_name(status)));
    json_object_object_add(o, "detail", json_object_new_string(detail ? detail : ""));
    vigil_http_respond_json(req, status, o);
    json_object_put(o);
    char labels[64];
    snprintf(labels, sizeof labels, "code=\"%u\"", status);
    vigil_counter_add("vigil_gateway_http_errors_total", "HTTP requests answered with an error",
                      labels, 1);
}

void gateway_limit_count(const char *limit)
{
    char labels[96];
    snprintf(labels, sizeof labels, "limit=\"%s\"", limit);
    vigil_counter_add("vigil_gateway_limit_refusals_total",
                      "HTTP requests and SSE streams a limit of the gateway refused or cut (each "
                      "told in its answer or stream; README, Limits)",
                      labels, 1);
}

void gateway_refuse(vigil_http_req *req, unsigned status, const char *limit, const char *detail)
{
    gateway_error(req, status, detail);
    if (limit)
        gateway_limit_count(limit);
}

void gateway_fresh_id(char *out, size_t outlen)
{
    unsigned char r[12];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = (uint64_t)vigil_mono_ms() ^ (uint64_t)(uintptr_t)out;
        memcpy(r, &t, sizeof t);
    }
    char hex[sizeof r * 2 + 1];
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(hex + 2 * i, 3, "%02x", r[i]);
    snprintf(out, outlen, "gw-%s", hex);
}

/* Splits "/api/rooms/{r}/messages"-like paths: returns the id at part
 * `idx` of a path with exactly `n` parts whose other parts equal tpl. A
 * part longer than id holds is cut to idlen - 1 characters, which the
 * caller's id rule refuses (400 naming the rule, not 404), as long as
 * idlen - 1 exceeds the longest id. */
static bool match_path(const char *path, const char *const *tpl, int n, char *id, size_t idlen)
{
    const char *p = path;
    if (*p != '/')
        return false;
    p++;
    for (int i = 0; i < n; i++) {
        size_t len = strcspn(p, "/");
        if (tpl[i]) {
            if (strlen(tpl[i]) != len || strncmp(p, tpl[i], len) != 0)
                return false;
        } else {
            if (len == 0)
                return false;
            size_t keep = len < idlen ? len : idlen - 1;
            memcpy(id, p, keep);
            id[keep] = '\0';
        }
        p += len;
        if (i + 1 < n) {
            if (*p != '/')
                return false;
            p++;
        }
    }
    return *p == '\0';
}

static bool is(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static void method_not_allowed(vigil_http_req *req, const char *allow)
{
    vigil_http_req_add_header(req, "Allow", allow);
    gateway_error(req, 405, "method not allowed here");
}

/* The API proper, once the caller is known. */
static void api(gateway *g, vigil_http_req *req, const char *user)
{
    const char *m = vigil_http_req_method(req);
    const char *path = vigil_http_req_path(req);
    bool get = is(m, "GET") || is(m, "HEAD"), post = is(m, "POST");
    char id[GW_ID_MAX + 2];
    static const char *const ROOM_MSGS[] = {"api", "rooms", NULL, "messages"};
    static const char *const ANSWERS[] = {"api", "council", NULL, "answers"};
    static const char *const SUGGESTION[] = {"api", "personas", NULL, "suggestion"};

    if (is(path, "/api/presence")) {
        if (!post)
            return method_not_allowed(req, "POST");
        return gateway_api_presence(g, req, user);
    }
    if (match_path(path, ROOM_MSGS, 4, id, sizeof id)) {
        if (!gw_id_valid(id))
            return gateway_error(req, 400, "room: 1-64 characters of A-Z a-z 0-9 . _ -");
        if (get)
            return gateway_api_messages_get(g, req, id);
        if (post)
            return gateway_api_messages_post(g, req, id, user);
        return method_not_allowed(req, "GET, POST");
    }
    if (match_path(path, ANSWERS, 4, id, sizeof id)) {
        if (!gw_id_valid(id))
            return gateway_error(req, 400, "session: 1-64 characters of A-Z a-z 0-9 . _ -");
        if (!post)
            return method_not_allowed(req, "POST");
        return gateway_api_answer(g, req, id, user);
    }
    if (match_path(path, SUGGESTION, 4, id, sizeof id)) {
        if (!gw_id_valid(id))
            return gateway_error(req, 400, "persona: 1-64 characters of A-Z a-z 0-9 . _ -");
        if (!post)
            return method_not_allowed(req, "POST");
        return gateway_api_suggestion(g, req, id, user);
    }
    if (is(path, "/api/autonomous/deliberations/live") || is(path, "/api/events")) {
        if (!get)
            return method_not_allowed(req, "GET");
        return gateway_api_stream(g, req, is(path, "/api/autonomous/deliberations/live"));
    }
    if (is(path, "/api/whoami")) {
        if (!get)
            return method_not_allowed(req, "GET");
        json_object *o = json_object_new_object();
        json_object_object_add(o, "user", json_object_new_string(user));
        vigil_http_respond_json(req, 200, o);
        json_object_put(o);
        return;
    }
    gateway_error(req, 404, "no such endpoint");
}

/* Takes one request from the token's bucket; 0 allowed, else the wait. */
static int64_t rate_take(gateway *g, int token_index)
{
    int64_t retry = 0;
    pthread_mutex_lock(&g->rate_mu);
    bool ok = gw_rate_take(&g->buckets[token_index], g->cfg.rate, vigil_mono_ms(), &retry);
    pthread_mutex_unlock(&g->rate_mu);
    return ok ? 0 : (retry > 0 ? retry : 1);
}

/* 429 with Retry-After (whole seconds, rounded up from wait_ms), counted
 * under limit: the one answer of every rate limit. what names the limit
 * and its setting in the detail. */
static void refuse_rate(vigil_http_req *req, int64_t wait_ms, const char *limit, const char *what)
{
    char ra[32];
    snprintf(ra, sizeof ra, "%lld", (long long)((wait_ms + 999) / 1000));
    vigil_http_req_add_header(req, "Retry-After", ra);
    char detail[192];
    snprintf(detail, sizeof detail, "%.150s; retry in %lld ms", what, (long long)wait_ms);
    gateway_refuse(req, 429, limit, detail);
}

void gateway_auth_failed(gateway *g, vigil_http_req *req, const char *reason)
{
    vigil_counter_add("vigil_gateway_auth_failures_total",
                      "requests that failed authentication (401, or 429 once their client address "
                      "failed too often)",
                      NULL, 1);
    /* no IP peer: the all-zero address, one bucket shared by all such */
    unsigned char addr[16];
    vigil_http_req_client_addr(req, addr);
    int64_t retry = 0;
    pthread_mutex_lock(&g->rate_mu);
    bool ok = gw_fail_take(&g->fails, addr, g->cfg.auth_fail_rate, vigil_mono_ms(), &retry);
    pthread_mutex_unlock(&g->rate_mu);
    if (!ok) {
        char what[160];
        snprintf(what, sizeof what,
                 "more than %g failed authentications a second from this address "
                 "(VIGIL_GATEWAY_AUTH_FAIL_RATE)",
                 g->cfg.auth_fail_rate);
        return refuse_rate(req, retry > 0 ? retry : 1, "auth_failures_per_second", what);
    }
    vigil_http_req_add_header(req, "WWW-Authenticate", "Bearer realm=\"vigil\"");
    gateway_error(req, 401, reason);
}

void gateway_handle(void *ctx, vigil_http_req *req)
{
    gateway *g = ctx;
    const char *m = vigil_http_req_method(req);
    const char *path = vigil_http_req_path(req);
    vigil_counter_add("vigil_gateway_http_requests_total", "HTTP requests received", NULL, 1);

    const char *origin = vigil_http_req_header(req, "Origin");
    if (!gw_origin_allowed(g->cfg.origins, origin, vigil_http_req_header(req, "Host")))
        return gateway_error(req, 403, "origin not allowed (VIGIL_GATEWAY_ORIGINS)");
    if (origin && *origin) {
        vigil_http_req_add_header(req, "Access-Control-Allow-Origin", origin);
        vigil_http_req_add_header(req, "Access-Control-Allow-Credentials", "true");
        vigil_http_req_add_header(req, "Vary", "Origin");
    }
    if (is(m, "OPTIONS")) {
        vigil_http_req_add_header(req, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        vigil_http_req_add_header(req, "Access-Control-Allow-Headers",
                                  "Authorization, Content-Type, Last-Event-ID");
        vigil_http_req_add_header(req, "Access-Control-Max-Age", "600");
        vigil_http_respond(req, 204, NULL, "", 0);
        return;
    }
    if (strncmp(path, "/api/", 5) != 0 && !is(path, "/api")) {
        if (is(path, "/login"))
            return gateway_login(g, req);
        return gateway_web(g, req);
    }
    int ti = -1;
    gw_auth_result ar = gw_auth_decide(&g->tokens, vigil_http_req_header(req, "Authorization"),
                                       vigil_http_req_cookie(req, "vigil_session"), &ti);
    if (ar != GW_AUTH_OK)
        return gateway_auth_failed(g, req, gw_auth_reason(ar));
    int64_t wait = rate_take(g, ti);
    if (wait > 0) {
        char what[128];
        snprintf(what, sizeof what, "more than %g requests a second for this token "
                 "(VIGIL_GATEWAY_RATE)", g->cfg.rate);
        return refuse_rate(req, wait, "requests_per_second", what);
    }
    if (vigil_http_req_too_large(req)) {
        char detail[96];
        snprintf(detail, sizeof detail, "the body is larger than %lld bytes (VIGIL_GATEWAY_MAX_BODY)",
                 (long long)g->cfg.max_body);
        return gateway_refuse(req, 413, "body_bytes", detail);
    }
    if (!atomic_load(&g->rt))
        return gateway_error(req, 503, "starting");
    api(g, req, g->tokens.v[ti].user);
}
