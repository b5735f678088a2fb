/* jtext.c - see vigil/jtext.h. A record is a few hundred small appends
 * (separators, keys, numbers): each append reserves once and writes in
 * place, with no memcpy call for the short ones, since the call and the
 * library's copy setup cost more than the bytes. */
#include "vigil/jtext.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_words.h"

/* Room for len more bytes and the NUL: false when out of memory (then
 * b->oom, and every later append is a no-op). */
static inline bool reserve(vigil_jtext *b, size_t len)
{
    if (b->oom)
        return false;
    if (b->n + len + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + len + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

/* len (at most 16) bytes from v to d in two overlapping fixed-size copies
 * (each a single load and store once compiled), not a byte loop: most of
 * a record's appends are keys and separators this short. */
static inline void copy_short(char *d, const char *v, size_t len)
{
    if (len >= 8) {
        uint64_t a, z;
        memcpy(&a, v, 8);
        memcpy(&z, v + len - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + len - 8, &z, 8);
    } else if (len >= 4) {
        uint32_t a, z;
        memcpy(&a, v, 4);
        memcpy(&z, v + len - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + len - 4, &z, 4);
    } else {
        for (size_t i = 0; i < len; i++)
            d[i] = v[i];
    }
}

void vigil_jtext_append(vigil_jtext *b, const char *v, size_t len)
{
    if (!reserve(b, len))
        return;
    char *d = b->s + b->n;
    if (len <= 16)
        copy_short(d, v, len);
    else
        memcpy(d, v, len);
    b->n += len;
    b->s[b->n] = '\0';
}

void vigil_jtext_ch(vigil_jtext *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->s[b->n++] = c;
    b->s[b->n] = '\0';
}

void vigil_jtext_reserve(vigil_jtext *b, size_t len) { (void)reserve(b, len); }

/* Formats once into the room there is and again after growing when it did
 * not fit, so a short append costs one vsnprintf. */
void vigil_jtext_printf(vigil_jtext *b, const char *fmt, ...)
{
    if (!reserve(b, 0))
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (w < 0) {
        b->oom = true;
        return;
    }
    if (b->n + (size_t)w < b->cap) {
        b->n += (size_t)w;
        return;
    }
    if (!reserve(b, (size_t)w))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)w;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The eight decimal digits of v (< 10^8, leading zeros included) as the
 * eight bytes of a word, each a value 0-9 (add '0' to each for text), the
 * first digit in the lowest byte (first in memory): v split in halves of four digits in two 32-bit lanes, each
 * lane in pairs in 16-bit lanes, each pair in digits in bytes, all lanes
 * at once. x / 100 is (x * 10486) >> 20 for x < 10^4, x / 10 is
 * (x * 103) >> 10 for x < 100, and no lane's product reaches the next. */
static inline uint64_t digits8(uint32_t v)
{
    uint64_t x = (uint64_t)(v / 10000) | (uint64_t)(v % 10000) << 32;
    uint64_t y = ((x * 10486) >> 20) & 0x0000007F0000007Full;
    x = (x - y * 100) << 16 | y;
    y = ((x * 103) >> 10) & 0x000F000F000F000Full;
    return (x - y * 10) << 8 | y;
}

/* Eight digits at a time (digits8), the first group without its leading
 * zeros: a 13-digit millisecond time (thirty of them in a room record)
 * took about 125 instructions two digits at a time, and writes here with
 * two 64-bit divisions by a constant and three 8-byte stores. out holds
 * VIGIL_I64_TEXT_MAX + 1 = 21 bytes; every store stays inside it (the
 * first group's store may write past its digits, the later ones over). */
size_t vigil_i64_text(char *out, int64_t v)
{
    const uint64_t ascii0 = 0x3030303030303030ull;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *p = out;
    if (v < 0)
        *p++ = '-';
    if (u < 10) {
        p[0] = (char)('0' + u);
        p[1] = '\0';
        return (size_t)(p + 1 - out);
    }
    uint32_t top, mid = 0, low = 0;
    int groups = 0; /* after the first */
    if (u < 100000000u) {
        top = (uint32_t)u;
    } else if (u < 10000000000000000ull) {
        top = (uint32_t)(u / 100000000u);
        low = (uint32_t)(u % 100000000u);
        groups = 1;
    } else {
        uint64_t q = u / 100000000u;
        low = (uint32_t)(u % 100000000u);
        top = (uint32_t)(q / 100000000u);
        mid = (uint32_t)(q % 100000000u);
        groups = 2;
    }
    uint64_t d = digits8(top); /* top > 0: a digit byte is not 0 */
    unsigned lead = (unsigned)__builtin_ctzll(d) >> 3;
    d = (d >> (8 * lead)) + ascii0;
    memcpy(p, &d, 8);
    p += 8 - lead;
    if (groups == 2) {
        d = digits8(mid) + ascii0;
        memcpy(p, &d, 8);
        p += 8;
    }
    if (groups >= 1) {
        d = digits8(low) + ascii0;
        memcpy(p, &d, 8);
        p += 8;
    }
    *p = '\0';
    return (size_t)(p - out);
}
#else /* the word-wise digits above assume a little-endian machine */
/* Decimal digits by hand, two at a time: snprintf's format parsing was
 * most of the cost of writing a record's numbers, and a record is mostly
 * 13-digit millisecond times. */
static const char DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "9394959697989900";

/* Writes the two digits of n (< 100) ending at p; returns p - 2. */
static inline char *put_pair(char *p, uint32_t n)
{
    memcpy(p - 2, DIGIT_PAIRS + 2 * n, 2);
    return p - 2;
}

/* The digits are written backwards into a small buffer and copied once:
 * no count of the digits first. The low eight digits of a number of more
 * are split off with one 64-bit division and written with 32-bit ones,
 * cheaper than 64-bit division by a constant; a millisecond timestamp
 * (thirty of them in a room record) took about 170 instructions before. */
size_t vigil_i64_text(char *out, int64_t v)
{
    /* the digits end at tmp + 24; 20 bytes after them keep the fixed-size
     * copies below inside tmp */
    char tmp[24 + 20] = { 0 };
    char *end = tmp + 24, *p = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100000000u) {
        uint32_t low = (uint32_t)(u % 100000000u);
        u /= 100000000u;
        for (int i = 0; i < 4; i++) {
            p = put_pair(p, low % 100);
            low /= 100;
        }
    }
    uint32_t w = (uint32_t)u;
    while (w >= 100) {
        p = put_pair(p, w % 100);
        w /= 100;
    }
    if (w >= 10)
        p = put_pair(p, w);
    else
        *--p = (char)('0' + w);
    if (v < 0)
        *--p = '-';
    /* Copies of fixed sizes are single moves, where a copy of n bytes was
     * a call costing as much as the digits of a small number. out holds
     * VIGIL_I64_TEXT_MAX + 1 = 21 bytes, so 16 + 4 bytes and the NUL fit. */
    size_t n = (size_t)(end - p);
    memcpy(out, p, 16);
    if (n > 16)
        memcpy(out + 16, p + 16, 4);
    out[n] = '\0';
    return n;
}
#endif

char *vigil_jtext_room(vigil_jtext *b, size_t len)
{
    return reserve(b, len) ? b->s + b->n : NULL;
}

void vigil_jtext_advance(vigil_jtext *b, size_t written)
{
    if (b->oom || b->n + written + 1 > b->cap)
        return;
    b->n += written;
    b->s[b->n] = '\0';
}

/* Straight into the buffer (room for the longest number first). */
void vigil_jtext_i64(vigil_jtext *b, int64_t v)
{
    if (!reserve(b, VIGIL_I64_TEXT_MAX))
        return;
    b->n += vigil_i64_text(b->s + b->n, v);
}

/* v (len bytes, fewer than 8) copied into the reserved room when none of
 * its bytes needs an escape: true. Otherwise false, nothing written, and
 * put_escaped does it. A record's keys and most of its short values are
 * this: one test of a word, inline, where the call to put_escaped and its
 * loop of a byte at a time cost about 60 instructions for a key of one to
 * three letters (wake-evaluator writes over a hundred keys per record).
 * 4 to 7 bytes: the first four and the last four (overlapping) tested as
 * one word and copied as two moves; 1 to 3: the first, middle and last
 * byte (all of them) in a word padded with a plain byte. */
static inline bool put_short_plain(vigil_jtext *b, const char *v, size_t len)
{
    const unsigned char *p = (const unsigned char *)v;
    char *d = b->s + b->n;
    if (len >= 4) {
        uint32_t a, z;
        memcpy(&a, p, 4);
        memcpy(&z, p + len - 4, 4);
        if (vigil_word_needs_escape((uint64_t)a | (uint64_t)z << 32))
            return false;
        memcpy(d, &a, 4);
        memcpy(d + len - 4, &z, 4);
    } else if (len > 0) {
        unsigned char x = p[0], y = p[len >> 1], z = p[len - 1];
        if (vigil_word_needs_escape(0x6161616161000000ull | x | (uint64_t)y << 8 |
                                    (uint64_t)z << 16))
            return false;
        d[0] = (char)x;
        d[len >> 1] = (char)y;
        d[len - 1] = (char)z;
    }
    b->n += len;
    return true;
}

/* v (len bytes) as the inside of a JSON string, as json-c 0.16 writes it
 * with NOSLASHESCAPE: '"' and '\\' escaped, \b \t \n \f \r by name, other
 * bytes below 0x20 as \u00xx (lower case), everything else (0x7f, UTF-8)
 * copied. The caller reserved len + tail bytes; plain bytes are copied 8
 * at a time, an escape reserves again for itself and the rest (tail
 * included). false when out of memory. Below 8 bytes the callers try
 * put_short_plain first. */
static bool put_escaped(vigil_jtext *b, const char *v, size_t len, size_t tail)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)v, *end = p + len;
    while (p < end) {
        uint64_t w;
        if (end - p >= 8) {
            if (!vigil_word_needs_escape(w = vigil_word_at(p))) {
                memcpy(b->s + b->n, &w, 8);
                b->n += 8;
                p += 8;
                continue;
            }
        } else if (len >= 8 && !vigil_word_needs_escape(w = vigil_word_at(end - 8))) {
            /* The last 1 to 7 bytes: the word ending at the end is plain,
             * so the bytes before them in it were copied one for one, and
             * writing it again over them ends the text in one move. */
            size_t r = (size_t)(end - p);
            memcpy(b->s + b->n + r - 8, &w, 8);
            b->n += r;
            break;
        }
        unsigned char c = *p++;
        if (c >= 0x20 && c != '"' && c != '\\') {
            b->s[b->n++] = (char)c;
            continue;
        }
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
        if (!reserve(b, n + (size_t)(end - p) + tail))
            return false;
        memcpy(b->s + b->n, esc, n);
        b->n += n;
    }
    return true;
}

