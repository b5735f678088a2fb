/* str.c - small string helpers (str.h). */
#include "vigil/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vigil_vformat(char *buf, size_t cap, char **out, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(buf, cap, fmt, ap);
    *out = buf;
    if (n >= 0 && (size_t)n >= cap) {
        *out = malloc((size_t)n + 1);
        if (*out)
            vsnprintf(*out, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    return n;
}

/* Formatted into a stack buffer first: most results are short (keys, ids),
 * and formatting once instead of measuring then formatting halves the
 * cost. */
char *vigil_asprintf(const char *fmt, ...)
{
    char buf[256], *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vigil_vformat(buf, sizeof buf, &s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    if (s != buf)
        return s; /* the long text's own string, or NULL when out of memory */
    char *p = malloc((size_t)n + 1);
    if (p)
        memcpy(p, buf, (size_t)n + 1);
    return p;
}

size_t vigil_concat(char *out, size_t cap, ...)
{
    va_list ap;
    va_start(ap, cap);
    size_t n = 0;
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *)) {
        size_t len = strlen(s);
        if (n < cap) {
            size_t fit = cap - 1 - n < len ? cap - 1 - n : len;
            memcpy(out + n, s, fit);
        }
        n += len;
    }
    va_end(ap);
    if (cap > 0)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

void vigil_hex64(char out[17], uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = digits[v & 15];
    out[16] = '\0';
}
