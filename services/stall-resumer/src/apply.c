/* apply.c - runs the core on one record and turns its verdicts into
 * effects. Agent records: signals and status in, the retained
 * agent/{a}/assessment out whenever it changes, and the agent's scan timer
 * armed; a cleared status retires the agent. The scan (a timer per agent
 * in the runtime's durable timer set, so the work per tick is the agents
 * due, not every agent) republishes the assessment and, when a resume is
 * due, enqueues a resume job in the same atomic commit. The task pool
 * record takes planner/task offers. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

static const char *agent_of(const char *key)
{
    size_t n = strlen(STALL_AGENT_PREFIX);
    return strncmp(key, STALL_AGENT_PREFIX, n) == 0 ? key + n : NULL;
}

/* A record that cannot be read is replaced by a fresh one (and logged):
 * refusing every later input of the agent forever would be worse. Its
 * resumes are numbered from now, never reusing a lost one's job id.
 * *unreadable (may be NULL) says it happened. */
stall_agent *stall_load_agent(const char *key, const char *state_json, int64_t now,
                              bool *unreadable)
{
    if (unreadable)
        *unreadable = false;
    const char *agent = agent_of(key);
    if (!state_json) {
        stall_agent *a = calloc(1, sizeof *a);
        if (a)
            stall_agent_init(a, agent ? agent : key);
        return a;
    }
    char err[160];
    stall_agent *a = stall_agent_from_json(state_json, agent ? agent : key, err, sizeof err);
    if (!a) {
        vigil_log_kv(VIGIL_LOG_ERROR, "unreadable agent record replaced", "key", key, "error", err,
                     NULL);
        if (unreadable)
            *unreadable = true;
        a = calloc(1, sizeof *a);
        if (a)
            stall_agent_replace(a, agent ? agent : key, now);
    }
    return a;
}

int stall_publish_obj(vigil_effects *fx, const char *topic, json_object *o, bool retain)
{
    if (!o)
        return -1;
    int rc = vigil_fx_publish_json(fx, topic, o, retain);
    json_object_put(o);
    return rc;
}

static int publish_assessment(vigil_effects *fx, stall_agent *a, const stall_scan_result *r,
                              int64_t now)
{
    char topic[VIGIL_TOPIC_MAX];
    snprintf(topic, sizeof topic, "agent/%s/assessment", a->agent);
    a->published = stall_assessment_key(&r->as);
    return stall_publish_obj(fx, topic, stall_assessment_json(a, r, now), true);
}

static int arm_scan(vigil_effects *fx, stall_agent *a, const stall_config *c, int64_t now)
{
    a->next_scan = now + c->scan_ms;
    return vigil_fx_timer_set(fx, STALL_SCAN_TIMER, a->next_scan);
}

static int save_agent(vigil_effects *fx, const stall_agent *a, const char *state_json)
{
    char *json = stall_agent_to_json(a);
    if (!json)
        return -1;
    int rc = 0;
    if (!state_json || strcmp(json, state_json) != 0)
        rc = vigil_fx_set_state(fx, json);
    free(json);
    return rc;
}

static void count(const char *name, const char *help, const char *label, const char *value)
{
    char labels[96];
    snprintf(labels, sizeof labels, "%s=\"%s\"", label, value);
    vigil_counter_add(name, help, labels, 1);
}

static const char *const SIGNAL_RESULTS[] = {"added", "noise", "duplicate", "expired",
                                             "acknowledgement"};
static const char *const TASK_RESULTS[] = {"added", "updated", "unchanged", "already_claimed",
                                           "full"};

/* Its retained status cleared: the agent has gone away. Its scan timer is
 * cancelled and its retained assessment cleared in the same commit as the
 * retired record, so no scan, job or resume follows (a resume job already
 * queued is skipped by its worker: stall_resume_still_due). An agent never
 * seen, or retired already, changes nothing. */
static int retire_agent(stall_agent *a, const char *state_json, vigil_effects *fx)
{
    if (!state_json || !stall_agent_retire(a))
        return 0;
    vigil_counter_add("vigil_stall_agents_retired_total",
                      "Agents retired because their retained status was cleared", NULL, 1);
    vigil_log_kv(VIGIL_LOG_INFO, "agent retired: its status was cleared", "agent", a->agent, NULL);
    char topic[VIGIL_TOPIC_MAX];
    snprintf(topic, sizeof topic, "agent/%s/assessment", a->agent);
    if (vigil_fx_timer_cancel(fx, STALL_SCAN_TIMER) != 0 ||
        vigil_fx_publish(fx, topic, "", true) != 0)
        return -1;
    return save_agent(fx, a, state_json);
}

