/* jtext.c - see vigil/jtext.h. */
#include "vigil/jtext.h"

#include <json-c/json.h>
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

/* A JSON string as json-c writes it: ids are plain, so they are copied;
 * anything json-c would escape goes through json-c. */
void vigil_jtext_str(vigil_jtext *b, const char *v)
{
    bool plain = true;
    for (const unsigned char *c = (const unsigned char *)v; *c && plain; c++)
        plain = *c >= 0x20 && *c != '"' && *c != '\\' && *c != 0x7f;
    if (plain) {
        vigil_jtext_put(b, "\"", 1);
        vigil_jtext_lit(b, v);
        vigil_jtext_put(b, "\"", 1);
        return;
    }
    json_object *o = json_object_new_string(v);
    const char *t = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE)
                      : NULL;
    if (t)
        vigil_jtext_lit(b, t);
    else
        b->oom = true;
    json_object_put(o);
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
