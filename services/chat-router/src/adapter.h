/* adapter.h - chat-router's plug into libshared's runtime: config from the
 * environment (config_env.c), input validation and routing to room keys
 * (route.c), the global pause flag and the held-room sets read from Redis
 * (flags.c), and the core's actions turned into effects (apply.c). */
#ifndef CHAT_ADAPTER_H
#define CHAT_ADAPTER_H
#include <vigil/msg_room.h>
#include <vigil/runtime.h>
#include "chat.h"

#define CHAT_HTTP_PORT 9103
#define CHAT_DEFAULT_FLAG_REFRESH_MS 1000
#define CHAT_RECORD_CACHE 256                       /* parsed room records kept */
#define CHAT_RECORD_CACHE_BYTES (32u * 1024 * 1024) /* and their memory bound */

typedef struct chat_service {
    chat_config cfg;
    int64_t flag_refresh_ms; /* VIGIL_CHAT_FLAG_REFRESH_MS */
    /* The global pause flag as this replica knows it (intake thread only):
     * updated when it routes a pause-all/resume-all, re-read from Redis
     * when older than flag_refresh_ms. */
    bool paused_all;
    int64_t paused_all_read_ms; /* monotonic; 0 = never read */
} chat_service;

/* The typed form of one input handed from route() to apply(). Strings point
 * into the input's JSON body, which outlives it; the rest is owned. */
typedef struct chat_parsed {
    chat_input in;
    vigil_room_message msg; /* owned: what in.msg points into */
    char *log_json;
    char topic_room[VIGIL_ID_MAX + 1];
} chat_parsed;

extern const char *const CHAT_SUBSCRIPTIONS[];
extern const vigil_config_var CHAT_CONFIG_VARS[];

int chat_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
int chat_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
               int max_keys, void **parsed, vigil_error *err);
int chat_apply_fx(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
void chat_free_parsed(void *ctx, void *parsed);
/* Adds n to vigil_rejected_total{reason="room_deleted"} (apply.c): the
 * refusals of messages to deleted rooms, with the runtime's rejections. */
void chat_count_room_deleted(int n);

/* flags.c. Both return 0, or VIGIL_ROUTE_RETRY when Redis is unreachable. */
int chat_flag_paused_all(chat_service *svc, vigil_runtime *rt, bool *out);
void chat_flag_note(chat_service *svc, bool paused_all);
/* Adds to keys[n..max) every room that is paused one by one or has queued
 * notifications; *more is set when some did not fit. Returns the new count
 * or VIGIL_ROUTE_RETRY. */
int chat_held_rooms(vigil_runtime *rt, char keys[][VIGIL_KEY_MAX], int n, int max, bool *more);

#endif
