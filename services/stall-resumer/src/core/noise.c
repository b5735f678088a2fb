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

/* Acknowledgement phrases, lower case. A reply made of nothing but these
 * (and separators) only acknowledges: "ok", "OK 👍", "Got it, will do",
 * "acknowledged, thanks", "Roger that". */
static const char *const ACKS[] = {
    "ok", "okay", "k", "kk", "ack", "acked", "acknowledged", "acknowledge", "received",
    "got it", "gotcha", "roger", "roger that", "noted", "thanks", "thank you", "thx", "ty",
    "will do", "on it", "yes", "yep", "yup", "sure", "understood", "copy", "copy that",
    "sounds good", "right", "alright", "all right", "cool", "great", "perfect", "👍", "✅",
    "👌", "🙏", "✔", NULL};

/* The length of the white space character at s, 0 when there is none:
 * ASCII white space, and the Unicode spaces a text can look empty with
 * (no-break space U+00A0, U+1680, U+2000..U+200B, the line and paragraph
 * separators U+2028/9, U+202F, U+205F, the ideographic space U+3000 and
 * the byte order mark U+FEFF). */
static size_t space_at(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] && isspace(u[0]))
        return 1;
    if (u[0] == 0xC2 && u[1] == 0xA0)
        return 2;
    if (u[0] == 0xE1 && u[1] == 0x9A && u[2] == 0x80)
        return 3;
    if (u[0] == 0xE2 && u[1] == 0x80 &&
        ((u[2] >= 0x80 && u[2] <= 0x8B) || u[2] == 0xA8 || u[2] == 0xA9 || u[2] == 0xAF))
        return 3;
    if (u[0] == 0xE2 && u[1] == 0x81 && u[2] == 0x9F)
        return 3;
    if ((u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x80) ||
        (u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF))
        return 3;
    return 0;
}

bool stall_text_blank(const char *text)
{
    const char *s = text ? text : "";
    for (size_t n; (n = space_at(s)) > 0;)
        s += n;
    return *s == '\0';
}

/* Steps over a character that is no white space one byte at a time: a
 * lead byte space_at knows (C2, E1, E2, E3, EF) is never a continuation
 * byte, so no space is ever found inside another character. */
size_t stall_text_trim(const char *text, const char **start)
{
    const char *s = text ? text : "";
    for (size_t n; (n = space_at(s)) > 0;)
        s += n;
    const char *end = s;
    for (const char *p = s; *p;) {
        size_t n = space_at(p);
        if (n) {
            p += n;
        } else {
            p++;
            end = p;
        }
    }
    *start = s;
    return (size_t)(end - s);
}

/* Between phrases: white space (space_at), ASCII punctuation, the dashes. */
static size_t separator_at(const char *s)
{
    size_t sp = space_at(s);
    if (sp)
        return sp;
    if (*s && strchr(".!?,;:-()~", *s))
        return 1;
    if (strncmp(s, "\xe2\x80\x93", 3) == 0 || strncmp(s, "\xe2\x80\x94", 3) == 0) /* – — */
        return 3;
    return 0;
}

/* What may follow an emoji and belong to it: a variation selector
 * (U+FE0F) or a skin tone (U+1F3FB..U+1F3FF). */
static size_t emoji_tail_at(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] == 0xEF && u[1] == 0xB8 && u[2] == 0x8F)
        return 3;
    if (u[0] == 0xF0 && u[1] == 0x9F && u[2] == 0x8F && u[3] >= 0xBB && u[3] <= 0xBF)
        return 4;
    return 0;
}

/* The length of the longest phrase of ACKS at low that ends at a boundary
 * (the end, a separator, or, after a word, an emoji); 0 when none. */
static size_t ack_at(const char *low)
{
    size_t best = 0;
    for (int i = 0; ACKS[i]; i++) {
        size_t n = strlen(ACKS[i]);
        if (n <= best || strncmp(low, ACKS[i], n) != 0)
            continue;
        bool word = isalpha((unsigned char)ACKS[i][0]);
        unsigned char next = (unsigned char)low[n];
        if (!word || next == '\0' || separator_at(low + n) || next >= 0x80)
            best = n;
    }
    for (size_t t; best > 0 && (t = emoji_tail_at(low + best)) > 0;)
        best += t;
    return best;
}

bool stall_is_meaningful_progress(const char *text)
{
    if (!text)
        return false;
    size_t len = strlen(text);
    if (len > STALL_DETAIL_MAX)
        return true; /* a long text is more than an acknowledgement */
    char low[STALL_DETAIL_MAX + 1];
    for (size_t i = 0; i <= len; i++)
        low[i] = (char)tolower((unsigned char)text[i]);
    const char *s = low;
    while (*s && separator_at(s))
        s += separator_at(s);
    /* "ack: ...", "acknowledged - ...": an acknowledgement whatever follows */
    if (strncmp(s, "ack:", 4) == 0 || strncmp(s, "ack ", 4) == 0 ||
        strncmp(s, "acknowledged ", 13) == 0 || strncmp(s, "acknowledging", 13) == 0)
        return false;
    while (*s) {
        size_t n = separator_at(s);
        if (!n)
            n = ack_at(s);
        if (!n)
            return true; /* a word that is no acknowledgement */
        s += n;
    }
    return false; /* only acknowledgements and separators, or nothing */
}

bool stall_is_acknowledgement(const char *text)
{
    if (!text)
        return false;
    for (const char *s = text; *s;) {
        size_t sp = space_at(s);
        if (!sp && !strchr(".!,;:", *s))
            return !stall_is_meaningful_progress(text);
        s += sp ? sp : 1;
    }
    return false; /* nothing in it but white space and stops: activity */
}
