/* fuzz_wake.c - wake-evaluator's decision core over a room's life: a stored
 * record (possibly damaged), then room messages, persona metas, dormancy
 * level reports and autopilot deadlines applied to the room kept from the
 * last step, and the jobs the room enqueued (or given ones) taken through
 * their prompts and a model's answer to a decision committed to the room.
 *
 * Input: parts separated by lines holding only "---":
 *   1. "<now ms> <switch bits>" (bits: 1 LLM configured, 2 llm_wake off,
 *      4 auto_wake off, 8 human_wakes=all, 16 evaluate system messages,
 *      32 autopilot off);
 *   2. the room's stored record (empty: no record);
 *   3... one step each: a first line "<dt ms> <kind> [<arg>]", a payload
 *      after it; dt moves the clock on first. kind: message (room message
 *      JSON), meta <persona> (persona meta JSON), level <persona>
 *      ({"level","since","trigger"}; no level: the room is no longer
 *      listed; an empty payload on meta or level: the retained meta or
 *      state cleared), timer (the autopilot deadline comes due), job (the payload
 *      is a job from the stream; empty: the last job the room enqueued),
 *      answer <ok|timeout|truncated> (the payload is the model's answer to
 *      the last job; its decision is committed to the room).
 * What must hold, whatever the bytes: no step fails; every payload
 * published or enqueued is a JSON object in valid UTF-8; a decision's
 * confidence is within 0..1 and a smart model's wake is above its
 * threshold; the record reads back to the same text; a clear applied
 * again changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include "fuzz_util.h"
#include "wake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 24
#define ROOM "general"

/* ---- the sink: what the shell would do with the core's outputs ---- */

typedef struct fx {
    char *last_job;   /* the last job enqueued */
    int64_t ap_due;   /* the autopilot timer, INT64_MIN = not set */
    bool lax;         /* committing what a job that was not text decided */
} fx;

static int fx_publish(void *ctx, const char *topic, const char *payload, bool retain)
{
    fx *f = ctx;
    (void)retain;
    if (!topic || !topic[0] || !payload)
        abort();
    if (!f->lax)
        fuzz_json_check(payload);
    return 0;
}

static int fx_enqueue(void *ctx, const char *job_json)
{
    fx *f = ctx;
    fuzz_json_check(job_json);
    free(f->last_job);
    f->last_job = strdup(job_json);
    return f->last_job ? 0 : -1;
}

static int fx_timer(void *ctx, const char *name, int64_t due_ms)
{
    fx *f = ctx;
    if (!name || !name[0])
        abort();
    f->ap_due = due_ms;
    return 0;
}

static int fx_member(void *ctx, const char *persona, bool add)
{
    (void)ctx;
    (void)add;
    if (!persona || !persona[0])
        abort();
    return 0;
}

static void fx_limit(void *ctx, const char *limit, const char *detail)
{
    (void)ctx;
    if (!limit || !limit[0] || !detail || !detail[0])
        abort(); /* a limit always says which and where */
}

/* ---- a model-output reader for the core's seam: the JSON in prose, refused
 * when not valid UTF-8 (what libshared's readers promise) ---- */

static json_object *find_json(const char *text, size_t len, char open, char close,
                              json_type want, char *why, size_t whylen)
{
    const char *a = memchr(text, open, len);
    const char *b = NULL;
    for (size_t i = len; i > 0 && a; i--)
        if (text[i - 1] == close) {
            b = text + i;
            break;
        }
    if (!a || !b || b <= a) {
        snprintf(why, whylen, "no JSON found");
        return NULL;
    }
    if (!vigil_utf8_valid(a, (size_t)(b - a))) { /* as libshared's readers */
        snprintf(why, whylen, "not valid UTF-8");
        return NULL;
    }
    json_tokener *t = json_tokener_new();
    if (!t)
        abort();
    json_object *o = json_tokener_parse_ex(t, a, (int)(b - a));
    json_tokener_free(t);
    if (!o || !json_object_is_type(o, want)) {
        json_object_put(o);
        snprintf(why, whylen, "not the JSON wanted");
        return NULL;
    }
    return o;
}

static json_object *rd_object(const char *text, size_t len, char *why, size_t whylen)
{
    return find_json(text, len, '{', '}', json_type_object, why, whylen);
}

static json_object *rd_array(const char *text, size_t len, char *why, size_t whylen)
{
    return find_json(text, len, '[', ']', json_type_array, why, whylen);
}

