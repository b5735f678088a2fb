/* tasks_json.c - the task pool record: {"open":[[id,title,priority,agent,ts]...],
 * "claimed":[[id,title,priority,agent,claim,at,task_agent,ts]...]} (claimed
 * oldest first; a claim written before task_agent and ts were kept has six
 * items, read as a task for any agent with ts 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stall.h"

char *stall_tasks_to_json(const stall_tasks *t)
{
    json_object *o = json_object_new_object(), *open = json_object_new_array(),
                *claimed = json_object_new_array();
    if (!o || !open || !claimed) {
        json_object_put(o);
        json_object_put(open);
        json_object_put(claimed);
        return NULL;
    }
    for (int i = 0; i < t->n_open; i++) {
        const stall_task *k = &t->open[i];
        json_object *e = json_object_new_array();
        json_object_array_add(e, json_object_new_string(k->id));
        json_object_array_add(e, json_object_new_string(k->title));
        json_object_array_add(e, json_object_new_int64(k->priority));
        json_object_array_add(e, json_object_new_string(k->agent));
        json_object_array_add(e, json_object_new_int64(k->ts));
        json_object_array_add(open, e);
    }
    for (int i = 0; i < t->n_claimed; i++) {
        const stall_claim *c = &t->claimed[i];
        json_object *e = json_object_new_array();
        json_object_array_add(e, json_object_new_string(c->id));
        json_object_array_add(e, json_object_new_string(c->title));
        json_object_array_add(e, json_object_new_int64(c->priority));
        json_object_array_add(e, json_object_new_string(c->agent));
        json_object_array_add(e, json_object_new_string(c->claim));
        json_object_array_add(e, json_object_new_int64(c->at));
        json_object_array_add(e, json_object_new_string(c->task_agent));
        json_object_array_add(e, json_object_new_int64(c->ts));
        json_object_array_add(claimed, e);
    }
    json_object_object_add(o, "open", open);
    json_object_object_add(o, "claimed", claimed);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *r = s ? strdup(s) : NULL;
    json_object_put(o);
    return r;
}

/* Checks that e is an array of n items typed by spec ('s' string, 'i' int). */
static bool shaped(json_object *e, const char *spec)
{
    size_t n = strlen(spec);
    if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(e, i);
        if (!json_object_is_type(v, spec[i] == 's' ? json_type_string : json_type_int))
            return false;
    }
    return true;
}

static const char *str_at(json_object *e, size_t i)
{
    return json_object_get_string(json_object_array_get_idx(e, i));
}

static int64_t int_at(json_object *e, size_t i)
{
    return json_object_get_int64(json_object_array_get_idx(e, i));
}

stall_tasks *stall_tasks_from_json(const char *json, char *err, size_t errlen)
{
    stall_tasks *t = stall_tasks_new();
    json_object *o = json ? json_tokener_parse(json) : NULL, *open, *claimed;
    if (!t || !o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, "open", &open) || !json_object_is_type(open, json_type_array) ||
        !json_object_object_get_ex(o, "claimed", &claimed) ||
        !json_object_is_type(claimed, json_type_array))
        goto fail;
    size_t n = json_object_array_length(open);
    for (size_t i = 0; i < n && t->n_open < STALL_MAX_OPEN_TASKS; i++) {
        json_object *e = json_object_array_get_idx(open, i);
        if (!shaped(e, "ssisi"))
            goto fail;
        stall_task *k = &t->open[t->n_open++];
        snprintf(k->id, sizeof k->id, "%s", str_at(e, 0));
        snprintf(k->title, sizeof k->title, "%s", str_at(e, 1));
        k->priority = int_at(e, 2);
        snprintf(k->agent, sizeof k->agent, "%s", str_at(e, 3));
        k->ts = int_at(e, 4);
    }
    n = json_object_array_length(claimed);
    for (size_t i = 0; i < n && t->n_claimed < STALL_MAX_CLAIMED_TASKS; i++) {
        json_object *e = json_object_array_get_idx(claimed, i);
        bool full = shaped(e, "ssissisi");
        if (!full && !shaped(e, "ssissi"))
            goto fail;
        stall_claim *c = &t->claimed[t->n_claimed++];
        snprintf(c->id, sizeof c->id, "%s", str_at(e, 0));
        snprintf(c->title, sizeof c->title, "%s", str_at(e, 1));
        c->priority = int_at(e, 2);
        snprintf(c->agent, sizeof c->agent, "%s", str_at(e, 3));
        snprintf(c->claim, sizeof c->claim, "%s", str_at(e, 4));
        c->at = int_at(e, 5);
        if (full) {
            snprintf(c->task_agent, sizeof c->task_agent, "%s", str_at(e, 6));
            c->ts = int_at(e, 7);
        }
    }
    json_object_put(o);
    return t;
fail:
    snprintf(err, errlen, "task pool record unreadable");
    json_object_put(o);
    stall_tasks_free(t);
    return NULL;
}
