/* msg_room.c - the readers of room/{room}/message, control and presence
 * (msg_room.h). One rule per field, in the schema's order. */
#include "vigil/msg_room.h"

#include <stdlib.h>
#include <string.h>

/* A ts-like field: an integer >= 0 (schema definition `ts`). Returns the
 * getter's convention (0 set, 1 absent, -1 error). */
static int read_ts(json_object *o, const char *field, int64_t *out, vigil_error *err)
{
    int rc = vigil_json_int64(o, field, false, out, err);
    if (rc == 0 && *out < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': must be >= 0", field);
    return rc;
}

int vigil_room_message_read(json_object *b, vigil_room_message *m, vigil_error *err)
{
    int type, rc;
    memset(m, 0, sizeof *m);
    if (vigil_json_id(b, "sender", true, &m->sender, err) < 0 ||
        vigil_json_enum(b, "sender_type", true, vigil_sender_type_names, &type, err) < 0 ||
        vigil_json_string(b, "text", true, &m->text, err) < 0 ||
        vigil_json_string_bounded(b, "reply_to", false, VIGIL_EVENT_ID_MAX, &m->reply_to, err) < 0 ||
        (rc = vigil_json_int64(b, "depth", false, &m->depth, err)) < 0 ||
        vigil_json_bool(b, "proactive", false, &m->proactive, err) < 0 ||
        vigil_json_id(b, "about", false, &m->about, err) < 0 ||
        vigil_json_string(b, "reason", false, &m->reason, err) < 0 ||
        vigil_json_string(b, "event", false, &m->event, err) < 0)
        return -1;
    if (rc == 0 && m->depth < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'depth': must be >= 0");
    m->has_depth = rc == 0;
    if (rc != 0)
        m->depth = 0;
    m->sender_type = (vigil_sender_type)type;
    /* last: the only allocation, so every earlier reject leaks nothing */
    if (vigil_json_string_array(b, "mentions", false, true, VIGIL_MSG_MAX_MENTIONS, &m->mentions,
                                &m->n_mentions, err) < 0)
        return -1;
    return 0;
}

void vigil_room_message_release(vigil_room_message *m)
{
    if (!m)
        return;
    free(m->mentions);
    m->mentions = NULL;
    m->n_mentions = 0;
}

int vigil_room_control_read(json_object *b, vigil_room_control *c, vigil_error *err)
{
    int action;
    memset(c, 0, sizeof *c);
    if (vigil_json_enum(b, "action", true, vigil_control_action_names, &action, err) < 0 ||
        vigil_json_bool(b, "all", false, &c->all, err) < 0 ||
        vigil_json_id(b, "by", false, &c->by, err) < 0 ||
        vigil_json_id(b, "persona", false, &c->persona, err) < 0 ||
        read_ts(b, "if_inactive_since", &c->if_inactive_since, err) < 0)
        return -1;
    c->action = (vigil_control_action)action;
    if (c->action == VIGIL_CONTROL_WAKE && !c->all && !c->persona)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "action 'wake' needs \"all\": true or a 'persona'");
    if (c->action == VIGIL_CONTROL_DELETE && c->all)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "action 'delete' deletes one room: \"all\": true is only for "
                               "pause, resume and wake");
    return 0;
}

/* A browser's presence heartbeat is often written as {userId, sessionId,
 * status, lastActivity}: those spellings are read when the contract's are
 * absent. */
int vigil_room_presence_read(json_object *b, vigil_room_presence *p, vigil_error *err)
{
    int status, rc;
    memset(p, 0, sizeof *p);
    if (vigil_json_id(b, vigil_json_field_or(b, "user", "userId"), true, &p->user, err) < 0 ||
        vigil_json_id(b, vigil_json_field_or(b, "session", "sessionId"), true, &p->session, err) < 0 ||
        vigil_json_enum(b, "status", true, vigil_presence_status_names, &status, err) < 0 ||
        (rc = read_ts(b, vigil_json_field_or(b, "last_activity", "lastActivity"), &p->last_activity,
                      err)) < 0)
        return -1;
    p->status = (vigil_presence_status)status;
    p->has_last_activity = rc == 0;
    if (rc != 0)
        p->last_activity = 0;
    return 0;
}

/* Adds k: s (skipped when s is NULL); false when out of memory. */
static bool put_str(json_object *o, const char *k, const char *s)
{
    if (!s)
        return true;
    json_object *v = json_object_new_string(s);
    return v && json_object_object_add(o, k, v) == 0;
}

json_object *vigil_room_message_json(const vigil_room_message_out *m)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    bool ok = put_str(o, "id", m->id) && put_str(o, "room", m->room) &&
              put_str(o, "sender", m->sender) &&
              put_str(o, "sender_type", vigil_sender_type_names[m->sender_type]) &&
              put_str(o, "text", m->text ? m->text : "") && put_str(o, "reply_to", m->reply_to) &&
              put_str(o, "about", m->about) && put_str(o, "reason", m->reason) &&
              put_str(o, "event", m->event);
    if (ok && m->has_depth)
        ok = json_object_object_add(o, "depth", json_object_new_int64(m->depth)) == 0;
    if (ok && m->proactive)
        ok = json_object_object_add(o, "proactive", json_object_new_boolean(true)) == 0;
    if (ok)
        ok = json_object_object_add(o, "ts", json_object_new_int64(m->ts)) == 0;
    if (!ok) {
        json_object_put(o);
        return NULL;
    }
    return o;
}
