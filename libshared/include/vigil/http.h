/* http.h - the health and metrics endpoint of every daemon
 * (libmicrohttpd, internal thread):
 *   GET /healthz  200 "ok" while the process makes progress; 503 with a JSON
 *                 {"status":"stalled","reason":...} when the live callback
 *                 (vigil_http_set_live) says it is stuck
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

/* Liveness: returns false with why filled when the process is stuck and
 * should be restarted. Runs on the HTTP thread: must be cheap and
 * thread-safe. May be set once, after start (until then /healthz is 200). */
typedef bool (*vigil_live_fn)(void *ctx, char *why, size_t whylen);
void vigil_http_set_live(vigil_http *h, vigil_live_fn live, void *ctx);
void vigil_http_stop(vigil_http *h);

#endif
