/* noise.c - what never counts as activity (the specified noise patterns and
 * our own resume prompts) and what is not meaningful progress (bare
 * acknowledgements). Matching is ASCII case-insensitive; other bytes
 * (emoji, accents) compare as they are. */
#include <ctype.h>
#include <string.h>
#include "stall.h"

/* Case-insensitive substring search; needle is already lower-case. */
static bool contains_lower(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return false;
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && (char)tolower((unsigned char)h[i]) == needle[i])
            i++;
        if (i == n)
            return true;
    }
    return false;
}

bool stall_is_resumer_prompt(const stall_config *c, const char *text)
{
    if (!text || !*text)
        return false;
    if (contains_lower(text, STALL_PROMPT_MARKER))
        return true;
    for (int i = 0; i < c->n_noise; i++)
        if (contains_lower(text, c->noise[i]))
            return true;
    return false;
}

/* Replies that only acknowledge: compared after trimming spaces and
 * trailing punctuation, case-insensitively. */
static const char *const ACKS[] = {"ok", "okay", "k", "ack", "acked", "acknowledged",
                                   "acknowledge", "received", "got it", "roger", "noted",
                                   "thanks", "thank you", "will do", "on it", "yes", "sure",
                                   "understood", "copy", "copy that", "👍", "✅", NULL};

bool stall_is_meaningful_progress(const char *text)
{
    if (!text)
        return false;
    const char *s = text;
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && (isspace((unsigned char)s[len - 1]) || strchr(".!,;:", s[len - 1])))
        len--;
    if (len == 0)
        return false;
    char low[STALL_DETAIL_MAX + 1];
    if (len > STALL_DETAIL_MAX)
        return true; /* a long text is more than an acknowledgement */
    for (size_t i = 0; i < len; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    low[len] = '\0';
    for (int i = 0; ACKS[i]; i++)
        if (strcmp(low, ACKS[i]) == 0)
            return false;
    /* "ack: ...", "acknowledged - ..." */
    if (strncmp(low, "ack:", 4) == 0 || strncmp(low, "ack ", 4) == 0 ||
        strncmp(low, "acknowledged ", 13) == 0 || strncmp(low, "acknowledging", 13) == 0)
        return false;
    return true;
}

bool stall_is_acknowledgement(const char *text)
{
    if (!text)
        return false;
    for (const char *s = text; *s; s++)
        if (!isspace((unsigned char)*s) && !strchr(".!,;:", *s))
            return !stall_is_meaningful_progress(text);
    return false; /* nothing in it but spaces and stops */
}
