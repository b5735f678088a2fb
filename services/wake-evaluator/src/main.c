/* main.c - wake-evaluator: decides, tier by tier, whether a sleeping
 * persona should wake for a message, runs the dormancy autopilot and
 * keeps the token economics (see README.md). */
#include <string.h>
#include "adapter.h"

/* persona/+/dormancy (fresher levels than the retained state) is not
 * subscribed yet: dormancy-monitor's event ids ("<input>/<room>/<n>")
 * contain '/', which libshared's envelope refuses in an input id, so every
 * one would be rejected. route.c handles the topic; add it here once those
 * ids are accepted. persona/+/state carries every change anyway. */
const char *const WAKE_SUBSCRIPTIONS[] = {"room/+/message", "persona/+/meta", "persona/+/state",
                                          NULL};

/* --help lists the LLM variables beside the service's own. */
static const vigil_config_var *help_vars(void)
{
    static vigil_config_var all[96];
    size_t n = 0;
    for (size_t i = 0; VIGIL_LLM_VARS[i].name && n + 1 < sizeof all / sizeof all[0]; i++)
        all[n++] = VIGIL_LLM_VARS[i];
    for (size_t i = 0; WAKE_CONFIG_VARS[i].name && n + 1 < sizeof all / sizeof all[0]; i++)
        all[n++] = WAKE_CONFIG_VARS[i];
    all[n] = (vigil_config_var){NULL, NULL, NULL};
    return all;
}

int main(int argc, char **argv)
{
    static wake_service svc;
    wake_service_init(&svc);
    vigil_service_def def = {
        .name = WAKE_SERVICE,
        .summary = "tiered wake decisions for sleeping personas, the dormancy autopilot and "
                   "token economics",
        .default_http_port = WAKE_HTTP_PORT,
        .subscriptions = WAKE_SUBSCRIPTIONS,
        .config_vars = help_vars(),
        .configure = wake_configure,
        .route = wake_route,
        .apply = wake_apply,
        .on_timer = wake_on_timer_fx,
        .free_parsed = wake_free_parsed,
        .ctx = &svc,
        .start = wake_start,
        .stop = wake_stop,
    };
    return vigil_runtime_main(argc, argv, &def);
}
