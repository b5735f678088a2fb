/* http_api.c - application routes and streams on the daemon's HTTP
 * listener (see http_api.h).
 *
 * With an API the listener runs a thread per connection: a Server-Sent
 * Events reader blocks on its own thread, so a slow or vanished client
 * holds nothing but its own thread and socket (libmicrohttpd's reader
 * callback cannot wait in the shared polling thread without busy-waiting
 * the whole daemon). */
#include "http_api_listen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/json.h"
#include "vigil/log.h"

#define DEFAULT_MAX_CLIENTS 1024
#define MAX_HEADERS 16
#define CT_JSON "application/json; charset=utf-8"

typedef struct listener {
    vigil_http_api api;
    MHD_AccessHandlerCallback health;
    void *health_cls;
} listener;

struct vigil_http_req {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    char *body;
    size_t len, cap;
    bool too_large;
    bool replied;
    int nheaders;
    char *hname[MAX_HEADERS], *hvalue[MAX_HEADERS];
};

/* The listener pointer is kept per daemon so release() can free it. */
typedef struct daemon_entry {
    struct MHD_Daemon *d;
    listener *l;
    struct daemon_entry *next;
} daemon_entry;
static daemon_entry *g_daemons;

/* libmicrohttpd's own messages ("Closing connection (application error
 * generating response)" when a stream is aborted on purpose) as debug
 * lines of our JSON log instead of raw text on stderr. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    vigil_log(VIGIL_LOG_DEBUG, "http: %s", line);
}

static bool is_health_path(const char *url)
{
    return strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 ||
           strcmp(url, "/metrics") == 0;
}

static void req_free(vigil_http_req *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nheaders; i++) {
        free(r->hname[i]);
        free(r->hvalue[i]);
    }
    free(r->body);
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    if (con_cls && *con_cls) {
        req_free(*con_cls);
        *con_cls = NULL;
    }
}

/* Appends an upload chunk, keeping at most max_body bytes; beyond that
 * the body is dropped and flagged so the handler answers 413 after the
 * client finished sending (answering mid-upload would reset it). */
static void body_append(vigil_http_req *r, size_t max, const char *data, size_t n)
{
    if (r->too_large)
        return;
    if (r->len + n > max) {
        r->too_large = true;
        free(r->body);
        r->body = NULL;
        r->len = r->cap = 0;
        return;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *b = realloc(r->body, cap);
        if (!b) {
            r->too_large = true;
            return;
        }
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
}

static enum MHD_Result dispatch(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    listener *l = cls;
    if (is_health_path(url))
        return l->health(l->health_cls, c, url, method, version, upload_data, upload_data_size,
                         con_cls);
    vigil_http_req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->conn = c;
        r->method = method;
        r->path = url;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        body_append(r, l->api.max_body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->replied)
        return MHD_YES;
    l->api.handle(l->api.ctx, r);
    if (!r->replied) {
        static const char body[] = "{\"error\":\"internal\",\"detail\":\"no answer\"}";
        if (vigil_http_respond(r, 500, CT_JSON, body, sizeof body - 1) != 0)
            return MHD_NO;
    }
    return MHD_YES;
}

struct MHD_Daemon *vigil_http_api_listen(const vigil_http_api *api, const struct sockaddr_in *sin,
                                         MHD_AccessHandlerCallback health, void *health_cls)
{
    listener *l = calloc(1, sizeof *l);
    daemon_entry *e = calloc(1, sizeof *e);
    if (!l || !e) {
        free(l);
        free(e);
        return NULL;
    }
    l->api = *api;
    l->health = health;
    l->health_cls = health_cls;
    unsigned limit = api->max_clients ? api->max_clients : DEFAULT_MAX_CLIENTS;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG,
        ntohs(sin->sin_port), NULL, NULL, dispatch, l, MHD_OPTION_SOCK_ADDR,
        (const struct sockaddr *)sin, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
        MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024), MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
        NULL, MHD_OPTION_END);
    if (!d) {
        free(l);
        free(e);
        return NULL;
    }
    e->d = d;
    e->l = l;
    e->next = g_daemons;
    g_daemons = e;
    return d;
}

