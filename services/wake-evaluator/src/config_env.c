/* config_env.c - the environment of wake-evaluator: VIGIL_LLM_* (libshared),
 * the dormancy variables it shares with dormancy-monitor (same names, same
 * meaning), and its own VIGIL_WAKE_* / VIGIL_AUTOPILOT_*. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <vigil/config.h>
#include <vigil/names.h>
#include <vigil/log.h>
#include "adapter.h"

const vigil_config_var WAKE_CONFIG_VARS[] = {
    {"VIGIL_DORMANCY_AUTO_WAKE", "1",
     "a human message wakes sleepers by rule (dormancy-monitor): those are not evaluated"},
    {"VIGIL_DORMANCY_HUMAN_WAKES", "absent",
     "'absent': human messages wake only absence-caused sleep; 'all': every sleeper"},
    {"VIGIL_DORMANCY_LLM_WAKE", "1", "ask the LLM for smart/mid personas (0 = rules decide)"},
    {"VIGIL_DORMANCY_WAKE_CONFIDENCE", "0.7", "smart tier wakes only above this confidence"},
    {"VIGIL_WAKE_WORKERS", "1", "job worker threads (each runs many LLM calls at once)"},
    {"VIGIL_WAKE_JOB_LEASE_MS", "60000", "a job unacknowledged this long is taken over (XAUTOCLAIM)"},
    {"VIGIL_WAKE_JOBS_MAXLEN", "100000", "cap of the job stream (unfinished jobs beyond it are dropped)"},
    {"VIGIL_WAKE_MAX_INFLIGHT", "0", "jobs held per worker; 0 = 2 x VIGIL_LLM_CONCURRENCY"},
    {"VIGIL_WAKE_PERSONA_MODEL", "0", "1 = ask the model named in the persona's meta"},
    {"VIGIL_WAKE_ON_SYSTEM", "0", "1 = evaluate sleepers on system messages too"},
    {"VIGIL_WAKE_MAX_PERSONAS", "1000", "personas tracked per room"},
    {"VIGIL_WAKE_SMART_MAX_TOKENS", "200", "max_tokens of the smart prompt"},
    {"VIGIL_WAKE_MID_MAX_TOKENS", "50", "max_tokens of the mid prompt"},
    {"VIGIL_AUTOPILOT", "1", "run the dormancy autopilot (0 = off)"},
    {"VIGIL_AUTOPILOT_INTERVAL_MS", "60000", "autopilot run interval while a room is active"},
    {"VIGIL_AUTOPILOT_MIN_GAP_MS", "10000", "an early run (jump) comes at least this long after the last"},
    {"VIGIL_AUTOPILOT_JUMP_FACTOR", "2", "jump: velocity or AI/human ratio x this since the last run"},
    {"VIGIL_AUTOPILOT_JUMP_VELOCITY", "5", "... and velocity at least this (msg/min, 5 min window)"},
    {"VIGIL_AUTOPILOT_JUMP_RATIO", "3", "... or the AI/human ratio above this"},
    {"VIGIL_AUTOPILOT_HUMAN_PRESENT_MS", "300000", "a human who wrote this recently is present"},
    {"VIGIL_AUTOPILOT_MAX_TOKENS", "300", "max_tokens of the autopilot prompt"},
    {NULL, NULL, NULL}};

void wake_service_init(wake_service *svc)
{
    memset(svc, 0, sizeof *svc);
    wake_config_init(&svc->core);
    vigil_llm_config_init(&svc->llm);
    svc->workers = 1;
    svc->lease_ms = 60000;
    svc->jobs_maxlen = 100000;
    svc->block_ms = 200;
    atomic_store(&svc->stop, 0);
}

int wake_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    wake_service *svc = ctx;
    wake_config *c = &svc->core;
    int wakes = 0;
    if (vigil_llm_config_load(&svc->llm, err, errlen) != 0 ||
        vigil_env_bool("VIGIL_DORMANCY_AUTO_WAKE", c->auto_wake, &c->auto_wake, err, errlen) ||
        vigil_env_choice("VIGIL_DORMANCY_HUMAN_WAKES", vigil_human_wakes_names, 0, &wakes, err, errlen) ||
        vigil_env_bool("VIGIL_DORMANCY_LLM_WAKE", c->llm_wake, &c->llm_wake, err, errlen) ||
        vigil_env_double("VIGIL_DORMANCY_WAKE_CONFIDENCE", c->wake_confidence, 0.0, 1.0,
                         &c->wake_confidence, err, errlen) ||
        vigil_env_int("VIGIL_WAKE_WORKERS", 1, 1, WAKE_MAX_WORKERS, &svc->workers, err, errlen) ||
        vigil_env_ms("VIGIL_WAKE_JOB_LEASE_MS", svc->lease_ms, 1000, &svc->lease_ms, err, errlen) ||
        vigil_env_int64("VIGIL_WAKE_JOBS_MAXLEN", svc->jobs_maxlen, 100, 100000000,
                        &svc->jobs_maxlen, err, errlen) ||
        vigil_env_int("VIGIL_WAKE_MAX_INFLIGHT", 0, 0, 100000, &svc->max_inflight, err, errlen) ||
        vigil_env_bool("VIGIL_WAKE_PERSONA_MODEL", false, &svc->persona_model, err, errlen) ||
        vigil_env_bool("VIGIL_WAKE_ON_SYSTEM", c->evaluate_system, &c->evaluate_system, err,
                       errlen) ||
        vigil_env_int("VIGIL_WAKE_MAX_PERSONAS", c->max_personas, 1, 100000, &c->max_personas, err,
                errlen) ||
        vigil_env_int("VIGIL_WAKE_SMART_MAX_TOKENS", c->smart_max_tokens, 1, 100000,
                &c->smart_max_tokens, err, errlen) ||
        vigil_env_int("VIGIL_WAKE_MID_MAX_TOKENS", c->mid_max_tokens, 1, 100000, &c->mid_max_tokens,
                err, errlen) ||
        vigil_env_bool("VIGIL_AUTOPILOT", c->autopilot, &c->autopilot, err, errlen) ||
        vigil_env_ms("VIGIL_AUTOPILOT_INTERVAL_MS", c->autopilot_interval_ms, 100,
                     &c->autopilot_interval_ms, err, errlen) ||
        vigil_env_ms("VIGIL_AUTOPILOT_MIN_GAP_MS", c->autopilot_min_gap_ms, 0, &c->autopilot_min_gap_ms,
                     err, errlen) ||
        vigil_env_double("VIGIL_AUTOPILOT_JUMP_FACTOR", c->jump_factor, 1.0, 1000.0,
                         &c->jump_factor, err, errlen) ||
        vigil_env_double("VIGIL_AUTOPILOT_JUMP_VELOCITY", c->jump_velocity, 0.0, 1e6,
                         &c->jump_velocity, err, errlen) ||
        vigil_env_double("VIGIL_AUTOPILOT_JUMP_RATIO", c->jump_ratio, 0.0, 1e6, &c->jump_ratio,
                         err, errlen) ||
        vigil_env_ms("VIGIL_AUTOPILOT_HUMAN_PRESENT_MS", c->human_present_ms, 0, &c->human_present_ms,
                     err, errlen) ||
        vigil_env_int("VIGIL_AUTOPILOT_MAX_TOKENS", c->autopilot_max_tokens, 1, 100000,
                &c->autopilot_max_tokens, err, errlen))
        return -1;
    c->human_wakes_all = wakes == 1; /* vigil_human_wakes_names: absent, all */
    c->llm_enabled = svc->llm.url[0] != '\0';
    if (svc->max_inflight == 0)
        svc->max_inflight = 2 * svc->llm.concurrency;
    snprintf(svc->instance, sizeof svc->instance, "%s", common->instance);
    if (c->llm_enabled && svc->lease_ms <= vigil_llm_config_budget_ms(&svc->llm))
        vigil_log(VIGIL_LOG_WARN,
                  "VIGIL_WAKE_JOB_LEASE_MS (%lld) is not above one LLM request's budget (%lld ms): "
                  "a job whose worker stalls that long (its lease renewals held up) may be taken "
                  "over and evaluated twice (decided once)",
                  (long long)svc->lease_ms, (long long)vigil_llm_config_budget_ms(&svc->llm));
    return 0;
}