static int rd_bool(json_object *o, const char *name, bool *out)
{
    json_object *v;
    if (!json_object_object_get_ex(o, name, &v))
        return 1;
    if (!json_object_is_type(v, json_type_boolean))
        return -1;
    *out = json_object_get_boolean(v);
    return 0;
}

static int rd_confidence(json_object *o, const char *name, double *out)
{
    json_object *v;
    if (!json_object_object_get_ex(o, name, &v))
        return 1;
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return -1;
    double d = json_object_get_double(v);
    if (d >= 0 && d <= 1)
        *out = d;
    else if (d >= 2 && d <= 100 && d == (double)(int)d)
        *out = d / 100;
    else
        return -2;
    return 0;
}

static int rd_string(json_object *o, const char *name, const char **out)
{
    json_object *v;
    if (!json_object_object_get_ex(o, name, &v))
        return 1;
    if (!json_object_is_type(v, json_type_string))
        return -1;
    *out = json_object_get_string(v);
    return 0;
}

static const wake_reader READER = { rd_object, rd_array, rd_bool, rd_confidence, rd_string };

/* ---- steps ---- */

typedef struct held_job {
    bool have;
    bool text_ok; /* the job read was valid UTF-8 */
    wake_job_kind kind;
    wake_job wj;
    wake_ap_job aj;
} held_job;

static void job_drop(held_job *h)
{
    if (!h->have)
        return;
    if (h->kind == WAKE_JOB_WAKE)
        wake_job_clear(&h->wj);
    else
        wake_ap_job_clear(&h->aj);
    h->have = false;
}

/* A decision's payload is valid JSON in valid UTF-8 when its job was
 * valid text (strict); from a job that was not, it is made all the same. */
static void check_decision(const wake_decision *d, int64_t now, bool strict)
{
    if (!(d->confidence >= 0.0 && d->confidence <= 1.0) || d->reason[0] == '\0')
        abort();
    char *s = wake_decision_json(d, now);
    if (!s)
        abort();
    if (strict)
        fuzz_json_check(s);
    free(s);
}

static void on_job(held_job *h, const char *json, size_t len)
{
    char why[256] = "";
    job_drop(h);
    memset(&h->wj, 0, sizeof h->wj);
    memset(&h->aj, 0, sizeof h->aj);
    if (wake_job_parse(json, len, &h->kind, &h->wj, &h->aj, why, sizeof why) != 0) {
        if (why[0] == '\0')
            abort(); /* a refusal says why */
        return;
    }
    h->have = true;
    /* the stream holds jobs the core wrote: damaged, perhaps, but text */
    bool text_ok = h->text_ok = vigil_utf8_valid(json, len);
    char *p[3] = { NULL, NULL, NULL };
    if (h->kind == WAKE_JOB_WAKE) {
        p[0] = wake_prompt_smart(&h->wj);
        p[1] = wake_prompt_mid(&h->wj);
        if (!p[0] || !p[1] || (text_ok && (!vigil_utf8_valid(p[0], strlen(p[0])) ||
                                            !vigil_utf8_valid(p[1], strlen(p[1])))))
            abort(); /* a job of valid text makes prompts of valid text */
        wake_decision d;
        memset(&d, 0, sizeof d);
        wake_decide_rules(&h->wj, WAKE_VIA_RULES, NULL, &d);
        check_decision(&d, 0, text_ok);
    } else {
        p[2] = wake_prompt_autopilot(&h->aj);
        if (!p[2] || (text_ok && !vigil_utf8_valid(p[2], strlen(p[2]))))
            abort();
    }
    for (int i = 0; i < 3; i++)
        free(p[i]);
}

