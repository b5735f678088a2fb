/* agent_json.c - the agent record as stored (compact arrays for signals),
 * read back strictly (an unreadable record is reported, not guessed at),
 * and the agent/{a}/assessment payload. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stall.h"

static void add_i64(json_object *o, const char *k, int64_t v)
{
    json_object_object_add(o, k, json_object_new_int64(v));
}

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

static char *dump(json_object *o)
{
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *r = s ? strdup(s) : NULL;
    json_object_put(o);
    return r;
}

char *stall_agent_to_json(const stall_agent *a)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "agent", a->agent);
    json_object *sig = json_object_new_array();
    for (int i = 0; i < a->n_sig; i++) {
        const stall_signal *s = &a->sig[i];
        json_object *e = json_object_new_array();
        json_object_array_add(e, json_object_new_int(s->source));
        json_object_array_add(e, json_object_new_int64(s->ts));
        json_object_array_add(e, json_object_new_int(s->in_tool));
        json_object_array_add(e, json_object_new_string(s->id));
        json_object_array_add(e, json_object_new_string(s->detail));
        json_object_array_add(sig, e);
    }
    json_object_object_add(o, "sig", sig);
    if (a->status.present) {
        json_object *st = json_object_new_object();
        add_i64(st, "ts", a->status.ts);
        if (a->status.claimed_ts)
            add_i64(st, "cts", a->status.claimed_ts);
        add_str(st, "fsm_state", a->status.fsm_state);
        add_str(st, "mission", a->status.mission);
        json_object *tasks = json_object_new_array();
        for (int i = 0; i < a->status.n_tasks; i++)
            json_object_array_add(tasks, json_object_new_string(a->status.tasks[i]));
        json_object_object_add(st, "tasks", tasks);
        json_object_object_add(o, "status", st);
    }
    add_i64(o, "last_seen", a->last_seen);
    add_str(o, "progress", a->progress);
    add_i64(o, "progress_ts", a->progress_ts);
    add_i64(o, "last_resume", a->last_resume);
    add_i64(o, "resume_seq", a->resume_seq);
    add_i64(o, "sent_seq", a->sent_seq);
    add_i64(o, "pending_seq", a->pending_seq);
    add_i64(o, "pending_since", a->pending_since);
    add_str(o, "pending_reason", a->pending_reason);
    json_object *rec = json_object_new_array();
    for (int i = 0; i < a->n_recent; i++)
        json_object_array_add(rec, json_object_new_string(a->recent[i]));
    json_object_object_add(o, "recent", rec);
    char pub[24];
    snprintf(pub, sizeof pub, "%016" PRIx64, a->published);
    add_str(o, "published", pub);
    add_i64(o, "next_scan", a->next_scan);
    if (a->retired)
        json_object_object_add(o, "retired", json_object_new_boolean(true));
    return dump(o);
}

static int get_i64(json_object *o, const char *k, int64_t *out)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v))
        return 0; /* absent: default */
    if (!json_object_is_type(v, json_type_int))
        return -1;
    *out = json_object_get_int64(v);
    return 0;
}

static int get_str(json_object *o, const char *k, char *out, size_t cap)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v))
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    snprintf(out, cap, "%s", json_object_get_string(v));
    return 0;
}

static int read_signal(json_object *e, stall_signal *s)
{
    if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 5)
        return -1;
    json_object *v[5];
    for (size_t i = 0; i < 5; i++)
        v[i] = json_object_array_get_idx(e, i);
    if (!json_object_is_type(v[0], json_type_int) || !json_object_is_type(v[1], json_type_int) ||
        !json_object_is_type(v[2], json_type_int) || !json_object_is_type(v[3], json_type_string) ||
        !json_object_is_type(v[4], json_type_string))
        return -1;
    s->source = json_object_get_int(v[0]);
    s->ts = json_object_get_int64(v[1]);
    s->in_tool = json_object_get_int(v[2]) != 0;
    snprintf(s->id, sizeof s->id, "%s", json_object_get_string(v[3]));
    snprintf(s->detail, sizeof s->detail, "%s", json_object_get_string(v[4]));
    return 0;
}

static int read_status(json_object *st, stall_status *s)
{
    if (!json_object_is_type(st, json_type_object))
        return -1;
    s->present = true;
    json_object *tasks;
    if (get_i64(st, "ts", &s->ts) || get_i64(st, "cts", &s->claimed_ts) ||
        get_str(st, "fsm_state", s->fsm_state, sizeof s->fsm_state) ||
        get_str(st, "mission", s->mission, sizeof s->mission))
        return -1;
    if (json_object_object_get_ex(st, "tasks", &tasks)) {
        if (!json_object_is_type(tasks, json_type_array))
            return -1;
        size_t n = json_object_array_length(tasks);
        for (size_t i = 0; i < n && s->n_tasks < STALL_MAX_STATUS_TASKS; i++) {
            json_object *t = json_object_array_get_idx(tasks, i);
            if (!json_object_is_type(t, json_type_string))
                return -1;
            snprintf(s->tasks[s->n_tasks++], sizeof s->tasks[0], "%s", json_object_get_string(t));
        }
    }
    return 0;
}

