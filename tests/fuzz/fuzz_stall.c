/* fuzz_stall.c - stall-resumer's decision core: the agent's stored record
 * and the signals, statuses, scans and resumes applied to it, the task
 * list, and the resume job.
 *
 * Input: parts separated by a line holding only "---". The first byte of
 * the first part chooses what is driven:
 *  - 'J': part 1 a resume job (stall_job_parse);
 *  - 'T': part 1 a stored task list (empty: none), then one command a
 *    part: "offer <+ms> id|title|priority|agent" or "claim <+ms> agent|seq"
 *    (claimed under the resume job's id, twice: the second changes nothing);
 *  - anything else: part 1 a stored agent record (empty: a new one), then
 *    one command a part, at a clock that only moves forward:
 *    "sig <+ms> id|source|detail|in_tool|age", "status <+ms> fsm|mission|
 *    task|task..", "scan <+ms>", "still <+ms> seq", "sent <+ms> seq|event",
 *    "noise <+ms> csv", "retire <+ms>", "return <+ms>".
 * What must hold: a refusal says why; a record (agent or tasks) written
 * reads back and writes the same text again; a scan's decision gives a
 * category of the four, a confidence in 0..1000, a reason when no resume
 * is sent; every payload and the job are JSON that reads back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "fuzz_util.h"
#include "stall.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 24
#define T0 1700000000000LL

static void must_be_json(json_object *o)
{
    if (!o)
        abort();
    fuzz_json_reads(json_object_to_json_string(o));
}

static void fuzz_job(const char *t)
{
    stall_job j;
    char err[200] = "";
    if (stall_job_parse(t, strlen(t), &j, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort();
        return;
    }
    char *s = stall_job_to_json(&j);
    stall_job k;
    if (!s || stall_job_parse(s, strlen(s), &k, err, sizeof err) != 0)
        abort();
    if (strcmp(j.id, k.id) != 0 || j.seq != k.seq || strcmp(j.agent, k.agent) != 0)
        abort();
    free(s);
}

/* A task list written reads back and writes the same text. */
static void check_tasks(const stall_tasks *t)
{
    char *s = stall_tasks_to_json(t);
    char err[200] = "";
    stall_tasks *u = s ? stall_tasks_from_json(s, err, sizeof err) : NULL;
    if (!u) {
        fprintf(stderr, "tasks reload: %s\n%s\n", err, s ? s : "(null)");
        abort();
    }
    char *s2 = stall_tasks_to_json(u);
    fuzz_same_text("tasks", s, s2);
    free(s2);
    free(s);
    stall_tasks_free(u);
}

static void fuzz_tasks(fuzz_strs *ps, int64_t now)
{
    const char *rec = ps->n > 1 ? ps->p[1] : "";
    stall_tasks *t;
    char err[200] = "";
    if (rec[0]) {
        t = stall_tasks_from_json(rec, err, sizeof err);
        if (!t) {
            if (err[0] == '\0')
                abort();
            return;
        }
    } else {
        t = stall_tasks_new();
        if (!t)
            return;
    }
    check_tasks(t);
    for (int i = 2; i < ps->n; i++) {
        char verb[16];
        char *rest = fuzz_verb(ps->p[i], verb, &now, true);
        if (!rest)
            continue;
        char *f[4];
        fuzz_fields(rest, f, 4);
        if (!strcmp(verb, "offer")) {
            stall_task k = { 0 };
            snprintf(k.id, sizeof k.id, "%s", f[0]);
            snprintf(k.title, sizeof k.title, "%s", f[1] ? f[1] : "");
            k.priority = f[2] ? atoll(f[2]) : 0;
            snprintf(k.agent, sizeof k.agent, "%s", f[3] ? f[3] : "");
            k.ts = now;
            stall_task_result r = stall_tasks_offer(t, &k);
            if (r < STALL_TASK_ADDED || r > STALL_TASK_FULL)
                abort();
        } else if (!strcmp(verb, "claim")) {
            /* as the worker claims: for a valid agent, under its job's id */
            if (!vigil_id_valid(f[0], strlen(f[0])))
                continue;
            stall_job j;
            stall_job_make(&j, f[0], f[1] ? atoll(f[1]) : 1, now, "stalled");
            bool changed = false;
            const stall_claim *c = stall_tasks_claim(t, f[0], j.id, now, &changed);
            if (c && strcmp(c->claim, j.id) != 0)
                abort();
            bool again = false;
            const stall_claim *c2 = stall_tasks_claim(t, f[0], j.id, now + 1, &again);
            if (again || c2 != c)
                abort(); /* a job handled twice claims one task */
            const stall_task *top[5];
            int n = stall_tasks_top(t, f[0], top, 5);
            if (n < 0 || n > 5)
                abort();
            for (int k = 1; k < n; k++)
                if (stall_task_order(top[k - 1], top[k], f[0]) > 0)
                    abort(); /* not in claim order */
        } else {
            continue;
        }
        check_tasks(t);
    }
    stall_tasks_free(t);
}

/* An agent record written reads back and writes the same text. */
static void check_agent(const stall_agent *a)
{
    char *s = stall_agent_to_json(a);
    char err[200] = "";
    stall_agent *b = s ? stall_agent_from_json(s, a->agent, err, sizeof err) : NULL;
    if (!b) {
        fprintf(stderr, "agent reload: %s\n%s\n", err, s ? s : "(null)");
        abort();
    }
    char *s2 = stall_agent_to_json(b);
    fuzz_same_text("agent dump", s, s2);
    free(s2);
    free(s);
    free(b);
}

