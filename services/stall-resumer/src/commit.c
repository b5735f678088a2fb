/* commit.c - one resume job carried out from a worker thread, in atomic
 * steps through vigil_runtime_decide:
 *   0. the agent: is the resume still due (stall_resume_still_due)? A job
 *      may have waited since its scan; an agent active again by now gets
 *      none, and its pending mark is cleared (nothing is claimed);
 *   1. the task pool: claim the next task for the agent under the job id
 *      (compare-and-set on the pool record, so two replicas never claim
 *      one task; the same job claiming again gets the same task back);
 *   2. the agent: publish agent/{a}/resume with that task and mark it sent,
 *      deduplicated by the job id (a job handled twice sends one resume);
 *      its reason is step 0's (the activity at send time).
 * A crash between the steps leaves the job pending; handled again, step 1
 * returns the task already claimed and step 2 sends it.
 *   3. when the job ends without its resume ever sent (step 0 found it no
 *      longer due, or step 2 sent nothing: the agent retired between steps
 *      1 and 2), a task claimed under the job id is released, back in the
 *      pool: a claimed task is otherwise never offered again. A job handled
 *      again after a crash may have claimed in its first pass, so this is
 *      decided from the agent record (no resume sent under the job's seq),
 *      not from what this pass claimed; nothing claimed, nothing changes.
 *      A record replaced since (it was corrupted) forgets what was sent:
 *      then step 2's dedupe record, saying the job's resume went out,
 *      keeps the task with the agent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/jobs.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

typedef struct claim_arg {
    const stall_job *job;
    bool found;
    stall_claimed task;
    stall_task prio[STALL_PRIORITIES];
    int n_prio;
} claim_arg;

static int decide_claim(void *arg, const char *key, const char *state_json, int64_t now_ms,
                        vigil_effects *fx, vigil_error *err)
{
    (void)key;
    claim_arg *c = arg;
    c->found = false;
    c->n_prio = 0;
    if (!state_json)
        return 0; /* no task was ever offered */
    char why[120];
    stall_tasks *t = stall_tasks_from_json(state_json, why, sizeof why);
    if (!t)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s", why);
    bool changed = false;
    const stall_claim *cl = stall_tasks_claim(t, c->job->agent, c->job->id, now_ms, &changed);
    if (cl) {
        c->found = true;
        snprintf(c->task.id, sizeof c->task.id, "%s", cl->id);
        snprintf(c->task.title, sizeof c->task.title, "%s", cl->title);
        c->task.priority = cl->priority;
    }
    const stall_task *top[STALL_PRIORITIES];
    c->n_prio = stall_tasks_top(t, c->job->agent, top, STALL_PRIORITIES);
    for (int i = 0; i < c->n_prio; i++)
        c->prio[i] = *top[i];
    int rc = 0;
    if (changed) {
        char *json = stall_tasks_to_json(t);
        rc = json ? vigil_fx_set_state(fx, json) : -1;
        free(json);
    }
    stall_tasks_free(t);
    return rc == 0 ? 0 : vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
}

typedef struct recheck_arg {
    const stall_service *svc;
    const stall_job *job;
    bool due;
    bool unsent; /* no resume sent under the job's seq (step 3) */
    char why[STALL_REASON_LEN];
} recheck_arg;

static int decide_recheck(void *arg, const char *key, const char *state_json, int64_t now_ms,
                          vigil_effects *fx, vigil_error *err)
{
    recheck_arg *r = arg;
    r->due = true;
    snprintf(r->why, sizeof r->why, "no record");
    if (!state_json)
        return 0; /* the record is gone: the send step sends nothing */
    bool unreadable;
    stall_agent *a = stall_load_agent(key, state_json, now_ms, &unreadable);
    if (!a)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    if (unreadable) { /* the check itself failed: fail open, as the guard does */
        snprintf(r->why, sizeof r->why, "activity check failed (agent record unreadable): "
                                        "failing open, resume allowed");
        r->unsent = true;
        free(a);
        return 0;
    }
    r->due = stall_resume_still_due(a, &r->svc->cfg, r->job->seq, now_ms, r->why, sizeof r->why);
    r->unsent = a->sent_seq < r->job->seq;
    int rc = 0;
    if (!r->due) {
        char *json = stall_agent_to_json(a);
        rc = json ? vigil_fx_set_state(fx, json) : -1;
        free(json);
    }
    free(a);
    return rc == 0 ? 0 : vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
}

typedef struct resume_arg {
    const stall_service *svc;
    const claim_arg *claim;
    const char *reason; /* the re-check's (step 0), else the scan's */
    bool sent;
} resume_arg;

