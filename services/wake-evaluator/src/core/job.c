/* job.c - the durable jobs handed from intake to the workers through the
 * Redis stream: one per (message, sleeping persona) to evaluate with an
 * LLM, one per autopilot run. A job carries everything its prompt needs,
 * so a worker never reads the room to build it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/jtext.h>
#include "internal.h"

#define JOB_MENTIONS_MAX 64

char *wake_json_take(json_object *obj)
{
    if (!obj)
        return NULL;
    const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
    char *out = s ? strdup(s) : NULL;
    json_object_put(obj);
    return out;
}

void wake_number_text(double v, int decimals, char *s, size_t len)
{
    if (!(v == v) || v > 1e15 || v < -1e15)
        v = 0;
    if (len > VIGIL_I64_TEXT_MAX && v == (double)(int64_t)v) {
        /* a whole number (confidence 1, nothing saved yet: the usual
         * case) prints as the integer "%.*f" and the trimming below make
         * of it ("-0" too: "0"), without printf's floating-point work */
        vigil_i64_text(s, (int64_t)v);
        return;
    }
    snprintf(s, len, "%.*f", decimals, v);
    char *dot = strchr(s, '.');
    if (dot) {
        char *end = s + strlen(s) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
    if (strcmp(s, "-0") == 0)
        snprintf(s, len, "0");
}

json_object *wake_json_number(double v, int decimals)
{
    char s[64];
    if (!(v == v) || v > 1e15 || v < -1e15)
        v = 0;
    wake_number_text(v, decimals, s, sizeof s);
    return json_object_new_double_s(v, s);
}

int wake_publish_obj(const wake_sink *sink, const char *topic, json_object *obj, bool retain)
{
    char *s = wake_json_take(obj);
    int rc = s ? sink->publish(sink->ctx, topic, s, retain) : -1;
    free(s);
    return rc;
}

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

char *wake_job_build(const wake_room *r, const wake_persona *p, const wake_message *m,
                     const wake_context *ctx, const char *job_id, double threshold,
                     int64_t now)
{
    char text[WAKE_PROMPT_TEXT_MAX + 1];
    json_object *o = json_object_new_object();
    add_str(o, "kind", "wake");
    add_str(o, "job", job_id);
    add_str(o, "room", r->id);
    add_str(o, "persona", p->id);
    add_str(o, "name", wake_display_name(p));
    add_str(o, "role", p->role);
    add_str(o, "model", p->model);
    add_str(o, "tier", wake_tier_name(wake_persona_tier(p)));
    json_object_object_add(o, "threshold", json_object_new_double(threshold));

    json_object *msg = json_object_new_object();
    const wake_persona *sp = wake_room_find_const(r, m->sender);
    add_str(msg, "id", m->id);
    add_str(msg, "sender", m->sender);
    add_str(msg, "sender_name", sp ? wake_display_name(sp) : m->sender);
    add_str(msg, "sender_type", wake_sender_name(m->type));
    vigil_utf8_copy(text, WAKE_PROMPT_TEXT_MAX + 1, m->text ? m->text : "");
    add_str(msg, "text", text);
    json_object *ms = json_object_new_array();
    for (int i = 0; i < m->n_mentions && i < JOB_MENTIONS_MAX; i++)
        json_object_array_add(ms, json_object_new_string(m->mentions[i]));
    json_object_object_add(msg, "mentions", ms);
    json_object_object_add(o, "message", msg);
    /* the fallback's verdict, on the whole text: the job keeps only the
     * prompt's cut of it, and a few bytes of verdict keep the job bounded */
    wake_rules_in in = wake_rules_input(p, m);
    bool wake = false;
    char why[WAKE_REASON_MAX];
    wake_rules_decide(&in, &wake, why, sizeof why);
    json_object *ru = json_object_new_object();
    json_object_object_add(ru, "wake", json_object_new_boolean(wake));
    add_str(ru, "reason", why);
    json_object_object_add(o, "rules", ru);

    json_object_object_add(o, "recent_count", json_object_new_int(ctx->recent_count));
    if (ctx->has_human) {
        vigil_utf8_copy(text, WAKE_PROMPT_TEXT_MAX + 1, ctx->human_text ? ctx->human_text : "");
        add_str(o, "last_human", text);
    }
    add_str(o, "since_human", ctx->since_human);
    add_str(o, "active_ais", ctx->active_ais);
    json_object_object_add(o, "enqueued", json_object_new_int64(now));
    return wake_json_take(o);
}

