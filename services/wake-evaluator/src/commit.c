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

/* One finished job to commit on its room: fn runs on the room's record
 * with fn_arg. */
typedef struct job_commit {
    wake_service *svc;
    const char *job;
    wake_room_fn fn;
    void *fn_arg;
} job_commit;

static int decide_job(void *arg, const char *key, const char *state_json, int64_t now_ms,
                      vigil_effects *fx, vigil_error *err)
{
    job_commit *c = arg;
    if (wake_with_room(c->svc, key, state_json, NULL, now_ms, fx, false, c->fn, c->fn_arg) != 0)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory committing %s", c->job);
    return 0;
}

/* Decides job on room's record, deduplicated by the job id; a rejected
 * commit is logged with what (the job is acknowledged all the same). */
static vigil_decide_result commit_job(wake_service *svc, vigil_runtime_conn *conn,
                                      const char *room, const char *job, int64_t now,
                                      wake_room_fn fn, void *fn_arg, const char *what)
{
    job_commit c = {svc, job, fn, fn_arg};
    vigil_error err = {0};
    vigil_decide_result r = vigil_runtime_decide(svc->rt, conn, room, job, now, decide_job, &c, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, what, "job", job, "detail", err.detail, NULL);
    return r;
}

typedef struct decision_arg {
    wake_service *svc;
    const wake_decision *d;
} decision_arg;

static int on_decision(wake_room *r, const wake_sink *sink, int64_t now, void *arg)
{
    decision_arg *a = arg;
    return wake_on_decision(r, &a->svc->core, a->d, now, sink);
}

vigil_decide_result wake_commit_decision(wake_service *svc, vigil_runtime_conn *conn,
                                         const wake_decision *d, int64_t now)
{
    decision_arg a = {svc, d};
    return commit_job(svc, conn, d->room, d->id, now, on_decision, &a,
                      "wake decision not committed");
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

vigil_decide_result wake_commit_autopilot(wake_service *svc, vigil_runtime_conn *conn,
                                          const wake_ap_outcome *o, int64_t now)
{
    ap_arg a = {svc, o};
    return commit_job(svc, conn, o->room, o->job, now, on_autopilot, &a,
                      "autopilot run not committed");
}
