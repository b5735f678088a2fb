/* json_words.h - JSON text tested 8 bytes at a time, shared by the writer
 * (jtext.c: bytes that need escaping) and the strict reader (json.c: plain
 * ASCII for the UTF-8 check, plain string bytes for the syntax check).
 * Each test is exact as a yes/no: a borrow can only flag a byte above a
 * byte that really matched. Private to libshared/pure. */
#ifndef VIGIL_JSON_WORDS_H
#define VIGIL_JSON_WORDS_H
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define VIGIL_BYTES_1 0x0101010101010101ull
#define VIGIL_BYTES_80 0x8080808080808080ull

/* The 8 bytes at p (unaligned). */
static inline uint64_t vigil_word_at(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* The bytes of w below 0x20, '"' or '\\' (the bytes JSON escapes, and the
 * bytes a string's syntax check must look at), each as its top bit; 0
 * when none. A flag above the first real one may be a borrow's, so only
 * the first flagged byte is sure (vigil_word_first). */
static inline uint64_t vigil_word_escape_bits(uint64_t w)
{
    uint64_t below = (w - VIGIL_BYTES_1 * 0x20) & ~w & VIGIL_BYTES_80;
    uint64_t q = w ^ (VIGIL_BYTES_1 * '"'), bs = w ^ (VIGIL_BYTES_1 * '\\');
    q = (q - VIGIL_BYTES_1) & ~q & VIGIL_BYTES_80;
    bs = (bs - VIGIL_BYTES_1) & ~bs & VIGIL_BYTES_80;
    return below | q | bs;
}

/* True when one of the 8 bytes of w is below 0x20, '"' or '\\'. */
static inline bool vigil_word_needs_escape(uint64_t w)
{
    return vigil_word_escape_bits(w) != 0;
}

/* How many bytes of the word come before the first one flagged in bits
 * (not 0), so a scan can step over them: memory order is the bits' order
 * on a little-endian machine. Elsewhere 0, and the scan goes on byte by
 * byte from the word's start. */
static inline unsigned vigil_word_first(uint64_t bits)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (unsigned)__builtin_ctzll(bits) >> 3;
#else
    (void)bits;
    return 0;
#endif
}

/* True when the 8 bytes of w are ASCII and none is NUL: valid UTF-8 that
 * the UTF-8 check can step over whole. */
static inline bool vigil_word_plain_ascii(uint64_t w)
{
    uint64_t zero = (w - VIGIL_BYTES_1) & ~w & VIGIL_BYTES_80;
    return ((w & VIGIL_BYTES_80) | zero) == 0;
}

#endif
