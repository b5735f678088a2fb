/* main.c - floor-control: decides, before anyone generates, which (at most
 * K) personas answer a human message (see README.md). */
#include <vigil/config_vars.h>
#include "adapter.h"

const char *const FLOOR_SUBSCRIPTIONS[] = {"room/+/message", "room/+/control", "persona/+/meta",
                                           "persona/+/state", NULL};

int main(int argc, char **argv)
{
    /* --help: the service's variables, dormancy-monitor's it reads, then the LLM's */
    static vigil_config_var help[96], own[64];
    static floor_service svc;
    floor_config_init(&svc.cfg);
    vigil_llm_config_init(&svc.llm);
    vigil_service_def def = {
        .name = FLOOR_SERVICE,
        .summary = "floor control: at most K personas answer a human message, chosen before "
                   "anyone generates",
        .default_http_port = FLOOR_HTTP_PORT,
        .subscriptions = FLOOR_SUBSCRIPTIONS,
        .config_vars = vigil_config_vars_join(
            help, sizeof help / sizeof help[0],
            vigil_config_vars_join(own, sizeof own / sizeof own[0], FLOOR_CONFIG_VARS,
                                   VIGIL_HUMAN_WAKE_VARS),
            VIGIL_LLM_VARS),
        .configure = floor_configure,
        .route = floor_route,
        .apply = floor_apply,
        .on_timer = floor_on_timer,
        .free_parsed = floor_free_parsed,
        .clear_topic = floor_clear_topic, /* persona/{p}/meta, /state: said nothing */
        .clear_reapplies = true, /* an identical one after its clear applies again */
        .start = floor_worker_start,
        .stop = floor_worker_stop,
        .ctx = &svc,
    };
    return vigil_runtime_main(argc, argv, &def);
}
