/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the room
 * keys it touches:
 *   room/{r}/...               -> r
 *   persona/{p}/command        -> its `room`, or every room p is in
 *   persona/{p}/meta           -> meta.rooms plus every room p is in
 *   persona/{p}/wake           -> its `room`
 * "Every room p is in" is the field list of p's persona/{p}/state hash,
 * which the rooms keep up to date (one entry per member room). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include "adapter.h"

#define MAX_MENTIONS 256
#define MAX_DECISIONS 256
#define MAX_META_ROOMS VIGIL_ROUTE_MAX_KEYS

static const char *const SENDER_TYPES[] = {"human", "ai", "system", NULL};
static const char *const PRESENCE_STATUSES[] = {"active", "idle", "away", NULL};
static const char *const CONTROL_ACTIONS[] = {"pause", "resume", "delete", "wake", NULL};
static const char *const AP_ACTIONS[] = {"suggest-mention-only", "auto-sleep", "wake", "keep", NULL};
static const char *const AP_SOURCES[] = {"llm", "rules", NULL};
static const char *const COMMANDS[] = {"dormant", "awake", "status", "answer", NULL};
static const char *const LEVELS[] = {"active", "mention-only", "human-only", "sleep", NULL};
static const char *const ANSWERS[] = {"yes", "no", "snooze", NULL};
static const char *const VIAS[] = {"llm", "rules", "fallback", NULL};
static const char *const TIERS[] = {"smart", "mid", "basic", NULL};

/* room/{r}/message. Fields the rules do not use (depth, proactive) are
 * still type-checked: a wrong type is a producer bug worth a reject. */
static int parse_message(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    int type, n;
    const char *text;
    int64_t depth;
    bool proactive;
    ev->kind = DORMANCY_EV_MESSAGE;
    if (vigil_json_id(b, "sender", true, &ev->msg.sender, err) < 0 ||
        vigil_json_enum(b, "sender_type", true, SENDER_TYPES, &type, err) < 0 ||
        vigil_json_string(b, "text", true, &text, err) < 0 ||
        vigil_json_string_bounded(b, "reply_to", false, VIGIL_EVENT_ID_MAX, &ev->msg.reply_to, err) < 0 ||
        vigil_json_string_array(b, "mentions", false, true, MAX_MENTIONS, &pp->mentions, &n, err) < 0 ||
        vigil_json_int64(b, "depth", false, &depth, err) < 0 ||
        vigil_json_bool(b, "proactive", false, &proactive, err) < 0)
        return -1;
    ev->msg.sender_type = (dormancy_sender_type)type;
    ev->msg.text = text;
    ev->msg.mentions = pp->mentions;
    ev->msg.n_mentions = n;
    return 0;
}

/* room/{r}/presence. last_activity may be absent (the receive time is used). */
static int parse_presence(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    int status;
    int64_t la = 0;
    ev->kind = DORMANCY_EV_PRESENCE;
    if (vigil_json_id(b, "user", true, &ev->presence.user, err) < 0 ||
        vigil_json_id(b, "session", true, &ev->presence.session, err) < 0 ||
        vigil_json_enum(b, "status", true, PRESENCE_STATUSES, &status, err) < 0 ||
        vigil_json_int64(b, "last_activity", false, &la, err) < 0)
        return -1;
    if (la < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'last_activity': negative");
    ev->presence.status = (dormancy_presence_status)status;
    ev->presence.last_activity = la;
    return 0;
}

/* room/{r}/control. `wake` must say whom: all, or one persona (extension). */
static int parse_control(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    int action;
    bool all = false;
    ev->kind = DORMANCY_EV_CONTROL;
    if (vigil_json_enum(b, "action", true, CONTROL_ACTIONS, &action, err) < 0 ||
        vigil_json_bool(b, "all", false, &all, err) < 0 ||
        vigil_json_id(b, "by", false, &ev->control.by, err) < 0 ||
        vigil_json_id(b, "persona", false, &ev->control.persona, err) < 0 ||
        vigil_json_int64(b, "if_inactive_since", false, &ev->control.if_inactive_since, err) < 0)
        return -1;
    if (ev->control.if_inactive_since < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'if_inactive_since': must be >= 0");
    ev->control.action = (dormancy_control_action)action;
    ev->control.all = all;
    if (action == DORMANCY_CTL_WAKE && !all && !ev->control.persona)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "action 'wake' needs \"all\": true or a 'persona'");
    return 0;
}

/* room/{r}/autopilot. A bad decision rejects the whole input, naming its
 * position, rather than applying half of the autopilot's plan. */
static int parse_autopilot(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    json_object *arr;
    int source = -1;
    ev->kind = DORMANCY_EV_AUTOPILOT;
    if (vigil_json_array(b, "decisions", true, &arr, err) < 0 ||
        vigil_json_enum(b, "source", false, AP_SOURCES, &source, err) < 0)
        return -1;
    ev->autopilot.source = source >= 0 ? AP_SOURCES[source] : NULL;
    size_t len = json_object_array_length(arr);
    if (len > MAX_DECISIONS)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'decisions': more than %d entries",
                               MAX_DECISIONS);
    pp->decisions = calloc(len + 1, sizeof *pp->decisions);
    if (!pp->decisions)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < len; i++) {
        json_object *d = json_object_array_get_idx(arr, i);
        dormancy_ap_decision *x = &pp->decisions[i];
        int action;
        if (!d || !json_object_is_type(d, json_type_object))
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'decisions[%zu]': expected object", i);
        if (vigil_json_id(d, "persona", true, &x->persona, err) < 0 ||
            vigil_json_enum(d, "action", true, AP_ACTIONS, &action, err) < 0 ||
            vigil_json_string(d, "reason", false, &x->reason, err) < 0) {
            /* prefix the inner field's reason with its position */
            char inner[sizeof err->detail];
            memcpy(inner, err->detail, sizeof inner);
            int n = snprintf(err->detail, sizeof err->detail, "decisions[%zu]: ", i);
            if (n > 0 && (size_t)n < sizeof err->detail)
                memcpy(err->detail + n, inner,
                       strnlen(inner, sizeof err->detail - (size_t)n - 1) + 1);
            err->detail[sizeof err->detail - 1] = '\0';
            return -1;
        }
        x->action = (dormancy_autopilot_action)action;
    }
    ev->autopilot.decisions = pp->decisions;
    ev->autopilot.n = (int)len;
    return 0;
}