static void on_answer(wake_room *r, const wake_config *c, held_job *h, const char *how,
                      const char *content, size_t len, int64_t now, const wake_sink *sink)
{
    if (!h->have)
        return;
    bool ok = strcmp(how, "timeout") != 0;
    if (h->kind == WAKE_JOB_WAKE) {
        wake_llm_answer a = { .ok = ok, .status = ok ? "ok" : "timeout",
                              .error = ok ? NULL : "timed out", .content = content, .len = len,
                              .truncated = strcmp(how, "truncated") == 0, .tokens = 42,
                              .latency_ms = 10 };
        wake_decision d;
        memset(&d, 0, sizeof d);
        wake_decide_after_llm(&READER, &h->wj, &a, now, &d);
        check_decision(&d, now, h->text_ok);
        if (d.via == WAKE_VIA_LLM && d.tier == WAKE_TIER_SMART && d.should_wake &&
            !(d.confidence > h->wj.threshold))
            abort(); /* a smart wake is above its threshold */
        fx *f = sink->ctx;
        f->lax = !h->text_ok;
        if (wake_on_decision(r, c, &d, now, sink) != 0)
            abort();
        f->lax = false;
        return;
    }
    wake_ap_list list;
    memset(&list, 0, sizeof list);
    char why[256] = "";
    bool parsed = ok && wake_autopilot_parse(&READER, r, content, len, &list, why,
                                             sizeof why) == 0;
    if (ok && !parsed && why[0] == '\0')
        abort();
    for (int i = 0; i < list.n; i++)
        if (list.v[i].action > WAKE_AP_KEEP || !list.v[i].persona[0])
            abort();
    wake_ap_result res = { .id = h->aj.job, .from_llm = parsed,
                           .proposals = parsed ? &list : NULL,
                           .fallback = parsed ? NULL : "LLM answer unusable", .tokens = 42 };
    if (wake_on_autopilot(r, c, &res, now, sink) != 0)
        abort();
}

/* A meta as the service's route hands it to the core. */
static void apply_meta(wake_room *r, const wake_config *c, const char *persona,
                       const vigil_persona_meta *mp, int64_t now, const wake_sink *sink)
{
    const vigil_persona_meta m = *mp;
    bool member = false;
    for (int i = 0; i < m.n_rooms; i++)
        member = member || strcmp(m.rooms[i], ROOM) == 0;
    const vigil_dormancy_overrides *ov = &m.dormancy;
    wake_meta wm = {
        .persona = persona, .name = m.name, .role = m.role,
        .tier = m.has_tier ? vigil_tier_names[m.tier] : NULL, .model = m.model,
        .mood = m.mood, .parameters = m.parameters, .availability = m.availability,
        .domains = m.domains, .n_domains = m.n_domains, .conf_domains = m.conf_domains,
        .conf_values = m.conf_values, .n_conf = m.n_conf,
        .auto_wake = ov->has & VIGIL_OV_AUTO_WAKE ? ov->auto_wake : -1,
        .llm_wake = ov->has & VIGIL_OV_LLM_WAKE ? ov->llm_wake : -1,
        .wake_conf = ov->has & VIGIL_OV_WAKE_CONFIDENCE ? ov->wake_confidence : -1,
    };
    if (wake_on_meta(r, c, &wm, member, now, sink) != 0)
        abort();
}

static void on_meta(wake_room *r, const wake_config *c, const char *persona, json_object *b,
                    int64_t now, const wake_sink *sink)
{
    vigil_persona_meta m;
    if (!fuzz_read_meta(b, &m))
        return;
    apply_meta(r, c, persona, &m, now, sink);
    vigil_persona_meta_release(&m);
}

/* An empty payload on meta or level: the retained meta or state cleared,
 * as the service reads it (the meta that says nothing; a state without
 * this room). */
static void on_clear(wake_room *r, const wake_config *c, bool meta, const char *persona,
                     int64_t now, const wake_sink *sink)
{
    vigil_persona_meta m;
    vigil_persona_meta_init(&m);
    if (meta)
        apply_meta(r, c, persona, &m, now, sink);
    else if (wake_on_level(r, c, persona, false, WAKE_LEVEL_ACTIVE, 0, NULL, now, sink) != 0)
        abort();
}

static void on_message(wake_room *r, const wake_config *c, json_object *b, int step_no,
                       int64_t now, const wake_sink *sink)
{
    vigil_room_message m;
    vigil_error err = {0};
    const char *pid = NULL;
    if (vigil_json_string(b, "id", false, &pid, &err) < 0 ||
        (pid && !vigil_event_id_valid(pid, strlen(pid))))
        return;
    if (!fuzz_read_message(b, &m))
        return;
    char id[32];
    snprintf(id, sizeof id, "h-%d", step_no);
    wake_message wm = { .id = pid ? pid : id, .sender = m.sender,
                        .type = (wake_sender)m.sender_type, .text = m.text,
                        .mentions = m.mentions, .n_mentions = m.n_mentions };
    if (wake_on_message(r, c, &wm, now, sink) != 0)
        abort();
    vigil_room_message_release(&m);
}

