/* commit.c - a finished loop committed into its user's record from a
 * worker thread: vigil_runtime_decide runs the core's ACT on the record as
 * it is now and commits the deliberation, the action and its effects
 * atomically, deduplicated by the job id, so a loop handled twice (a
 * restart before the acknowledgement, a lease taken over) acts once. */
#include <vigil/log.h>
#include "adapter.h"

typedef struct outcome_arg {
    council_service *svc;
    const council_outcome *o;
    int64_t now;
} outcome_arg;

static council_rc on_outcome(council_user *u, const council_sink *sink, void *arg, char *why,
                             size_t whylen)
{
    (void)why;
    (void)whylen;
    outcome_arg *a = arg;
    return council_on_outcome(u, &a->svc->core, a->o, a->now, sink);
}

static int decide_outcome(void *arg, const char *key, const char *state_json, int64_t now_ms,
                          vigil_effects *fx, vigil_error *err)
{
    outcome_arg *a = arg;
    a->now = now_ms;
    return council_with_user(a->svc, key, state_json, fx, on_outcome, a, err);
}

vigil_decide_result council_commit_outcome(council_service *svc, vigil_runtime_conn *conn,
                                           const char *user, const council_outcome *o,
                                           int64_t now)
{
    outcome_arg a = {svc, o, now};
    vigil_error err = {0};
    vigil_decide_result r =
        vigil_runtime_decide(svc->rt, conn, user, o->job, now, decide_outcome, &a, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "loop not committed", "job", o->job, "detail", err.detail,
                     NULL);
    return r;
}
