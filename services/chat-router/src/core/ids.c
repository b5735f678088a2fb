/* ids.c - deterministic ids. Every id the core makes is a function of the
 * input id, so a redelivered input (decided again after a crash) yields
 * the same ids and consumers dedupe on them. Notification ids are
 * libshared's vigil_event_id ("<message id>:<room>:<n>", message.c). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "step.h"

/* Ids that become inputs again (the stop message, the resume-all
 * continuation) must be valid input ids: no '/', at most 128 bytes. */
void chat_derived_id(char *out, size_t outlen, const char *tag, const char *a, const char *b)
{
    char buf[2 * (CHAT_EVID_MAX + 1) + 2];
    int n = snprintf(buf, sizeof buf, "%s\n%s", a ? a : "", b ? b : "");
    size_t len = n < 0 ? 0 : ((size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    snprintf(out, outlen, "%s-%016" PRIx64, tag, vigil_hash64(buf, len));
}

/* One decimal part of a stream id, at *p: 1-20 digits (UINT64_MAX has 20)
 * and at most UINT64_MAX (strtoull's ERANGE): Redis refuses a larger part.
 * Moves *p past it. */
static bool u64_part(const char **p)
{
    const char *s = *p;
    size_t n = 0;
    while (isdigit((unsigned char)s[n]))
        n++;
    if (n == 0 || n > 20)
        return false;
    char *end;
    errno = 0;
    (void)strtoull(s, &end, 10);
    if (errno == ERANGE || end != s + n)
        return false;
    *p = end;
    return true;
}

bool chat_log_id_valid(const char *s)
{
    if (!s || !u64_part(&s))
        return false;
    if (*s == '\0')
        return true;
    return *s++ == '-' && u64_part(&s) && *s == '\0';
}

/* The message ids `vigil chat send` prints (and any producer's) are what
 * an answer's reply_to names, so a caller holding one may page from it.
 * Anything shaped like a stream id (digits, '-') is read as a log id
 * only: an out-of-range one stays a usage error instead of a message id
 * nobody sent. */
chat_since_kind chat_since_kind_of(const char *s)
{
    if (!s || !*s)
        return CHAT_SINCE_BAD;
    if (strspn(s, "0123456789-") == strlen(s))
        return chat_log_id_valid(s) ? CHAT_SINCE_LOG_ID : CHAT_SINCE_BAD;
    return vigil_event_id_valid(s, strlen(s)) ? CHAT_SINCE_MESSAGE_ID : CHAT_SINCE_BAD;
}