char *wake_ap_job_build(const wake_room *r, const char *job_id, int64_t now)
{
    json_object *o = json_object_new_object();
    add_str(o, "kind", "autopilot");
    add_str(o, "job", job_id);
    add_str(o, "room", r->id);
    json_object *ps = json_object_new_array();
    for (int i = 0; i < r->n_personas; i++) {
        json_object *x = json_object_new_object();
        add_str(x, "id", r->personas[i].id);
        add_str(x, "name", wake_display_name(&r->personas[i]));
        add_str(x, "level", wake_level_name(r->personas[i].level));
        json_object_array_add(ps, x);
    }
    json_object_object_add(o, "personas", ps);
    json_object_object_add(o, "human_5m", json_object_new_int(
        wake_room_count(r, now, WAKE_ACTIVITY_MS, WAKE_SENDER_HUMAN)));
    json_object_object_add(o, "ai_5m", json_object_new_int(
        wake_room_count(r, now, WAKE_ACTIVITY_MS, WAKE_SENDER_AI)));
    char ago[48];
    if (r->has_human)
        wake_format_ago(now - r->last_human.ts, ago, sizeof ago);
    else
        snprintf(ago, sizeof ago, "never");
    add_str(o, "since_human", ago);
    json_object_object_add(o, "velocity", json_object_new_double(wake_room_velocity(r, now)));
    json_object_object_add(o, "enqueued", json_object_new_int64(now));
    return wake_json_take(o);
}

/* ---- parsing ------------------------------------------------------- */

