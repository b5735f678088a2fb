/* jtext.h - JSON written as text into a growable buffer, for payloads and
 * records written on every input: building a json-c tree of hundreds of
 * values and printing it costs more than the decision it reports.
 * Strings come out exactly as json-c writes them (with
 * JSON_C_TO_STRING_NOSLASHESCAPE), numbers as decimal integers, so a text
 * written here equals json-c's for the same values. The caller writes the
 * punctuation ("{", ",", ":") itself. Pure: no library at all. */
#ifndef VIGIL_JTEXT_H
#define VIGIL_JTEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct vigil_jtext {
    char *s;  /* NUL-terminated while not oom */
    size_t n, cap;
    bool oom; /* an append could not grow the buffer: the text is incomplete */
} vigil_jtext; /* start with {0} */

/* len bytes of v. Out of line; vigil_jtext_put below is the entry. */
void vigil_jtext_append(vigil_jtext *b, const char *v, size_t len);

/* len bytes of v. Inline so that a constant length of up to 32 bytes (a
 * member name, a separator) is copied in place when there is room: a few
 * moves, where the call cost about 40 instructions, and a record writes
 * a hundred of them. Anything else is vigil_jtext_append. */
static inline void vigil_jtext_put(vigil_jtext *b, const char *v, size_t len)
{
#if defined(__GNUC__) || defined(__clang__)
    if (__builtin_constant_p(len) && len <= 32 && !b->oom && b->n + len + 1 <= b->cap) {
        memcpy(b->s + b->n, v, len);
        b->n += len;
        b->s[b->n] = '\0';
        return;
    }
#endif
    vigil_jtext_append(b, v, len);
}

/* For a small helper that appends a member whose name the caller gives
 * as a literal: inlined, the name's length stays a constant for
 * vigil_jtext_put (the compiler, left to itself, kept some out of line). */
#if defined(__GNUC__) || defined(__clang__)
#define VIGIL_JTEXT_INLINE static inline __attribute__((always_inline))
#else
#define VIGIL_JTEXT_INLINE static inline
#endif

/* A C string as it is; inline so that a literal's length is counted when
 * compiled, not on every append (and, constant, copied in place). */
static inline void vigil_jtext_lit(vigil_jtext *b, const char *v)
{
    vigil_jtext_put(b, v, strlen(v));
}

void vigil_jtext_ch(vigil_jtext *b, char c);
/* Room for len more bytes at once (a size hint: avoids growing the buffer
 * step by step while a text of known rough size is written). */
void vigil_jtext_reserve(vigil_jtext *b, size_t len);
void vigil_jtext_i64(vigil_jtext *b, int64_t v);
/* For a long run of small appends (a list of numbers): room for len more
 * bytes, returned as the place to write them, or NULL when out of memory
 * (b->oom); vigil_jtext_advance then counts the bytes written there (at
 * most len). One reservation instead of one per append. */
char *vigil_jtext_room(vigil_jtext *b, size_t len);
void vigil_jtext_advance(vigil_jtext *b, size_t written);
/* v in decimal at out (at least VIGIL_I64_TEXT_MAX + 1 bytes), NUL-
 * terminated; returns its length. */
#define VIGIL_I64_TEXT_MAX 20
size_t vigil_i64_text(char *out, int64_t v);
/* printf-formatted text appended as it is (no JSON escaping): for prose,
 * such as the prompts heartbeat and council send to a model. */
void vigil_jtext_printf(vigil_jtext *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string, quoted and escaped as json-c does. */
void vigil_jtext_str(vigil_jtext *b, const char *v);
/* v escaped as inside a JSON string, without the quotes: a part of a
 * string written in pieces (vigil_tlist). */
void vigil_jtext_esc(vigil_jtext *b, const char *v);
/* An object key: sep (',' or 0 for none), the key quoted and escaped as a
 * string, then ':'. */
void vigil_jtext_key(vigil_jtext *b, char sep, const char *key);
/* The text (malloc'd, the caller frees it), or NULL when an append failed
 * (then everything is freed). The buffer is empty afterwards. */
char *vigil_jtext_take(vigil_jtext *b);

#endif
