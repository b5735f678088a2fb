/* jtext.c - see vigil/jtext.h. */
#include "vigil/jtext.h"

#include <stdlib.h>
#include <string.h>

void vigil_jtext_put(vigil_jtext *b, const char *v, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, v, len);
    b->n += len;
    b->s[b->n] = '\0';
}

void vigil_jtext_lit(vigil_jtext *b, const char *v) { vigil_jtext_put(b, v, strlen(v)); }

/* Decimal digits by hand: snprintf's format parsing was most of the cost
 * of writing a record's numbers. */
void vigil_jtext_i64(vigil_jtext *b, int64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--n] = '-';
    vigil_jtext_put(b, tmp + n, sizeof tmp - n);
}

/* A JSON string as json-c 0.16 writes it with NOSLASHESCAPE: '"' and '\\'
 * escaped, \b \t \n \f \r by name, other bytes below 0x20 as \u00xx (lower
 * case), everything else (0x7f, UTF-8) copied. Runs of plain bytes are
 * copied at once; test_jtext compares every byte with json-c's output. */
void vigil_jtext_str(vigil_jtext *b, const char *v)
{
    static const char hex[] = "0123456789abcdef";
    vigil_jtext_put(b, "\"", 1);
    const char *run = v;
    for (const char *p = v; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        vigil_jtext_put(b, run, (size_t)(p - run));
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        vigil_jtext_put(b, esc, n);
        run = p + 1;
    }
    vigil_jtext_lit(b, run);
    vigil_jtext_put(b, "\"", 1);
}

char *vigil_jtext_take(vigil_jtext *b)
{
    if (b->oom) {
        free(b->s);
        b->s = NULL;
        return NULL;
    }
    char *s = b->s ? b->s : strdup("");
    b->s = NULL;
    return s;
}
