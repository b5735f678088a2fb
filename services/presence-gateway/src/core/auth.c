/* auth.c - who is calling: a bearer token or the vigil_session cookie,
 * looked up in the token table read from VIGIL_GATEWAY_TOKENS_FILE; the
 * cookie's encoding of a token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/json.h>
#include <vigil/str.h>
#include "gateway.h"

#define TOKEN_MIN 8
#define TOKEN_MAX GW_TOKEN_MAX
#define STR_(x) #x
#define STR(x) STR_(x)

/* libshared's one id rule (vigil_id_valid): 1..64 of A-Z a-z 0-9 . _ - */
bool gw_id_valid(const char *s)
{
    return s && vigil_id_valid(s, strlen(s));
}

/* Printable ASCII without space (a space or tab ends the token in the
 * file, and a header value cannot carry control characters or, portably,
 * anything past ASCII). Characters a cookie value cannot hold (; , " \)
 * are allowed: the cookie carries them encoded (gw_cookie_encode). */
static bool token_valid(const char *s, size_t n)
{
    if (n < TOKEN_MIN || n > TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] > '~')
            return false;
    return true;
}

/* RFC 6265's cookie-octet: printable ASCII but space, DQUOTE, comma,
 * semicolon and backslash. '%' is one too, but it is the escape. */
static bool cookie_octet_plain(unsigned char c)
{
    return c > ' ' && c <= '~' && c != '"' && c != ',' && c != ';' && c != '\\' && c != '%';
}

int gw_cookie_encode(const char *token, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)token; *p; p++) {
        size_t need = cookie_octet_plain(*p) ? 1 : 3;
        if (o + need >= outlen)
            return -1;
        if (need == 1) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (outlen == 0)
        return -1;
    out[o] = '\0';
    return 0;
}

/* The token a cookie value carries: "%XX" (two hex digits) is the byte
 * XX, anything else stands for itself, so a cookie set before tokens were
 * encoded (a token with a backslash, or with '%' not followed by two hex
 * digits) still reads as its token. The result must be a valid token
 * (no NUL or control byte smuggled in as %00). 0, or -1. */
