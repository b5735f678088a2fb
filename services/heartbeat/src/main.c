/* main.c - heartbeat: personas that wake themselves now and then, read the
 * recent context, reason with a checklist and either stay silent or send
 * one proactive message worth the interruption (see README.md). */
#include <string.h>
#include <vigil/config_vars.h>
#include "adapter.h"

const char *const HB_SUBSCRIPTIONS[] = {"heartbeat/+/config", "room/+/message", "persona/+/state",
                                        NULL};
/* runs wait in one job stream per shard index (adapter.h) */
static const char *const HB_SHARD_STREAMS[] = {HB_STREAM, NULL};

int main(int argc, char **argv)
{
    static vigil_config_var help[96]; /* --help: the LLM variables, then the service's */
    static hb_service svc;
    hb_service_init(&svc);
    vigil_service_def def = {
        .name = HB_SERVICE,
        .summary = "proactive heartbeat: personas check in on their own, only when it is worth "
                   "the interruption",
        .default_http_port = HB_HTTP_PORT,
        .subscriptions = HB_SUBSCRIPTIONS,
        .config_vars = vigil_config_vars_join(help, sizeof help / sizeof help[0], VIGIL_LLM_VARS,
                                              HB_CONFIG_VARS),
        .configure = hb_configure,
        .route = hb_route,
        .apply = hb_apply,
        .on_timer = hb_on_timer_fx,
        .free_parsed = hb_free_parsed,
        .clear_topic = hb_clear_topic, /* the retained config and persona state */
        .clear_reapplies = true, /* an identical one after its clear applies again */
        .ctx = &svc,
        .start = hb_start,
        .stop = hb_stop,
        .shard_streams = HB_SHARD_STREAMS,
    };
    int rc = vigil_runtime_main(argc, argv, &def);
    hb_tz_cache_free();
    return rc;
}
