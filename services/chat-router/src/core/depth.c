/* depth.c - how deep in an AI-to-AI chain a message is.
 *
 * A human message starts a chain at 0. An AI message answers a
 * notification, so it is one deeper than what it answers: its own `depth`
 * field (personas set notify.depth + 1), or the remembered depth of its
 * `reply_to` plus one. When both are known the larger wins, so a persona
 * can never make a chain shallower than the router knows it is (and so
 * escape the limit). When the reply_to is not remembered (absent, or a
 * message forgotten long ago) the router still knows the last
 * notification the room sent the sender: the message is at least that
 * depth + 1, whatever its `depth` field says, so neither leaving the depth
 * out nor stating a low one restarts a chain (a persona notified at 99 is
 * at 100 and stopped; one that always says depth 1 cannot chain forever).
 * The same floor holds when the reply_to is remembered but older than the
 * message behind the sender's last notification: two personas that keep
 * answering the human's first message (depth 0) with `depth: 1` while
 * mentioning each other are each notified by the other's newer message,
 * so each answer is one deeper and the chain reaches the limit. A reply
 * to that very message, or to a newer one, is not floored; nor is one
 * whose notification's position is unknown (an earlier record).
 * Only a sender the room has not notified since the last human message (a
 * proactive message) and that states no depth counts as one hop from a
 * human: depth 1. A system
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
    int64_t reply_at = -1;
    int64_t known = chat_room_recall_at(r, m->reply_to, &reply_at);
    int64_t from_reply = known >= 0 ? deeper(known) : -1;
    int64_t own = m->has_depth && m->depth >= 0 ? m->depth : -1;
    int64_t d = own > from_reply ? own : from_reply;
    const chat_notified *n = chat_room_notified(r, m->sender);
    /* an unknown position (-1) is never after a remembered reply_to */
    if (n && (known < 0 || n->at > reply_at) && deeper(n->depth) > d)
        d = deeper(n->depth);
    return d >= 0 ? d : 1;
}
