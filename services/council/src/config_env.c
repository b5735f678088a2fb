/* config_env.c - the environment of council: VIGIL_LLM_* (libshared) and
 * its own VIGIL_COUNCIL_*, mirroring the specified AUTONOMOUS_* with the same
 * defaults. Minutes may be fractional (0.05 = 3 s) so tests and demos can
 * shrink them. */
#include <stdio.h>
#include <string.h>
#include <vigil/config.h>
#include <vigil/log.h>
#include "adapter.h"

#define MAX_MIN (30.0 * 24 * 60)

const vigil_config_var COUNCIL_CONFIG_VARS[] = {
    {"VIGIL_COUNCIL_ENABLED", "1",
     "autonomous mode (AUTONOMOUS_ENABLED): 0 = no session starts (each start is answered "
     "started: false) and a live session ends at its next loop"},
    {"VIGIL_COUNCIL_AUTO_START", "1",
     "automatic starts: a user who started a session once gets one every interval"},
    {"VIGIL_COUNCIL_INTERVAL_MIN", "60", "minutes between automatic sessions (AUTONOMOUS_INTERVAL)"},
    {"VIGIL_COUNCIL_MAX_DAILY", "10", "sessions per user per UTC day (AUTONOMOUS_MAX_DAILY)"},
    {"VIGIL_COUNCIL_IDLE_TIMEOUT_MIN", "30",
     "a session with no progress (paused, or no loop) this long ends (AUTONOMOUS_IDLE_TIMEOUT)"},
    {"VIGIL_COUNCIL_LOOP_MS", "30000", "pause between one loop's action and the next SENSE"},
    {"VIGIL_COUNCIL_MAX_LOOPS", "20", "loops per session; the session ends after the last"},
    {"VIGIL_COUNCIL_QUESTION_TTL_MS", "86400000", "an unanswered question expires after this"},
    {"VIGIL_COUNCIL_PRESENCE_ACTIVE_MS", "120000",
     "a user reported active on room/+/presence is available this long after their last "
     "activity"},
    {"VIGIL_COUNCIL_CONTEXT_MESSAGES", "10", "the user's recent messages given to the council (max 20)"},
    {"VIGIL_COUNCIL_A2A_URL", "", "A2A JSON-RPC endpoint for research: (empty = not delegated)"},
    {"VIGIL_COUNCIL_A2A_METHOD", "message/send", "message/send (A2A 0.x) or SendMessage (A2A 1.0)"},
    {"VIGIL_COUNCIL_A2A_TOKEN", "", "sent as Authorization: Bearer to the A2A endpoint when set"},
    {"VIGIL_COUNCIL_A2A_TIMEOUT_MS", "60000", "one A2A request (on the worker's delegation thread)"},
    {"VIGIL_COUNCIL_MAX_TOKENS", "300", "max_tokens of each persona's answer"},
    {"VIGIL_COUNCIL_WORKERS", "1", "job worker threads (each runs many LLM calls at once)"},
    {"VIGIL_COUNCIL_JOB_LEASE_MS", "0",
     "a loop job unacknowledged this long is taken over; 0 = a loop's worst case (two LLM "
     "requests' budgets and, with VIGIL_COUNCIL_A2A_URL, one A2A timeout) + 5 s, at least 120 s"},
    {"VIGIL_COUNCIL_JOBS_MAXLEN", "100000",
     "cap of the loop job stream (past it the oldest unfinished jobs are dropped, counted in "
     "vigil_stream_trimmed_total; their sessions end at the idle timeout)"},
    {NULL, NULL, NULL}};

void council_service_init(council_service *svc)
{
    memset(svc, 0, sizeof *svc);
    council_config_init(&svc->core);
    vigil_llm_config_init(&svc->llm);
    svc->a2a_method = COUNCIL_A2A_MESSAGE_SEND;
    svc->a2a_timeout_ms = 60000;
    svc->workers = 1;
    svc->lease_ms = 0; /* derived in council_configure */
    svc->jobs_maxlen = COUNCIL_JOBS_MAXLEN;
    svc->max_tokens = 300;
    svc->block_ms = 200;
    atomic_store(&svc->stop, 0);
}

/* A loop job holds two model stages (the advisors at once, then Sol) and,
 * for a research: action, one A2A call, all before its commit. A live
 * worker renews the lease of the jobs it holds (libshared's job loop), so
 * a slow loop is not taken over; the lease is what a worker stalled that
 * long (its commit waiting out a Redis outage) is given before another
 * replica takes its job over, whose delegation may then be sent twice
 * (the commit itself stays single). Unset, the lease is that worst case
 * plus 5 s (at least the 120 s of before), so a job is taken over only
 * when its worker could not have finished it; set below it, it is kept
 * (tests shrink it on purpose) with a warning that says what it risks. */
