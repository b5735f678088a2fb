/* jbuf.c - direct JSON writing (see jbuf.h). Strings are assumed UTF-8
 * (everything stored passed validation or wake_copy_utf8); quotes,
 * backslashes and control characters are escaped. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jbuf.h"

void jb_init(jbuf *b, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->s = malloc(cap ? cap : 64);
    b->cap = cap ? cap : 64;
    b->failed = b->s == NULL;
    if (b->s)
        b->s[0] = '\0';
}

static void put(jbuf *b, const char *p, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap * 2;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void value_start(jbuf *b)
{
    if (b->comma)
        put(b, ",", 1);
    b->comma = true;
}

void jb_open(jbuf *b, char c)
{
    value_start(b);
    put(b, &c, 1);
    b->comma = false;
}

void jb_close(jbuf *b, char c)
{
    put(b, &c, 1);
    b->comma = true;
}

static void raw_str(jbuf *b, const char *s)
{
    put(b, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(b, run, (size_t)(p - run));
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        put(b, esc, strlen(esc));
        run = p + 1;
    }
    put(b, run, strlen(run));
    put(b, "\"", 1);
}

void jb_key(jbuf *b, const char *key)
{
    value_start(b);
    raw_str(b, key);
    put(b, ":", 1);
    b->comma = false;
}

void jb_str(jbuf *b, const char *s)
{
    value_start(b);
    raw_str(b, s ? s : "");
}

void jb_i64(jbuf *b, int64_t v)
{
    char n[32];
    value_start(b);
    snprintf(n, sizeof n, "%" PRId64, v);
    put(b, n, strlen(n));
}

void jb_dbl(jbuf *b, double v)
{
    char n[40];
    value_start(b);
    if (!isfinite(v))
        v = 0;
    snprintf(n, sizeof n, "%.17g", v);
    put(b, n, strlen(n));
}

void jb_bool(jbuf *b, bool v)
{
    value_start(b);
    put(b, v ? "true" : "false", v ? 4 : 5);
}

char *jb_take(jbuf *b)
{
    char *s = b->failed ? NULL : b->s;
    if (b->failed)
        free(b->s);
    memset(b, 0, sizeof *b);
    return s;
}
