/* str.c - small string helpers (str.h). */
#include "vigil/str.h"

#include <inttypes.h>
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

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static inline uint64_t load32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* One multiply and shift per eight bytes, then splitmix64's finaliser so
 * the low bits (a table's mask) depend on every byte. The last part is
 * read as one word overlapping the one before (or, under eight bytes,
 * as two overlapping halves or three single bytes), never past the end;
 * the length, mixed in first, tells overlapping reads apart. */
uint64_t vigil_hash_mem(const void *data, size_t n)
{
    const unsigned char *p = data;
    const uint64_t k = 0x9E3779B97F4A7C15ull;
    uint64_t h = k ^ (n * 0xbf58476d1ce4e5b9ull);
    size_t i = 0;
    for (; i + 8 < n; i += 8) {
        h = (h ^ load64(p + i)) * k;
        h ^= h >> 32;
    }
    uint64_t last;
    if (n >= 8)
        last = load64(p + n - 8);
    else if (n >= 4)
        last = load32(p) | load32(p + n - 4) << 32;
    else if (n > 0)
        last = (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16;
    else
        last = 0;
    h = (h ^ last) * k;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

void vigil_hex64(char out[17], uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = digits[v & 15];
    out[16] = '\0';
}

int vigil_hex_digit(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

void vigil_span_text(int64_t ms, char *out, size_t outlen)
{
    if (ms < 0)
        ms = 0;
    if (ms >= 60000)
        snprintf(out, outlen, "%" PRId64 " min", ms / 60000);
    else if (ms >= 10000 || ms % 1000 == 0)
        snprintf(out, outlen, "%" PRId64 " s", ms / 1000);
    else
        snprintf(out, outlen, "%" PRId64 ".%" PRId64 " s", ms / 1000, ms % 1000 / 100);
}