static void council_derive_lease(council_service *svc)
{
    int64_t need = 2 * vigil_llm_config_budget_ms(&svc->llm) +
                   (svc->a2a_url[0] ? svc->a2a_timeout_ms : 0);
    if (svc->lease_ms == 0) {
        svc->lease_ms = need + 5000 > 120000 ? need + 5000 : 120000;
        return;
    }
    if (svc->lease_ms <= need)
        vigil_log(VIGIL_LOG_WARN,
                  "VIGIL_COUNCIL_JOB_LEASE_MS (%lld) is not above a loop's worst case (%lld ms: "
                  "two LLM requests' budgets%s): a job whose worker stalls that long (its lease "
                  "renewals held up) may be taken over and its research: delegation sent twice",
                  (long long)svc->lease_ms, (long long)need,
                  svc->a2a_url[0] ? " and the A2A timeout" : "");
}

static int minutes(const char *name, int64_t def_ms, double min, int64_t *out, char *err,
                   size_t errlen)
{
    double v;
    if (vigil_env_double(name, (double)def_ms / 60000.0, min, MAX_MIN, &v, err, errlen) != 0)
        return -1;
    *out = (int64_t)(v * 60000.0 + 0.5);
    return 0;
}

int council_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    council_service *svc = ctx;
    council_config *c = &svc->core;
    char method[32];
    if (vigil_llm_config_load(&svc->llm, err, errlen) != 0 ||
        vigil_env_bool("VIGIL_COUNCIL_ENABLED", c->enabled, &c->enabled, err, errlen) ||
        vigil_env_bool("VIGIL_COUNCIL_AUTO_START", c->auto_start, &c->auto_start, err, errlen) ||
        minutes("VIGIL_COUNCIL_INTERVAL_MIN", c->interval_ms, 0.001, &c->interval_ms, err,
                errlen) ||
        vigil_env_int("VIGIL_COUNCIL_MAX_DAILY", c->max_daily, 0, 100000, &c->max_daily, err,
                      errlen) ||
        minutes("VIGIL_COUNCIL_IDLE_TIMEOUT_MIN", c->idle_timeout_ms, 0.001, &c->idle_timeout_ms,
                err, errlen) ||
        vigil_env_ms("VIGIL_COUNCIL_LOOP_MS", c->loop_ms, 0, &c->loop_ms, err, errlen) ||
        vigil_env_ms("VIGIL_COUNCIL_PRESENCE_ACTIVE_MS", c->presence_active_ms, 1,
                     &c->presence_active_ms, err, errlen) ||
        vigil_env_int("VIGIL_COUNCIL_MAX_LOOPS", c->max_loops, 1, 100000, &c->max_loops, err,
                      errlen) ||
        vigil_env_ms("VIGIL_COUNCIL_QUESTION_TTL_MS", c->question_ttl_ms, 1, &c->question_ttl_ms,
                     err, errlen) ||
        vigil_env_int("VIGIL_COUNCIL_CONTEXT_MESSAGES", c->context_messages, 0, COUNCIL_MSGS_MAX,
                      &c->context_messages, err, errlen) ||
        vigil_env_string("VIGIL_COUNCIL_A2A_URL", "", svc->a2a_url, sizeof svc->a2a_url, err,
                         errlen) ||
        vigil_env_string("VIGIL_COUNCIL_A2A_METHOD", "message/send", method, sizeof method, err,
                         errlen) ||
        vigil_env_string("VIGIL_COUNCIL_A2A_TOKEN", "", svc->a2a_token, sizeof svc->a2a_token, err,
                         errlen) ||
        vigil_env_ms("VIGIL_COUNCIL_A2A_TIMEOUT_MS", svc->a2a_timeout_ms, 100,
                     &svc->a2a_timeout_ms, err, errlen) ||
        vigil_env_int("VIGIL_COUNCIL_MAX_TOKENS", svc->max_tokens, 1, 100000, &svc->max_tokens,
                      err, errlen) ||
        vigil_env_int("VIGIL_COUNCIL_WORKERS", 1, 1, COUNCIL_MAX_WORKERS, &svc->workers, err,
                      errlen) ||
        vigil_env_ms("VIGIL_COUNCIL_JOB_LEASE_MS", 0, 0, &svc->lease_ms, err, errlen) ||
        vigil_env_int64("VIGIL_COUNCIL_JOBS_MAXLEN", svc->jobs_maxlen, 100, 100000000,
                        &svc->jobs_maxlen, err, errlen))
        return -1;
    if (council_a2a_method_parse(method, &svc->a2a_method) != 0) {
        snprintf(err, errlen, "VIGIL_COUNCIL_A2A_METHOD: expected message/send or SendMessage, "
                              "got '%s'", method);
        return -1;
    }
    c->llm_enabled = svc->llm.url[0] != '\0';
    c->a2a_enabled = svc->a2a_url[0] != '\0';
    c->max_sleep_ms = c->idle_timeout_ms;
    council_derive_lease(svc);
    snprintf(svc->instance, sizeof svc->instance, "%s", common->instance);
    if (!c->llm_enabled)
        vigil_log(VIGIL_LOG_WARN, "VIGIL_LLM_URL is empty: council sessions will not start "
                                  "(each start is answered with the reason)");
    return 0;
}
