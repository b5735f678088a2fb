/* main.c - wake-evaluator: decides, tier by tier, whether a sleeping
 * persona should wake for a message, runs the dormancy autopilot and
 * keeps the token economics (see README.md). */
#include <string.h>
#include <vigil/config_vars.h>
#include "adapter.h"

/* persona/+/dormancy (fresher levels than the retained state) is not
 * subscribed yet: dormancy-monitor's event ids ("<input>/<room>/<n>")
 * contain '/', which libshared's envelope refuses in an input id, so every
 * one would be rejected. route.c handles the topic; add it here once those
 * ids are accepted. persona/+/state carries every change anyway. */
const char *const WAKE_SUBSCRIPTIONS[] = {"room/+/message", "persona/+/meta", "persona/+/state",
                                          NULL};

int main(int argc, char **argv)
{
    static vigil_config_var help[96]; /* --help: the LLM variables, then the service's */
    static wake_service svc;
    wake_service_init(&svc);
    vigil_service_def def = {
        .name = WAKE_SERVICE,
        .summary = "tiered wake decisions for sleeping personas, the dormancy autopilot and "
                   "token economics",
        .default_http_port = WAKE_HTTP_PORT,
        .subscriptions = WAKE_SUBSCRIPTIONS,
        .config_vars = vigil_config_vars_join(help, sizeof help / sizeof help[0], VIGIL_LLM_VARS,
                                              WAKE_CONFIG_VARS),
        .configure = wake_configure,
        .route = wake_route,
        .topic_key = vigil_topic_key_room_message, /* room/{room}/message: that room alone */
        .batch_intake = true, /* route() reads no Redis for room/{room}/message */
        .apply = wake_apply,
        .on_timer = wake_on_timer_fx,
        .free_parsed = wake_free_parsed,
        .clear_topic = wake_clear_topic, /* persona/{p}/meta, /state: said nothing */
        .clear_reapplies = true, /* an identical one after its clear applies again */
        .ctx = &svc,
        .start = wake_start,
        .stop = wake_stop,
    };
    return vigil_runtime_main(argc, argv, &def);
}
