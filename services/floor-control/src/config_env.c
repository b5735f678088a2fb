/* config_env.c - the VIGIL_FLOOR_* variables into the core's floor_config. */
#include <stdio.h>
#include <vigil/config.h>
#include <vigil/log.h>
#include "adapter.h"

const vigil_config_var FLOOR_CONFIG_VARS[] = {
    {"VIGIL_FLOOR_K", "2", "personas granted the floor per human message (mentions come on top); 0 = off"},
    {"VIGIL_FLOOR_MAX_PERSONAS", "256",
     "personas kept per room view (past it the one learned about longest ago is dropped, said on sys/floor-control/error)"},
    {"VIGIL_FLOOR_WAKE_TRIGGERS", FLOOR_WAKE_TRIGGERS_DEFAULT,
     "fallback for a persona state without `cause` (older dormancy-monitor): these triggers "
     "count as dormancy from human absence"},
    {"VIGIL_FLOOR_ON_AI", "0", "1 = decide the floor for AI messages too"},
    {"VIGIL_FLOOR_LLM_BUDGET_MS", "0",
     "> 0 (and VIGIL_LLM_URL set): ask the LLM which personas fit, wait at most this long, then the rules decide"},
    {"VIGIL_FLOOR_JOBS_MAXLEN", "100000",
     "cap of the LLM job stream (past it the oldest unfinished jobs are dropped, counted in vigil_stream_trimmed_total)"},
    {NULL, NULL, NULL}};

int floor_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    (void)common;
    floor_service *svc = ctx;
    floor_config *c = &svc->cfg;
    floor_config_init(c);
    int64_t k, max, budget;
    char triggers[FLOOR_MAX_WAKE_TRIGGERS * FLOOR_TRIGGER_MAX];
    if (vigil_env_int64("VIGIL_FLOOR_K", c->k, 0, 1000, &k, err, errlen) ||
        vigil_env_int64("VIGIL_FLOOR_MAX_PERSONAS", c->max_personas, 1, 10000, &max, err, errlen) ||
        vigil_env_string("VIGIL_FLOOR_WAKE_TRIGGERS", FLOOR_WAKE_TRIGGERS_DEFAULT, triggers,
                         sizeof triggers, err, errlen) ||
        vigil_human_wake_config_load(&c->wake, err, errlen) ||
        vigil_env_bool("VIGIL_FLOOR_ON_AI", c->on_ai, &c->on_ai, err, errlen) ||
        vigil_env_int64("VIGIL_FLOOR_LLM_BUDGET_MS", 0, 0, 600000, &budget, err, errlen) ||
        vigil_env_int64("VIGIL_FLOOR_JOBS_MAXLEN", FLOOR_JOBS_MAXLEN, 100, 100000000, &svc->jobs_maxlen,
                        err, errlen) ||
        vigil_llm_config_load(&svc->llm, err, errlen))
        return -1;
    c->llm_budget_ms = budget;
    svc->llm_on = budget > 0 && svc->llm.url[0];
    if (budget > 0 && !svc->llm_on)
        vigil_log(VIGIL_LOG_WARN, "VIGIL_FLOOR_LLM_BUDGET_MS is %lld but VIGIL_LLM_URL is empty: "
                                  "the floor is chosen by the rules alone",
                  (long long)budget);
    if (svc->llm_on) {
        /* the budget is strict: no attempt, retry or backoff goes past it */
        svc->llm.total_budget_ms = budget;
        if (svc->llm.timeout_ms > budget)
            svc->llm.timeout_ms = budget;
        if (svc->llm.connect_timeout_ms > svc->llm.timeout_ms)
            svc->llm.connect_timeout_ms = svc->llm.timeout_ms;
    }
    if (floor_config_set_wake_triggers(c, triggers) != 0) {
        snprintf(err, errlen,
                 "VIGIL_FLOOR_WAKE_TRIGGERS: expected up to %d comma-separated triggers of at most %d "
                 "characters, got '%s'",
                 FLOOR_MAX_WAKE_TRIGGERS, FLOOR_TRIGGER_MAX - 1, triggers);
        return -1;
    }
    c->k = (int)k;
    c->max_personas = (int)max;
    return 0;
}
