/* adapter.h - council's plug into libshared's runtime: config from the
 * environment (config_env.c), input validation and routing to user keys
 * (route.c), the core's outputs turned into effects (sink_fx.c, apply.c),
 * and the job workers that ask the four personas at once, delegate
 * `research:` over A2A and commit each loop (worker.c, commit.c). */
#ifndef COUNCIL_ADAPTER_H
#define COUNCIL_ADAPTER_H
#include <stdatomic.h>
#include <vigil/llm.h>
#include <vigil/runtime.h>
#include <vigil/workers.h>
#include "council.h"

#define COUNCIL_SERVICE "council"
#define COUNCIL_HTTP_PORT 9105
#define COUNCIL_STREAM "jobs"   /* P S ":jobs": the durable loop jobs */
#define COUNCIL_GROUP "workers" /* its consumer group */
#define COUNCIL_MAX_WORKERS 16
#define COUNCIL_JOBS_MAXLEN 100000 /* VIGIL_COUNCIL_JOBS_MAXLEN's default */

typedef struct council_worker council_worker;

typedef struct council_service {
    council_config core;
    vigil_llm_config llm;
    char a2a_url[512];             /* VIGIL_COUNCIL_A2A_URL */
    char a2a_token[512];           /* VIGIL_COUNCIL_A2A_TOKEN */
    council_a2a_method a2a_method; /* VIGIL_COUNCIL_A2A_METHOD */
    int64_t a2a_timeout_ms;        /* VIGIL_COUNCIL_A2A_TIMEOUT_MS */
    int workers;                   /* VIGIL_COUNCIL_WORKERS */
    int64_t lease_ms;              /* VIGIL_COUNCIL_JOB_LEASE_MS */
    int64_t jobs_maxlen;           /* VIGIL_COUNCIL_JOBS_MAXLEN: cap of the loop job stream */
    int max_tokens;                /* VIGIL_COUNCIL_MAX_TOKENS */
    int64_t block_ms;
    char instance[128];
    vigil_runtime *rt;
    vigil_workers pool; /* the job worker threads */
    atomic_int stop;
} council_service;

/* The typed input handed from route() to apply(). Strings point into the
 * input's JSON body. */
typedef enum {
    COUNCIL_IN_CONTROL,
    COUNCIL_IN_ANSWER,
    COUNCIL_IN_MESSAGE,
    COUNCIL_IN_PRESENCE
} council_in_kind;

typedef struct council_parsed {
    council_in_kind kind;
    council_control ctl;
    const char *session;     /* answer */
    const char *question_id; /* answer */
    const char *answer;      /* answer */
    const char *room;        /* message, presence */
    const char *text;        /* message */
    council_presence presence; /* presence */
    int64_t presence_ts;       /* presence: the report's time */
    int64_t presence_activity; /* presence: its last_activity, else its time */
} council_parsed;

extern const char *const COUNCIL_SUBSCRIPTIONS[];
extern const vigil_config_var COUNCIL_CONFIG_VARS[];

void council_service_init(council_service *svc);
int council_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
int council_route_input(void *ctx, vigil_runtime *rt, const vigil_input *in,
                        char keys[][VIGIL_KEY_MAX], int max_keys, void **parsed, vigil_error *err);
int council_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
int council_on_timer_fx(void *ctx, const char *key, const char *state_json, const char *timer_name,
                        int64_t due_ms, int64_t now_ms, vigil_effects *fx);
void council_free_parsed(void *ctx, void *parsed);
int council_start(void *ctx, vigil_runtime *rt);
void council_stop(void *ctx);

/* sink_fx.c: the core's sink writing into a vigil_effects. */
typedef struct council_fx_ctx {
    vigil_effects *fx;
    int64_t jobs_maxlen; /* the loop job stream's cap */
    int failed;
} council_fx_ctx;
council_sink council_sink_fx(council_fx_ctx *ctx);

/* Loads (or creates) the user record, runs fn on it, stores it when fn
 * changed it. fn returns a council_rc; REFUSED fills why. */
typedef council_rc (*council_user_fn)(council_user *u, const council_sink *sink, void *arg,
                                      char *why, size_t whylen);
int council_with_user(const council_service *svc, const char *key, const char *state_json,
                      vigil_effects *fx, council_user_fn fn, void *arg, vigil_error *err);

/* commit.c: a finished loop committed through vigil_runtime_decide. */
vigil_decide_result council_commit_outcome(council_service *svc, vigil_runtime_conn *conn,
                                           const char *user, const council_outcome *o,
                                           int64_t now);

#endif