static void scan(stall_agent *a, const stall_config *c, int64_t now)
{
    stall_scan_result r;
    stall_agent_scan(a, c, now, NULL, &r);
    if (r.as.category < STALL_CAT_FRESH || r.as.category > STALL_CAT_AUTO_RESUME)
        abort();
    if (r.as.confidence_milli < 0 || r.as.confidence_milli > 1000)
        abort();
    if (r.assess_rc == 0 && r.as.is_active && r.guard.send)
        abort(); /* never a resume to an active agent */
    if (!r.resume && r.why_not[0] == '\0')
        abort();
    if (r.assess_rc != 0 && r.assess_err[0] == '\0')
        abort();
    json_object *o = stall_assessment_json(a, &r, now);
    must_be_json(o);
    json_object_put(o);
    (void)stall_assessment_key(&r.as);
    char age[32];
    stall_age_text(r.as.category_age_ms, age, sizeof age);
    if (age[0] == '\0')
        abort();
    if (!r.resume)
        return;
    stall_job j;
    stall_job_make(&j, a->agent, r.seq, now, r.why_not);
    char *s = stall_job_to_json(&j);
    stall_job k;
    char err[200] = "";
    if (!s || stall_job_parse(s, strlen(s), &k, err, sizeof err) != 0)
        abort();
    free(s);
    stall_claimed cl = { "t1", "Fix the build", 5 };
    char *prompt = stall_resume_prompt(a, now - a->last_seen, &cl, NULL, 0);
    if (!prompt)
        abort();
    o = stall_resume_json(j.id, a, prompt, &cl, "stalled", now);
    must_be_json(o);
    json_object_put(o);
    free(prompt);
}

static void fuzz_agent(fuzz_strs *ps, int64_t now)
{
    stall_config c;
    stall_config_init(&c);
    const char *rec = ps->n > 1 ? ps->p[1] : "";
    stall_agent *a;
    char err[200] = "";
    if (rec[0]) {
        a = stall_agent_from_json(rec, "agent-7", err, sizeof err);
        if (!a) {
            if (err[0] == '\0')
                abort();
            return;
        }
    } else {
        a = malloc(sizeof *a);
        if (!a)
            return;
        stall_agent_init(a, "agent-7");
    }
    check_agent(a);
    for (int i = 2; i < ps->n; i++) {
        char verb[16];
        char *rest = fuzz_verb(ps->p[i], verb, &now, true);
        if (!rest)
            continue;
        char *f[STALL_MAX_STATUS_TASKS + 2];
        fuzz_fields(rest, f, STALL_MAX_STATUS_TASKS + 2);
        char why[200] = "";
        if (!strcmp(verb, "sig")) {
            int src = f[1] ? stall_source_parse(f[1]) : 0;
            if (src < 0)
                src = f[1] ? atoi(f[1]) % STALL_SRC__COUNT : 0;
            if (src < 0)
                src = -src;
            int64_t age = f[4] ? atoll(f[4]) : 0;
            stall_signal_result r = stall_agent_add_signal(a, &c, f[0], src, f[2],
                                                           f[3] && f[3][0] == '1', now - age,
                                                           now);
            if (r < STALL_SIGNAL_ADDED || r > STALL_SIGNAL_ACKNOWLEDGEMENT)
                abort();
        } else if (!strcmp(verb, "status")) {
            stall_status *st = calloc(1, sizeof *st);
            if (!st)
                break;
            st->present = true;
            st->ts = now;
            snprintf(st->fsm_state, sizeof st->fsm_state, "%s", f[0]);
            snprintf(st->mission, sizeof st->mission, "%s", f[1] ? f[1] : "");
            for (int k = 2; k < STALL_MAX_STATUS_TASKS + 2 && f[k]; k++)
                snprintf(st->tasks[st->n_tasks++], STALL_TEXT_MAX + 1, "%s", f[k]);
            (void)stall_agent_set_status(a, &c, st, now);
            free(st);
        } else if (!strcmp(verb, "scan")) {
            scan(a, &c, now);
        } else if (!strcmp(verb, "still")) {
            int64_t seq = f[0] && f[0][0] ? atoll(f[0]) : a->pending_seq;
            if (!stall_resume_still_due(a, &c, seq, now, why, sizeof why) && why[0] == '\0')
                abort();
        } else if (!strcmp(verb, "sent")) {
            int64_t seq = f[0] && f[0][0] ? atoll(f[0]) : a->pending_seq;
            (void)stall_agent_resume_sent(a, seq, f[1] ? f[1] : "resume.agent-7.1", now);
        } else if (!strcmp(verb, "noise")) {
            if (stall_config_set_noise(&c, f[0], why, sizeof why) != 0 && why[0] == '\0')
                abort();
        } else if (!strcmp(verb, "retire")) {
            /* true when it was not retired; then nothing it reported is left */
            bool was = a->retired;
            if (stall_agent_retire(a) == was || !a->retired ||
                (!was && (a->n_sig != 0 || a->pending_seq != 0 || a->next_scan != 0)))
                abort();
            /* no resume is due to a retired agent, and it says why */
            if (stall_resume_still_due(a, &c, a->resume_seq + 1, now, why, sizeof why) ||
                why[0] == '\0')
                abort();
        } else if (!strcmp(verb, "return")) {
            stall_agent_return(a);
        } else {
            continue;
        }
        check_agent(a);
    }
    free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 65536)
        return 0;
    fuzz_strs ps;
    fuzz_split_strs(data, size, MAX_PARTS, &ps);
    switch (ps.p[0][0]) {
    case 'J':
        fuzz_job(ps.n > 1 ? ps.p[1] : "");
        break;
    case 'T':
        fuzz_tasks(&ps, T0);
        break;
    default:
        fuzz_agent(&ps, T0);
        break;
    }
    fuzz_strs_free(&ps);
    return 0;
}
