/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the room
 * keys it touches:
 *   room/{r}/...               -> r
 *   persona/{p}/command        -> its `room`, or every room p is in
 *   persona/{p}/meta           -> meta.rooms plus every room p is in (an
 *                                 empty meta, cleared: every room p is in)
 *   persona/{p}/wake           -> its `room`
 * "Every room p is in" is the field list of p's persona/{p}/state hash,
 * which the rooms keep up to date (one entry per member room). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/str.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include "adapter.h"

#define MAX_DECISIONS 256
#define MAX_META_ROOMS VIGIL_ROUTE_MAX_KEYS

/* The core's enumerations are the contract's, in the same order, so the
 * readers' values convert by cast. */
_Static_assert(DORMANCY_SENDER_SYSTEM == (int)VIGIL_SENDER_SYSTEM &&
                   DORMANCY_SENDER_AI == (int)VIGIL_SENDER_AI,
               "sender types");
_Static_assert(DORMANCY_PRESENCE_AWAY == (int)VIGIL_PRESENCE_AWAY &&
                   DORMANCY_PRESENCE_IDLE == (int)VIGIL_PRESENCE_IDLE,
               "presence statuses");
_Static_assert(DORMANCY_CTL_WAKE == (int)VIGIL_CONTROL_WAKE &&
                   DORMANCY_CTL_DELETE == (int)VIGIL_CONTROL_DELETE &&
                   DORMANCY_CTL_RESUME == (int)VIGIL_CONTROL_RESUME,
               "control actions");
_Static_assert(DORMANCY_CMD_ANSWER == (int)VIGIL_COMMAND_ANSWER &&
                   DORMANCY_CMD_STATUS == (int)VIGIL_COMMAND_STATUS &&
                   DORMANCY_CMD_AWAKE == (int)VIGIL_COMMAND_AWAKE,
               "commands");
_Static_assert(DORMANCY_ANSWER_SNOOZE == (int)VIGIL_ANSWER_SNOOZE &&
                   DORMANCY_ANSWER_NO == (int)VIGIL_ANSWER_NO,
               "answers");
_Static_assert(DORMANCY_AP_KEEP == (int)VIGIL_AP_KEEP && DORMANCY_AP_WAKE == (int)VIGIL_AP_WAKE &&
                   DORMANCY_AP_AUTO_SLEEP == (int)VIGIL_AP_AUTO_SLEEP,
               "autopilot actions");
_Static_assert(DORMANCY_VIA_FALLBACK == (int)VIGIL_VIA_FALLBACK &&
                   DORMANCY_VIA_RULES == (int)VIGIL_VIA_RULES,
               "vias");

/* room/{r}/message through libshared's one reader. */
static int parse_message(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    vigil_room_message *m = &pp->msg;
    ev->kind = DORMANCY_EV_MESSAGE;
    if (vigil_room_message_read(b, m, err) < 0)
        return -1;
    ev->msg.sender = m->sender;
    ev->msg.sender_type = (dormancy_sender_type)m->sender_type;
    ev->msg.text = m->text;
    ev->msg.reply_to = m->reply_to;
    ev->msg.mentions = m->mentions;
    ev->msg.n_mentions = m->n_mentions;
    return 0;
}

/* room/{r}/presence. last_activity may be absent (the receive time is used). */
static int parse_presence(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    vigil_room_presence p;
    ev->kind = DORMANCY_EV_PRESENCE;
    if (vigil_room_presence_read(b, &p, err) < 0)
        return -1;
    ev->presence.user = p.user;
    ev->presence.session = p.session;
    ev->presence.status = (dormancy_presence_status)p.status;
    ev->presence.last_activity = p.last_activity;
    return 0;
}

/* room/{r}/control. */
static int parse_control(json_object *b, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    vigil_room_control c;
    ev->kind = DORMANCY_EV_CONTROL;
    if (vigil_room_control_read(b, &c, err) < 0)
        return -1;
    ev->control.action = (dormancy_control_action)c.action;
    ev->control.all = c.all;
    ev->control.by = c.by;
    ev->control.persona = c.persona;
    ev->control.if_inactive_since = c.if_inactive_since;
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
        vigil_json_enum(b, "source", false, vigil_autopilot_source_names, &source, err) < 0)
        return -1;
    ev->autopilot.source = source >= 0 ? vigil_autopilot_source_names[source] : NULL;
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
            vigil_json_enum(d, "action", true, vigil_autopilot_action_names, &action, err) < 0 ||
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
    vigil_persona_command c;
    pp->ev.kind = DORMANCY_EV_COMMAND;
    if (vigil_persona_command_read(b, in->received_ms, &c, err) < 0)
        return -1;
    dormancy_command_event(&c, &pp->ev);
    return 0;
}

/* persona/{p}/meta: this service uses name, rooms and dormancy; the reader
 * checks every field, so both consumers reject the same metas. A cleared
 * meta (dormancy_clear_topic) is the meta that says nothing, "{}": the
 * persona leaves the rooms it was in through its meta alone and keeps no
 * name or overrides in the others (membership_on_meta). */
