/* redact.c - masking of credentials in text that leaves the process
 * (see redact.h). */
#include "vigil/redact.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define MAX_SECRETS 8
#define SECRET_MAX 256
#define MASK "***"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_secrets[MAX_SECRETS][SECRET_MAX];
static int g_n;

void vigil_redact_add_secret(const char *secret)
{
    if (!secret || strlen(secret) < 3 || strlen(secret) >= SECRET_MAX)
        return;
    pthread_mutex_lock(&g_mu);
    bool known = false;
    for (int i = 0; i < g_n; i++)
        known = known || strcmp(g_secrets[i], secret) == 0;
    if (!known && g_n < MAX_SECRETS)
        memcpy(g_secrets[g_n++], secret, strlen(secret) + 1);
    pthread_mutex_unlock(&g_mu);
}

void vigil_redact_clear(void)
{
    pthread_mutex_lock(&g_mu);
    g_n = 0;
    pthread_mutex_unlock(&g_mu);
}

typedef struct out_buf {
    char *p;
    size_t cap, len;
} out_buf;

static void put(out_buf *o, const char *s, size_t n)
{
    if (o->cap == 0)
        return;
    size_t room = o->cap - 1 - o->len;
    if (n > room)
        n = room;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

/* Bytes that end a URL's authority part (or the URL) in running text. */
static bool ends_authority(char c)
{
    return c == '\0' || c == '/' || c == ' ' || c == '"' || c == '\'' || c == '\\' || c == '\n' ||
           c == '\t' || c == ',' || c == ';' || c == '>' || c == ')';
}

/* At s (just after "://"): when the authority holds "user:password@", the
 * length of "user:" (kept) and of "password" (masked); else false. The
 * last '@' of the authority ends the user info, as the URL parsers do. */
static bool userinfo(const char *s, size_t *keep, size_t *secret)
{
    const char *at = NULL, *colon = NULL;
    for (const char *p = s; !ends_authority(*p); p++) {
        if (*p == '@')
            at = p;
    }
    if (!at)
        return false;
    colon = memchr(s, ':', (size_t)(at - s));
    if (!colon || colon + 1 == at)
        return false;
    *keep = (size_t)(colon - s) + 1;
    *secret = (size_t)(at - colon - 1);
    return true;
}

/* Length of the registered secret that starts at s, or 0. Caller holds
 * g_mu. */
static size_t secret_at(const char *s)
{
    for (int i = 0; i < g_n; i++) {
        size_t n = strlen(g_secrets[i]);
        if (strncmp(s, g_secrets[i], n) == 0)
            return n;
    }
    return 0;
}

size_t vigil_redact(const char *in, char *out, size_t outlen)
{
    out_buf o = { out, outlen, 0 };
    if (outlen > 0)
        out[0] = '\0';
    if (!in)
        return 0;
    pthread_mutex_lock(&g_mu);
    const char *p = in;
    while (*p) {
        size_t keep, secret, n;
        if (p[0] == ':' && p[1] == '/' && p[2] == '/' && userinfo(p + 3, &keep, &secret)) {
            put(&o, p, 3 + keep);
            put(&o, MASK, strlen(MASK));
            p += 3 + keep + secret;
            continue;
        }
        if ((n = secret_at(p)) > 0) {
            put(&o, MASK, strlen(MASK));
            p += n;
            continue;
        }
        put(&o, p, 1);
        p++;
    }
    pthread_mutex_unlock(&g_mu);
    return o.len;
}

size_t vigil_redact_url(const char *url, char *out, size_t outlen)
{
    return vigil_redact(url, out, outlen);
}
