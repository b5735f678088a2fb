/* main.c - council: the autonomous SENSE -> PLAN -> ACT loop of a
 * four-persona council per user (see README.md). */
#include <string.h>
#include "adapter.h"

const char *const COUNCIL_SUBSCRIPTIONS[] = {"council/+/control", "council/+/answer",
                                             "room/+/message", "room/+/presence", NULL};

/* --help lists the LLM variables beside the service's own. */
static const vigil_config_var *help_vars(void)
{
    static vigil_config_var all[64];
    size_t n = 0;
    for (size_t i = 0; VIGIL_LLM_VARS[i].name && n + 1 < sizeof all / sizeof all[0]; i++)
        all[n++] = VIGIL_LLM_VARS[i];
    for (size_t i = 0; COUNCIL_CONFIG_VARS[i].name && n + 1 < sizeof all / sizeof all[0]; i++)
        all[n++] = COUNCIL_CONFIG_VARS[i];
    all[n] = (vigil_config_var){NULL, NULL, NULL};
    return all;
}

int main(int argc, char **argv)
{
    static council_service svc;
    council_service_init(&svc);
    vigil_service_def def = {
        .name = COUNCIL_SERVICE,
        .summary = "autonomous council sessions: SENSE -> PLAN -> ACT with Polaris, Aurora, Vega "
                   "and Sol, the action router, circuit breaker, questions and A2A delegation",
        .default_http_port = COUNCIL_HTTP_PORT,
        .subscriptions = COUNCIL_SUBSCRIPTIONS,
        .config_vars = help_vars(),
        .configure = council_configure,
        .route = council_route_input,
        .apply = council_apply,
        .on_timer = council_on_timer_fx,
        .free_parsed = council_free_parsed,
        .ctx = &svc,
        .start = council_start,
        .stop = council_stop,
    };
    return vigil_runtime_main(argc, argv, &def);
}