static const char *str_of(json_object *o, const char *k)
{
    json_object *v;
    if (json_object_object_get_ex(o, k, &v) && v && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

static int copy_req(json_object *o, const char *k, char *out, size_t outlen, size_t min,
                    char *why, size_t whylen)
{
    const char *s = str_of(o, k);
    if (!s || strlen(s) < min || strlen(s) >= outlen) {
        snprintf(why, whylen, "job field '%s' missing or bad", k);
        return -1;
    }
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

static void copy_opt(json_object *o, const char *k, char *out, size_t outlen)
{
    vigil_utf8_copy(out, outlen, str_of(o, k));
}

static int64_t i64_of(json_object *o, const char *k, int64_t def)
{
    json_object *v;
    if (json_object_object_get_ex(o, k, &v) && v &&
        (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return json_object_get_int64(v);
    return def;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The rules' verdict made at intake. Absent in a job enqueued by an older
 * version (the rules then read the job's text); present but malformed, the
 * job is refused like any other bad field. */
static int parse_rules(json_object *o, wake_job *j, char *why, size_t whylen)
{
    json_object *ru, *w;
    if (!json_object_object_get_ex(o, "rules", &ru) || !ru)
        return 0;
    const char *reason = str_of(ru, "reason");
    if (!json_object_object_get_ex(ru, "wake", &w) || !json_object_is_type(w, json_type_boolean) ||
        !reason || !reason[0] || strlen(reason) >= sizeof j->rules_reason) {
        snprintf(why, whylen, "job field 'rules' bad");
        return -1;
    }
    j->has_rules = true;
    j->rules_wake = json_object_get_boolean(w);
    memcpy(j->rules_reason, reason, strlen(reason) + 1);
    return 0;
}

static int parse_wake(json_object *o, wake_job *j, char *why, size_t whylen)
{
    json_object *msg, *v;
    char tier[16];
    if (copy_req(o, "job", j->job, sizeof j->job, 1, why, whylen) ||
        copy_req(o, "room", j->room, sizeof j->room, 1, why, whylen) ||
        copy_req(o, "persona", j->persona, sizeof j->persona, 1, why, whylen) ||
        copy_req(o, "tier", tier, sizeof tier, 1, why, whylen))
        return -1;
    if (wake_tier_parse(tier, &j->tier) != 0) {
        snprintf(why, whylen, "job tier '%s' unknown", tier);
        return -1;
    }
    copy_opt(o, "name", j->name, sizeof j->name);
    copy_opt(o, "role", j->role, sizeof j->role);
    copy_opt(o, "model", j->model, sizeof j->model);
    j->threshold = 0.7;
    if (json_object_object_get_ex(o, "threshold", &v) && v)
        j->threshold = json_object_get_double(v);
    if (!json_object_object_get_ex(o, "message", &msg) || !msg ||
        !json_object_is_type(msg, json_type_object)) {
        snprintf(why, whylen, "job field 'message' missing");
        return -1;
    }
    char type[16];
    if (copy_req(msg, "id", j->message_id, sizeof j->message_id, 1, why, whylen) ||
        copy_req(msg, "sender", j->sender, sizeof j->sender, 0, why, whylen) ||
        copy_req(msg, "sender_type", type, sizeof type, 1, why, whylen))
        return -1;
    if (wake_sender_parse(type, &j->sender_type) != 0) {
        snprintf(why, whylen, "job sender_type '%s' unknown", type);
        return -1;
    }
    copy_opt(msg, "sender_name", j->sender_name, sizeof j->sender_name);
    if (parse_rules(o, j, why, whylen) != 0)
        return -1;
    j->text = strdup(str_of(msg, "text") ? str_of(msg, "text") : "");
    if (!j->text) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    json_object *ms;
    if (json_object_object_get_ex(msg, "mentions", &ms) && ms &&
        json_object_is_type(ms, json_type_array)) {
        size_t n = json_object_array_length(ms);
        if (n > JOB_MENTIONS_MAX)
            n = JOB_MENTIONS_MAX;
        j->mentions = calloc(n + 1, sizeof *j->mentions);
        if (!j->mentions) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            json_object *x = json_object_array_get_idx(ms, i);
            if (x && json_object_is_type(x, json_type_string))
                vigil_utf8_copy(j->mentions[j->n_mentions++], WAKE_ID_MAX + 1,
                                json_object_get_string(x));
        }
    }
    j->recent_count = (int)i64_of(o, "recent_count", 0);
    const char *h = str_of(o, "last_human");
    j->has_human = h != NULL;
    j->human_text = dup_or_null(h);
    copy_opt(o, "since_human", j->since_human, sizeof j->since_human);
    j->active_ais = strdup(str_of(o, "active_ais") ? str_of(o, "active_ais") : "");
    j->enqueued = i64_of(o, "enqueued", 0);
    if ((h && !j->human_text) || !j->active_ais) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 0;
}

static int parse_ap(json_object *o, wake_ap_job *j, char *why, size_t whylen)
{
    json_object *ps, *v;
    if (copy_req(o, "job", j->job, sizeof j->job, 1, why, whylen) ||
        copy_req(o, "room", j->room, sizeof j->room, 1, why, whylen))
        return -1;
    if (!json_object_object_get_ex(o, "personas", &ps) || !ps ||
        !json_object_is_type(ps, json_type_array)) {
        snprintf(why, whylen, "job field 'personas' missing");
        return -1;
    }
    size_t n = json_object_array_length(ps);
    j->personas = calloc(n + 1, sizeof *j->personas);
    if (!j->personas) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *x = json_object_array_get_idx(ps, i);
        wake_ap_persona *p = &j->personas[j->n_personas];
        if (!x || !str_of(x, "id"))
            continue;
        vigil_utf8_copy(p->id, WAKE_ID_MAX + 1, str_of(x, "id"));
        copy_opt(x, "name", p->name, sizeof p->name); /* absent in older jobs */
        if (wake_level_parse(str_of(x, "level"), &p->level) != 0)
            p->level = WAKE_LEVEL_ACTIVE;
        j->n_personas++;
    }
    j->human_5m = (int)i64_of(o, "human_5m", 0);
    j->ai_5m = (int)i64_of(o, "ai_5m", 0);
    copy_opt(o, "since_human", j->since_human, sizeof j->since_human);
    j->velocity = 0;
    if (json_object_object_get_ex(o, "velocity", &v) && v)
        j->velocity = json_object_get_double(v);
    j->enqueued = i64_of(o, "enqueued", 0);
    return 0;
}

int wake_job_parse(const char *json, size_t len, wake_job_kind *kind, wake_job *wj,
                   wake_ap_job *aj, char *why, size_t whylen)
{
    memset(wj, 0, sizeof *wj);
    memset(aj, 0, sizeof *aj);
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    json_object *o = json_tokener_parse_ex(tok, json, (int)len);
    bool complete = json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    int rc = -1;
    if (!o || !complete || !json_object_is_type(o, json_type_object)) {
        snprintf(why, whylen, "job is not a JSON object");
        goto done;
    }
    const char *k = str_of(o, "kind");
    if (k && strcmp(k, "wake") == 0) {
        *kind = WAKE_JOB_WAKE;
        rc = parse_wake(o, wj, why, whylen);
        if (rc != 0)
            wake_job_clear(wj);
    } else if (k && strcmp(k, "autopilot") == 0) {
        *kind = WAKE_JOB_AUTOPILOT;
        rc = parse_ap(o, aj, why, whylen);
        if (rc != 0)
            wake_ap_job_clear(aj);
    } else {
        snprintf(why, whylen, "job kind '%s' unknown", k ? k : "(none)");
    }
done:
    json_object_put(o);
    return rc;
}

void wake_job_clear(wake_job *j)
{
    free(j->text);
    free(j->mentions);
    free(j->human_text);
    free(j->active_ais);
    memset(j, 0, sizeof *j);
}

void wake_ap_job_clear(wake_ap_job *j)
{
    free(j->personas);
    memset(j, 0, sizeof *j);
}

bool wake_job_wanted(const wake_room *r, const wake_job *j)
{
    if (!r)
        return true;
    const wake_persona *p = wake_room_find_const(r, j->persona);
    return p && p->level == WAKE_LEVEL_SLEEP;
}