/* Signals and status: assess at once and publish when the verdict moved. */
static int apply_agent(const stall_service *svc, const char *key, const char *state_json,
                       const stall_parsed *pp, const vigil_input *in, int64_t now, vigil_effects *fx)
{
    stall_agent *a = stall_load_agent(key, state_json, now, NULL);
    if (!a)
        return -1;
    if (pp->kind == STALL_IN_RETIRE) {
        int rc = retire_agent(a, state_json, fx);
        free(a);
        return rc;
    }
    bool changed;
    if (pp->kind == STALL_IN_ACTIVITY) {
        stall_signal_result res = stall_agent_add_signal(a, &svc->cfg, in->id, pp->source, pp->detail,
                                                         pp->in_tool, in->ts, now);
        count("vigil_stall_signals_total", "Activity signals by what became of them", "result",
              SIGNAL_RESULTS[res]);
        changed = res == STALL_SIGNAL_ADDED;
    } else {
        changed = stall_agent_set_status(a, &svc->cfg, &pp->status, now);
    }
    int rc = 0;
    if (changed && a->retired) {
        stall_agent_return(a);
        vigil_log_kv(VIGIL_LOG_INFO, "retired agent reports again", "agent", a->agent, NULL);
    }
    if (changed) {
        stall_scan_result r;
        memset(&r, 0, sizeof r);
        stall_agent_expire(a, now);
        r.assess_rc = stall_assess(a, &svc->cfg, now, &r.as, r.assess_err, sizeof r.assess_err);
        r.guard = stall_should_send_resume(r.assess_rc, r.assess_err, &r.as);
        if (r.assess_rc == 0 && stall_assessment_key(&r.as) != a->published)
            rc = publish_assessment(fx, a, &r, now);
        if (rc == 0 && a->next_scan == 0)
            rc = arm_scan(fx, a, &svc->cfg, now);
        if (rc == 0)
            rc = save_agent(fx, a, state_json);
    }
    free(a);
    return rc;
}

static int apply_task(const char *state_json, const stall_parsed *pp, vigil_effects *fx)
{
    char err[120];
    stall_tasks *t = state_json ? stall_tasks_from_json(state_json, err, sizeof err) : stall_tasks_new();
    if (!t && state_json) {
        vigil_log_kv(VIGIL_LOG_ERROR, "unreadable task pool replaced", "error", err, NULL);
        t = stall_tasks_new();
    }
    if (!t)
        return -1;
    stall_task_result res = stall_tasks_offer(t, &pp->task);
    count("vigil_stall_tasks_total", "Planner tasks offered, by what became of them", "result",
          TASK_RESULTS[res]);
    if (res == STALL_TASK_FULL)
        vigil_log_kv(VIGIL_LOG_WARN, "task pool full: task ignored", "task", pp->task.id, NULL);
    int rc = 0;
    if (res == STALL_TASK_ADDED || res == STALL_TASK_UPDATED) {
        char *json = stall_tasks_to_json(t);
        rc = json ? vigil_fx_set_state(fx, json) : -1;
        free(json);
    }
    stall_tasks_free(t);
    return rc;
}

int stall_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const stall_service *svc = ctx;
    const stall_parsed *pp = parsed;
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "nothing to apply");
    int rc = pp->kind == STALL_IN_TASK ? apply_task(state_json, pp, fx)
                                       : apply_agent(svc, key, state_json, pp, in, now_ms, fx);
    if (rc != 0)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory applying to '%s'", key);
    return 0;
}

/* The scan of one agent. Its resume job (if due) is enqueued in the same
 * commit as the pending mark, so a crash either loses both (the timer's
 * lease brings the scan back) or keeps both (a worker takes the job). */
int stall_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                   int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    const stall_service *svc = ctx;
    (void)due_ms;
    if (!state_json || strcmp(timer_name, STALL_SCAN_TIMER) != 0 || !agent_of(key))
        return 0;
    bool unreadable;
    stall_agent *a = stall_load_agent(key, state_json, now_ms, &unreadable);
    if (!a)
        return -1;
    if (a->retired) { /* a scan its retirement's commit did not cancel in time: it ends here */
        free(a);
        return 0;
    }
    stall_scan_result r;
    /* a record we cannot read is an internal error: the guard fails open */
    stall_agent_scan(a, &svc->cfg, now_ms, unreadable ? "agent record unreadable" : NULL, &r);
    vigil_counter_add("vigil_stall_scans_total", "Agent scans", NULL, 1);
    if (r.guard.failed_open) /* a detection error: logged as an error */
        vigil_log_kv(VIGIL_LOG_ERROR, "activity check failed: guard fails open", "agent", a->agent,
                     "error", r.assess_err, NULL);
    int rc = publish_assessment(fx, a, &r, now_ms);
    if (rc == 0 && r.resume) {
        stall_job job;
        stall_job_make(&job, a->agent, r.seq, now_ms, a->pending_reason);
        char *json = stall_job_to_json(&job);
        rc = json ? vigil_fx_job_add(fx, STALL_STREAM, STALL_STREAM, json, svc->jobs_maxlen) : -1;
        free(json);
        /* a resume whose signals failed validation is allowed, "with a
         * warning" */
        bool unvalidated = !r.guard.failed_open && !r.as.validation_passed;
        if (rc == 0)
            vigil_log_kv(unvalidated ? VIGIL_LOG_WARN : VIGIL_LOG_INFO,
                         unvalidated ? "resume due: validation failed" : "resume due", "agent",
                         a->agent, "job", job.id, "why", a->pending_reason, NULL);
    }
    if (rc == 0)
        rc = arm_scan(fx, a, &svc->cfg, now_ms);
    if (rc == 0)
        rc = save_agent(fx, a, state_json);
    free(a);
    return rc;
}
