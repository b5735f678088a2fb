/* config_env.c - the VIGIL_STALL_* variables (times in milliseconds) into
 * the core's stall_config. */
#include <stdio.h>
#include <string.h>
#include <vigil/config.h>
#include "adapter.h"

const vigil_config_var STALL_CONFIG_VARS[] = {
    {"VIGIL_STALL_LOOKBACK_MS", "3600000", "validation: the newest signal must be this recent"},
    {"VIGIL_STALL_IN_TOOL_MS", "7200000", "lookback and tier windows while the newest signal says in_tool"},
    {"VIGIL_STALL_WARNING_MS", "7200000", "status age from which an inactive agent is 'warning'"},
    {"VIGIL_STALL_CRITICAL_MS", "21600000", "status age from which it is 'critical'"},
    {"VIGIL_STALL_AUTORESUME_MS", "43200000", "status age beyond which it is 'auto-resume' (due a resume)"},
    {"VIGIL_STALL_RESUME_INTERVAL_MS", "3600000", "at most one resume per agent per this interval"},
    {"VIGIL_STALL_SCAN_MS", "60000", "each agent is scanned (assessed, published, maybe resumed) this often"},
    {"VIGIL_STALL_NOISE", "resumer,stall-recovery,no-acknowledgments,inactivity detected,[c2a],#no-reply,#progress-only",
     "comma-separated patterns: a signal whose detail contains one is not activity"},
    {"VIGIL_STALL_TIER1_MS", "3600000", "window in which a tier-1 signal counts toward confidence"},
    {"VIGIL_STALL_TIER2_MS", "1800000", "window in which a tier-2 signal counts"},
    {"VIGIL_STALL_TIER3_MS", "900000", "window in which a tier-3 signal counts"},
    {"VIGIL_STALL_JOBS_MAXLEN", "100000",
     "cap of the resume job stream (past it the oldest unfinished jobs are dropped, counted in vigil_stream_trimmed_total)"},
    {NULL, NULL, NULL}};

int stall_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    stall_service *svc = ctx;
    stall_config *c = &svc->cfg;
    stall_config_init(c);
    char noise[STALL_NOISE_MAX * (STALL_NOISE_LEN + 1)];
    if (vigil_env_ms("VIGIL_STALL_LOOKBACK_MS", c->lookback_ms, 1, &c->lookback_ms, err, errlen) ||
        vigil_env_ms("VIGIL_STALL_IN_TOOL_MS", c->in_tool_ms, 1, &c->in_tool_ms, err, errlen) ||
        vigil_env_ms("VIGIL_STALL_WARNING_MS", c->warning_ms, 1, &c->warning_ms, err, errlen) ||
        vigil_env_ms("VIGIL_STALL_CRITICAL_MS", c->critical_ms, 1, &c->critical_ms, err, errlen) ||
        vigil_env_ms("VIGIL_STALL_AUTORESUME_MS", c->autoresume_ms, 1, &c->autoresume_ms, err, errlen) ||
        vigil_env_ms("VIGIL_STALL_RESUME_INTERVAL_MS", c->resume_interval_ms, 0, &c->resume_interval_ms,
                     err, errlen) ||
        vigil_env_ms("VIGIL_STALL_SCAN_MS", c->scan_ms, 10, &c->scan_ms, err, errlen) ||
        vigil_env_ms("VIGIL_STALL_TIER1_MS", c->tier_window_ms[0], 1, &c->tier_window_ms[0], err, errlen) ||
        vigil_env_ms("VIGIL_STALL_TIER2_MS", c->tier_window_ms[1], 1, &c->tier_window_ms[1], err, errlen) ||
        vigil_env_ms("VIGIL_STALL_TIER3_MS", c->tier_window_ms[2], 1, &c->tier_window_ms[2], err, errlen) ||
        vigil_env_int64("VIGIL_STALL_JOBS_MAXLEN", STALL_JOBS_MAXLEN, 100, 100000000,
                        &svc->jobs_maxlen, err, errlen) ||
        vigil_env_string("VIGIL_STALL_NOISE", STALL_DEFAULT_NOISE, noise, sizeof noise, err, errlen))
        return -1;
    char why[120];
    /* empty, as unset: the default (the README's "," alone means none) */
    if (stall_config_set_noise(c, noise[0] ? noise : STALL_DEFAULT_NOISE, why, sizeof why) != 0) {
        snprintf(err, errlen, "VIGIL_STALL_NOISE: %s", why);
        return -1;
    }
    if (stall_config_check(c, err, errlen) != 0)
        return -1;
    svc->lease_ms = common->timer_lease_ms;
    snprintf(svc->instance, sizeof svc->instance, "%s", common->instance);
    return 0;
}
