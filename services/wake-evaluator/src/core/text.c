/* text.c - reading message text: @mentions, whole words (the urgent
 * keywords, expertise domains), UTF-8-safe truncation, "12 min ago". */
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

const char *wake_urgent_keyword(const char *text)
{
    int i = vigil_text_first_word(text, WAKE_URGENT_KEYWORDS);
    return i >= 0 ? WAKE_URGENT_KEYWORDS[i] : NULL;
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
