/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the
 * record it touches:
 *   agent/{a}/activity, agent/{a}/status  -> "agent:<a>" (an empty
 *                                            status: the agent retires)
 *   planner/task                          -> "planner:tasks" (the pool) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "adapter.h"

/* fsm_state and task titles: longer is refused (a mission of any length is
 * kept to its first STALL_TEXT_MAX bytes) */
#define MAX_TEXT 1000

/* detail: a string, or an object kept as its JSON text. */
static int parse_activity(json_object *b, stall_parsed *pp, vigil_error *err)
{
    json_object *d;
    pp->kind = STALL_IN_ACTIVITY;
    if (vigil_json_enum(b, "source", true, STALL_SOURCE_NAMES, &pp->source, err) < 0 ||
        vigil_json_bool(b, "in_tool", false, &pp->in_tool, err) < 0)
        return -1;
    if (json_object_object_get_ex(b, "detail", &d) && d) {
        if (json_object_is_type(d, json_type_string)) {
            /* refuses a NUL inside, which would hide the rest from the
             * noise filter */
            if (vigil_json_string(b, "detail", false, &pp->detail, err) < 0)
                return -1;
        } else if (json_object_is_type(d, json_type_object)) {
            pp->detail_owned = vigil_json_dump(d);
            if (!pp->detail_owned)
                return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
            pp->detail = pp->detail_owned;
        } else {
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'detail': expected string or object");
        }
    }
    return 0;
}

/* tasks: strings, or objects whose "title" (else "id") is a string. */
static int parse_status(json_object *b, stall_parsed *pp, int64_t ts, vigil_error *err)
{
    const char *fsm, *mission = NULL;
    json_object *tasks = NULL;
    stall_status *st = &pp->status;
    pp->kind = STALL_IN_STATUS;
    memset(st, 0, sizeof *st);
    if (vigil_json_string_bounded(b, "fsm_state", true, MAX_TEXT, &fsm, err) < 0 ||
        vigil_json_string(b, "mission", false, &mission, err) < 0 ||
        vigil_json_array(b, "tasks", false, &tasks, err) < 0)
        return -1;
    /* refused like an empty one: the resume prompt would say "(state  )" */
    if (stall_text_blank(fsm))
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'fsm_state': blank (nothing but white space)");
    /* kept to STALL_TEXT_MAX bytes, cut on a character boundary */
    vigil_utf8_copy(st->fsm_state, sizeof st->fsm_state, fsm);
    vigil_utf8_copy(st->mission, sizeof st->mission, mission);
    size_t n = tasks ? json_object_array_length(tasks) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(tasks, i), *v = t;
        const char *text = NULL;
        if (json_object_is_type(t, json_type_object) &&
            !(json_object_object_get_ex(t, "title", &v) && json_object_is_type(v, json_type_string)) &&
            !json_object_object_get_ex(t, "id", &v))
            v = NULL;
        switch (vigil_json_str_check(v, &text)) {
        case VIGIL_JSON_STR_OK:
            break;
        case VIGIL_JSON_STR_HAS_NUL:
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'tasks[%zu]': string contains NUL", i);
        default:
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'tasks[%zu]': expected a string or an object with a title", i);
        }
        /* a blank entry is no assignment: the prompt would list it as an
         * empty item ("Your tasks: ; Fix CI") */
        if (stall_text_blank(text))
            continue;
        if (st->n_tasks < STALL_MAX_STATUS_TASKS)
            vigil_utf8_copy(st->tasks[st->n_tasks++], sizeof st->tasks[0], text);
    }
    st->ts = ts;
    return 0;
}

static int parse_task(const vigil_input *in, stall_parsed *pp, vigil_error *err)
{
    json_object *b = in->body;
    const char *id, *title, *agent = NULL;
    int64_t prio;
    stall_task *t = &pp->task;
    pp->kind = STALL_IN_TASK;
    memset(t, 0, sizeof *t);
    /* a task's id is its identity: a derived one would not do */
    if (vigil_json_string_bounded(b, "id", true, STALL_EVENT_ID_MAX, &id, err) < 0 ||
        vigil_json_string_bounded(b, "title", true, MAX_TEXT, &title, err) < 0 ||
        vigil_json_int64(b, "priority", true, &prio, err) < 0 ||
        vigil_json_id(b, "agent", false, &agent, err) < 0)
        return -1;
    /* a title of spaces names nothing to do: the resume would hand the
     * agent an empty task ("Claimed for you: t1 \"\"") */
    if (stall_text_blank(title))
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'title': blank (nothing but white space)");
    if (prio < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'priority': must be >= 0");
    snprintf(t->id, sizeof t->id, "%s", in->id);
    vigil_utf8_copy(t->title, sizeof t->title, title);
    t->priority = prio;
    snprintf(t->agent, sizeof t->agent, "%s", agent ? agent : "");
    t->ts = in->ts;
    return 0;
}

/* agent/{a}/status with an empty payload: its retained status cleared,
 * which retires the agent (apply.c). Every other empty payload stays a
 * bad input (not_json). */
bool stall_clear_topic(const char *topic)
{
    return vigil_topic_is_kind(topic, "agent", "status");
}

int stall_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                int max_keys, void **parsed, vigil_error *err)
{
    (void)rt;
    (void)max_keys;
    *parsed = NULL;
    stall_parsed *pp = calloc(1, sizeof *pp);
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    int rc = -1;
    if (in->nparts == 2 && strcmp(in->parts[0], "planner") == 0 && strcmp(in->parts[1], "task") == 0) {
        if (parse_task(in, pp, err) == 0) {
            snprintf(keys[0], VIGIL_KEY_MAX, "%s", STALL_TASKS_KEY);
            rc = 1;
        }
    } else if (in->cleared) { /* stall_clear_topic: agent/{a}/status */
        pp->kind = STALL_IN_RETIRE;
        if (vigil_input_topic_id(in, 1, NULL, &pp->agent, err) == 0) {
            snprintf(keys[0], VIGIL_KEY_MAX, "%s%s", STALL_AGENT_PREFIX, pp->agent);
            rc = 1;
        }
    } else if (in->nparts == 3 && strcmp(in->parts[0], "agent") == 0 &&
               (strcmp(in->parts[2], "activity") == 0 || strcmp(in->parts[2], "status") == 0)) {
        bool activity = strcmp(in->parts[2], "activity") == 0;
        if (vigil_input_topic_id(in, 1, "agent", &pp->agent, err) == 0 &&
            vigil_json_id(in->body, "agent", true, &pp->agent, err) == 0 &&
            (activity ? parse_activity(in->body, pp, err) : parse_status(in->body, pp, in->ts, err)) == 0) {
            snprintf(keys[0], VIGIL_KEY_MAX, "%s%s", STALL_AGENT_PREFIX, pp->agent);
            rc = 1;
        }
    } else {
        vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    }
    if (rc != 1) {
        stall_free_parsed(ctx, pp);
        return -1;
    }
    *parsed = pp;
    return 1;
}

void stall_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    stall_parsed *pp = parsed;
    if (!pp)
        return;
    free(pp->detail_owned);
    free(pp);
}
