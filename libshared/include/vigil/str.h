/* str.h - small string helpers every module would otherwise write again.
 * Pure (libshared/pure, library vigil_text): cores may use them. */
#ifndef VIGIL_STR_H
#define VIGIL_STR_H
#include <stdarg.h>
#include <stddef.h>

/* printf into a new malloc'd string the caller frees; NULL when out of
 * memory or on a format error. For strings whose length no buffer bounds
 * (Redis keys built from ids, prompts). */
char *vigil_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* vsnprintf into buf (cap bytes) when the text fits, else into a new
 * malloc'd string of its size: formatting once in the common case, twice
 * only for a long text. Returns the text's length, negative on a format
 * error. *out is buf, or the new string (the caller frees it when it is
 * not buf), or NULL when out of memory (buf then holds the text cut to
 * fit). For writers that want no allocation for short texts (log lines). */
int vigil_vformat(char *buf, size_t cap, char **out, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#endif
