/* adapter.h - stall-resumer's plug into libshared's runtime: config from
 * the environment (config_env.c), input validation and routing (route.c),
 * the core run on agent and task-pool records (apply.c: intake and the
 * periodic scan timer), and the resume workers that claim a task and send
 * the resume (worker.c on vigil/jobs.h, commit.c). */
#ifndef STALL_ADAPTER_H
#define STALL_ADAPTER_H
#include <stdatomic.h>
#include <vigil/runtime.h>
#include <vigil/workers.h>
#include "stall.h"

#define STALL_SERVICE "stall-resumer"
#define STALL_HTTP_PORT 9106
#define STALL_TASKS_KEY "planner:tasks" /* the task pool record */
#define STALL_AGENT_PREFIX "agent:"     /* agent records: "agent:<a>" */
#define STALL_SCAN_TIMER "scan"
#define STALL_STREAM "resumes"          /* P S ":resumes", the resume job stream */
#define STALL_GROUP "resumers"          /* its consumer group */
#define STALL_JOBS_MAXLEN 100000         /* VIGIL_STALL_JOBS_MAXLEN's default */
#define STALL_PRIORITIES 3              /* open tasks named in a prompt */

typedef struct stall_worker stall_worker;

typedef struct stall_service {
    stall_config cfg;
    vigil_runtime *rt;
    int64_t lease_ms; /* a resume job unacknowledged this long is taken over */
    int64_t jobs_maxlen; /* VIGIL_STALL_JOBS_MAXLEN: cap of the resume job stream */
    char instance[128];
    vigil_workers pool; /* the resume worker thread */
    atomic_int stop;
} stall_service;

typedef enum {
    STALL_IN_ACTIVITY,
    STALL_IN_STATUS,
    STALL_IN_TASK,
    STALL_IN_RETIRE /* agent/{a}/status cleared (an empty retained message) */
} stall_input_kind;

/* The typed form of one input handed from route() to apply(). Strings point
 * into the input's JSON body, except detail_owned. */
typedef struct stall_parsed {
    stall_input_kind kind;
    const char *agent;
    int source;
    const char *detail;
    char *detail_owned; /* an object detail, serialized */
    bool in_tool;
    stall_status status;
    stall_task task;
} stall_parsed;

extern const char *const STALL_SUBSCRIPTIONS[];
extern const vigil_config_var STALL_CONFIG_VARS[];

int stall_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
bool stall_clear_topic(const char *topic);
int stall_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                int max_keys, void **parsed, vigil_error *err);
int stall_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
int stall_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                   int64_t due_ms, int64_t now_ms, vigil_effects *fx);
void stall_free_parsed(void *ctx, void *parsed);

/* Loads an agent record (a fresh one when state_json is NULL; when it is
 * unreadable, logged and reported in *unreadable, which may be NULL, a
 * stand-in numbering its resumes from now: stall_agent_replace). NULL
 * only when out of memory. */
stall_agent *stall_load_agent(const char *key, const char *state_json, int64_t now,
                              bool *unreadable);
/* Publishes o (released) on topic; -1 when o is NULL or on failure. */
int stall_publish_obj(vigil_effects *fx, const char *topic, json_object *o, bool retain);

/* The resume workers (worker.c). */
int stall_start(void *ctx, vigil_runtime *rt);
void stall_stop(void *ctx);

/* One resume job carried out (commit.c): check that the resume is still
 * due (*skipped when not: nothing is claimed or sent), claim a task in the
 * pool, then commit the resume on the agent, deduplicated by the job id. */
vigil_decide_result stall_commit_resume(stall_service *svc, vigil_runtime_conn *conn,
                                        const stall_job *job, int64_t now, bool *skipped);

#endif
