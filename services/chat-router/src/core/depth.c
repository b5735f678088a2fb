/* depth.c - how deep in an AI-to-AI chain a message is.
 *
 * A human message starts a chain at 0. An AI message answers a
 * notification, so it is one deeper than what it answers: its own `depth`
 * field (personas set notify.depth + 1), or the remembered depth of its
 * `reply_to` plus one. When both are known the larger wins, so a persona
 * can never make a chain shallower than the router knows it is (and so
 * escape the limit). An AI message answering nothing known (no depth, no
 * remembered reply_to: a proactive message, or a reply to a message
 * forgotten long ago) counts as one hop from a human: depth 1. A system
 * message keeps its own `depth` (the stop message carries the depth it
 * stopped at, so an answer to it is still past the limit), else 0. */
#include "chat.h"

int64_t chat_depth_of(const chat_room *r, const chat_message *m)
{
    switch (m->sender_type) {
    case CHAT_SENDER_HUMAN:
        return 0;
    case CHAT_SENDER_SYSTEM:
        return m->has_depth && m->depth > 0 ? m->depth : 0;
    case CHAT_SENDER_AI:
    default:
        break;
    }
    int64_t known = chat_room_recall(r, m->reply_to);
    int64_t from_reply = known >= 0 ? known + 1 : -1;
    int64_t own = m->has_depth && m->depth >= 0 ? m->depth : -1;
    int64_t d = own > from_reply ? own : from_reply;
    return d >= 0 ? d : 1;
}
