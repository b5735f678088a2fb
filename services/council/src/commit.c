/* commit.c - a finished loop committed into its user's record from a
 * worker thread: vigil_runtime_decide runs the core's ACT on the record as
 * it is now and commits the deliberation, the action and its effects
 * atomically, deduplicated by the job id, so a loop handled twice (a
 * restart before the acknowledgement, a lease taken over) acts once. */
#include <stdio.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

typedef struct outcome_arg {
    council_service *svc;
    const council_outcome *o;
    int64_t now;
    bool refused;              /* Sol's proposal refused by the router (recorded as reflect) */
    council_action refused_as; /* the prefix refused, COUNCIL_ACT_NONE for none known */
    int dropped;               /* pending questions dropped for a newer one */
} outcome_arg;

static council_rc on_outcome(council_user *u, const council_sink *sink, void *arg, char *why,
                             size_t whylen)
{
    (void)why;
    (void)whylen;
    outcome_arg *a = arg;
    /* what to count once the loop is committed: a proposal Sol made that
     * the router refused (a failed call is counted as the job's outcome) */
    a->refused = false;
    if (a->o->answers[COUNCIL_SOL] && council_outcome_current(u, a->o)) {
        council_routed r;
        council_route(a->o->answers[COUNCIL_SOL], &r);
        a->refused = r.unknown;
        a->refused_as = r.refused;
    }
    council_rc rc = council_on_outcome(u, &a->svc->core, a->o, a->now, sink);
    a->dropped = u->questions_dropped;
    return rc;
}

static void count_refused(council_action as)
{
    char labels[48];
    snprintf(labels, sizeof labels, "prefix=\"%s\"",
             as == COUNCIL_ACT_NONE ? "none" : council_action_prefix(as));
    vigil_counter_add("vigil_council_actions_refused_total",
                      "Sol's proposals the action router refused (recorded as reflect), by the "
                      "prefix refused",
                      labels, 1);
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
    outcome_arg a = {svc, o, now, false, COUNCIL_ACT_NONE, 0};
    vigil_error err = {0};
    vigil_decide_result r =
        vigil_runtime_decide(svc->rt, conn, user, o->job, now, decide_outcome, &a, &err);
    if (r == VIGIL_DECIDE_DONE && a.refused)
        count_refused(a.refused_as);
    if (r == VIGIL_DECIDE_DONE && a.dropped > 0)
        vigil_counter_add("vigil_council_questions_dropped_total",
                          "Pending questions ended unanswered because more than 16 were pending "
                          "(said by a question event, status expired)",
                          NULL, a.dropped);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "loop not committed", "job", o->job, "detail", err.detail,
                     NULL);
    return r;
}
