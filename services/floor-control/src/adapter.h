/* adapter.h - floor-control's plug into libshared's runtime: config from
 * the environment (config_env.c), input validation and routing to room
 * keys (route.c), and the core's decision turned into effects (apply.c). */
#ifndef FLOOR_ADAPTER_H
#define FLOOR_ADAPTER_H
#include <vigil/runtime.h>
#include "floor.h"

#define FLOOR_SERVICE "floor-control"
#define FLOOR_HTTP_PORT 9108
/* Set below the service prefix holding the rooms a persona is in (so a
 * meta that drops a room reaches that room): P S ":rooms:" persona. */
#define FLOOR_MEMBER_SET "rooms:"

typedef struct floor_service {
    floor_config cfg;
} floor_service;

typedef enum { FLOOR_IN_MESSAGE, FLOOR_IN_META, FLOOR_IN_STATE } floor_input_kind;

/* The typed form of one input handed from route() to apply(). Strings
 * point into the input's JSON body, which outlives it; arrays are owned. */
typedef struct floor_parsed {
    floor_input_kind kind;
    const char *persona; /* meta, state: from the topic */
    floor_message msg;   /* message */
    floor_meta meta;     /* meta */
    const char **mentions, **rooms, **domains;
    json_object *room_map; /* state: {room: {level, trigger, ...}} */
} floor_parsed;

extern const char *const FLOOR_SUBSCRIPTIONS[];
extern const vigil_config_var FLOOR_CONFIG_VARS[];

int floor_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
int floor_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                int max_keys, void **parsed, vigil_error *err);
int floor_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
void floor_free_parsed(void *ctx, void *parsed);

#endif