static int decide_resume(void *arg, const char *key, const char *state_json, int64_t now_ms,
                         vigil_effects *fx, vigil_error *err)
{
    resume_arg *r = arg;
    const stall_job *job = r->claim->job;
    r->sent = false;
    if (!state_json)
        return 0; /* the agent's record is gone */
    stall_agent *a = stall_load_agent(key, state_json, now_ms, NULL);
    if (!a)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    char event_id[VIGIL_EVENT_ID_MAX + 1], topic[VIGIL_TOPIC_MAX];
    vigil_event_id(event_id, sizeof event_id, job->id, a->agent, 0);
    if (a->sent_seq >= job->seq || a->retired) {
        free(a);
        return 0; /* already sent under this seq, or the agent retired since the check */
    }
    const stall_task *prio[STALL_PRIORITIES];
    for (int i = 0; i < r->claim->n_prio; i++)
        prio[i] = &r->claim->prio[i];
    /* idle as the assessment's inactivity_minutes counts it */
    int64_t idle = stall_idle_ms(a, &r->svc->cfg, now_ms);
    const stall_claimed *task = r->claim->found ? &r->claim->task : NULL;
    char *prompt = stall_resume_prompt(a, idle, task, prio, r->claim->n_prio);
    int rc = -1;
    if (prompt) {
        snprintf(topic, sizeof topic, "agent/%s/resume", a->agent);
        rc = stall_publish_obj(fx, topic, stall_resume_json(event_id, a, prompt, task, r->reason, now_ms),
                               false);
        free(prompt);
    }
    if (rc == 0) {
        stall_agent_resume_sent(a, job->seq, event_id, now_ms);
        char *json = stall_agent_to_json(a);
        rc = json ? vigil_fx_set_state(fx, json) : -1;
        free(json);
        r->sent = rc == 0;
    }
    free(a);
    return rc == 0 ? 0 : vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
}

typedef struct unsent_arg {
    const stall_job *job;
    bool unsent;
} unsent_arg;

/* Step 3's question after step 2, read only: was no resume ever sent
 * under this job's seq? */
static int decide_unsent(void *arg, const char *key, const char *state_json, int64_t now_ms,
                         vigil_effects *fx, vigil_error *err)
{
    (void)now_ms;
    (void)fx;
    unsent_arg *u = arg;
    u->unsent = false;
    if (!state_json)
        return 0;
    stall_agent *a = stall_load_agent(key, state_json, now_ms, NULL);
    if (!a)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    u->unsent = a->sent_seq < u->job->seq;
    free(a);
    return 0;
}

typedef struct released_arg {
    const stall_job *job;
    bool released;
} released_arg;

static int decide_release(void *arg, const char *key, const char *state_json, int64_t now_ms,
                          vigil_effects *fx, vigil_error *err)
{
    (void)key;
    (void)now_ms;
    released_arg *x = arg;
    x->released = false;
    if (!state_json)
        return 0;
    char why[120];
    stall_tasks *t = stall_tasks_from_json(state_json, why, sizeof why);
    if (!t)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s", why);
    int rc = 0;
    if (stall_tasks_release(t, x->job->id)) {
        x->released = true;
        char *json = stall_tasks_to_json(t);
        rc = json ? vigil_fx_set_state(fx, json) : -1;
        free(json);
    }
    stall_tasks_free(t);
    return rc == 0 ? 0 : vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
}

/* Did step 2 commit under the job id (its resume went out)? The agent
 * record may no longer say so: one replaced after it was corrupted knows
 * of no resume sent. The runtime's dedupe ids, kept beside the record, do.
 * 1 yes, 0 no, -1 when Redis could not say. */
static int resume_committed(const stall_service *svc, vigil_runtime_conn *conn,
                            const stall_job *job)
{
    char ids_key[VIGIL_KEY_MAX + 64], suffix[VIGIL_KEY_MAX];
    snprintf(suffix, sizeof suffix, "ids:%s%s", STALL_AGENT_PREFIX, job->agent);
    vigil_runtime_key(svc->rt, suffix, ids_key, sizeof ids_key);
    return vigil_jobs_decided(vigil_runtime_conn_redis(conn), ids_key, job->id);
}

/* Step 3 (above): releases the task claimed under the job id, if any,
 * unless the job's resume went out after all (resume_committed): a task
 * handed to an agent stays with it. A failure is logged and leaves the
 * task claimed: the job itself is done, and retrying it forever over a
 * task would be worse. */
