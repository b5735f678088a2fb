/* render.c - the payloads of topics/schemas built from actions and the room
 * record: persona/{p}/dormancy, persona/{p}/suggestion, the system message
 * on room/{r}/message, the persona/{p}/state entry and room/{r}/state. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vigil/human_wake.h>
#include <vigil/msg_room.h>
#include <vigil/jtext.h>
#include "step.h"

void format_iso(int64_t ms, char *out, size_t outlen)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, outlen, "%" PRId64, ms);
}

/* Whole minutes as "5min" (the specified wording); sub-minute test thresholds
 * as seconds ("3s") or, below a second or when not whole, milliseconds. */
void dormancy_format_duration(int64_t ms, char *out, size_t outlen)
{
    if (ms > 0 && ms % 60000 == 0)
        snprintf(out, outlen, "%" PRId64 "min", ms / 60000);
    else if (ms > 0 && ms % 1000 == 0)
        snprintf(out, outlen, "%" PRId64 "s", ms / 1000);
    else
        snprintf(out, outlen, "%" PRId64 "ms", ms);
}

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

/* The fields a change and a suggestion start with. */
static json_object *action_json_new(const dormancy_action *a, const char *room)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "id", a->id);
    add_str(o, "persona", a->persona);
    add_str(o, "room", room);
    return o;
}

/* The fields a change and a suggestion end with; returns o. */
static json_object *action_json_end(json_object *o, const dormancy_action *a, int64_t now)
{
    if (a->message_id[0])
        add_str(o, "message_id", a->message_id);
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}

/* key (written with its quotes, colon and any comma before it: the names
 * are literals) and v as a string, or null when v is NULL (as add_str
 * adds it). */
VIGIL_JTEXT_INLINE void text_member(vigil_jtext *b, const char *key, const char *v)
{
    vigil_jtext_lit(b, key);
    if (v)
        vigil_jtext_str(b, v);
    else
        vigil_jtext_lit(b, "null");
}

/* persona/{p}/dormancy as text: a change is written on most inputs, and
 * building then printing a json-c object cost more than the decision. */
char *dormancy_change_text(const dormancy_action *a, const char *room, int64_t now)
{
    vigil_jtext b = {0};
    /* one allocation: the names, ids and numbers fit in 512 bytes */
    vigil_jtext_reserve(&b, 512 + strlen(a->reason) + strlen(a->text));
    text_member(&b, "{\"id\":", a->id);
    text_member(&b, ",\"persona\":", a->persona);
    text_member(&b, ",\"room\":", room);
    text_member(&b, ",\"level\":", dormancy_level_name(a->level));
    text_member(&b, ",\"previous\":", dormancy_level_name(a->previous));
    text_member(&b, ",\"trigger\":", dormancy_trigger_name(a->trigger));
    text_member(&b, ",\"reason\":", a->reason);
    text_member(&b, ",\"text\":", a->text);
    if (a->message_id[0])
        text_member(&b, ",\"message_id\":", a->message_id);
    vigil_jtext_lit(&b, ",\"ts\":");
    vigil_jtext_i64(&b, now);
    vigil_jtext_put(&b, "}", 1);
    return vigil_jtext_take(&b);
}

json_object *dormancy_change_json(const dormancy_action *a, const char *room, int64_t now)
{
    char *t = dormancy_change_text(a, room, now);
    json_object *o = t ? json_tokener_parse(t) : NULL;
    free(t);
    return o;
}

json_object *dormancy_suggestion_json(const dormancy_action *a, const char *room, int64_t now)
{
    json_object *o = action_json_new(a, room);
    if (!o)
        return NULL;
    add_str(o, "suggest", "mention-only");
    add_str(o, "trigger", dormancy_suggest_trigger_name(a->suggest));
    add_str(o, "text", a->text);
    json_object *opts = json_object_new_array();
    json_object_array_add(opts, json_object_new_string("yes"));
    json_object_array_add(opts, json_object_new_string("no"));
    if (a->suggest == DORMANCY_SUGGEST_NO_HUMAN)
        json_object_array_add(opts, json_object_new_string("snooze"));
    json_object_object_add(o, "options", opts);
    add_str(o, "default", "yes");
    json_object_object_add(o, "default_after_ms", json_object_new_int64(a->default_after_ms));
    if (a->suggest == DORMANCY_SUGGEST_NO_HUMAN) /* with the option: "Snooze 5min" */
        json_object_object_add(o, "snooze_ms", json_object_new_int64(a->snooze_ms));
    add_str(o, "reason", a->reason);
    return action_json_end(o, a, now);
}

