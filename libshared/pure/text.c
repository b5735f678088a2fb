/* text.c - @mentions and whole words in chat text (see text.h). Shared by
 * every service that reads messages, so that chat-router, dormancy-monitor
 * and wake-evaluator agree on who was mentioned. */
#include "vigil/text.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool id_char(unsigned char c)
{
    return isalnum(c) || c == '.' || c == '_' || c == '-';
}

/* Letters (and combining marks) of alphabetic scripts, where a word goes on
 * across them; anything else non-ASCII is a word boundary. */
static bool unicode_letter(uint32_t cp)
{
    static const struct {
        uint32_t lo, hi;
    } LETTERS[] = {
        { 0x00AA, 0x00AA }, { 0x00B5, 0x00B5 }, { 0x00BA, 0x00BA }, { 0x00C0, 0x00D6 },
        { 0x00D8, 0x00F6 }, { 0x00F8, 0x02AF }, { 0x0300, 0x036F }, { 0x0370, 0x037D },
        { 0x037F, 0x0386 }, { 0x0388, 0x03FF }, { 0x0400, 0x0481 }, { 0x048A, 0x052F },
        { 0x0531, 0x0556 }, { 0x0561, 0x0587 }, { 0x05D0, 0x05EA }, { 0x0620, 0x064A },
        { 0x0660, 0x0669 }, { 0x066E, 0x06D3 }, { 0x1E00, 0x1FFF },
    };
    for (size_t i = 0; i < sizeof LETTERS / sizeof LETTERS[0]; i++)
        if (cp >= LETTERS[i].lo && cp <= LETTERS[i].hi)
            return true;
    return false;
}

/* Decodes the UTF-8 sequence starting at p (at most n bytes); 0xFFFD on a
 * malformed one (inputs are validated UTF-8, so this is only defensive). */
static uint32_t decode_at(const unsigned char *p, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = p[0];
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (len == 1 || (size_t)len > n)
        return c < 0x80 ? c : 0xFFFD;
    uint32_t cp = c & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0xFFFD;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    return cp;
}

/* The code point that ends right before `at` (text starts at `start`). */
static uint32_t decode_before(const unsigned char *start, const unsigned char *at)
{
    const unsigned char *p = at - 1;
    int back = 0;
    while (p > start && (*p & 0xC0) == 0x80 && back < 3) {
        p--;
        back++;
    }
    return decode_at(p, (size_t)(at - p));
}

/* True when the character right before `at` continues a word. */
static bool word_before(const unsigned char *start, const unsigned char *at)
{
    if (at == start)
        return false;
    unsigned char c = at[-1];
    if (c < 0x80)
        return isalnum(c) || c == '_';
    return unicode_letter(decode_before(start, at));
}

/* True when the character at `at` continues a word. */
static bool word_at(const unsigned char *at)
{
    unsigned char c = *at;
    if (c == '\0')
        return false;
    if (c < 0x80)
        return isalnum(c) || c == '_';
    return unicode_letter(decode_at(at, strlen((const char *)at)));
}

static bool seen(char (*out)[VIGIL_MENTION_NAME_MAX + 1], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(out[i], name) == 0)
            return true;
    return false;
}

/* Finds the next mention at or after *cursor in the text that begins at
 * start; copies it lower-cased into buf, points *at (if given) at its '@'
 * and returns true, leaving *cursor where scanning resumes. `@self` is
 * skipped unless allow_self. */
static bool next_mention(const unsigned char *start, const unsigned char **cursor,
                         char buf[VIGIL_MENTION_NAME_MAX + 1], bool allow_self,
                         const unsigned char **at)
{
    const unsigned char *p = *cursor;
    while ((p = (const unsigned char *)strchr((const char *)p, '@')) != NULL) {
        const unsigned char *name = p + 1;
        const unsigned char *end = name;
        while (id_char(*end))
            end++;
        const unsigned char *next = end;
        while (end > name && (end[-1] == '.' || end[-1] == '-'))
            end--;
        size_t len = (size_t)(end - name);
        bool ok = len >= 1 && len <= VIGIL_MENTION_NAME_MAX && !word_before(start, p);
        /* a run that stops at a letter id characters cannot spell is a
         * different word ("@josé"), not a mention of its first part */
        if (ok && end == next && *next >= 0x80 && word_at(next))
            ok = false;
        p = next > name ? next : name;
        if (!ok)
            continue;
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)tolower(name[i]);
        buf[len] = '\0';
        if (!allow_self && strcmp(buf, "self") == 0)
            continue;
        if (at)
            *at = name - 1;
        *cursor = p;
        return true;
    }
    return false;
}

