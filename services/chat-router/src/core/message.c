/* message.c - one room message: log it, work out its chain depth, and
 * notify the personas it mentions (live, into the pause queue, or not at
 * all past the depth limit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"
#include <vigil/event_id.h>
#include <vigil/str.h>

int chat_flush_queue(chat_room *r, chat_result *out)
{
    char q[CHAT_ID_MAX + 16];
    chat_queue_name(r->room, q, sizeof q);
    if (chat_result_add(out, CHAT_ACT_QUEUE_FLUSH, q, NULL, NULL) != 0 ||
        chat_result_add(out, CHAT_ACT_SET_REMOVE, CHAT_KEY_QUEUED, NULL, r->room) != 0)
        return -1;
    r->queued = 0;
    out->flushed = 1;
    return 0;
}

int chat_room_start(chat_room *r, int64_t now, chat_result *out)
{
    r->exists = true;
    r->deleted = false;
    r->created = now;
    return chat_result_add(out, CHAT_ACT_SET_ADD, CHAT_KEY_ROOMS, NULL, r->room);
}

/* Delete stops a room's conversation: the chain that was running must not
 * bring it back (an AI answering a notification sent before the delete,
 * or the stop message of a chain the delete cut). A person starts it
 * afresh: a human message, or the system message of `vigil chat new`. */
static bool may_restart(const chat_message *m)
{
    if (m->sender_type == CHAT_SENDER_HUMAN)
        return true;
    return m->sender_type == CHAT_SENDER_SYSTEM &&
           (!m->sender || strcmp(m->sender, CHAT_SYSTEM_SENDER) != 0);
}

/* The stop message goes to the room like any message: chat-router logs it
 * when it comes back (a system message is never forwarded) and every
 * client watching the room sees it. */
static int stop_chain(const chat_config *cfg, chat_room *r, const chat_message *m, int64_t depth,
                      char (*who)[CHAT_ID_MAX + 1], int n_who, int64_t now, chat_result *out)
{
    char id[CHAT_EVID_MAX + 1], topic[CHAT_ID_MAX + 32];
    chat_derived_id(id, sizeof id, "stop", m->id, r->room);
    vigil_concat(topic, sizeof topic, "room/", r->room, "/message", (const char *)NULL);
    char *payload = chat_stop_message_json(id, r->room, m, depth, cfg->max_depth, who, n_who, now);
    if (!payload)
        return -1;
    int rc = chat_result_add(out, CHAT_ACT_PUBLISH, NULL, topic, payload);
    free(payload);
    r->stopped++;
    out->stopped = true;
    return rc;
}

/* at: the message's position in the room's id memory (chat_room_note_
 * notified), so a later answer can tell whether it replies to something
 * older than this notification. */
static int notify_all(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t depth,
                      int64_t at, char (*who)[CHAT_ID_MAX + 1], int n_who, int64_t now,
                      chat_result *out)
{
    const chat_message *m = &in->msg;
    bool paused = r->paused || in->paused_all;
    char q[CHAT_ID_MAX + 16];
    chat_queue_name(r->room, q, sizeof q);
    if (paused && r->queued == 0 &&
        chat_result_add(out, CHAT_ACT_SET_ADD, CHAT_KEY_QUEUED, NULL, r->room) != 0)
        return -1;
    for (int i = 0; i < n_who; i++) {
        char id[CHAT_EVID_MAX + 1], topic[CHAT_ID_MAX + 32];
        vigil_event_id(id, sizeof id, m->id, r->room, i);
        vigil_concat(topic, sizeof topic, "persona/", who[i], "/notify", (const char *)NULL);
        char *payload = chat_notify_json(id, who[i], r->room, m, depth, now);
        if (!payload)
            return -1;
        int rc = paused ? chat_result_add(out, CHAT_ACT_QUEUE_PUSH, q, topic, payload)
                        : chat_result_add(out, CHAT_ACT_PUBLISH, NULL, topic, payload);
        free(payload);
        if (rc != 0)
            return -1;
        chat_room_note_notified(r, who[i], depth, at);
        if (paused) {
            r->queued++;
            out->queued++;
        } else {
            out->notified++;
        }
    }
    return 0;
}

int chat_on_message(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t now,
                    chat_result *out)
{
    const chat_message *m = &in->msg;
    if (!r->exists && r->deleted && !may_restart(m)) {
        out->room_deleted = true; /* the adapter says so on sys/chat-router/error */
        return 0;
    }
    if (!r->exists && chat_room_start(r, now, out) != 0)
        return -1;
    int64_t depth = chat_depth_of(r, m);
    /* a human message starts new chains: the depths its personas were
     * notified at no longer say where a depth-less answer stands */
    if (m->sender_type == CHAT_SENDER_HUMAN)
        r->n_notified = 0;
    out->depth = depth;

    char log[CHAT_ID_MAX + 16];
    chat_log_name(r->room, log, sizeof log);
    if (chat_result_add(out, CHAT_ACT_LOG_APPEND, log, NULL, m->log_json ? m->log_json : "{}") != 0)
        return -1;
    out->logged = true;
    r->count++;
    r->last_activity = now;
    vigil_concat(r->last_sender, sizeof r->last_sender, m->sender ? m->sender : "",
                 (const char *)NULL);
    int64_t at = r->remembered; /* its position, whether or not it is kept */
    if (chat_room_remember(r, m->id, depth, cfg->depth_memory) != 0)
        return -1;

    /* A room that is live again delivers what it queued before anything
     * new (covers a resume that raced a message on another replica). */
    bool paused = r->paused || in->paused_all;
    if (!paused && r->queued > 0 && chat_flush_queue(r, out) != 0)
        return -1;

    if (m->sender_type == CHAT_SENDER_SYSTEM)
        return 0;
    int max = cfg->max_mentions > 0 ? cfg->max_mentions : CHAT_DEFAULT_MAX_MENTIONS;
    /* one more than notified, to know whether the limit cut the list */
    /* not zeroed: only the n entries collected are read (2 KB a message) */
    char (*who)[CHAT_ID_MAX + 1] = malloc(((size_t)max + 1) * sizeof *who);
    if (!who)
        return -1;
    int n = chat_mentions_collect(m, who, max + 1);
    if (n > max) {
        out->mentions_capped = true;
        n = max;
    }
    int rc = 0;
    if (n > 0)
        rc = depth >= cfg->max_depth ? stop_chain(cfg, r, m, depth, who, n, now, out)
                                     : notify_all(cfg, r, in, depth, at, who, n, now, out);
    free(who);
    return rc;
}
