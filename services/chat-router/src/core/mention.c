/* mention.c - finding `@name` mentions in message text.
 *
 * chat-router has no persona registry, so every well-formed `@name` is a
 * mention; the rules below keep out what only looks like one:
 *  - the '@' must not follow a letter, a digit or '_' ("a@b.com" is an
 *    e-mail address). Non-ASCII letters of alphabetic scripts count as
 *    letters ("josé@example.com"); scripts written without spaces (CJK),
 *    punctuation and emoji are boundaries ("日本@ann", "«@ann»");
 *  - the name is the longest run of id characters [A-Za-z0-9._-] after it,
 *    minus trailing '.' and '-' (sentence punctuation: "thanks @ann."),
 *    1..64 characters; a longer run is not a mention, and neither is a
 *    run followed by a letter that cannot be part of an id ("@josé");
 *  - names are lower-cased (ids are case-insensitive here) and `@self` is
 *    the persona's command about itself, never a mention. */
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include "chat.h"

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
 * malformed one (input is validated UTF-8, so only defensive). */
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

/* True when the character before '@' makes it part of a word or address. */
static bool glued_before(const unsigned char *start, const unsigned char *at)
{
    if (at == start)
        return false;
    unsigned char c = at[-1];
    if (c < 0x80)
        return isalnum(c) || c == '_';
    return unicode_letter(decode_before(start, at));
}

static bool seen(char (*out)[CHAT_ID_MAX + 1], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(out[i], name) == 0)
            return true;
    return false;
}

/* Appends to out[n..max) the mentions in text that are new and not
 * `exclude` (case-insensitive; may be NULL). Returns the new count. */
static int parse_into(const char *text, char (*out)[CHAT_ID_MAX + 1], int n, int max,
                      const char *exclude)
{
    if (!text || n >= max)
        return n;
    const unsigned char *start = (const unsigned char *)text;
    const unsigned char *p = start;
    while (n < max && (p = (const unsigned char *)strchr((const char *)p, '@')) != NULL) {
        const unsigned char *name = p + 1;
        const unsigned char *end = name;
        while (id_char(*end))
            end++;
        const unsigned char *next = end; /* scanning resumes here */
        while (end > name && (end[-1] == '.' || end[-1] == '-'))
            end--;
        size_t len = (size_t)(end - name);
        bool ok = len >= 1 && len <= CHAT_ID_MAX && !glued_before(start, p);
        /* a run that stops at a letter id characters cannot spell is a
         * different word ("@josé"), not a mention of its first part */
        if (ok && *next >= 0x80 && end == next && unicode_letter(decode_at(next, strlen((const char *)next))))
            ok = false;
        if (ok) {
            char buf[CHAT_ID_MAX + 1];
            for (size_t i = 0; i < len; i++)
                buf[i] = (char)tolower(name[i]);
            buf[len] = '\0';
            if (strcmp(buf, "self") != 0 && !seen(out, n, buf) &&
                !(exclude && strcasecmp(buf, exclude) == 0)) {
                memcpy(out[n], buf, len + 1);
                n++;
            }
        }
        p = next > name ? next : name;
    }
    return n;
}

int chat_mentions_parse(const char *text, char (*out)[CHAT_ID_MAX + 1], int max)
{
    return parse_into(text, out, 0, max, NULL);
}

static bool valid_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > CHAT_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char((unsigned char)s[i]))
            return false;
    return true;
}

int chat_mentions_collect(const chat_message *m, char (*out)[CHAT_ID_MAX + 1], int max)
{
    int n = parse_into(m->text, out, 0, max, m->sender);
    for (int i = 0; i < m->n_mentions && n < max; i++) {
        const char *id = m->mentions[i];
        if (!id || !valid_id(id) || seen(out, n, id) || strcasecmp(id, "self") == 0 ||
            (m->sender && strcasecmp(id, m->sender) == 0))
            continue;
        size_t len = strlen(id);
        for (size_t k = 0; k <= len; k++)
            out[n][k] = (char)tolower((unsigned char)id[k]);
        n++;
    }
    return n;
}
