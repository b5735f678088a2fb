/* http_api.h - application routes beside /healthz /readyz /metrics on a
 * daemon's one HTTP listener (libmicrohttpd, a thread per connection).
 *
 * A service that serves an API gives a vigil_http_api (see runtime.h,
 * vigil_service_def.http_api). Every request whose path is not one of the
 * health paths reaches api->handle once, with its whole body read (at most
 * api->max_body bytes: a longer body is discarded and flagged, so the
 * handler can answer 413). The handler answers with one of the reply
 * functions below; without a reply the request gets 500.
 *
 * Streams (Server-Sent Events): vigil_http_respond_stream hands MHD a reader
 * that runs on the connection's own thread, so a reader may block (bounded:
 * it must come back for shutdown) without delaying any other client. */
#ifndef VIGIL_HTTP_API_H
#define VIGIL_HTTP_API_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <json-c/json.h>

typedef struct vigil_http_req vigil_http_req;

typedef struct vigil_http_api {
    void (*handle)(void *ctx, vigil_http_req *req);
    void *ctx;
    size_t max_body;      /* larger bodies are flagged (vigil_http_req_too_large) */
    unsigned max_clients; /* concurrent connections (0 = 1024) */
} vigil_http_api;

const char *vigil_http_req_method(const vigil_http_req *req);
const char *vigil_http_req_path(const vigil_http_req *req);
/* Query argument, request header (case-insensitive) or cookie; NULL if absent. */
const char *vigil_http_req_query(const vigil_http_req *req, const char *name);
const char *vigil_http_req_header(const vigil_http_req *req, const char *name);
const char *vigil_http_req_cookie(const vigil_http_req *req, const char *name);
/* The body (NUL-terminated copy; *len its length). Empty when too large. */
const char *vigil_http_req_body(const vigil_http_req *req, size_t *len);
bool vigil_http_req_too_large(const vigil_http_req *req);
/* The peer's IP address as 16 bytes (an IPv4 address as ::ffff:a.b.c.d),
 * the key a service limits a client by. Returns false, addr zeroed, when
 * the connection has no IP peer. */
bool vigil_http_req_client_addr(const vigil_http_req *req, unsigned char addr[16]);

/* Adds a response header (copied) to the reply that follows. Returns 0/-1. */
int vigil_http_req_add_header(vigil_http_req *req, const char *name, const char *value);

/* Answers with body[0..len) (copied). Returns 0, or -1 if MHD refused. */
int vigil_http_respond(vigil_http_req *req, unsigned status, const char *content_type,
                     const char *body, size_t len);
/* Answers with o serialized (application/json; charset=utf-8). */
int vigil_http_respond_json(vigil_http_req *req, unsigned status, json_object *o);

/* A stream reader: writes up to max bytes into buf and returns how many
 * (> 0), or VIGIL_HTTP_STREAM_END (clean end) / VIGIL_HTTP_STREAM_ERROR
 * (abort the connection). It should block until it has something to say
 * rather than return 0. */
#define VIGIL_HTTP_STREAM_END ((ssize_t)-1)
#define VIGIL_HTTP_STREAM_ERROR ((ssize_t)-2)
typedef ssize_t (*vigil_http_stream_fn)(void *cls, char *buf, size_t max);

/* Answers with an endless body produced by fn(cls); free_fn(cls) runs once
 * the connection is done (also when this call fails). idle_timeout_s closes
 * the connection when nothing could be sent for that long (0 = the
 * listener's default). */
int vigil_http_respond_stream(vigil_http_req *req, unsigned status, const char *content_type,
                            vigil_http_stream_fn fn, void *cls, void (*free_fn)(void *),
                            unsigned idle_timeout_s);

#endif
