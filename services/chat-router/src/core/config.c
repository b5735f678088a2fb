/* config.c - the core's defaults and the names of the room's Redis
 * structures (shared with the CLI so both sides agree on them). */
#include <stdio.h>
#include <string.h>
#include "chat.h"
#include <vigil/str.h>

void chat_config_init(chat_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_depth = CHAT_DEFAULT_MAX_DEPTH;
    c->depth_memory = CHAT_DEFAULT_DEPTH_MEMORY;
    c->max_mentions = CHAT_DEFAULT_MAX_MENTIONS;
    c->log_maxlen = CHAT_DEFAULT_LOG_MAXLEN;
    c->log_max_age_ms = CHAT_DEFAULT_LOG_MAX_AGE_MS;
}

void chat_log_name(const char *room, char *out, size_t outlen)
{
    vigil_concat(out, outlen, CHAT_LOG_PREFIX, room, (const char *)NULL);
}

void chat_queue_name(const char *room, char *out, size_t outlen)
{
    vigil_concat(out, outlen, CHAT_QUEUE_PREFIX, room, (const char *)NULL);
}