/* persona/{p}/command. `until` is checked against the receive time so a
 * dormancy that would end before it starts is refused visibly. */
static int parse_command(const vigil_input *in, json_object *b, dormancy_parsed *pp,
                         vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    int cmd, level = -1, answer = -1;
    int64_t until = 0;
    ev->kind = DORMANCY_EV_COMMAND;
    if (vigil_json_enum(b, "cmd", true, COMMANDS, &cmd, err) < 0 ||
        vigil_json_enum(b, "level", false, LEVELS, &level, err) < 0 ||
        vigil_json_int64(b, "until", false, &until, err) < 0 ||
        vigil_json_id(b, "room", false, &ev->command.room, err) < 0 ||
        vigil_json_string_bounded(b, "suggestion_id", false, DORMANCY_EVID_MAX, &ev->command.suggestion_id, err) < 0 ||
        vigil_json_enum(b, "answer", cmd == DORMANCY_CMD_ANSWER, ANSWERS, &answer, err) < 0 ||
        vigil_json_id(b, "by", false, &ev->command.by, err) < 0)
        return -1;
    ev->command.cmd = (dormancy_cmd)cmd;
    if (cmd == DORMANCY_CMD_DORMANT) {
        if (level < 0)
            return vigil_error_set(err, VIGIL_REJECT_MISSING_FIELD,
                                   "field 'level': required for cmd 'dormant'");
        if (level == DORMANCY_ACTIVE)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'level': 'dormant' needs mention-only, human-only or sleep");
        if (until != 0 && until <= in->received_ms)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'until': in the past");
    }
    ev->command.has_level = level >= 0;
    ev->command.level = level >= 0 ? (dormancy_level)level : DORMANCY_ACTIVE;
    ev->command.until = until > 0 ? until : 0;
    ev->command.answer = answer >= 0 ? (dormancy_answer)answer : DORMANCY_ANSWER_NO;
    return 0;
}

/* persona/{p}/meta: only what this service uses (name, rooms, dormancy);
 * the other fields belong to wake-evaluator. */
static int parse_meta(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    json_object *dorm = NULL;
    char msg[160];
    ev->kind = DORMANCY_EV_META;
    if (vigil_json_string(b, "name", false, &ev->meta.name, err) < 0 ||
        vigil_json_string_array(b, "rooms", false, true, MAX_META_ROOMS, &pp->rooms, &ev->meta.n_rooms, err) < 0 ||
        vigil_json_object(b, "dormancy", false, &dorm, err) < 0)
        return -1;
    ev->meta.rooms = pp->rooms;
    int rc = dormancy_overrides_parse(dorm, &ev->meta.ov, msg, sizeof msg);
    if (rc != 0)
        return vigil_error_set(err, rc == -1 ? VIGIL_REJECT_WRONG_TYPE : VIGIL_REJECT_BAD_VALUE,
                               "%s", msg);
    return 0;
}

/* persona/{p}/wake from wake-evaluator. confidence defaults to 1 (a plain
 * "should_wake": true is a certain decision). */
