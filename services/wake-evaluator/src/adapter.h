/* adapter.h - wake-evaluator's plug into libshared's runtime: config from
 * the environment (config_env.c), input validation and routing to room
 * keys (route.c), the core's outputs turned into effects (sink_fx.c,
 * apply.c), and the job workers that call the LLM and commit decisions
 * (worker.c on libshared's vigil/jobs.h, commit.c). */
#ifndef WAKE_ADAPTER_H
#define WAKE_ADAPTER_H
#include <stdatomic.h>
#include <vigil/llm.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include <vigil/runtime.h>
#include <vigil/workers.h>
#include "wake.h"

#define WAKE_SERVICE "wake-evaluator"
#define WAKE_HTTP_PORT 9102
#define WAKE_STREAM "jobs"          /* P S ":jobs", the durable job stream */
#define WAKE_GROUP "workers"        /* its consumer group */
#define WAKE_MEMBER_SET "persona-rooms:" /* P S ":persona-rooms:<p>": rooms holding p */
#define WAKE_MAX_WORKERS 16
#define WAKE_RECORD_CACHE 256                       /* parsed room records kept */
#define WAKE_RECORD_CACHE_BYTES (32u * 1024 * 1024) /* and their memory bound */

typedef struct wake_worker wake_worker;

typedef struct wake_service {
    wake_config core;
    vigil_llm_config llm;
    int workers;            /* VIGIL_WAKE_WORKERS */
    int64_t lease_ms;       /* VIGIL_WAKE_JOB_LEASE_MS */
    int64_t jobs_maxlen;    /* VIGIL_WAKE_JOBS_MAXLEN */
    int max_inflight;       /* VIGIL_WAKE_MAX_INFLIGHT (0 = 2 x VIGIL_LLM_CONCURRENCY) */
    bool persona_model;     /* VIGIL_WAKE_PERSONA_MODEL: ask the persona's own model */
    int64_t block_ms;       /* XREADGROUP BLOCK while idle */
    char instance[128];
    vigil_runtime *rt;
    vigil_workers pool; /* the job worker threads */
    atomic_int stop;
} wake_service;

/* The typed form of one input handed from route() to apply(). Strings
 * point into the input's JSON body, which outlives it; arrays are owned. */
typedef enum { WAKE_IN_MESSAGE, WAKE_IN_META, WAKE_IN_STATE, WAKE_IN_DORMANCY } wake_in_kind;

typedef struct wake_parsed {
    wake_in_kind kind;
    wake_message msg;
    wake_meta meta;
    const char *persona;
    vigil_room_message room_msg;     /* owned: what msg points into */
    vigil_persona_meta persona_meta; /* owned: what meta points into */
    const char *const *rooms;        /* meta rooms (in persona_meta) */
    int n_rooms;
    vigil_persona_state state;       /* persona/{p}/state, owned */
    int64_t state_ts;
    wake_level level;       /* persona/{p}/dormancy */
    int64_t since;
    const char *trigger;
} wake_parsed;

extern const char *const WAKE_SUBSCRIPTIONS[];
extern const vigil_config_var WAKE_CONFIG_VARS[];

void wake_service_init(wake_service *svc);
int wake_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
bool wake_clear_topic(const char *topic);
int wake_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
               int max_keys, void **parsed, vigil_error *err);
int wake_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
               const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
int wake_on_timer_fx(void *ctx, const char *key, const char *state_json, const char *timer_name,
                     int64_t due_ms, int64_t now_ms, vigil_effects *fx);
void wake_free_parsed(void *ctx, void *parsed);
int wake_start(void *ctx, vigil_runtime *rt);
void wake_stop(void *ctx);

/* sink_fx.c: the core's sink writing into a vigil_effects for one room. */
typedef struct wake_fx_ctx {
    const wake_service *svc;
    vigil_effects *fx;
    const char *room;
    const vigil_input *in; /* the input decided on; NULL for timers and jobs */
    int64_t now;
    int n_limits;          /* limit refusals in this decision (their event ids) */
} wake_fx_ctx;
void wake_sink_fx(wake_sink *sink, wake_fx_ctx *ctx, bool intake);

/* Loads the room record, runs fn on it with a sink into fx, stores it. */
typedef int (*wake_room_fn)(wake_room *r, const wake_sink *sink, int64_t now, void *arg);
int wake_with_room(const wake_service *svc, const char *key, const char *state_json,
                   const vigil_input *in,
                   int64_t now, vigil_effects *fx, bool intake, wake_room_fn fn, void *arg);

/* commit.c: a finished job committed into its room through
 * vigil_runtime_decide. */
vigil_decide_result wake_commit_decision(wake_service *svc, vigil_runtime_conn *conn,
                                         const wake_decision *d, int64_t now);
typedef struct wake_ap_outcome {
    const char *job;
    const char *room;
    const char *content;  /* the model's answer, or NULL when the call failed */
    size_t len;
    const char *fallback; /* why the LLM was not used (content NULL) */
    int64_t tokens;       /* -1 none */
} wake_ap_outcome;
vigil_decide_result wake_commit_autopilot(wake_service *svc, vigil_runtime_conn *conn,
                                          const wake_ap_outcome *o, int64_t now);

#endif
