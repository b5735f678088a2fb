/* web.c - the Theater page (no token needed: it holds no data; every
 * /api/ call it makes does) and GET /login?token=..., which turns a token
 * into the vigil_session cookie and sends the browser to the page. */
#include <stdio.h>
#include <string.h>
#include "adapter.h"
#include "web_assets.h"

void gateway_web(gateway *g, vigil_http_req *req)
{
    (void)g;
    const char *m = vigil_http_req_method(req);
    if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) {
        vigil_http_req_add_header(req, "Allow", "GET, HEAD");
        return gateway_error(req, 405, "the page is read-only");
    }
    const char *path = vigil_http_req_path(req);
    if (strcmp(path, "/") == 0)
        path = "/index.html";
    for (const gw_asset *a = GW_ASSETS; a->path; a++) {
        if (strcmp(a->path, path) == 0) {
            vigil_http_req_add_header(req, "X-Content-Type-Options", "nosniff");
            vigil_http_respond(req, 200, a->content_type, (const char *)a->data, a->len);
            return;
        }
    }
    gateway_error(req, 404, "no such page");
}

void gateway_login(gateway *g, vigil_http_req *req)
{
    const char *m = vigil_http_req_method(req);
    if (strcmp(m, "GET") != 0) {
        vigil_http_req_add_header(req, "Allow", "GET");
        return gateway_error(req, 405, "GET /login?token=...");
    }
    const char *token = vigil_http_req_query(req, "token");
    if (!token || !*token)
        return gateway_error(req, 400, "token= is required");
    if (gw_tokens_find(&g->tokens, token) < 0)
        return gateway_auth_failed(g, req, "unknown token");
    /* a token may hold characters a cookie value cannot (; , " \):
     * the cookie carries it encoded, and gw_auth_decide decodes it */
    char value[GW_COOKIE_VALUE_MAX], cookie[GW_COOKIE_VALUE_MAX + 128];
    if (gw_cookie_encode(token, value, sizeof value) != 0)
        return gateway_error(req, 500, "the token does not fit in the session cookie");
    snprintf(cookie, sizeof cookie, "vigil_session=%s; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000%s",
             value, g->cfg.cookie_secure ? "; Secure" : "");
    vigil_http_req_add_header(req, "Set-Cookie", cookie);
    vigil_http_req_add_header(req, "Location", "/");
    static const char body[] = "{\"ok\":true,\"location\":\"/\"}";
    vigil_http_respond(req, 302, "application/json; charset=utf-8", body, sizeof body - 1);
}
