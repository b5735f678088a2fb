/* adapter.h - dormancy-monitor's plug into libshared's runtime: config from
 * the environment (config_env.c), input validation and routing to room
 * keys (route.c), and the core's actions turned into effects (apply.c). */
#ifndef DORMANCY_ADAPTER_H
#define DORMANCY_ADAPTER_H
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include <vigil/runtime.h>
#include "dormancy.h"

#define DORMANCY_SERVICE "dormancy-monitor"
#define DORMANCY_HTTP_PORT 9101
/* parsed room records kept by a replica (apply.c), at most so many rooms
 * and so many bytes (a room of 1,000 personas holds about 1.4 MB parsed);
 * a room beyond them is parsed again from its stored text, which is
 * slower, never wrong */
#define DORMANCY_RECORD_CACHE 256
#define DORMANCY_RECORD_CACHE_BYTES (32u * 1024 * 1024)

typedef struct dormancy_service {
    dormancy_config cfg;
} dormancy_service;

/* The typed form of one input handed from route() to apply(). Strings point
 * into the input's JSON body, which outlives it; the arrays are owned. */
typedef struct dormancy_parsed {
    dormancy_event ev;
    vigil_room_message msg;  /* room/{r}/message, owned (mentions) */
    vigil_persona_meta meta; /* persona/{p}/meta, owned (rooms, domains) */
    dormancy_ap_decision *decisions;
    char answer_room[DORMANCY_ID_MAX + 1]; /* an answer's room, from its suggestion_id */
    char clear_id[VIGIL_EVENT_ID_MAX + 1]; /* a cleared meta's ev.id (route.c: clear_id) */
} dormancy_parsed;

extern const char *const DORMANCY_SUBSCRIPTIONS[];
extern const vigil_config_var DORMANCY_CONFIG_VARS[];

int dormancy_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
int dormancy_route(void *ctx, vigil_runtime *rt, const vigil_input *in,
                   char keys[][VIGIL_KEY_MAX], int max_keys, void **parsed, vigil_error *err);
int dormancy_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                   const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
int dormancy_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                      int64_t due_ms, int64_t now_ms, vigil_effects *fx);
void dormancy_free_parsed(void *ctx, void *parsed);
bool dormancy_clear_topic(const char *topic);

#endif