static int parse_wake(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    bool should = false;
    double conf = 1.0;
    int via = DORMANCY_VIA_RULES, tier;
    ev->kind = DORMANCY_EV_WAKE;
    if (vigil_json_bool(b, "should_wake", true, &should, err) < 0 ||
        vigil_json_double(b, "confidence", false, &conf, err) < 0 ||
        vigil_json_string_bounded(b, "message_id", false, VIGIL_EVENT_ID_MAX, &ev->wake.message_id, err) < 0 ||
        vigil_json_string(b, "reason", false, &ev->wake.reason, err) < 0 ||
        vigil_json_enum(b, "via", false, VIAS, &via, err) < 0 ||
        vigil_json_enum(b, "tier", false, TIERS, &tier, err) < 0)
        return -1;
    if (!(conf >= 0.0 && conf <= 1.0))
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'confidence': expected 0..1");
    ev->wake.should_wake = should;
    ev->wake.confidence = conf;
    ev->wake.via = (dormancy_via)via;
    return 0;
}

/* Appends the rooms of persona p: the fields of its snapshot hash. */
static int persona_rooms(vigil_runtime *rt, const char *persona, char keys[][VIGIL_KEY_MAX],
                         int n, int max, vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX];
    snprintf(suffix, sizeof suffix, "persona:%s", persona);
    return vigil_runtime_route_members(rt, "HKEYS", suffix, keys, n, max, NULL, err);
}

static int route_room(const vigil_input *in, dormancy_parsed *pp, char keys[][VIGIL_KEY_MAX],
                      vigil_error *err)
{
    const char *room;
    const char *kind = in->parts[2];
    if (vigil_input_topic_id(in, 1, "room", &room, err) < 0)
        return -1;
    int rc;
    if (strcmp(kind, "message") == 0)
        rc = parse_message(in->body, pp, err);
    else if (strcmp(kind, "presence") == 0)
        rc = parse_presence(in->body, pp, err);
    else if (strcmp(kind, "control") == 0)
        rc = parse_control(in->body, pp, err);
    else if (strcmp(kind, "autopilot") == 0)
        rc = parse_autopilot(in->body, pp, err);
    else
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    if (rc < 0)
        return -1;
    /* this service's own answers (and any system message) feed no rule */
    if (pp->ev.kind == DORMANCY_EV_MESSAGE && pp->ev.msg.sender_type == DORMANCY_SENDER_SYSTEM)
        return 0;
    /* pause/resume with all:true is chat-router's global pause (published
     * on room/_all/control): it names no room of ours */
    if (pp->ev.kind == DORMANCY_EV_CONTROL && pp->ev.control.all &&
        (pp->ev.control.action == DORMANCY_CTL_PAUSE || pp->ev.control.action == DORMANCY_CTL_RESUME))
        return 0;
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", room);
    return 1;
}

static int route_persona(vigil_runtime *rt, const vigil_input *in, dormancy_parsed *pp,
                         char keys[][VIGIL_KEY_MAX], int max_keys, vigil_error *err)
{
    const char *persona;
    const char *kind = in->parts[2];
    if (vigil_input_topic_id(in, 1, "persona", &persona, err) < 0)
        return -1;
    dormancy_event *ev = &pp->ev;
    if (strcmp(kind, "command") == 0) {
        if (parse_command(in, in->body, pp, err) < 0)
            return -1;
        ev->command.persona = persona;
        if (ev->command.room)
            return vigil_route_add_key(keys, 0, max_keys, ev->command.room);
        return persona_rooms(rt, persona, keys, 0, max_keys, err);
    }
    if (strcmp(kind, "meta") == 0) {
        if (parse_meta(in->body, pp, err) < 0)
            return -1;
        ev->meta.persona = persona;
        int n = 0;
        for (int i = 0; i < ev->meta.n_rooms; i++)
            n = vigil_route_add_key(keys, n, max_keys, ev->meta.rooms[i]);
        return persona_rooms(rt, persona, keys, n, max_keys, err);
    }
    if (strcmp(kind, "wake") == 0) {
        const char *room;
        if (vigil_json_id(in->body, "room", true, &room, err) < 0 || parse_wake(in->body, pp, err) < 0)
            return -1;
        ev->wake.persona = persona;
        return vigil_route_add_key(keys, 0, max_keys, room);
    }
    return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
}

int dormancy_route(void *ctx, vigil_runtime *rt, const vigil_input *in,
                   char keys[][VIGIL_KEY_MAX], int max_keys, void **parsed, vigil_error *err)
{
    (void)ctx;
    *parsed = NULL;
    if (in->nparts != 3 || (strcmp(in->parts[0], "room") != 0 && strcmp(in->parts[0], "persona") != 0))
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    dormancy_parsed *pp = calloc(1, sizeof *pp);
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    pp->ev.id = in->id;
    pp->ev.ts = in->ts;
    int n = strcmp(in->parts[0], "room") == 0 ? route_room(in, pp, keys, err)
                                              : route_persona(rt, in, pp, keys, max_keys, err);
    if (n <= 0) { /* nothing to do, reject, or VIGIL_ROUTE_RETRY */
        dormancy_free_parsed(ctx, pp);
        return n;
    }
    *parsed = pp;
    return n;
}

void dormancy_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    dormancy_parsed *pp = parsed;
    if (!pp)
        return;
    free(pp->mentions);
    free(pp->rooms);
    free(pp->decisions);
    free(pp);
}
