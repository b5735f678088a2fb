/* text.c - reading message text: @mentions, whole words (expertise
 * domains), the urgent keywords, UTF-8-safe truncation, "12 min ago". */
#include <ctype.h>
#include <inttypes.h>
#include <stdint.h>
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

bool wake_text_has_domain(const char *text, const char *domain)
{
    return vigil_text_has_phrase(text, domain);
}

/* The specified basic rule is `text.toLowerCase().includes(kw)`: a
 * keyword anywhere, inside a longer word too ("errors", "urgently",
 * "downtime"), in any case. One pass over the text, which runs on every
 * message a sleeper might be woken by: a byte that begins no keyword (a
 * bit set of the keywords' first letters, ASCII case folded by one OR) is
 * passed over at once, and at the others only the keywords starting with
 * that letter are compared. The one reported is the first of the list the
 * text holds. Keywords are lowercase ASCII letters, at most 32 of them. */
const char *wake_urgent_keyword(const char *text)
{
    if (!text)
        return NULL;
    const char *const *kw = WAKE_URGENT_KEYWORDS;
    uint32_t firsts = 0;
    size_t len[32];
    int n = 0;
    for (; kw[n] && n < 32; n++) {
        firsts |= UINT32_C(1) << ((kw[n][0] - 'a') & 31);
        len[n] = strlen(kw[n]);
    }
    unsigned found = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        unsigned c = (unsigned)(*p | 0x20) - 'a'; /* 'A'-'Z' and 'a'-'z' to 0..25 */
        if (c >= 26 || !(firsts >> c & 1))
            continue;
        for (int i = 0; i < n; i++)
            if ((unsigned)(kw[i][0] - 'a') == c && !(found & (1u << i)) &&
                strncasecmp((const char *)p, kw[i], len[i]) == 0)
                found |= 1u << i;
        if (found & 1u)
            break; /* the list's first: nothing can come before it */
    }
    for (int i = 0; i < n; i++)
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