/* test_jtext compares every byte with json-c's output. */
void vigil_jtext_str(vigil_jtext *b, const char *v)
{
    size_t len = strlen(v);
    if (!reserve(b, len + 2))
        return;
    b->s[b->n++] = '"';
    if (!(len < 8 && put_short_plain(b, v, len)) && !put_escaped(b, v, len, 1))
        return;
    b->s[b->n++] = '"';
    b->s[b->n] = '\0';
}

/* The inside of a JSON string: the same bytes vigil_jtext_str writes
 * between its quotes, since JSON escapes byte by byte. */
void vigil_jtext_esc(vigil_jtext *b, const char *v)
{
    size_t len = strlen(v);
    if (!reserve(b, len))
        return;
    if (!(len < 8 && put_short_plain(b, v, len)) && !put_escaped(b, v, len, 0))
        return;
    b->s[b->n] = '\0';
}

/* sep, "key" and ':' with one reservation: a record has a key per value. */
void vigil_jtext_key(vigil_jtext *b, char sep, const char *key)
{
    size_t len = strlen(key);
    if (!reserve(b, len + 4))
        return;
    if (sep)
        b->s[b->n++] = sep;
    b->s[b->n++] = '"';
    if (!(len < 8 && put_short_plain(b, key, len)) && !put_escaped(b, key, len, 2))
        return;
    b->s[b->n++] = '"';
    b->s[b->n++] = ':';
    b->s[b->n] = '\0';
}

char *vigil_jtext_take(vigil_jtext *b)
{
    if (b->oom) {
        free(b->s);
        b->s = NULL;
        b->n = b->cap = 0;
        b->oom = false;
        return NULL;
    }
    char *s = b->s ? b->s : strdup("");
    b->s = NULL;
    b->n = b->cap = 0;
    return s;
}
