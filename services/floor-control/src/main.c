/* main.c - floor-control: decides, before anyone generates, which (at most
 * K) personas answer a human message (see README.md). */
#include "adapter.h"

const char *const FLOOR_SUBSCRIPTIONS[] = {"room/+/message", "room/+/control", "persona/+/meta",
                                           "persona/+/state", NULL};

/* --help: the service's variables, then the LLM's it reads. */
static const vigil_config_var *config_vars(void)
{
    static vigil_config_var vars[64];
    size_t n = 0;
    const vigil_config_var *tables[] = {FLOOR_CONFIG_VARS, VIGIL_LLM_VARS};
    for (size_t t = 0; t < 2; t++)
        for (const vigil_config_var *v = tables[t]; v->name && n + 1 < 64; v++)
            vars[n++] = *v;
    return vars;
}

int main(int argc, char **argv)
{
    static floor_service svc;
    floor_config_init(&svc.cfg);
    vigil_llm_config_init(&svc.llm);
    vigil_service_def def = {
        .name = FLOOR_SERVICE,
        .summary = "floor control: at most K personas answer a human message, chosen before "
                   "anyone generates",
        .default_http_port = FLOOR_HTTP_PORT,
        .subscriptions = FLOOR_SUBSCRIPTIONS,
        .config_vars = config_vars(),
        .configure = floor_configure,
        .route = floor_route,
        .apply = floor_apply,
        .on_timer = floor_on_timer,
        .free_parsed = floor_free_parsed,
        .start = floor_worker_start,
        .stop = floor_worker_stop,
        .ctx = &svc,
    };
    return vigil_runtime_main(argc, argv, &def);
}
