/* main.c - stall-resumer: decides from many activity signals, with a
 * confidence, whether an agent has stalled, and resumes a stalled one with
 * a task claimed for it (see README.md). */
#include "adapter.h"

const char *const STALL_SUBSCRIPTIONS[] = {"agent/+/activity", "agent/+/status", "planner/task",
                                           NULL};

int main(int argc, char **argv)
{
    static stall_service svc;
    stall_config_init(&svc.cfg);
    vigil_service_def def = {
        .name = STALL_SERVICE,
        .summary = "agent stall detection from tiered activity signals, the fail-open resume "
                   "guard, resume prompts with auto-claimed planner tasks",
        .default_http_port = STALL_HTTP_PORT,
        .subscriptions = STALL_SUBSCRIPTIONS,
        .config_vars = STALL_CONFIG_VARS,
        .configure = stall_configure,
        .route = stall_route,
        .apply = stall_apply,
        .on_timer = stall_on_timer,
        .free_parsed = stall_free_parsed,
        .clear_topic = stall_clear_topic, /* agent/{a}/status cleared: the agent retired */
        .clear_reapplies = true, /* an identical one after its clear applies again */
        .ctx = &svc,
        .start = stall_start,
        .stop = stall_stop,
    };
    return vigil_runtime_main(argc, argv, &def);
}
