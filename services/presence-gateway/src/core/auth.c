/* auth.c - who is calling: a bearer token or the vigil_session cookie,
 * looked up in the token table read from VIGIL_GATEWAY_TOKENS_FILE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/json.h>
#include "gateway.h"

#define TOKEN_MIN 8
#define TOKEN_MAX 256
#define STR_(x) #x
#define STR(x) STR_(x)

/* libshared's one id rule (vigil_id_valid): 1..64 of A-Z a-z 0-9 . _ - */
bool gw_id_valid(const char *s)
{
    return s && vigil_id_valid(s, strlen(s));
}

static bool token_valid(const char *s, size_t n)
{
    if (n < TOKEN_MIN || n > TOKEN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == ';' || s[i] == ',')
            return false;
    return true;
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
            snprintf(err, errlen, "line %d: a token is %d-%d printable characters", lineno,
                     TOKEN_MIN, TOKEN_MAX);
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
    if (authorization && *authorization) {
        if (strncasecmp(authorization, "Bearer ", 7) != 0)
            return GW_AUTH_MALFORMED;
        tok = authorization + 7;
        while (*tok == ' ')
            tok++;
        if (!token_valid(tok, strlen(tok)))
            return GW_AUTH_MALFORMED;
    } else if (cookie && *cookie) {
        tok = cookie;
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
