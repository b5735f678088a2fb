/* render.c - the payloads of topics/schemas built from actions and the room
 * record: persona/{p}/dormancy, persona/{p}/suggestion, the system message
 * on room/{r}/message, the persona/{p}/state entry and room/{r}/state. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <vigil/msg_room.h>
#include "step.h"

void format_iso(int64_t ms, char *out, size_t outlen)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, outlen, "%" PRId64, ms);
}

/* Whole minutes as "5min" (the seed's wording); sub-minute test thresholds
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

/* Two decimals, printed as such (json-c would print 17 significant digits). */
static json_object *new_rounded(double v)
{
    char buf[32];
    room_rounded(v, buf, sizeof buf);
    double r;
    sscanf(buf, "%lf", &r);
    return json_object_new_double_s(r, buf);
}

json_object *dormancy_change_json(const dormancy_action *a, const char *room, int64_t now)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "id", a->id);
    add_str(o, "persona", a->persona);
    add_str(o, "room", room);
    add_str(o, "level", dormancy_level_name(a->level));
    add_str(o, "previous", dormancy_level_name(a->previous));
    add_str(o, "trigger", dormancy_trigger_name(a->trigger));
    add_str(o, "reason", a->reason);
    add_str(o, "text", a->text);
    if (a->message_id[0])
        add_str(o, "message_id", a->message_id);
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}

json_object *dormancy_suggestion_json(const dormancy_action *a, const char *room, int64_t now)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "id", a->id);
    add_str(o, "persona", a->persona);
    add_str(o, "room", room);
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
    add_str(o, "reason", a->reason);
    if (a->message_id[0])
        add_str(o, "message_id", a->message_id);
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}

/* Its id comes back to this service (and others) as an input id, which may
 * not contain '/', '+' or '#': any such character in the event id (ids
 * come from the shell's id seam) becomes ':'. */
json_object *dormancy_system_message_json(const dormancy_action *a, const char *room,
                                          const char *sender, int64_t now)
{
    char id[DORMANCY_EVID_MAX + 1];
    dm_copy(id, sizeof id, a->id);
    for (char *c = id; *c; c++)
        if (*c == '/' || *c == '+' || *c == '#')
            *c = ':';
    vigil_room_message_out m = {.id = id, .room = room, .sender = sender,
                                .sender_type = VIGIL_SENDER_SYSTEM, .text = a->text,
                                .reply_to = a->message_id[0] ? a->message_id : NULL,
                                .about = a->persona[0] ? a->persona : NULL, .ts = now};
    return vigil_room_message_json(&m);
}

json_object *dormancy_persona_entry_json(const dormancy_action *a)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "level", dormancy_level_name(a->level));
    json_object_object_add(o, "since", json_object_new_int64(a->since));
    /* the contract's trigger is never null: a persona that joined and was
     * never moved is at its default level, shown as "manual" */
    const char *trig = dormancy_trigger_name(a->trigger);
    add_str(o, "trigger", trig ? trig : "manual");
    if (a->snoozed_until)
        json_object_object_add(o, "snoozed_until", json_object_new_int64(a->snoozed_until));
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

void room_rounded(double v, char *out, size_t outlen)
{
    snprintf(out, outlen, "%.2f", v);
}

json_object *dormancy_room_state_json(const dormancy_room *r, const dormancy_config *cfg,
                                      int64_t now)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_str(o, "room", r->room);
    json_object_object_add(o, "last_human_ts", r->last_human ? json_object_new_int64(r->last_human) : NULL);
    json_object_object_add(o, "ai_only_since",
                           r->ai_only_since ? json_object_new_int64(r->ai_only_since) : NULL);
    json_object *hp = json_object_new_array();
    for (int i = 0; i < r->n_sessions; i++)
        if (room_session_listed(r, i, cfg, now))
            json_object_array_add(hp, json_object_new_string(r->sessions[i].user));
    json_object_object_add(o, "humans_present", hp);
    dormancy_metrics m = dormancy_room_metrics(r, cfg, now);
    json_object_object_add(o, "velocity_per_min", new_rounded(m.velocity_per_min));
    json_object_object_add(o, "ai_to_human_ratio",
                           m.humans > 0 ? new_rounded(m.ai_to_human_ratio) : NULL);
    json_object_object_add(o, "paused", json_object_new_boolean(r->paused));
    json_object *ps = json_object_new_object();
    for (int i = 0; i < r->n_personas; i++)
        json_object_object_add(ps, r->personas[i].id,
                               json_object_new_string(dormancy_level_name(r->personas[i].level)));
    json_object_object_add(o, "personas", ps);
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}