static void on_level(wake_room *r, const wake_config *c, const char *persona, json_object *b,
                     int64_t now, const wake_sink *sink)
{
    vigil_error err = {0};
    int level = -1;
    int64_t since = 0;
    const char *trigger = NULL;
    if (vigil_json_enum(b, "level", false, vigil_level_names, &level, &err) < 0 ||
        vigil_json_int64(b, "since", false, &since, &err) < 0 ||
        vigil_json_string_bounded(b, "trigger", false, 64, &trigger, &err) < 0 || since < 0)
        return;
    if (wake_on_level(r, c, persona, level >= 0,
                      level >= 0 ? wake_level_from((vigil_level)level) : WAKE_LEVEL_ACTIVE,
                      since, trigger, now, sink) != 0)
        abort();
}

/* The record written now reads back as the same text. */
static void check_record(const wake_room *r)
{
    char *a = wake_room_to_json(r);
    if (!a)
        abort();
    fuzz_json_check(a);
    bool corrupt = false;
    wake_room *back = wake_room_from_json(ROOM, a, &corrupt);
    if (!back || corrupt)
        abort();
    char *b = wake_room_to_json(back);
    fuzz_same_text("record", a, b);
    free(a);
    free(b);
    wake_room_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[MAX_PARTS];
    int np = fuzz_split((const char *)data, size, parts, MAX_PARTS);
    wake_config c;
    wake_config_init(&c);
    int64_t now = 1700000000000, bits = 0;
    fuzz_header(parts[0], (const fuzz_field[]){ { 0, INT64_MAX / 4, &now }, { 0, 63, &bits } }, 2);
    c.llm_enabled = bits & 1;
    c.llm_wake = !(bits & 2);
    c.auto_wake = !(bits & 4);
    c.human_wakes_all = (bits & 8) != 0;
    c.evaluate_system = (bits & 16) != 0;
    c.autopilot = !(bits & 32);
    c.max_personas = 8;
    char *rec = fuzz_text_part(parts, np, 1);
    wake_room *r = rec ? wake_room_from_json(ROOM, rec, NULL) : wake_room_new(ROOM);
    free(rec);
    if (!r)
        abort();
    fx f = { NULL, INT64_MIN, false };
    wake_sink sink = { .ctx = &f, .publish = fx_publish, .enqueue = fx_enqueue,
                       .timer = fx_timer, .member = fx_member, .limit = fx_limit };
    held_job job = { 0 };
    for (int i = 2; i < np; i++) {
        fuzz_step st;
        if (!fuzz_step_read(parts[i], FUZZ_LINE_MAX, &now, &st))
            continue;
        if (strcmp(st.kind, "timer") == 0) {
            if (f.ap_due == INT64_MIN)
                continue;
            int64_t due = f.ap_due;
            if (due > now)
                now = due;
            f.ap_due = INT64_MIN;
            if (wake_on_timer(r, &c, WAKE_TIMER_AUTOPILOT, due, now, &sink) != 0)
                abort();
        } else if (strcmp(st.kind, "job") == 0) {
            if (st.plen == 0 && f.last_job)
                on_job(&job, f.last_job, strlen(f.last_job));
            else
                on_job(&job, st.payload, st.plen);
        } else if (strcmp(st.kind, "answer") == 0) {
            on_answer(r, &c, &job, st.arg, st.payload, st.plen, now, &sink);
        } else {
            bool persona_ok = st.arg[0] && vigil_id_valid(st.arg, strlen(st.arg));
            bool meta = strcmp(st.kind, "meta") == 0;
            if (st.plen == 0 && persona_ok && (meta || strcmp(st.kind, "level") == 0)) {
                /* a clear has no id to deduplicate a redelivery by: applied
                 * again, it must leave the record as the first left it */
                on_clear(r, &c, meta, st.arg, now, &sink);
                char *once = wake_room_to_json(r);
                on_clear(r, &c, meta, st.arg, now, &sink);
                char *again = wake_room_to_json(r);
                if (!once || !again)
                    abort();
                fuzz_same_text("a clear applied again", once, again);
                free(once);
                free(again);
                check_record(r);
                continue;
            }
            vigil_error err = {0};
            json_object *b = vigil_json_parse_object(st.payload, st.plen, 65536, &err);
            if (!b)
                continue;
            if (strcmp(st.kind, "message") == 0)
                on_message(r, &c, b, i, now, &sink);
            else if (strcmp(st.kind, "meta") == 0 && persona_ok)
                on_meta(r, &c, st.arg, b, now, &sink);
            else if (strcmp(st.kind, "level") == 0 && persona_ok)
                on_level(r, &c, st.arg, b, now, &sink);
            json_object_put(b);
        }
        check_record(r);
    }
    job_drop(&job);
    free(f.last_job);
    wake_room_free(r);
    return 0;
}
