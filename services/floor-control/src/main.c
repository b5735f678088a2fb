/* main.c - floor-control: decides, before anyone generates, which (at most
 * K) personas answer a human message (see README.md). */
#include "adapter.h"

const char *const FLOOR_SUBSCRIPTIONS[] = {"room/+/message", "persona/+/meta", "persona/+/state",
                                           NULL};

int main(int argc, char **argv)
{
    static floor_service svc;
    floor_config_init(&svc.cfg);
    vigil_service_def def = {
        .name = FLOOR_SERVICE,
        .summary = "floor control: at most K personas answer a human message, chosen before "
                   "anyone generates",
        .default_http_port = FLOOR_HTTP_PORT,
        .subscriptions = FLOOR_SUBSCRIPTIONS,
        .config_vars = FLOOR_CONFIG_VARS,
        .configure = floor_configure,
        .route = floor_route,
        .apply = floor_apply,
        .free_parsed = floor_free_parsed,
        .ctx = &svc,
    };
    return vigil_runtime_main(argc, argv, &def);
}