void vigil_http_api_release(struct MHD_Daemon *d)
{
    for (daemon_entry **p = &g_daemons; *p; p = &(*p)->next) {
        if ((*p)->d == d) {
            daemon_entry *e = *p;
            *p = e->next;
            free(e->l);
            free(e);
            return;
        }
    }
}

const char *vigil_http_req_method(const vigil_http_req *req)
{
    return req->method;
}

const char *vigil_http_req_path(const vigil_http_req *req)
{
    return req->path;
}

const char *vigil_http_req_query(const vigil_http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *vigil_http_req_header(const vigil_http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *vigil_http_req_cookie(const vigil_http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND, name);
}

const char *vigil_http_req_body(const vigil_http_req *req, size_t *len)
{
    if (len)
        *len = req->body ? req->len : 0;
    return req->body ? req->body : "";
}

bool vigil_http_req_too_large(const vigil_http_req *req)
{
    return req->too_large;
}

bool vigil_http_req_client_addr(const vigil_http_req *req, unsigned char addr[16])
{
    memset(addr, 0, 16);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET6) {
        memcpy(addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return true;
    }
    if (sa->sa_family == AF_INET) {
        addr[10] = addr[11] = 0xff;
        memcpy(addr + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return true;
    }
    return false;
}

int vigil_http_req_add_header(vigil_http_req *req, const char *name, const char *value)
{
    if (req->nheaders >= MAX_HEADERS)
        return -1;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return -1;
    }
    req->hname[req->nheaders] = n;
    req->hvalue[req->nheaders] = v;
    req->nheaders++;
    return 0;
}

static int queue(vigil_http_req *req, unsigned status, const char *content_type,
                 struct MHD_Response *resp)
{
    if (!resp)
        return -1;
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    for (int i = 0; i < req->nheaders; i++)
        MHD_add_response_header(resp, req->hname[i], req->hvalue[i]);
    enum MHD_Result rc = MHD_queue_response(req->conn, status, resp);
    MHD_destroy_response(resp);
    req->replied = true;
    return rc == MHD_YES ? 0 : -1;
}

int vigil_http_respond(vigil_http_req *req, unsigned status, const char *content_type,
                     const char *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return queue(req, status, content_type, resp);
}

int vigil_http_respond_json(vigil_http_req *req, unsigned status, json_object *o)
{
    char *s = vigil_json_dump(o);
    if (!s)
        return -1;
    int rc = vigil_http_respond(req, status, CT_JSON, s, strlen(s));
    free(s);
    return rc;
}

typedef struct stream_ctx {
    vigil_http_stream_fn fn;
    void *cls;
    void (*free_fn)(void *);
} stream_ctx;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream_ctx *s = cls;
    ssize_t n = s->fn(s->cls, buf, max);
    if (n == VIGIL_HTTP_STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void stream_free(void *cls)
{
    stream_ctx *s = cls;
    if (s->free_fn)
        s->free_fn(s->cls);
    free(s);
}

int vigil_http_respond_stream(vigil_http_req *req, unsigned status, const char *content_type,
                            vigil_http_stream_fn fn, void *cls, void (*free_fn)(void *),
                            unsigned idle_timeout_s)
{
    stream_ctx *s = calloc(1, sizeof *s);
    if (!s) {
        if (free_fn)
            free_fn(cls);
        return -1;
    }
    s->fn = fn;
    s->cls = cls;
    s->free_fn = free_fn;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return -1;
    }
    if (idle_timeout_s)
        MHD_set_connection_option(req->conn, MHD_CONNECTION_OPTION_TIMEOUT, idle_timeout_s);
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return queue(req, status, content_type, resp);
}
