/* http_api_listen.h - private seam between http.c (health paths) and
 * http_api.c (application routes): http_api.c owns the listener when a
 * service serves an API and hands the health paths back to http.c. */
#ifndef VIGIL_HTTP_API_LISTEN_H
#define VIGIL_HTTP_API_LISTEN_H
#include <microhttpd.h>
#include <netinet/in.h>
#include "vigil/http_api.h"

/* Starts a thread-per-connection listener on sin: /healthz, /readyz and
 * /metrics go to health(health_cls, ...), every other path to api. */
struct MHD_Daemon *vigil_http_api_listen(const vigil_http_api *api, const struct sockaddr_in *sin,
                                         MHD_AccessHandlerCallback health, void *health_cls);
/* Releases what vigil_http_api_listen allocated, after MHD_stop_daemon. */
void vigil_http_api_release(struct MHD_Daemon *d);

#endif
