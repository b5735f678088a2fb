/* control.c - room/{r}/control: pause, resume, delete; and the global
 * pause/resume (`all: true`).
 *
 * A room is paused when its own flag is set or the global pause is on.
 * The global flag lives in the key "paused-all", written only by the key
 * of the control's topic room (one writer per control message); the
 * adapter reads it when routing a message and hands it in as
 * in->paused_all. Resume-all reaches every room that is paused one by one
 * or has a queue (the adapter routes it to those rooms): it clears their
 * flags and flushes their queues, so `resume --all` resumes everything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"

static void set_paused(chat_room *r, const chat_control *c, int64_t now)
{
    r->paused = true;
    snprintf(r->paused_by, sizeof r->paused_by, "%s", c->by ? c->by : "");
    r->paused_at = now;
}

static int pause_room(chat_room *r, const chat_control *c, int64_t now, chat_result *out)
{
    if (!r->exists && chat_room_start(r, now, out) != 0)
        return -1;
    if (r->paused)
        return 0;
    set_paused(r, c, now);
    return chat_result_add(out, CHAT_ACT_SET_ADD, CHAT_KEY_PAUSED, NULL, r->room);
}

/* Clears the room's own flag and, unless still held by the global pause,
 * delivers its queue. */
static int resume_room(chat_room *r, bool still_paused_all, chat_result *out)
{
    if (!r->exists)
        return 0;
    if (r->paused) {
        r->paused = false;
        r->paused_by[0] = '\0';
        r->paused_at = 0;
        if (chat_result_add(out, CHAT_ACT_SET_REMOVE, CHAT_KEY_PAUSED, NULL, r->room) != 0)
            return -1;
    }
    if (!still_paused_all && r->queued > 0)
        return chat_flush_queue(r, out);
    return 0;
}

/* A conditional delete (`if_inactive_since`, what `vigil chat cleanup`
 * sends) removes only a room nobody needs: one that got no message since
 * the caller looked, and that holds no queued notifications either (a
 * paused room whose log aged out still owes its personas what resume
 * would deliver). A plain delete is the user's explicit order and takes
 * the queue with it. */
static int delete_room(chat_room *r, const chat_control *c, chat_result *out, bool *deleted)
{
    if (c->if_inactive_since > 0 && r->exists &&
        (r->last_activity >= c->if_inactive_since || r->queued > 0))
        return 0; /* a message arrived since the caller looked, or one is queued: keep */
    char log[CHAT_ID_MAX + 16], q[CHAT_ID_MAX + 16];
    chat_log_name(r->room, log, sizeof log);
    chat_queue_name(r->room, q, sizeof q);
    if (chat_result_add(out, CHAT_ACT_KEY_DELETE, log, NULL, NULL) != 0 ||
        chat_result_add(out, CHAT_ACT_KEY_DELETE, q, NULL, NULL) != 0 ||
        chat_result_add(out, CHAT_ACT_SET_REMOVE, CHAT_KEY_ROOMS, NULL, r->room) != 0 ||
        chat_result_add(out, CHAT_ACT_SET_REMOVE, CHAT_KEY_PAUSED, NULL, r->room) != 0 ||
        chat_result_add(out, CHAT_ACT_SET_REMOVE, CHAT_KEY_QUEUED, NULL, r->room) != 0)
        return -1;
    *deleted = r->exists;
    r->exists = false;
    return 0;
}

/* The topic room of a resume-all that could not name every room at once
 * sends the same command again; routing it then finds the rooms left. */
static int continue_resume_all(const chat_control *c, chat_result *out, int64_t now)
{
    char id[CHAT_EVID_MAX + 1], topic[CHAT_ID_MAX + 32], payload[512];
    chat_derived_id(id, sizeof id, "more", c->id, c->topic_room);
    snprintf(topic, sizeof topic, "room/%s/control", c->topic_room);
    snprintf(payload, sizeof payload,
             "{\"id\":\"%s\",\"action\":\"resume\",\"all\":true,\"by\":\"%s\",\"ts\":%lld}", id,
             c->by ? c->by : CHAT_SYSTEM_SENDER, (long long)now);
    return chat_result_add(out, CHAT_ACT_PUBLISH, NULL, topic, payload);
}

int chat_on_control(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t now,
                    chat_result *out, bool *deleted)
{
    (void)cfg;
    const chat_control *c = &in->ctl;
    *deleted = false;
    bool flag_writer = c->all && c->topic_room && strcmp(c->topic_room, r->room) == 0;
    switch (c->action) {
    case CHAT_CTL_PAUSE:
        if (!c->all)
            return pause_room(r, c, now, out);
        return flag_writer ? chat_result_add(out, CHAT_ACT_KEY_SET, CHAT_KEY_PAUSED_ALL, NULL, "1")
                           : 0;
    case CHAT_CTL_RESUME:
        if (!c->all)
            return resume_room(r, in->paused_all, out);
        if (flag_writer) {
            if (chat_result_add(out, CHAT_ACT_KEY_DELETE, CHAT_KEY_PAUSED_ALL, NULL, NULL) != 0)
                return -1;
            if (c->more && continue_resume_all(c, out, now) != 0)
                return -1;
        }
        return resume_room(r, false, out);
    case CHAT_CTL_DELETE:
        return delete_room(r, c, out, deleted);
    case CHAT_CTL_WAKE:
    default:
        return 0; /* dormancy-monitor's business */
    }
}
