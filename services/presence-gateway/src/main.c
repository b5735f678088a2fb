/* main.c - presence-gateway: the one HTTP door into Vigil (human
 * presence, room messages, council answers, the live Theater stream and
 * page); see README.md. */
#include "adapter.h"

int main(int argc, char **argv)
{
    static gateway g;
    g.api = (vigil_http_api){
        .handle = gateway_handle,
        .ctx = &g,
        .max_body = 65536,
    };
    vigil_service_def def = {
        .name = GATEWAY_SERVICE,
        .summary = "HTTP/SSE door into Vigil: presence heartbeats, room messages, council "
                   "answers, the live Theater stream and page",
        .default_http_port = GATEWAY_HTTP_PORT,
        .subscriptions = GATEWAY_SUBSCRIPTIONS,
        .config_vars = GATEWAY_CONFIG_VARS,
        .configure = gateway_configure,
        .route = gateway_route,
        .apply = gateway_apply,
        .on_timer = gateway_on_timer,
        .clear_topic = gateway_clear_topic, /* a retained snapshot cleared */
        .ctx = &g,
        .start = gateway_start,
        .stop = gateway_stop,
        .http_api = &g.api,
    };
    return vigil_runtime_main(argc, argv, &def);
}
