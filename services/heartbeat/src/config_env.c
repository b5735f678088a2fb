/* config_env.c - the environment of heartbeat: VIGIL_LLM_* (libshared) and
 * its own VIGIL_HEARTBEAT_*. */
#include <stdio.h>
#include <string.h>
#include <vigil/config.h>
#include <vigil/log.h>
#include "adapter.h"

const vigil_config_var HB_CONFIG_VARS[] = {
    {"VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS", "120000", "interval while the user was active lately"},
    {"VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS", "600000", "interval otherwise"},
    {"VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS", "1800000",
     "interval after VIGIL_HEARTBEAT_INACTIVE_AFTER_MS without the user (and the stretch cap)"},
    {"VIGIL_HEARTBEAT_RECENT_MS", "300000", "activity this recent selects the active interval"},
    {"VIGIL_HEARTBEAT_INACTIVE_AFTER_MS", "3600000", "inactivity this long selects the inactive interval"},
    {"VIGIL_HEARTBEAT_LIVE_MS", "120000", "a message from the user this recent is a live exchange: skip"},
    {"VIGIL_HEARTBEAT_UNANSWERED_MS", "7200000", "skip while a proactive message this recent is unanswered"},
    {"VIGIL_HEARTBEAT_IDLE_CAP_MS", "0",
     "no runs after this long without the user, until they are back (0 = no cap)"},
    {"VIGIL_HEARTBEAT_SKIP_STRETCH", "1.5",
     "each consecutive `ok` multiplies the next normal or inactive interval (capped)"},
    {"VIGIL_HEARTBEAT_MAX_TOKENS", "300", "max_tokens of the heartbeat prompt"},
    {"VIGIL_HEARTBEAT_JOB_LEASE_MS", "0",
     "a run's job unacknowledged this long is taken over; 0 = one LLM request's budget + 5 s "
     "(never less than that budget)"},
    {"VIGIL_HEARTBEAT_JOBS_MAXLEN", "100000", "cap of the job stream"},
    {"VIGIL_HEARTBEAT_ZONEINFO", "/usr/share/zoneinfo", "folder of TZif time zone files"},
    {"VIGIL_HEARTBEAT_CHECKLIST_DIR", "",
     "folder that config `checklist_file` names are read from (empty: file checklists refused)"},
    {NULL, NULL, NULL}};

void hb_service_init(hb_service *svc)
{
    memset(svc, 0, sizeof *svc);
    hb_config_init(&svc->core);
    vigil_llm_config_init(&svc->llm);
    svc->jobs_maxlen = 100000;
    svc->core.tz.lookup = hb_tz_cache_lookup;
    svc->core.tz.arg = svc;
    atomic_store(&svc->stop, 0);
}

int hb_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    hb_service *svc = ctx;
    hb_config *c = &svc->core;
    int64_t max_tokens;
    if (vigil_llm_config_load(&svc->llm, err, errlen) != 0 ||
        vigil_env_ms("VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS", c->active_interval_ms, 100,
                     &c->active_interval_ms, err, errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS", c->normal_interval_ms, 100,
                     &c->normal_interval_ms, err, errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS", c->inactive_interval_ms, 100,
                     &c->inactive_interval_ms, err, errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_RECENT_MS", c->recent_ms, 0, &c->recent_ms, err, errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_INACTIVE_AFTER_MS", c->inactive_after_ms, 0, &c->inactive_after_ms,
                     err, errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_LIVE_MS", c->live_ms, 0, &c->live_ms, err, errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_UNANSWERED_MS", c->unanswered_ms, 0, &c->unanswered_ms, err,
                     errlen) ||
        vigil_env_int64("VIGIL_HEARTBEAT_IDLE_CAP_MS", c->idle_cap_ms, 0, 10 * VIGIL_ENV_MS_MAX,
                        &c->idle_cap_ms, err, errlen) ||
        vigil_env_double("VIGIL_HEARTBEAT_SKIP_STRETCH", c->skip_stretch, 1.0, 100.0,
                         &c->skip_stretch, err, errlen) ||
        vigil_env_int64("VIGIL_HEARTBEAT_MAX_TOKENS", c->max_tokens, 1, 100000, &max_tokens, err,
                        errlen) ||
        vigil_env_ms("VIGIL_HEARTBEAT_JOB_LEASE_MS", 0, 0, &svc->lease_ms, err, errlen) ||
        vigil_env_int64("VIGIL_HEARTBEAT_JOBS_MAXLEN", svc->jobs_maxlen, 100, 100000000,
                        &svc->jobs_maxlen, err, errlen) ||
        vigil_env_string("VIGIL_HEARTBEAT_ZONEINFO", "/usr/share/zoneinfo", svc->zoneinfo,
                         sizeof svc->zoneinfo, err, errlen) ||
        vigil_env_string("VIGIL_HEARTBEAT_CHECKLIST_DIR", "", svc->checklist_dir,
                         sizeof svc->checklist_dir, err, errlen))
        return -1;
    c->max_tokens = (int)max_tokens;
    c->llm_enabled = svc->llm.url[0] != '\0';
    /* A run's claim lasts at least one LLM request's whole budget: a slow
     * answer is never taken for a dead replica's. */
    int64_t budget = vigil_llm_config_budget_ms(&svc->llm);
    if (svc->lease_ms == 0) {
        svc->lease_ms = budget + 5000;
    } else if (svc->lease_ms <= budget) {
        vigil_log(VIGIL_LOG_WARN,
                  "VIGIL_HEARTBEAT_JOB_LEASE_MS (%lld) is not above one LLM request's budget "
                  "(%lld ms): raised to %lld",
                  (long long)svc->lease_ms, (long long)budget, (long long)(budget + 1000));
        svc->lease_ms = budget + 1000;
    }
    /* A run is given up (outcome error, run-lost) only when no replica can
     * still be working on it: a claim, its takeover, and one more budget. */
    c->run_guard_ms = 2 * svc->lease_ms + budget;
    /* A guard late by more than a lease fired after an outage (Redis, the
     * replica) that held the run's commit back as well: it waits again. */
    c->guard_late_ms = svc->lease_ms;
    snprintf(svc->instance, sizeof svc->instance, "%s", common->instance);
    /* one job stream per shard: a run is committed by a replica of the
     * persona's shard, so its timer stays in that shard's timer set */
    snprintf(svc->stream, sizeof svc->stream, "%s%d", HB_STREAM, common->shard_index);
    return 0;
}
