/* jbuf.c - direct JSON writing (see jbuf.h): the separators are this
 * file's, the text and its escaping libshared's vigil_jtext (strings come
 * out exactly as json-c writes them). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "jbuf.h"

void jb_init(jbuf *b) { memset(b, 0, sizeof *b); }

static void value_start(jbuf *b)
{
    if (b->comma)
        vigil_jtext_ch(&b->t, ',');
    b->comma = true;
}

void jb_open(jbuf *b, char c)
{
    value_start(b);
    vigil_jtext_ch(&b->t, c);
    b->comma = false;
}

void jb_close(jbuf *b, char c)
{
    vigil_jtext_ch(&b->t, c);
    b->comma = true;
}

void jb_key(jbuf *b, const char *key)
{
    vigil_jtext_key(&b->t, b->comma ? ',' : 0, key);
    b->comma = false;
}

void jb_str(jbuf *b, const char *s)
{
    value_start(b);
    vigil_jtext_str(&b->t, s ? s : "");
}

void jb_i64(jbuf *b, int64_t v)
{
    value_start(b);
    vigil_jtext_i64(&b->t, v);
}

void jb_dbl(jbuf *b, double v)
{
    char n[40];
    value_start(b);
    if (!isfinite(v))
        v = 0;
    snprintf(n, sizeof n, "%.17g", v);
    vigil_jtext_lit(&b->t, n);
}

void jb_bool(jbuf *b, bool v) { value_start(b); vigil_jtext_lit(&b->t, v ? "true" : "false"); }

void jb_num(jbuf *b, const char *text) { value_start(b); vigil_jtext_lit(&b->t, text); }

char *jb_str_room(jbuf *b, size_t len)
{
    value_start(b);
    char *p = vigil_jtext_room(&b->t, len + 2);
    if (!p)
        return NULL;
    *p = '"';
    return p + 1;
}

void jb_str_end(jbuf *b, char *at, size_t written)
{
    at[written] = '"';
    vigil_jtext_advance(&b->t, written + 2);
}

char *jb_take(jbuf *b)
{
    char *s = vigil_jtext_take(&b->t);
    memset(b, 0, sizeof *b);
    return s;
}
