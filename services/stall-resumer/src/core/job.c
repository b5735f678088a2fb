/* job.c - the resume job handed from a scan to the resume workers through
 * the durable job stream, and the agent/{a}/resume payload. The job id
 * ("resume.<agent>.<seq>") is both the claim id in the task pool and the
 * input id of the agent's commit, so a job handled twice claims one task
 * and publishes one resume. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "stall.h"

void stall_job_make(stall_job *j, const char *agent, int64_t seq, int64_t decided,
                    const char *reason)
{
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "resume.%s.%" PRId64, agent, seq);
    snprintf(j->agent, sizeof j->agent, "%s", agent);
    j->seq = seq;
    j->decided = decided;
    snprintf(j->reason, sizeof j->reason, "%s", reason ? reason : "");
}

char *stall_job_to_json(const stall_job *j)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "id", json_object_new_string(j->id));
    json_object_object_add(o, "agent", json_object_new_string(j->agent));
    json_object_object_add(o, "seq", json_object_new_int64(j->seq));
    json_object_object_add(o, "decided", json_object_new_int64(j->decided));
    json_object_object_add(o, "reason", json_object_new_string(j->reason));
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *r = s ? strdup(s) : NULL;
    json_object_put(o);
    return r;
}

/* Ids are spliced into topics: libshared's one id rule (vigil_id_valid). */
static bool id_ok(const char *s)
{
    return vigil_id_valid(s, strlen(s));
}

int stall_job_parse(const char *buf, size_t len, stall_job *j, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    /* The whole entry must be one strict JSON object: a damaged stream entry
     * with bytes after the object is unreadable, not half read. */
    vigil_error perr;
    json_object *o = vigil_json_parse_object(buf, len, len, &perr);
    json_object *id, *agent, *seq, *decided, *reason;
    if (!o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, "id", &id) || !json_object_is_type(id, json_type_string) ||
        !json_object_object_get_ex(o, "agent", &agent) || !json_object_is_type(agent, json_type_string) ||
        !json_object_object_get_ex(o, "seq", &seq) || !json_object_is_type(seq, json_type_int) ||
        !json_object_object_get_ex(o, "decided", &decided) ||
        !json_object_is_type(decided, json_type_int) ||
        !json_object_object_get_ex(o, "reason", &reason) ||
        !json_object_is_type(reason, json_type_string) ||
        !id_ok(json_object_get_string(agent)) || json_object_get_int64(seq) <= 0) {
        snprintf(err, errlen, "resume job unreadable");
        json_object_put(o);
        return -1;
    }
    stall_job_make(j, json_object_get_string(agent), json_object_get_int64(seq),
                   json_object_get_int64(decided), json_object_get_string(reason));
    json_object_put(o);
    return 0;
}

json_object *stall_resume_json(const char *event_id, const stall_agent *a, const char *prompt,
                               const stall_claimed *task, const char *reason, int64_t now)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "id", json_object_new_string(event_id));
    json_object_object_add(o, "agent", json_object_new_string(a->agent));
    json_object_object_add(o, "prompt", json_object_new_string(prompt));
    /* the state the prompt names, trimmed as it prints it */
    const char *state;
    size_t n = stall_resume_state(a, &state);
    json_object_object_add(o, "fsm_state", json_object_new_string_len(state, (int)n));
    if (task) {
        json_object *t = json_object_new_object();
        json_object_object_add(t, "id", json_object_new_string(task->id));
        /* the title as the prompt quotes it: the planner's text trimmed */
        const char *title;
        size_t tn = stall_text_trim(task->title, &title);
        json_object_object_add(t, "title", json_object_new_string_len(title, (int)tn));
        json_object_object_add(t, "priority", json_object_new_int64(task->priority));
        json_object_object_add(o, "claimed_task", t);
    }
    json_object_object_add(o, "reason", json_object_new_string(reason ? reason : ""));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}
