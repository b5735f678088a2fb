/* ack.c - recognising HEARTBEAT_OK, the model's "nothing needs attention".
 * The specified rule is `response.trim() === HEARTBEAT_OK_MARKER ||
 * response.includes(HEARTBEAT_OK_MARKER)`: an answer that holds the token
 * anywhere is a no-action run, and it must never reach the user ("harus
 * di-strip, tidak dikirim ke user": stripped, never sent). Cutting the
 * token out and sending the rest, as this file once did, sent "Nothing
 * pressing, , though..." and turned "HEARTBEAT_OKAY" into "AY"; so nothing
 * is cut out of an answer any more: holding the token makes it an ack,
 * whole.
 *
 * The match ignores case (the specified test does not): "heartbeat_ok" is
 * the same answer from a sloppier model, and sending it would show the
 * token. */
#include <string.h>
#include "heartbeat.h"

#define TOKEN_LEN (sizeof HB_TOKEN - 1)

/* The token at t[i], in any case; glued to other characters counts. */
static bool token_at(const char *t, size_t len, size_t i)
{
    if (i + TOKEN_LEN > len)
        return false;
    for (size_t k = 0; k < TOKEN_LEN; k++) {
        unsigned char a = (unsigned char)t[i + k];
        if (a >= 'a' && a <= 'z')
            a = (unsigned char)(a - 32);
        if (a != (unsigned char)HB_TOKEN[k])
            return false;
    }
    return true;
}

bool hb_is_ack(const char *text, size_t len)
{
    if (!text)
        return false;
    for (size_t i = 0; i + TOKEN_LEN <= len; i++)
        if (token_at(text, len, i))
            return true;
    return false;
}

/* Only for the context kept from room messages (engine.c): a room message
 * is someone else's words, kept for the prompt, so it is kept without the
 * token rather than dropped. The token is taken off the end of what is
 * written as soon as it appears there, so cutting one out can never join
 * the text around it into another ("HEARTBEATHEARTBEAT_OK_OK" leaves
 * nothing, not "HEARTBEAT_OK"). */
size_t hb_strip_token(const char *text, size_t len, char *out, size_t outlen)
{
    size_t n = 0;
    if (outlen == 0)
        return 0;
    for (size_t i = 0; i < len && n + 1 < outlen; i++) {
        out[n++] = text[i];
        if (n >= TOKEN_LEN && token_at(out, n, n - TOKEN_LEN))
            n -= TOKEN_LEN;
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
