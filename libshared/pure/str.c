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
