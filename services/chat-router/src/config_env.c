/* config_env.c - chat-router's own environment variables (the common ones
 * are read by libshared). */
#include <stdio.h>
#include "adapter.h"

const vigil_config_var CHAT_CONFIG_VARS[] = {
    { "VIGIL_CHAT_MAX_DEPTH", "100",
      "chain depth at which forwarding stops (a system message says so; 0-1000000, 0 = "
      "nothing is forwarded)" },
    { "VIGIL_CHAT_LOG_MAXLEN", "10000", "room log retention: entries kept per room (approximate)" },
    { "VIGIL_CHAT_LOG_MAX_AGE_MS", "604800000",
      "room log retention: entries older than this are trimmed (0 = no age limit)" },
    { "VIGIL_CHAT_DEPTH_MEMORY", "256",
      "message ids per room whose depth is remembered (to find the depth of a reply_to)" },
    { "VIGIL_CHAT_MAX_MENTIONS", "32", "personas notified per message at most" },
    { "VIGIL_CHAT_FLAG_REFRESH_MS", "1000",
      "how often the global pause flag is re-read from Redis (controls update it at once)" },
    { NULL, NULL, NULL },
};

int chat_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    (void)common;
    chat_service *svc = ctx;
    int64_t depth, maxlen, age, memory, mentions, refresh;
    if (vigil_env_int64("VIGIL_CHAT_MAX_DEPTH", CHAT_DEFAULT_MAX_DEPTH, 0, 1000000, &depth, err,
                        errlen) != 0 ||
        vigil_env_int64("VIGIL_CHAT_LOG_MAXLEN", CHAT_DEFAULT_LOG_MAXLEN, 1, INT64_MAX / 2, &maxlen,
                        err, errlen) != 0 ||
        vigil_env_int64("VIGIL_CHAT_LOG_MAX_AGE_MS", CHAT_DEFAULT_LOG_MAX_AGE_MS, 0, INT64_MAX / 2,
                        &age, err, errlen) != 0 ||
        vigil_env_int64("VIGIL_CHAT_DEPTH_MEMORY", CHAT_DEFAULT_DEPTH_MEMORY, 1, 100000, &memory,
                        err, errlen) != 0 ||
        vigil_env_int64("VIGIL_CHAT_MAX_MENTIONS", CHAT_DEFAULT_MAX_MENTIONS, 1, 1000, &mentions,
                        err, errlen) != 0 ||
        vigil_env_int64("VIGIL_CHAT_FLAG_REFRESH_MS", CHAT_DEFAULT_FLAG_REFRESH_MS, 0, 3600000,
                        &refresh, err, errlen) != 0)
        return -1;
    svc->cfg.max_depth = depth;
    svc->cfg.log_maxlen = maxlen;
    svc->cfg.log_max_age_ms = age;
    svc->cfg.depth_memory = (int)memory;
    svc->cfg.max_mentions = (int)mentions;
    svc->flag_refresh_ms = refresh;
    chat_count_room_deleted(0); /* the series exists from the start */
    return 0;
}