stall_agent *stall_agent_from_json(const char *json, const char *agent, char *err, size_t errlen)
{
    stall_agent *a = calloc(1, sizeof *a);
    json_object *o = json ? json_tokener_parse(json) : NULL;
    json_object *sig, *st, *rec;
    char pub[24] = "0";
    const char *what = "not a JSON object";
    if (!a || !o || !json_object_is_type(o, json_type_object))
        goto fail;
    stall_agent_init(a, agent);
    what = "bad signals";
    if (json_object_object_get_ex(o, "sig", &sig)) {
        if (!json_object_is_type(sig, json_type_array))
            goto fail;
        size_t n = json_object_array_length(sig);
        for (size_t i = 0; i < n && a->n_sig < STALL_MAX_SIGNALS; i++)
            if (read_signal(json_object_array_get_idx(sig, i), &a->sig[a->n_sig++]) != 0)
                goto fail;
    }
    what = "bad status";
    if (json_object_object_get_ex(o, "status", &st) && read_status(st, &a->status) != 0)
        goto fail;
    what = "bad field";
    if (get_i64(o, "last_seen", &a->last_seen) || get_str(o, "progress", a->progress, sizeof a->progress) ||
        get_i64(o, "progress_ts", &a->progress_ts) || get_i64(o, "last_resume", &a->last_resume) ||
        get_i64(o, "resume_seq", &a->resume_seq) || get_i64(o, "sent_seq", &a->sent_seq) ||
        get_i64(o, "pending_seq", &a->pending_seq) || get_i64(o, "pending_since", &a->pending_since) ||
        get_str(o, "pending_reason", a->pending_reason, sizeof a->pending_reason) ||
        get_str(o, "published", pub, sizeof pub) || get_i64(o, "next_scan", &a->next_scan))
        goto fail;
    a->published = strtoull(pub, NULL, 16);
    what = "bad retired";
    json_object *ret;
    if (json_object_object_get_ex(o, "retired", &ret)) {
        if (!json_object_is_type(ret, json_type_boolean))
            goto fail;
        a->retired = json_object_get_boolean(ret);
    }
    what = "bad field";
    if (json_object_object_get_ex(o, "recent", &rec)) {
        if (!json_object_is_type(rec, json_type_array))
            goto fail;
        size_t n = json_object_array_length(rec);
        for (size_t i = 0; i < n && a->n_recent < STALL_RECENT_RESUMES; i++) {
            json_object *e = json_object_array_get_idx(rec, i);
            if (!json_object_is_type(e, json_type_string))
                goto fail;
            snprintf(a->recent[a->n_recent++], sizeof a->recent[0], "%s", json_object_get_string(e));
        }
    }
    json_object_put(o);
    return a;
fail:
    snprintf(err, errlen, "agent record: %s", what);
    json_object_put(o);
    free(a);
    return NULL;
}

/* A number with a fixed number of decimals, printed as such (json-c would
 * print 0.7 as 0.69999999999999996). */
static json_object *fixed(double v, int decimals)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    size_t n = strlen(buf);
    while (n > 1 && strchr(buf, '.') && (buf[n - 1] == '0' || buf[n - 1] == '.')) {
        bool dot = buf[n - 1] == '.';
        buf[--n] = '\0';
        if (dot)
            break;
    }
    return json_object_new_double_s(strtod(buf, NULL), buf);
}

json_object *stall_assessment_json(const stall_agent *a, const stall_scan_result *r, int64_t now)
{
    const stall_assessment *as = &r->as;
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "agent", a->agent);
    json_object_object_add(o, "is_active", json_object_new_boolean(as->is_active));
    json_object_object_add(o, "confidence", fixed(as->confidence_milli / 1000.0, 3));
    if (as->last_activity > 0) {
        add_i64(o, "last_activity", as->last_activity);
        double mins = now > as->last_activity ? (double)(now - as->last_activity) / STALL_MIN_MS : 0.0;
        json_object_object_add(o, "inactivity_minutes", fixed(mins, 1));
    } else {
        json_object_object_add(o, "last_activity", NULL);
        json_object_object_add(o, "inactivity_minutes", NULL);
    }
    json_object *sigs = json_object_new_array();
    for (int i = 0; i < as->n_counted && i < STALL_ASSESS_SIGNALS_OUT; i++) {
        const stall_signal *s = &a->sig[as->counted[i]];
        json_object *e = json_object_new_object();
        add_str(e, "source", stall_source_name(s->source));
        json_object_object_add(e, "tier", json_object_new_int(stall_source_tier(s->source)));
        add_i64(e, "ts", s->ts);
        double age = now > s->ts ? (double)(now - s->ts) / STALL_MIN_MS : 0.0;
        json_object_object_add(e, "age_minutes", fixed(age, 1));
        if (s->in_tool)
            json_object_object_add(e, "in_tool", json_object_new_boolean(true));
        json_object_array_add(sigs, e);
    }
    json_object_object_add(o, "signals", sigs);
    json_object_object_add(o, "validation_passed", json_object_new_boolean(as->validation_passed));
    json_object *reasons = json_object_new_array();
    if (r->assess_rc != 0)
        json_object_array_add(reasons, json_object_new_string(r->guard.reason));
    for (int i = 0; i < as->n_reasons; i++)
        json_object_array_add(reasons, json_object_new_string(as->reasons[i]));
    json_object_object_add(o, "reasons", reasons);
    add_str(o, "category", stall_category_name(as->category));
    if (as->category_age_known) {
        double cat_h = (double)as->category_age_ms / STALL_HOUR_MS;
        json_object_object_add(o, "status_age_hours", fixed(cat_h, 2));
        json_object_object_add(o, "aged_from",
                               json_object_new_string(as->category_from_status ? "status" : "activity"));
    } else { /* no status and no activity ever: no age to give */
        json_object_object_add(o, "status_age_hours", NULL);
        json_object_object_add(o, "aged_from", NULL);
    }
    json_object_object_add(o, "in_tool", json_object_new_boolean(as->in_tool));
    if (a->status.present) {
        add_str(o, "fsm_state", a->status.fsm_state);
        add_i64(o, "status_ts", a->status.ts);
    } else {
        json_object_object_add(o, "status_ts", NULL);
    }
    add_i64(o, "ts", now);
    return o;
}
