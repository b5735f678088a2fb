/* mention.c - who a message notifies: the `@name` mentions in its text
 * (parsed by libshared's vigil_text, the rules every service shares: see
 * vigil/text.h) and its explicit `mentions` field. chat-router has no
 * persona registry, so every well-formed `@name` is a mention; names are
 * lower-cased (ids are case-insensitive here). */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "chat.h"
#include "vigil/text.h"

_Static_assert(CHAT_ID_MAX == VIGIL_MENTION_NAME_MAX, "chat ids are mention names");

static bool seen(char (*out)[CHAT_ID_MAX + 1], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(out[i], name) == 0)
            return true;
    return false;
}

int chat_mentions_parse(const char *text, char (*out)[CHAT_ID_MAX + 1], int max)
{
    return vigil_mentions_parse(text, out, 0, max, NULL);
}

int chat_mentions_collect(const chat_message *m, char (*out)[CHAT_ID_MAX + 1], int max)
{
    /* a persona answering must not notify itself (a chain with itself); a
     * person who shares a persona's name may still call on it */
    const char *self = m->sender_type == CHAT_SENDER_AI ? m->sender : NULL;
    int n = vigil_mentions_parse(m->text, out, 0, max, self);
    for (int i = 0; i < m->n_mentions && n < max; i++) {
        const char *id = m->mentions[i];
        if (!id || !vigil_text_is_id(id) || seen(out, n, id) || strcasecmp(id, "self") == 0 ||
            (self && strcasecmp(id, self) == 0))
            continue;
        size_t len = strlen(id);
        for (size_t k = 0; k <= len; k++)
            out[n][k] = (char)tolower((unsigned char)id[k]);
        n++;
    }
    return n;
}
