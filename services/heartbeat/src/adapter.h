/* adapter.h - heartbeat's plug into libshared's runtime: the environment
 * (config_env.c), time zone data loaded for the core (tz_cache.c), input
 * validation and routing to persona keys (route.c), the core's decisions
 * turned into effects (apply.c), and the job worker that calls the model
 * and commits each run's outcome (worker.c on vigil/job_loop.h). */
#ifndef HEARTBEAT_ADAPTER_H
#define HEARTBEAT_ADAPTER_H
#include <stdatomic.h>
#include <pthread.h>
#include <vigil/llm.h>
#include <vigil/runtime.h>
#include <vigil/workers.h>
#include "heartbeat.h"

#define HB_SERVICE "heartbeat"
#define HB_HTTP_PORT 9104
#define HB_STREAM "jobs:"           /* P S ":jobs:<shard>": runs waiting for the model */
#define HB_STREAM_LABEL "jobs"      /* its name in vigil_stream_trimmed_total, every shard's */
#define HB_GROUP "workers"          /* its consumer group */
#define HB_ROOM_INDEX "room-personas:" /* P S ":room-personas:<room>": personas serving it */
#define HB_TIMER "run"              /* the one timer of a persona key */
#define HB_PATH_MAX 512
/* Limit label (vigil_limit_refusals_total{limit}) of the heartbeats one
 * room message reaches: VIGIL_ROUTE_MAX_KEYS, the runtime's keys per input;
 * and what that limit counts, as its refusals say it. */
#define HB_LIMIT_ROOM "heartbeats_per_room"
#define HB_LIMIT_ROOM_MEMBERS \
    "heartbeats one room message reaches (VIGIL_ROUTE_MAX_KEYS, compile time)"

typedef struct hb_worker hb_worker;

typedef struct hb_service {
    hb_config core;
    vigil_llm_config llm;
    int64_t lease_ms;        /* VIGIL_HEARTBEAT_JOB_LEASE_MS (0 = derived) */
    int64_t jobs_maxlen;
    char zoneinfo[HB_PATH_MAX];      /* VIGIL_HEARTBEAT_ZONEINFO */
    char checklist_dir[HB_PATH_MAX]; /* VIGIL_HEARTBEAT_CHECKLIST_DIR */
    char instance[128];
    char stream[32];         /* HB_STREAM + this replica's shard index */
    vigil_runtime *rt;
    vigil_workers pool;      /* the run worker (worker.c) */
    atomic_int stop;
} hb_service;

typedef enum {
    HB_IN_MESSAGE,
    HB_IN_CONFIG,
    HB_IN_CONFIG_CLEARED, /* heartbeat/{p}/config cleared (an empty retained message) */
    HB_IN_LEVELS          /* persona/{p}/state; cleared, it holds no levels */
} hb_in_kind;

/* The typed form of one input, from route() to apply(). */
typedef struct hb_parsed {
    hb_in_kind kind;
    hb_message msg;          /* strings point into the input's body */
    hb_persona_cfg cfg;      /* owned */
    int room_members;        /* config: heartbeats in cfg.room's index (> max_keys: more) */
    hb_room_level *levels;   /* owned */
    int n_levels;
} hb_parsed;

extern const char *const HB_SUBSCRIPTIONS[];
extern const vigil_config_var HB_CONFIG_VARS[];

void hb_service_init(hb_service *svc);
int hb_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
bool hb_clear_topic(const char *topic);
int hb_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
             int max_keys, void **parsed, vigil_error *err);
int hb_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
             const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
int hb_on_timer_fx(void *ctx, const char *key, const char *state_json, const char *timer_name,
                   int64_t due_ms, int64_t now_ms, vigil_effects *fx);
void hb_free_parsed(void *ctx, void *parsed);
int hb_start(void *ctx, vigil_runtime *rt);
void hb_stop(void *ctx);

/* route.c: a config refused by the limit of heartbeats per room
 * (HB_LIMIT_ROOM) said in the room's terms ("room 'r' already has the 64
 * heartbeats one room message reaches ...: the config is refused"), counted
 * (vigil_limit_note) and set in err with reason limit. Returns -1. A room
 * message past the limit is refused by vigil_route_members_noted. */
int hb_room_limit(const char *room, vigil_error *err);

/* apply.c: the core's hb_out written into fx for persona key. */
/* The record of persona key loaded into *s (json NULL: a new one)
 * and *out made empty, for one decision; -1 with why when the record is
 * unreadable (nothing to close then). hb_record_close frees both. */
int hb_record_open(hb_state *s, hb_out *out, const char *key, const char *json, char *why,
                   size_t whylen);
void hb_record_close(hb_state *s, hb_out *out);
int hb_out_to_fx(const hb_service *svc, const char *persona, const hb_state *s, hb_out *out,
                 vigil_effects *fx);

/* checklist_file.c: the checklist file name below
 * VIGIL_HEARTBEAT_CHECKLIST_DIR (a relative name without '..', at most
 * HB_CHECKLIST_FILE_NAME_MAX bytes), read whole into *text (malloc'd,
 * UTF-8, at most HB_CHECKLIST_MAX bytes): VIGIL_REJECT_NONE, or why not
 * (bad_value, or no_memory) with why. Read when a config arrives and again
 * before each run. */
vigil_reject_reason hb_checklist_read(const hb_service *svc, const char *name, char **text,
                                      char *why, size_t whylen);

/* tz_cache.c: zones by IANA name, loaded once from the zoneinfo folder
 * (the core's hb_tz_resolver). Thread-safe; zones live until exit. */
const hb_tz *hb_tz_cache_lookup(void *svc, const char *name);
void hb_tz_cache_free(void);

#endif