static int cookie_decode(const char *v, char *out, size_t outlen)
{
    size_t o = 0;
    for (const char *p = v; *p; p++) {
        if (o + 1 >= outlen)
            return -1;
        int hi = p[0] == '%' ? vigil_hex_digit((unsigned char)p[1]) : -1;
        int lo = hi >= 0 ? vigil_hex_digit((unsigned char)p[2]) : -1;
        if (lo >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return token_valid(out, o) ? 0 : -1;
}

void gw_tokens_free(gw_tokens *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->v[i].token);
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

static int by_token(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A token given twice (for one user or two) is refused: lookups take the
 * first line, so a second line would silently not grant what it says.
 * Sorted copies of the pointers keep this O(n log n) for large files. */
static int find_duplicate(const gw_tokens *t, char *err, size_t errlen)
{
    if (t->n < 2)
        return 0;
    char **v = malloc((size_t)t->n * sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < t->n; i++)
        v[i] = t->v[i].token;
    qsort(v, (size_t)t->n, sizeof *v, by_token);
    int rc = 0;
    for (int i = 1; i < t->n && rc == 0; i++) {
        if (strcmp(v[i - 1], v[i]) != 0)
            continue;
        const char *users[2] = { NULL, NULL };
        for (int j = 0, k = 0; j < t->n && k < 2; j++)
            if (t->v[j].token == v[i - 1] || t->v[j].token == v[i])
                users[k++] = t->v[j].user;
        snprintf(err, errlen, "one token is given twice (users '%s' and '%s'): each token "
                 "names one user", users[0] ? users[0] : "?", users[1] ? users[1] : "?");
        rc = -1;
    }
    free(v);
    return rc;
}

/* Reads the fields of one line: "token user", anything after is refused
 * so a typo never silently grants a different user. */
int gw_tokens_parse(const char *text, gw_tokens *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int lineno = 0, cap = 0;
    const char *p = text ? text : "";
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        lineno++;
        char line[1024];
        if (len >= sizeof line) {
            snprintf(err, errlen, "line %d: too long", lineno);
            goto fail;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol ? 1 : 0);
        if (len && line[len - 1] == '\r')
            line[--len] = '\0';
        char *save = NULL;
        char *tok = strtok_r(line, " \t", &save);
        if (!tok || tok[0] == '#')
            continue;
        char *user = strtok_r(NULL, " \t", &save);
        char *extra = strtok_r(NULL, " \t", &save);
        if (!user || extra) {
            snprintf(err, errlen, "line %d: expected 'token user'", lineno);
            goto fail;
        }
        if (!token_valid(tok, strlen(tok))) {
            snprintf(err, errlen, "line %d: a token is %d-%d printable ASCII characters without "
                     "spaces", lineno, TOKEN_MIN, TOKEN_MAX);
            goto fail;
        }
        if (!gw_id_valid(user)) {
            snprintf(err, errlen, "line %d: user must be 1-64 of A-Z a-z 0-9 . _ -", lineno);
            goto fail;
        }
        if (out->n == cap) {
            int nc = cap ? cap * 2 : 8;
            gw_token *v = realloc(out->v, (size_t)nc * sizeof *v);
            if (!v) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            out->v = v;
            cap = nc;
        }
        out->v[out->n].token = strdup(tok);
        if (!out->v[out->n].token) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        snprintf(out->v[out->n].user, sizeof out->v[out->n].user, "%s", user);
        out->n++;
    }
    if (find_duplicate(out, err, errlen) != 0)
        goto fail;
    return 0;
fail:
    gw_tokens_free(out);
    return -1;
}

/* Equal-length comparison whose time does not depend on where the first
 * difference is, so a caller cannot learn a token byte by byte. */
static bool same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = (unsigned char)(la != lb);
    size_t n = la < lb ? la : lb;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

int gw_tokens_find(const gw_tokens *t, const char *token)
{
    int found = -1;
    if (!token)
        return -1;
    for (int i = 0; i < t->n; i++)
        if (same(t->v[i].token, token) && found < 0)
            found = i;
    return found;
}

gw_auth_result gw_auth_decide(const gw_tokens *t, const char *authorization, const char *cookie,
                              int *index)
{
    *index = -1;
    const char *tok = NULL;
    char cookie_token[TOKEN_MAX + 1];
    if (authorization && *authorization) {
        if (strncasecmp(authorization, "Bearer ", 7) != 0)
            return GW_AUTH_MALFORMED;
        tok = authorization + 7;
        while (*tok == ' ')
            tok++;
        if (!token_valid(tok, strlen(tok)))
            return GW_AUTH_MALFORMED;
    } else if (cookie && *cookie) {
        if (cookie_decode(cookie, cookie_token, sizeof cookie_token) != 0)
            return GW_AUTH_UNKNOWN;
        tok = cookie_token;
    } else {
        return GW_AUTH_MISSING;
    }
    int i = gw_tokens_find(t, tok);
    if (i < 0)
        return GW_AUTH_UNKNOWN;
    *index = i;
    return GW_AUTH_OK;
}

const char *gw_auth_reason(gw_auth_result r)
{
    switch (r) {
    case GW_AUTH_OK:
        return "ok";
    case GW_AUTH_MISSING:
        return "no credentials: send 'Authorization: Bearer <token>' or log in at /login?token=...";
    case GW_AUTH_MALFORMED:
        return "the Authorization header must be 'Bearer <token>', a token of " STR(TOKEN_MIN)
               "-" STR(TOKEN_MAX) " printable characters";
    case GW_AUTH_UNKNOWN:
        return "unknown token";
    }
    return "unknown";
}
