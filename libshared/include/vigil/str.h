/* str.h - small string helpers every module would otherwise write again.
 * Pure (libshared/pure, library vigil_text): cores may use them. */
#ifndef VIGIL_STR_H
#define VIGIL_STR_H

/* printf into a new malloc'd string the caller frees; NULL when out of
 * memory or on a format error. For strings whose length no buffer bounds
 * (Redis keys built from ids, prompts). */
char *vigil_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
