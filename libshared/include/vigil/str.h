/* str.h - small string helpers every module would otherwise write again.
 * Pure (libshared/pure, library vigil_text): cores may use them. */
#ifndef VIGIL_STR_H
#define VIGIL_STR_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

/* The strings of the NULL-terminated list after cap, one after another,
 * into out (cap bytes), cut to fit and NUL-terminated (when cap > 0).
 * Returns the whole length, as snprintf does: >= cap means it was cut.
 * For keys and topics built on every input, where snprintf's format
 * parsing cost more than the copy. */
size_t vigil_concat(char *out, size_t cap, ...);

/* A hash of n bytes for this process's own tables (indexes, caches, the
 * sets a batch keeps), eight bytes at a step: about a fifth of the cost of
 * vigil_hash64's byte-at-a-time FNV-1a on keys and ids. Not stable across
 * versions: never store it, send it or shard by it (vigil_hash64 is the
 * one whose values are kept: ids, shards). */
uint64_t vigil_hash_mem(const void *data, size_t n);

/* A duration for people: "N min" from a minute up (cut down, never
 * rounded up, so an age just under a limit never reads as the limit),
 * else seconds ("4 s", "1.5 s"), so a threshold shrunk under a minute
 * never reads "0 min". A negative ms reads as 0. */
void vigil_span_text(int64_t ms, char *out, size_t outlen);

/* v as 16 lowercase hex digits and a NUL (what "%016" PRIx64 writes). */
void vigil_hex64(char out[17], uint64_t v);

/* The value of one hex digit (0-9, a-f, A-F), -1 for any other ch: the
 * step of every %XX decoder (a Redis URL's password, the gateway's
 * session cookie). */
int vigil_hex_digit(int ch);

#endif
