/* ack.c - recognising HEARTBEAT_OK, the model's "nothing needs attention".
 * The seed strips it so it is never shown; OpenClaw's heartbeat, whose
 * users found the token leaking into chats, treats a reply as an ack when
 * the token stands at its start or end with at most 300 other characters.
 * We do the same, and in addition remove the token from anything that is
 * sent, so it reaches no room in any message, ever. */
#include <string.h>
#include "heartbeat.h"

#define TOKEN_LEN (sizeof HB_TOKEN - 1)

static bool word_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whitespace, punctuation and markdown around the token ("**HEARTBEAT_OK**",
 * "`HEARTBEAT_OK`.", "HEARTBEAT_OK!") do not count as other characters. */
static bool markup(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '*' ||
           c == '`' || c == '"' || c == '\'' || c == '.' || c == '!' || c == ',' || c == ':' ||
           c == ';' || c == '(' || c == ')' || c == '[' || c == ']' || c == '~' || c == '>' ||
           c == '#' || c == '-' || c == '_';
}

static bool token_at(const char *t, size_t len, size_t i)
{
    if (i + TOKEN_LEN > len)
        return false;
    for (size_t k = 0; k < TOKEN_LEN; k++) {
        unsigned char a = (unsigned char)t[i + k], b = (unsigned char)HB_TOKEN[k];
        if (a >= 'a' && a <= 'z')
            a = (unsigned char)(a - 32);
        if (a != b)
            return false;
    }
    if (i > 0 && word_char((unsigned char)t[i - 1]))
        return false;
    if (i + TOKEN_LEN < len && word_char((unsigned char)t[i + TOKEN_LEN]))
        return false;
    return true;
}

/* Characters (code points) of t[a..b) once markup is trimmed off both ends. */
static size_t other_chars(const char *t, size_t a, size_t b)
{
    while (a < b && markup((unsigned char)t[a]))
        a++;
    while (b > a && markup((unsigned char)t[b - 1]))
        b--;
    size_t n = 0;
    for (size_t i = a; i < b; i++)
        if (((unsigned char)t[i] & 0xC0) != 0x80)
            n++;
    return n;
}

static bool only_markup(const char *t, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (!markup((unsigned char)t[i]))
            return false;
    return true;
}

bool hb_is_ack(const char *text, size_t len)
{
    if (!text)
        return false;
    size_t first = len, last = len;
    for (size_t i = 0; i + TOKEN_LEN <= len; i++)
        if (token_at(text, len, i)) {
            if (first == len)
                first = i;
            last = i;
        }
    if (first == len)
        return false;
    if (only_markup(text, 0, first) && other_chars(text, first + TOKEN_LEN, len) <= HB_ACK_MAX_OTHER)
        return true; /* at the start */
    if (only_markup(text, last + TOKEN_LEN, len) && other_chars(text, 0, last) <= HB_ACK_MAX_OTHER)
        return true; /* at the end */
    return false;
}

size_t hb_strip_token(const char *text, size_t len, char *out, size_t outlen)
{
    size_t n = 0;
    if (outlen == 0)
        return 0;
    for (size_t i = 0; i < len;) {
        /* any occurrence goes, even glued to other words: the token must
         * never be shown */
        bool hit = i + TOKEN_LEN <= len;
        for (size_t k = 0; hit && k < TOKEN_LEN; k++) {
            unsigned char a = (unsigned char)text[i + k];
            if (a >= 'a' && a <= 'z')
                a = (unsigned char)(a - 32);
            hit = a == (unsigned char)HB_TOKEN[k];
        }
        if (hit) {
            i += TOKEN_LEN;
            continue;
        }
        if (n + 1 < outlen)
            out[n++] = text[i];
        i++;
    }
    out[n] = '\0';
    size_t a = 0;
    while (a < n && (out[a] == ' ' || out[a] == '\n' || out[a] == '\t' || out[a] == '\r'))
        a++;
    while (n > a && (out[n - 1] == ' ' || out[n - 1] == '\n' || out[n - 1] == '\t' ||
                     out[n - 1] == '\r'))
        n--;
    memmove(out, out + a, n - a);
    out[n - a] = '\0';
    return n - a;
}
