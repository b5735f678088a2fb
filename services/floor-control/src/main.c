/* main.c - floor-control: decides, before anyone generates, which (at most
 * K) personas answer a human message (see README.md). */
#include <stdlib.h>
#include "adapter.h"

const char *const FLOOR_SUBSCRIPTIONS[] = {"room/+/message", "room/+/control", "persona/+/meta",
                                           "persona/+/state", NULL};

/* Copies a NULL-terminated variable table to out (when not NULL) and
 * returns its length: counting and copying walk the table alike. */
static size_t copy_vars(vigil_config_var *out, const vigil_config_var *table)
{
    size_t n = 0;
    for (const vigil_config_var *v = table; v->name; v++, n++)
        if (out)
            out[n] = *v;
    return n;
}

/* --help: the service's variables, then the LLM's it reads, in a table
 * sized to hold both (a fixed one would drop lines as libshared's grows).
 * Kept for the process's life. */
static const vigil_config_var *config_vars(void)
{
    static vigil_config_var *vars;
    size_t n = copy_vars(NULL, FLOOR_CONFIG_VARS) + copy_vars(NULL, VIGIL_LLM_VARS);
    vars = calloc(n + 1, sizeof *vars); /* zeroed: the terminator */
    if (!vars)
        return FLOOR_CONFIG_VARS;
    copy_vars(vars + copy_vars(vars, FLOOR_CONFIG_VARS), VIGIL_LLM_VARS);
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
