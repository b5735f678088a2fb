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
 * Both payloads are read by libshared's one reader of each (msg_room.h),
 * so every consumer of these topics accepts and rejects the same inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/msg_room.h>
#include "adapter.h"
#include <vigil/str.h>

_Static_assert(CHAT_SENDER_SYSTEM == (int)VIGIL_SENDER_SYSTEM && CHAT_SENDER_AI == (int)VIGIL_SENDER_AI,
               "sender types are libshared's");
_Static_assert(CHAT_CTL_WAKE == (int)VIGIL_CONTROL_WAKE && CHAT_CTL_DELETE == (int)VIGIL_CONTROL_DELETE &&
                   CHAT_CTL_RESUME == (int)VIGIL_CONTROL_RESUME,
               "control actions are libshared's");

static int parse_message(const vigil_input *in, chat_parsed *pp, vigil_error *err)
{
    chat_message *m = &pp->in.msg;
    vigil_room_message *r = &pp->msg;
    pp->in.kind = CHAT_IN_MESSAGE;
    m->id = in->id;
    m->ts = in->ts;
    if (vigil_room_message_read(in->body, r, err) < 0)
        return -1;
    m->sender = r->sender;
    m->sender_type = (chat_sender_type)r->sender_type;
    m->text = r->text;
    m->reply_to = r->reply_to;
    m->mentions = r->mentions;
    m->n_mentions = r->n_mentions;
    m->has_depth = r->has_depth;
    m->depth = r->depth;
    pp->log_json = chat_log_entry_json(in->body, in->raw, in->raw_len, in->id, in->ts);
    if (!pp->log_json)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    m->log_json = pp->log_json;
    return 0;
}

static int parse_control(const vigil_input *in, chat_parsed *pp, vigil_error *err)
{
    chat_control *c = &pp->in.ctl;
    vigil_room_control r;
    pp->in.kind = CHAT_IN_CONTROL;
    c->id = in->id;
    c->ts = in->ts;
    c->topic_room = pp->topic_room;
    if (vigil_room_control_read(in->body, &r, err) < 0)
        return -1;
    c->action = (chat_control_action)r.action;
    c->all = r.all;
    c->by = r.by;
    c->if_inactive_since = r.if_inactive_since;
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
    vigil_concat(pp->topic_room, sizeof pp->topic_room, room, (const char *)NULL);
    bool is_message = strcmp(in->parts[2], "message") == 0;
    int n = -1;
    if ((is_message ? parse_message(in, pp, err) : parse_control(in, pp, err)) < 0)
        goto done;
    vigil_concat(keys[0], VIGIL_KEY_MAX, room, (const char *)NULL);
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
    vigil_room_message_release(&pp->msg);
    free(pp->log_json);
    free(pp);
}
