/* commit.c - a finished job committed into its room from a worker thread:
 * vigil_runtime_decide runs the core on the room's current record and
 * commits the wake (or autopilot) event, the counters and the economics
 * atomically, deduplicated by the job id, so a job handled twice (a
 * restart, a lease taken over) is published once. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <vigil/log.h>
#include "adapter.h"
#include "llm_reader.h"

typedef struct decision_arg {
    wake_service *svc;
    const wake_decision *d;
} decision_arg;

static int on_decision(wake_room *r, const wake_sink *sink, int64_t now, void *arg)
{
    decision_arg *a = arg;
    return wake_on_decision(r, &a->svc->core, a->d, now, sink);
}

static int decide_wake(void *arg, const char *key, const char *state_json, int64_t now_ms,
                       vigil_effects *fx, vigil_error *err)
{
    decision_arg *a = arg;
    if (wake_with_room(a->svc, key, state_json, NULL, now_ms, fx, false, on_decision, a) != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory committing %s",
                               a->d->id);
    return 0;
}

vigil_decide_result wake_commit_decision(wake_service *svc, vigil_runtime_conn *conn,
                                         const wake_decision *d, int64_t now)
{
    decision_arg a = {svc, d};
    vigil_error err = {0};
    vigil_decide_result r =
        vigil_runtime_decide(svc->rt, conn, d->room, d->id, now, decide_wake, &a, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "wake decision not committed", "job", d->id, "detail",
                     err.detail, NULL);
    return r;
}

typedef struct ap_arg {
    wake_service *svc;
    const wake_ap_outcome *o;
} ap_arg;

/* The model's actions are read against the room as it is now (persona
 * names), and the guards run on it too. */
static int on_autopilot(wake_room *r, const wake_sink *sink, int64_t now, void *arg)
{
    ap_arg *a = arg;
    const wake_ap_outcome *o = a->o;
    wake_ap_list *l = calloc(1, sizeof *l);
    if (!l)
        return -1;
    char why[300] = "", note[360];
    bool from_llm = false;
    const char *fallback = o->fallback;
    if (o->content) {
        if (wake_autopilot_parse(&WAKE_LLM_READER, r, o->content, o->len, l, why, sizeof why) == 0) {
            from_llm = true;
        } else {
            snprintf(note, sizeof note, "LLM answer unusable: %s", why);
            fallback = note;
        }
    }
    wake_ap_result res = {o->job, from_llm, from_llm ? l : NULL, from_llm ? NULL : fallback,
                          o->tokens};
    int rc = wake_on_autopilot(r, &a->svc->core, &res, now, sink);
    free(l);
    return rc;
}

static int decide_autopilot(void *arg, const char *key, const char *state_json, int64_t now_ms,
                            vigil_effects *fx, vigil_error *err)
{
    ap_arg *a = arg;
    if (wake_with_room(a->svc, key, state_json, NULL, now_ms, fx, false, on_autopilot, a) != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory committing %s",
                               a->o->job);
    return 0;
}

vigil_decide_result wake_commit_autopilot(wake_service *svc, vigil_runtime_conn *conn,
                                          const wake_ap_outcome *o, int64_t now)
{
    ap_arg a = {svc, o};
    vigil_error err = {0};
    vigil_decide_result r =
        vigil_runtime_decide(svc->rt, conn, o->room, o->job, now, decide_autopilot, &a, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "autopilot run not committed", "job", o->job, "detail",
                     err.detail, NULL);
    return r;
}