int vigil_mentions_parse(const char *text, char (*out)[VIGIL_MENTION_NAME_MAX + 1], int n,
                         int max, const char *exclude)
{
    if (!text)
        return n;
    const unsigned char *start = (const unsigned char *)text, *cur = start;
    char buf[VIGIL_MENTION_NAME_MAX + 1];
    while (n < max && next_mention(start, &cur, buf, false, NULL)) {
        if (seen(out, n, buf) || (exclude && strcasecmp(buf, exclude) == 0))
            continue;
        memcpy(out[n], buf, strlen(buf) + 1);
        n++;
    }
    return n;
}

int vigil_mentions_collect(const char *text, const char *const *ids, int n_ids,
                           const char *exclude, char (*out)[VIGIL_MENTION_NAME_MAX + 1],
                           int max)
{
    int n = vigil_mentions_parse(text, out, 0, max, exclude);
    for (int i = 0; i < n_ids && n < max; i++) {
        const char *id = ids[i];
        if (!id || !vigil_text_is_id(id) || seen(out, n, id) || strcasecmp(id, "self") == 0 ||
            (exclude && strcasecmp(id, exclude) == 0))
            continue;
        size_t len = strlen(id);
        for (size_t k = 0; k <= len; k++)
            out[n][k] = (char)tolower((unsigned char)id[k]);
        n++;
    }
    return n;
}

const char *vigil_text_find_mention(const char *text, const char *name)
{
    if (!text || !name || !*name)
        return NULL;
    if (!vigil_text_is_id(name)) {
        /* a display name ("Helper AI"): "@<name>" as a whole word */
        char at[2 * VIGIL_MENTION_NAME_MAX + 2];
        int n = snprintf(at, sizeof at, "@%s", name);
        if (n <= 0 || (size_t)n >= sizeof at)
            return NULL;
        return vigil_text_find_word(text, at);
    }
    const unsigned char *start = (const unsigned char *)text, *cur = start, *pos = NULL;
    char buf[VIGIL_MENTION_NAME_MAX + 1];
    while (next_mention(start, &cur, buf, true, &pos))
        if (strcasecmp(buf, name) == 0)
            return (const char *)pos;
    return NULL;
}

bool vigil_text_mentions(const char *text, const char *name)
{
    if (!name || strcasecmp(name, "self") == 0)
        return false;
    return vigil_text_find_mention(text, name) != NULL;
}

void vigil_mention_starts_of(vigil_mention_starts *m, const char *text)
{
    memset(m, 0, sizeof *m);
    for (const char *p = text ? strchr(text, '@') : NULL; p; p = strchr(p + 1, '@')) {
        int c = tolower((unsigned char)p[1]);
        m->bits[c >> 6] |= UINT64_C(1) << (c & 63);
    }
}

bool vigil_mention_may(const vigil_mention_starts *m, const char *name)
{
    if (!name || !*name)
        return false;
    int c = tolower((unsigned char)name[0]);
    return (m->bits[c >> 6] >> (c & 63)) & 1;
}

const char *vigil_text_find_word(const char *text, const char *word)
{
    size_t wl = word ? strlen(word) : 0;
    if (!text || wl == 0)
        return NULL;
    const unsigned char *start = (const unsigned char *)text;
    /* the first byte is compared before calling strncasecmp (as it
     * compares: through tolower), most positions fail there */
    int first = tolower((unsigned char)word[0]);
    for (const unsigned char *p = start; *p; p++) {
        if (tolower(*p) != first || strncasecmp((const char *)p, word, wl) != 0)
            continue;
        if (!word_before(start, p) && !word_at(p + wl))
            return (const char *)p;
    }
    return NULL;
}

bool vigil_text_has_word(const char *text, const char *word)
{
    return vigil_text_find_word(text, word) != NULL;
}

bool vigil_text_has_phrase(const char *text, const char *phrase)
{
    if (!phrase || !phrase[0])
        return false;
    if (vigil_text_has_word(text, phrase))
        return true;
    char spaced[256];
    size_t n = strlen(phrase);
    if (n >= sizeof spaced || !strpbrk(phrase, "-_"))
        return false; /* a longer one is looked for as written only */
    for (size_t i = 0; i <= n; i++)
        spaced[i] = phrase[i] == '-' || phrase[i] == '_' ? ' ' : phrase[i];
    return vigil_text_has_word(text, spaced);
}

bool vigil_text_is_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > VIGIL_MENTION_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char((unsigned char)s[i]))
            return false;
    return true;
}

bool vigil_text_blank(const char *s)
{
    return !s || !s[strspn(s, " \t\r\n")];
}
