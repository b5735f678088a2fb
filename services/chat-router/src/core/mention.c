/* mention.c - who a message notifies: the `@name` mentions in its text
 * (parsed by libshared's vigil_text, the rules every service shares: see
 * vigil/text.h) and its explicit `mentions` field. chat-router has no
 * persona registry, so every well-formed `@name` is a mention; names are
 * lower-cased (ids are case-insensitive here). */
#include "chat.h"
#include "vigil/text.h"

_Static_assert(CHAT_ID_MAX == VIGIL_MENTION_NAME_MAX, "chat ids are mention names");

int chat_mentions_parse(const char *text, char (*out)[CHAT_ID_MAX + 1], int max)
{
    return vigil_mentions_parse(text, out, 0, max, NULL);
}

int chat_mentions_collect(const chat_message *m, char (*out)[CHAT_ID_MAX + 1], int max)
{
    /* a persona answering must not notify itself (a chain with itself); a
     * person who shares a persona's name may still call on it */
    const char *self = m->sender_type == CHAT_SENDER_AI ? m->sender : NULL;
    return vigil_mentions_collect(m->text, m->mentions, m->n_mentions, self, out, max);
}
