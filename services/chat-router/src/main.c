/* main.c - chat-router: keeps every room's conversation log, forwards
 * @mentions to personas as notifications with a chain depth, stops chains
 * at the depth limit, and queues notifications while a room is paused
 * (see README.md). */
#include "adapter.h"

const char *const CHAT_SUBSCRIPTIONS[] = { "room/+/message", "room/+/control", NULL };

int main(int argc, char **argv)
{
    static chat_service svc;
    chat_config_init(&svc.cfg);
    svc.flag_refresh_ms = CHAT_DEFAULT_FLAG_REFRESH_MS;
    vigil_service_def def = {
        .name = CHAT_SERVICE,
        .summary = "conversation log, daemon-side @mention forwarding, pause/resume queue and "
                   "depth limit for rooms",
        .default_http_port = CHAT_HTTP_PORT,
        .subscriptions = CHAT_SUBSCRIPTIONS,
        .config_vars = CHAT_CONFIG_VARS,
        .configure = chat_configure,
        .route = chat_route,
        .topic_key = vigil_topic_key_room_message, /* room/{room}/message: that room alone */
        .batch_intake = true, /* route() reads Redis for a message only to refresh the pause flag */
        .apply = chat_apply_fx,
        .on_timer = NULL,
        .free_parsed = chat_free_parsed,
        .ctx = &svc,
    };
    return vigil_runtime_main(argc, argv, &def);
}
