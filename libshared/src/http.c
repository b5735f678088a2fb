/* http.c - /healthz, /readyz and /metrics over libmicrohttpd (see http.h).
 *
 * One internal polling thread serves every request; the handlers only
 * format text (the ready callback and the metrics registry must be cheap
 * and thread-safe, since they run on that thread). */
#include "vigil/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http_api_listen.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/metrics_backlog.h"
#include "vigil/metrics_process.h"

#define CT_TEXT "text/plain; charset=utf-8"
#define CT_JSON "application/json"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

struct vigil_http {
    struct MHD_Daemon *d;
    vigil_ready_fn ready;
    void *ctx;
    int port;
    vigil_live_fn live; /* written once by vigil_http_set_live, read atomically */
    void *live_ctx;
};

/* Parses "host:port", ":port" or "port" into an IPv4 socket address. An
 * empty host means every interface (0.0.0.0), as in ":8080"; "localhost" is
 * 127.0.0.1; other names are refused so we never block on DNS at startup. */
static int parse_addr(const char *addr, struct sockaddr_in *sin, char *err, size_t errlen)
{
    char host[64] = "";
    const char *port_s = addr;
    if (!addr || !*addr) {
        snprintf(err, errlen, "empty HTTP address");
        return -1;
    }
    const char *colon = strrchr(addr, ':');
    if (colon) {
        size_t hl = (size_t)(colon - addr);
        if (hl >= sizeof host) {
            snprintf(err, errlen, "HTTP address '%s': host too long", addr);
            return -1;
        }
        memcpy(host, addr, hl);
        host[hl] = '\0';
        port_s = colon + 1;
    }
    char *end = NULL;
    errno = 0;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || errno || !end || *end || port < 0 || port > 65535) {
        snprintf(err, errlen, "HTTP address '%s': expected host:port, :port or port (0-65535)",
                 addr);
        return -1;
    }
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    if (host[0] == '\0') {
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (strcmp(host, "localhost") == 0) {
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
        snprintf(err, errlen,
                 "HTTP address '%s': host must be an IPv4 address, 'localhost' or empty", addr);
        return -1;
    }
    return 0;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *body,
                                 enum MHD_ResponseMemoryMode mode, const char *ctype)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, mode);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Answers on the first call for every request: none of our endpoints
 * reads a body, and a refused method needs none either. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    vigil_http *h = cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;

    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
                         MHD_RESPMEM_PERSISTENT, CT_TEXT);

    if (strcmp(url, "/healthz") == 0) {
        vigil_live_fn live = __atomic_load_n(&h->live, __ATOMIC_ACQUIRE);
        char why[256] = "";
        if (!live || live(h->live_ctx, why, sizeof why))
            return send_text(c, MHD_HTTP_OK, "ok\n", MHD_RESPMEM_PERSISTENT, CT_TEXT);
        why[sizeof why - 1] = '\0';
        json_object *o = json_object_new_object();
        json_object_object_add(o, "status", json_object_new_string("stalled"));
        json_object_object_add(o, "reason", json_object_new_string(why[0] ? why : "unknown"));
        char *body = vigil_json_dump(o);
        json_object_put(o);
        if (!body)
            return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "{\"status\":\"stalled\"}\n",
                             MHD_RESPMEM_PERSISTENT, CT_JSON);
        return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, body, MHD_RESPMEM_MUST_FREE, CT_JSON);
    }

    if (strcmp(url, "/readyz") == 0) {
        char why[256] = "";
        if (!h->ready || h->ready(h->ctx, why, sizeof why))
            return send_text(c, MHD_HTTP_OK, "ready\n", MHD_RESPMEM_PERSISTENT, CT_TEXT);
        why[sizeof why - 1] = '\0';
        char body[300];
        snprintf(body, sizeof body, "not ready: %s\n", why[0] ? why : "unknown");
        return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, body, MHD_RESPMEM_MUST_COPY, CT_TEXT);
    }

    if (strcmp(url, "/metrics") == 0) {
        /* The readiness check sets vigil_ready: run it here too, so the
         * gauge (and the alert on it) is current when nothing polls /readyz. */
        char why[256];
        if (h->ready)
            (void)h->ready(h->ctx, why, sizeof why);
        vigil_metrics_process_collect();
        vigil_metrics_backlog_collect();
        char *text = vigil_metrics_render();
        if (!text)
            return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render metrics\n",
                             MHD_RESPMEM_PERSISTENT, CT_TEXT);
        /* MUST_FREE hands text to MHD, which frees it with free(). */
        return send_text(c, MHD_HTTP_OK, text, MHD_RESPMEM_MUST_FREE, CT_METRICS);
    }

    return send_text(c, MHD_HTTP_NOT_FOUND, "not found\n", MHD_RESPMEM_PERSISTENT, CT_TEXT);
}

vigil_http *vigil_http_start(const char *addr, vigil_ready_fn ready, void *ctx, char *err,
                             size_t errlen)
{
    return vigil_http_start_api(addr, ready, ctx, NULL, err, errlen);
}

vigil_http *vigil_http_start_api(const char *addr, vigil_ready_fn ready, void *ctx,
                                 const struct vigil_http_api *api, char *err, size_t errlen)
{
    struct sockaddr_in sin;
    if (err && errlen)
        err[0] = '\0';
    if (parse_addr(addr, &sin, err, errlen) != 0)
        return NULL;
    vigil_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->ready = ready;
    h->ctx = ctx;
    errno = 0;
    h->d = api ? vigil_http_api_listen(api, &sin, handle, h) : MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                            ntohs(sin.sin_port), NULL, NULL, handle, h,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
                            MHD_OPTION_END);
    if (!h->d) {
        int e = errno;
        snprintf(err, errlen, "cannot serve HTTP on %s: %s", addr,
                 e ? strerror(e) : "libmicrohttpd failed to start");
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? (int)info->port : (int)ntohs(sin.sin_port);
    vigil_log(VIGIL_LOG_INFO, "http: serving /healthz /readyz /metrics on %s (port %d)", addr,
              h->port);
    return h;
}

void vigil_http_set_live(vigil_http *h, vigil_live_fn live, void *ctx)
{
    if (!h)
        return;
    h->live_ctx = ctx;
    __atomic_store_n(&h->live, live, __ATOMIC_RELEASE);
}

int vigil_http_port(const vigil_http *h)
{
    return h ? h->port : -1;
}

void vigil_http_stop(vigil_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    vigil_http_api_release(h->d);
    free(h);
}
