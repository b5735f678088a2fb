/* depth.c - how deep in an AI-to-AI chain a message is.
 *
 * A human message starts a chain at 0. An AI message answers a
 * notification, so it is one deeper than what it answers: its own `depth`
 * field (personas set notify.depth + 1), or the remembered depth of its
 * `reply_to` plus one. When both are known the larger wins, so a persona
 * can never make a chain shallower than the router knows it is (and so
 * escape the limit). An AI message with neither (no depth, no remembered
 * reply_to: a reply to a message forgotten long ago, or a persona leaving
 * its depth out) continues from the last notification the room sent its
 * sender: that depth + 1, so leaving the depth out never restarts a chain
 * (a persona notified at 99 is at 100 and stopped). Only a sender the room
 * has not notified since the last human message (a proactive message)
 * counts as one hop from a human: depth 1. A system
 * message keeps its own `depth` (the stop message carries the depth it
 * stopped at, so an answer to it is still past the limit), else 0. */
#include "chat.h"

/* One deeper than d (>= 0): a `depth` field may say any integer up to
 * INT64_MAX (the schema sets no maximum), and a chain that deep stays at
 * INT64_MAX rather than wrapping to a negative depth, which would restart
 * it at 1 past the limit. */
static int64_t deeper(int64_t d)
{
    return d < INT64_MAX ? d + 1 : INT64_MAX;
}

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
    int64_t from_reply = known >= 0 ? deeper(known) : -1;
    int64_t own = m->has_depth && m->depth >= 0 ? m->depth : -1;
    int64_t d = own > from_reply ? own : from_reply;
    if (d >= 0)
        return d;
    int64_t notified = chat_room_notified_depth(r, m->sender);
    return notified >= 0 ? deeper(notified) : 1;
}