/* Its id comes back to this service (and others) as an input id, which may
 * not contain '/', '+' or '#': any such character in the event id (ids
 * come from the shell's id seam) becomes ':'. */
json_object *dormancy_system_message_json(const dormancy_action *a, const char *room,
                                          const char *sender, int64_t now)
{
    char id[DORMANCY_EVID_MAX + 1];
    vigil_utf8_copy(id, sizeof id, a->id);
    for (char *c = id; *c; c++)
        if (*c == '/' || *c == '+' || *c == '#')
            *c = ':';
    vigil_room_message_out m = {.id = id, .room = room, .sender = sender,
                                .sender_type = VIGIL_SENDER_SYSTEM, .text = a->text,
                                .reply_to = a->message_id[0] ? a->message_id : NULL,
                                .about = a->persona[0] ? a->persona : NULL, .ts = now};
    return vigil_room_message_json(&m);
}

/* The persona's entry in persona/{p}/state as text (one per input). */
char *dormancy_persona_entry_text(const dormancy_action *a)
{
    vigil_jtext b = {0};
    vigil_jtext_reserve(&b, 512 + strlen(a->reason) + strlen(a->pending_reason) +
                                strlen(a->text));
    text_member(&b, "{\"level\":", dormancy_level_name(a->level));
    vigil_jtext_lit(&b, ",\"since\":");
    vigil_jtext_i64(&b, a->since);
    /* the contract's trigger is never null: a persona that joined and was
     * never moved is at its default level, shown as "manual" */
    const char *trig = dormancy_trigger_name(a->trigger);
    text_member(&b, ",\"trigger\":", trig ? trig : "manual");
    if (a->reason[0])
        text_member(&b, ",\"reason\":", a->reason);
    if (a->cause != DORMANCY_CAUSE_NONE)
        text_member(&b, ",\"cause\":", vigil_cause_names[a->cause]);
    if (a->answered_human) {
        vigil_jtext_lit(&b, ",\"answered_human\":");
        vigil_jtext_i64(&b, a->answered_human);
    }
    if (a->dormant) {
        vigil_jtext_lit(&b, ",\"order\":");
        vigil_jtext_i64(&b, a->order);
    }
    if (a->until) {
        vigil_jtext_lit(&b, ",\"until\":");
        vigil_jtext_i64(&b, a->until);
    }
    if (a->snoozed_until) {
        vigil_jtext_lit(&b, ",\"snoozed_until\":");
        vigil_jtext_i64(&b, a->snoozed_until);
    }
    if (a->suggest != DORMANCY_SUGGEST_NONE) {
        /* the pending suggestion, named as on persona/{p}/suggestion */
        text_member(&b, ",\"pending\":{\"level\":", dormancy_level_name(DORMANCY_MENTION_ONLY));
        text_member(&b, ",\"trigger\":", dormancy_suggest_trigger_name(a->suggest));
        text_member(&b, ",\"reason\":", a->pending_reason);
        if (a->text[0]) /* not known for a suggestion a record written before holds */
            text_member(&b, ",\"text\":", a->text);
        vigil_jtext_lit(&b, ",\"expires\":");
        vigil_jtext_i64(&b, a->pending_expires);
        if (a->snooze_ms > 0) {
            vigil_jtext_lit(&b, ",\"snooze_ms\":");
            vigil_jtext_i64(&b, a->snooze_ms);
        }
        vigil_jtext_put(&b, "}", 1);
    }
    vigil_jtext_put(&b, "}", 1);
    return vigil_jtext_take(&b);
}

json_object *dormancy_persona_entry_json(const dormancy_action *a)
{
    char *t = dormancy_persona_entry_text(a);
    json_object *o = t ? json_tokener_parse(t) : NULL;
    free(t);
    return o;
}

bool room_session_listed(const dormancy_room *r, int i, const dormancy_config *cfg, int64_t now)
{
    const dormancy_session *s = &r->sessions[i];
    if (dormancy_session_status(s, cfg, now) != DORMANCY_PRESENCE_ACTIVE)
        return false;
    for (int j = 0; j < i; j++)
        if (strcmp(r->sessions[j].user, s->user) == 0 &&
            dormancy_session_status(&r->sessions[j], cfg, now) == DORMANCY_PRESENCE_ACTIVE)
            return false;
    return true;
}

