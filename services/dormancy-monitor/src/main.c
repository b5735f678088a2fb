/* main.c - dormancy-monitor: moves AI personas between active,
 * mention-only, human-only and sleep from room traffic (see README.md). */
#include "adapter.h"

const char *const DORMANCY_SUBSCRIPTIONS[] = {
    "room/+/message", "room/+/presence", "room/+/control", "room/+/autopilot",
    "persona/+/command", "persona/+/meta", "persona/+/wake", NULL};

int main(int argc, char **argv)
{
    static dormancy_service svc;
    dormancy_config_init(&svc.cfg);
    vigil_service_def def = {
        .name = DORMANCY_SERVICE,
        .summary = "auto-dormancy of AI personas: suggest, sleep and wake them from room activity",
        .default_http_port = DORMANCY_HTTP_PORT,
        .subscriptions = DORMANCY_SUBSCRIPTIONS,
        .config_vars = DORMANCY_CONFIG_VARS,
        .configure = dormancy_configure,
        .route = dormancy_route,
        .topic_key = vigil_topic_key_room_message, /* room/{room}/message: that room alone */
        .batch_intake = true, /* route() reads no Redis for room/{room}/message */
        .apply = dormancy_apply,
        .on_timer = dormancy_on_timer,
        .free_parsed = dormancy_free_parsed,
        .clear_topic = dormancy_clear_topic, /* persona/{p}/meta cleared: a meta saying nothing */
        .clear_reapplies = true, /* an identical one after its clear applies again */
        .ctx = &svc,
    };
    return vigil_runtime_main(argc, argv, &def);
}
