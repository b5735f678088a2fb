/* http.h - the health and metrics endpoint of every daemon
 * (libmicrohttpd, internal thread):
 *   GET /healthz  200 "ok" while the process runs
 *   GET /readyz   200 when ready() says so, else 503 with the reason
 *   GET /metrics  Prometheus text (vigil_metrics_render), version=0.0.4
 * Other paths: 404. Other methods: 405. */
#ifndef VIGIL_HTTP_H
#define VIGIL_HTTP_H
#include <stdbool.h>
#include <stddef.h>

typedef struct vigil_http vigil_http;

/* Fills why (<= whylen) when not ready. */
typedef bool (*vigil_ready_fn)(void *ctx, char *why, size_t whylen);

/* addr: "host:port", ":port" or "port". Port 0 picks a free port (see
 * vigil_http_port). Returns NULL with err. */
vigil_http *vigil_http_start(const char *addr, vigil_ready_fn ready, void *ctx,
                             char *err, size_t errlen);
/* As vigil_http_start, and every other path goes to api (http_api.h);
 * api NULL is vigil_http_start. */
struct vigil_http_api;
vigil_http *vigil_http_start_api(const char *addr, vigil_ready_fn ready, void *ctx,
                                 const struct vigil_http_api *api, char *err, size_t errlen);
int vigil_http_port(const vigil_http *h);
void vigil_http_stop(vigil_http *h);

#endif