static vigil_decide_result release_claim(stall_service *svc, vigil_runtime_conn *conn,
                                         const stall_job *job, int64_t now)
{
    int sent = resume_committed(svc, conn, job);
    if (sent != 0) {
        vigil_log_kv(sent > 0 ? VIGIL_LOG_INFO : VIGIL_LOG_ERROR,
                     sent > 0 ? "task claim kept: the job's resume went out"
                              : "task claim kept: could not read whether the job's resume went out",
                     "agent", job->agent, "job", job->id, NULL);
        return VIGIL_DECIDE_DONE;
    }
    vigil_error err = {0};
    released_arg x = {job, false};
    vigil_decide_result r = vigil_runtime_decide(svc->rt, conn, STALL_TASKS_KEY, NULL, now,
                                                 decide_release, &x, &err);
    if (r == VIGIL_DECIDE_DONE && x.released) {
        vigil_counter_add("vigil_stall_tasks_released_total",
                          "Claimed tasks put back in the pool: their resume was never sent",
                          NULL, 1);
        vigil_log_kv(VIGIL_LOG_INFO, "task claim released: no resume sent", "agent", job->agent,
                     "job", job->id, NULL);
    } else if (r == VIGIL_DECIDE_REJECTED) {
        vigil_log_kv(VIGIL_LOG_ERROR, "task claim not released", "job", job->id, "detail",
                     err.detail, NULL);
    }
    return r == VIGIL_DECIDE_GAVE_UP ? r : VIGIL_DECIDE_DONE;
}

/* Step 3 after step 2 sent nothing: asks the agent record first. */
static vigil_decide_result release_if_unsent(stall_service *svc, vigil_runtime_conn *conn,
                                             const stall_job *job, const char *key, int64_t now)
{
    vigil_error err = {0};
    unsent_arg u = {job, false};
    vigil_decide_result r =
        vigil_runtime_decide(svc->rt, conn, key, NULL, now, decide_unsent, &u, &err);
    if (r == VIGIL_DECIDE_GAVE_UP)
        return r;
    return r == VIGIL_DECIDE_DONE && u.unsent ? release_claim(svc, conn, job, now)
                                              : VIGIL_DECIDE_DONE;
}

vigil_decide_result stall_commit_resume(stall_service *svc, vigil_runtime_conn *conn,
                                        const stall_job *job, int64_t now, bool *skipped)
{
    *skipped = false;
    char key[VIGIL_KEY_MAX];
    snprintf(key, sizeof key, "%s%s", STALL_AGENT_PREFIX, job->agent);
    vigil_error err = {0};
    recheck_arg ra0 = {svc, job, true, false, ""};
    vigil_decide_result r =
        vigil_runtime_decide(svc->rt, conn, key, NULL, now, decide_recheck, &ra0, &err);
    if (r == VIGIL_DECIDE_GAVE_UP)
        return r;
    bool ra0_ok = r == VIGIL_DECIDE_DONE;
    if (r == VIGIL_DECIDE_REJECTED) /* the check broke: fail open, as the guard does */
        vigil_log_kv(VIGIL_LOG_ERROR, "activity re-check failed: resume allowed", "job", job->id,
                     "detail", err.detail, NULL);
    else if (!ra0.due) {
        *skipped = true;
        vigil_log_kv(VIGIL_LOG_INFO, "⏸️ Skipping resume prompt", "agent", job->agent, "job",
                     job->id, "why", ra0.why, NULL);
        return ra0.unsent ? release_claim(svc, conn, job, now) : r;
    }
    claim_arg c;
    memset(&c, 0, sizeof c);
    c.job = job;
    memset(&err, 0, sizeof err);
    r = vigil_runtime_decide(svc->rt, conn, STALL_TASKS_KEY, NULL, now, decide_claim, &c, &err);
    if (r == VIGIL_DECIDE_REJECTED) {
        vigil_log_kv(VIGIL_LOG_ERROR, "task claim failed: resuming without a task", "job", job->id,
                     "detail", err.detail, NULL);
        c.found = false;
        c.n_prio = 0;
    } else if (r == VIGIL_DECIDE_GAVE_UP) {
        return r;
    }
    /* the resume says why it was allowed at send time (step 0's check),
     * not at the scan that queued it: the agent may have done something
     * since. Only a check that broke leaves the scan's reason. */
    resume_arg ra = {svc, &c, ra0_ok ? ra0.why : job->reason, false};
    r = vigil_runtime_decide(svc->rt, conn, key, job->id, now, decide_resume, &ra, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "resume not committed", "job", job->id, "detail", err.detail,
                     NULL);
    if (r == VIGIL_DECIDE_DONE && ra.sent) {
        vigil_counter_add("vigil_stall_resumes_total", "Resume prompts sent",
                          c.found ? "task=\"claimed\"" : "task=\"none\"", 1);
        vigil_log_kv(VIGIL_LOG_INFO, "resume sent", "agent", job->agent, "job", job->id, "task",
                     c.found ? c.task.id : "(none)", NULL);
    }
    if (!ra.sent && (r == VIGIL_DECIDE_DONE || r == VIGIL_DECIDE_DUPLICATE) &&
        release_if_unsent(svc, conn, job, key, now) == VIGIL_DECIDE_GAVE_UP)
        return VIGIL_DECIDE_GAVE_UP;
    return r;
}