static int parse_meta(const vigil_input *in, dormancy_parsed *pp, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    ev->kind = DORMANCY_EV_META;
    if (in->cleared)
        vigil_persona_meta_init(&pp->meta);
    else if (vigil_persona_meta_read(in->body, MAX_META_ROOMS, &pp->meta, err) < 0)
        return -1;
    ev->meta.name = pp->meta.name;
    ev->meta.rooms = pp->meta.rooms;
    ev->meta.n_rooms = pp->meta.n_rooms;
    ev->meta.ov = pp->meta.dormancy;
    return 0;
}

/* A clear has no id (vigil_input_parse_cleared), yet the events its step
 * may make (a deadline that is due, or one the dropped overrides bring
 * forward) need ids no other input's events have:
 * "meta-clear.<persona>.<received ms>", made once here so a decision
 * retried after a version conflict yields the same ids. A second clear
 * changes nothing, so it makes no events whatever its id. */
static void clear_id(const vigil_input *in, const char *persona, dormancy_parsed *pp)
{
    snprintf(pp->clear_id, sizeof pp->clear_id, "meta-clear.%s.%" PRId64, persona,
             in->received_ms);
    pp->ev.id = pp->clear_id;
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
        vigil_json_enum(b, "via", false, vigil_via_names, &via, err) < 0 ||
        vigil_json_enum(b, "tier", false, vigil_tier_names, &tier, err) < 0)
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
    char what[VIGIL_KEY_MAX];
    snprintf(what, sizeof what, "persona '%s' is in", persona);
    return vigil_route_members_noted(rt, "HKEYS", suffix, VIGIL_LIMIT_ROOMS_PER_INPUT, what,
                                     "rooms", keys, n, max, err);
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
    vigil_concat(keys[0], VIGIL_KEY_MAX, room, (const char *)NULL);
    return 1;
}

/* The room a suggestion id names: this service's ids are
 * "<input id>:<room>:<n>" (vigil_event_id) and a room id holds no ':'.
 * False for any other id. */
static bool suggestion_room(const char *sid, char *room, size_t cap)
{
    const char *n = strrchr(sid, ':');
    if (!n || n == sid || !n[1] || strspn(n + 1, "0123456789") != strlen(n + 1))
        return false;
    const char *r = n;
    while (r > sid && r[-1] != ':')
        r--;
    size_t len = (size_t)(n - r);
    if (r == sid || len >= cap || !vigil_id_valid(r, len))
        return false;
    memcpy(room, r, len);
    room[len] = '\0';
    return true;
}

/* A command with a room concerns that room. An answer without one goes to
 * the room its suggestion was made in (elsewhere it would be refused), an
 * answer to a persona in no room is refused here, and any other command
 * goes to every room of the persona. An answer naming neither a room nor a
 * suggestion, from a persona in one room, is that room's: refused there,
 * visibly, when nothing is pending (in several rooms, a room with nothing
 * pending cannot tell whether another room took it). */
static int route_command(vigil_runtime *rt, const char *persona, dormancy_parsed *pp,
                         char keys[][VIGIL_KEY_MAX], int max_keys, vigil_error *err)
{
    dormancy_event *ev = &pp->ev;
    bool answer = ev->command.cmd == DORMANCY_CMD_ANSWER;
    if (!ev->command.room && answer && ev->command.suggestion_id &&
        suggestion_room(ev->command.suggestion_id, pp->answer_room, sizeof pp->answer_room))
        ev->command.room = pp->answer_room;
    if (ev->command.room)
        return vigil_route_add_key(keys, 0, max_keys, ev->command.room);
    int n = persona_rooms(rt, persona, keys, 0, max_keys, err);
    if (n == 0 && answer)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "persona '%s' is in no room: no suggestion to answer", persona);
    if (n == 1 && answer && !ev->command.suggestion_id &&
        strlen(keys[0]) < sizeof pp->answer_room) {
        memcpy(pp->answer_room, keys[0], strlen(keys[0]) + 1);
        ev->command.room = pp->answer_room;
    }
    return n;
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
        return route_command(rt, persona, pp, keys, max_keys, err);
    }
    if (strcmp(kind, "meta") == 0) {
        if (parse_meta(in, pp, err) < 0)
            return -1;
        if (in->cleared)
            clear_id(in, persona, pp);
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

/* persona/{p}/meta with an empty payload: its retained meta cleared, the
 * persona's meta gone (parse_meta). Every other empty payload stays a bad
 * input (not_json). */
bool dormancy_clear_topic(const char *topic)
{
    return vigil_topic_is_kind(topic, "persona", "meta");
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
    vigil_room_message_release(&pp->msg);
    vigil_persona_meta_release(&pp->meta);
    free(pp->decisions);
    free(pp);
}