/* What snprintf "%.2f" writes, without snprintf on the common values
 * (about 1,700 instructions a call, four calls an input): |v| below 1e9
 * and not within 0.001 of a tie at the third decimal, where rounding the
 * product v * 100 (off by at most ~1e-5 there) and rounding the exact
 * binary value, as printf does, agree. Anything else goes to snprintf. */
void room_rounded(double v, char *out, size_t outlen)
{
    double a = fabs(v);
    if (outlen < 24 || !(a < 1e9)) {
        snprintf(out, outlen, "%.2f", v);
        return;
    }
    double scaled = a * 100.0;
    double frac = scaled - floor(scaled);
    if (fabs(frac - 0.5) < 0.001) {
        snprintf(out, outlen, "%.2f", v);
        return;
    }
    int64_t cents = (int64_t)floor(scaled + 0.5);
    char *p = out;
    if (signbit(v))
        *p++ = '-';
    p += vigil_i64_text(p, cents / 100);
    *p++ = '.';
    *p++ = (char)('0' + (cents % 100) / 10);
    *p++ = (char)('0' + cents % 10);
    *p = '\0';
}

/* room/{r}/state written as text: with 1,000 personas, a json-c object of
 * 1,000 members cost more than the rest of the input. */
char *dormancy_room_state_text(const dormancy_room *r, const dormancy_config *cfg, int64_t now)
{
    return dormancy_room_state_text_m(r, cfg, now, NULL);
}

char *dormancy_room_state_text_m(const dormancy_room *r, const dormancy_config *cfg, int64_t now,
                                 const dormancy_metrics *known)
{
    vigil_jtext b = {0};
    char num[32];
    vigil_jtext_lit(&b, "{\"room\":");
    vigil_jtext_str(&b, r->room);
    vigil_jtext_lit(&b, ",\"last_human_ts\":");
    if (r->last_human)
        vigil_jtext_i64(&b, r->last_human);
    else
        vigil_jtext_lit(&b, "null");
    vigil_jtext_lit(&b, ",\"ai_only_since\":");
    if (r->ai_only_since)
        vigil_jtext_i64(&b, r->ai_only_since);
    else
        vigil_jtext_lit(&b, "null");
    vigil_jtext_lit(&b, ",\"humans_present\":[");
    bool first = true;
    for (int i = 0; i < r->n_sessions; i++) {
        if (!room_session_listed(r, i, cfg, now))
            continue;
        if (!first)
            vigil_jtext_lit(&b, ",");
        first = false;
        vigil_jtext_str(&b, r->sessions[i].user);
    }
    dormancy_metrics m = known ? *known : dormancy_room_metrics(r, cfg, now);
    vigil_jtext_lit(&b, "],\"velocity_per_min\":");
    room_rounded(m.velocity_per_min, num, sizeof num);
    vigil_jtext_lit(&b, num);
    vigil_jtext_lit(&b, ",\"ai_to_human_ratio\":");
    if (m.humans > 0) {
        room_rounded(m.ai_to_human_ratio, num, sizeof num);
        vigil_jtext_lit(&b, num);
    } else {
        vigil_jtext_lit(&b, "null");
    }
    vigil_jtext_lit(&b, r->paused ? ",\"paused\":true,\"personas\":{" : ",\"paused\":false,\"personas\":{");
    for (int i = 0; i < r->n_personas; i++) {
        if (i > 0)
            vigil_jtext_lit(&b, ",");
        vigil_jtext_str(&b, r->personas[i].id);
        vigil_jtext_lit(&b, ":");
        vigil_jtext_str(&b, dormancy_level_name(r->personas[i].level));
    }
    vigil_jtext_lit(&b, "},\"ts\":");
    vigil_jtext_i64(&b, now);
    vigil_jtext_lit(&b, "}");
    return vigil_jtext_take(&b);
}

json_object *dormancy_room_state_json(const dormancy_room *r, const dormancy_config *cfg,
                                      int64_t now)
{
    char *t = dormancy_room_state_text(r, cfg, now);
    json_object *o = t ? json_tokener_parse(t) : NULL;
    free(t);
    return o;
}
