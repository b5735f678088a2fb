/* str.c - small string helpers (str.h). */
#include "vigil/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Formatted into a stack buffer first: most results are short (keys, ids),
 * and formatting once instead of measuring then formatting halves the
 * cost. */
char *vigil_asprintf(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p)
        return NULL;
    if ((size_t)n < sizeof buf) {
        memcpy(p, buf, (size_t)n + 1);
        return p;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
