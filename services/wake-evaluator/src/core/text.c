/* text.c - reading message text: @mentions, whole words (expertise
 * domains), the urgent keywords, UTF-8-safe truncation, "12 min ago". */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "wake.h"
#include "vigil/text.h"

const char *const WAKE_URGENT_KEYWORDS[] = {"emergency", "urgent", "help", "error",
                                            "failed", "down", "broken", NULL};

/* Mentions and whole words follow libshared's vigil_text, so that every
 * service agrees on who was mentioned and what counts as a word. */
bool wake_text_mentions(const char *text, const char *name)
{
    return vigil_text_mentions(text, name);
}

bool wake_text_has_word(const char *text, const char *word)
{
    return vigil_text_has_word(text, word);
}

/* The specified basic rule is `text.toLowerCase().includes(kw)`: a
 * keyword anywhere, inside a longer word too ("errors", "urgently",
 * "downtime"), in any case. One pass over the text: at each byte only the
 * keywords starting with that letter are compared; the one reported is the
 * first of the list the text holds. */
const char *wake_urgent_keyword(const char *text)
{
    if (!text)
        return NULL;
    const char *const *kw = WAKE_URGENT_KEYWORDS;
    unsigned found = 0;
    for (const char *p = text; *p; p++) {
        int c = tolower((unsigned char)*p);
        for (int i = 0; kw[i]; i++)
            if (kw[i][0] == c && !(found & (1u << i)) &&
                strncasecmp(p, kw[i], strlen(kw[i])) == 0)
                found |= 1u << i;
        if (found & 1u)
            break; /* the list's first: nothing can come before it */
    }
    for (int i = 0; kw[i]; i++)
        if (found & (1u << i))
            return kw[i];
    return NULL;
}

void wake_format_ago(int64_t ms, char *out, size_t outlen)
{
    if (ms < 1000) {
        snprintf(out, outlen, "just now");
        return;
    }
    int64_t s = ms / 1000;
    if (s < 60)
        snprintf(out, outlen, "%" PRId64 "s ago", s);
    else if (s < 3600)
        snprintf(out, outlen, "%" PRId64 " min ago", s / 60);
    else if (s < 48 * 3600)
        snprintf(out, outlen, "%" PRId64 " h ago", s / 3600);
    else
        snprintf(out, outlen, "%" PRId64 " days ago", s / 86400);
}
