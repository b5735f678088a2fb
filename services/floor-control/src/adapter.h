/* adapter.h - floor-control's plug into libshared's runtime: config from
 * the environment (config_env.c), input validation and routing to room
 * keys (route.c), and the core's decision turned into effects (apply.c). */
#ifndef FLOOR_ADAPTER_H
#define FLOOR_ADAPTER_H
#include <stdatomic.h>
#include <vigil/llm.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include <vigil/runtime.h>
#include <vigil/workers.h>
#include "floor.h"

#define FLOOR_SERVICE "floor-control"
#define FLOOR_HTTP_PORT 9108
/* Set below the service prefix holding the rooms a persona is in (so a
 * meta that drops a room reaches that room): P S ":rooms:" persona. */
#define FLOOR_MEMBER_SET "rooms:"
/* The durable stream of LLM jobs below the service prefix, its group. */
#define FLOOR_JOBS "jobs"
#define FLOOR_JOBS_GROUP "floor"
#define FLOOR_JOBS_MAXLEN 100000 /* VIGIL_FLOOR_JOBS_MAXLEN's default */

/* The core keeps ids in buffers of libshared's validated sizes: an id it
 * is handed is never cut. */
_Static_assert(FLOOR_ID_MAX == VIGIL_ID_MAX, "persona and room ids");
_Static_assert(FLOOR_MSG_ID_MAX == VIGIL_EVENT_ID_MAX, "message ids");

typedef struct floor_worker floor_worker;

typedef struct floor_service {
    floor_config cfg;
    vigil_llm_config llm;
    bool llm_on; /* a budget and an endpoint: ask the LLM */
    int64_t jobs_maxlen; /* VIGIL_FLOOR_JOBS_MAXLEN: cap of the LLM job stream */
    vigil_runtime *rt;
    vigil_workers pool; /* the LLM worker thread (none when the LLM is off) */
    atomic_int stop; /* the job loop's stop flag */
} floor_service;

typedef enum { FLOOR_IN_MESSAGE, FLOOR_IN_META, FLOOR_IN_STATE, FLOOR_IN_DELETE } floor_input_kind;

/* The typed form of one input handed from route() to apply(), read by
 * libshared's one reader per message (vigil/msg_room.h, msg_persona.h).
 * Strings point into the input's JSON body, which outlives it; the
 * readers' arrays are released by floor_free_parsed(). */
typedef struct floor_parsed {
    floor_input_kind kind;
    const char *persona;        /* meta, state: from the topic */
    vigil_room_message room_msg; /* message, as read */
    floor_message msg;          /* message, as the core sees it */
    vigil_persona_meta pmeta;   /* meta, as read */
    floor_meta meta;            /* meta, as the core sees it */
    vigil_persona_state state;  /* state */
    int64_t if_inactive_since;  /* delete: 0 = unconditional */
} floor_parsed;

extern const char *const FLOOR_SUBSCRIPTIONS[];
extern const vigil_config_var FLOOR_CONFIG_VARS[];

int floor_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
bool floor_clear_topic(const char *topic);
int floor_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                int max_keys, void **parsed, vigil_error *err);
int floor_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
void floor_free_parsed(void *ctx, void *parsed);
int floor_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                   int64_t due_ms, int64_t now_ms, vigil_effects *fx);

/* The room record as the core's room (a fresh one for an unreadable
 * record, logged). NULL only when memory runs out. */
floor_room *floor_load_room(const char *key, const char *state_json);
/* Decides message m in room r and adds room/{r}/floor and every
 * persona/{p}/floor to fx. source "rules" or "llm"; fallback says why the
 * rules decided when the LLM was asked (NULL otherwise). */
int floor_publish_decision(const floor_service *svc, const floor_room *r, const floor_message *m,
                           const char *source, const char *fallback, int64_t now, vigil_effects *fx);
/* The room record into fx. */
int floor_save_room(const floor_room *r, vigil_effects *fx);

/* The LLM worker thread (llm_worker.c): start/stop for the runtime. */
int floor_worker_start(void *ctx, vigil_runtime *rt);
void floor_worker_stop(void *ctx);

#endif
