/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason on sys/chat-router/error, never a crash, never a state
 * change) and names the room keys it touches:
 *   room/{r}/message                 -> r
 *   room/{r}/control pause|resume    -> r
 *   room/{r}/control delete          -> r
 *   room/{r}/control pause, all      -> r (writes the global flag only)
 *   room/{r}/control resume, all     -> r + every paused room + every room
 *                                       with queued notifications
 *   room/{r}/control wake            -> nothing (dormancy-monitor's)
 * The same rules as dormancy-monitor's for the shared topics, so both
 * services accept and reject the same messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "adapter.h"

#define MAX_MENTIONS 256

static const char *const SENDER_TYPES[] = { "human", "ai", "system", NULL };
static const char *const CONTROL_ACTIONS[] = { "pause", "resume", "delete", "wake", NULL };

static int parse_message(const vigil_input *in, chat_parsed *pp, vigil_error *err)
{
    chat_message *m = &pp->in.msg;
    json_object *b = in->body;
    int type, rc;
    bool proactive;
    pp->in.kind = CHAT_IN_MESSAGE;
    m->id = in->id;
    m->ts = in->ts;
    if (vigil_json_id(b, "sender", true, &m->sender, err) < 0 ||
        vigil_json_enum(b, "sender_type", true, SENDER_TYPES, &type, err) < 0 ||
        vigil_json_string(b, "text", true, &m->text, err) < 0 ||
        vigil_json_string_bounded(b, "reply_to", false, VIGIL_EVENT_ID_MAX, &m->reply_to, err) < 0 ||
        vigil_json_string_array(b, "mentions", false, true, MAX_MENTIONS, &pp->mentions, &m->n_mentions, err) < 0 ||
        (rc = vigil_json_int64(b, "depth", false, &m->depth, err)) < 0 ||
        vigil_json_bool(b, "proactive", false, &proactive, err) < 0)
        return -1;
    if (rc == 0 && m->depth < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'depth': negative");
    m->has_depth = rc == 0;
    m->sender_type = (chat_sender_type)type;
    m->mentions = pp->mentions;
    pp->log_json = chat_log_entry_json(in->body, in->id, in->ts);
    if (!pp->log_json)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    m->log_json = pp->log_json;
    return 0;
}

static int parse_control(const vigil_input *in, chat_parsed *pp, vigil_error *err)
{
    chat_control *c = &pp->in.ctl;
    json_object *b = in->body;
    int action;
    const char *persona = NULL;
    pp->in.kind = CHAT_IN_CONTROL;
    c->id = in->id;
    c->ts = in->ts;
    c->topic_room = pp->topic_room;
    if (vigil_json_enum(b, "action", true, CONTROL_ACTIONS, &action, err) < 0 ||
        vigil_json_bool(b, "all", false, &c->all, err) < 0 ||
        vigil_json_id(b, "by", false, &c->by, err) < 0 ||
        vigil_json_id(b, "persona", false, &persona, err) < 0 ||
        vigil_json_int64(b, "if_inactive_since", false, &c->if_inactive_since, err) < 0)
        return -1;
    c->action = (chat_control_action)action;
    if (c->if_inactive_since < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'if_inactive_since': negative");
    if (c->action == CHAT_CTL_DELETE && c->all)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "action 'delete' deletes one room: \"all\": true is only for "
                               "pause and resume");
    return 0;
}

int chat_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
               int max_keys, void **parsed, vigil_error *err)
{
    chat_service *svc = ctx;
    *parsed = NULL;
    if (in->nparts != 3 || strcmp(in->parts[0], "room") != 0 ||
        (strcmp(in->parts[2], "message") != 0 && strcmp(in->parts[2], "control") != 0))
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    const char *room;
    if (vigil_input_topic_id(in, 1, "room", &room, err) < 0)
        return -1;
    chat_parsed *pp = calloc(1, sizeof *pp);
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    snprintf(pp->topic_room, sizeof pp->topic_room, "%s", room);
    bool is_message = strcmp(in->parts[2], "message") == 0;
    int n = -1;
    if ((is_message ? parse_message(in, pp, err) : parse_control(in, pp, err)) < 0)
        goto done;
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", room);
    n = 1;
    const chat_control *c = &pp->in.ctl;
    if (!is_message && c->action == CHAT_CTL_WAKE) {
        n = 0; /* wakes personas: dormancy-monitor's business */
    } else if (!is_message && c->all) {
        chat_flag_note(svc, c->action == CHAT_CTL_PAUSE);
        pp->in.paused_all = c->action == CHAT_CTL_PAUSE;
        if (c->action == CHAT_CTL_RESUME)
            n = chat_held_rooms(rt, keys, 1, max_keys, &pp->in.ctl.more);
    } else {
        n = chat_flag_paused_all(svc, rt, &pp->in.paused_all);
        if (n == 0)
            n = 1;
    }
done:
    if (n <= 0) {
        chat_free_parsed(ctx, pp);
        return n;
    }
    *parsed = pp;
    return n;
}

void chat_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    chat_parsed *pp = parsed;
    if (!pp)
        return;
    free(pp->mentions);
    free(pp->log_json);
    free(pp);
}
