/* jbuf.h - JSON text written directly (no json-c object tree), with the
 * separators kept track of: the room record is rewritten on every commit,
 * and building thousands of small objects to print them once cost most of
 * a commit. The text itself is libshared's vigil_jtext. */
#ifndef WAKE_JBUF_H
#define WAKE_JBUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vigil/jtext.h>

typedef struct jbuf {
    vigil_jtext t; /* the text; out of memory: every later write is a no-op */
    bool comma;    /* a value was written at this level: next needs ',' */
} jbuf;

void jb_init(jbuf *b);
void jb_open(jbuf *b, char c);          /* '{' or '[' */
void jb_close(jbuf *b, char c);         /* '}' or ']' */
void jb_key(jbuf *b, const char *key);  /* "key": (comma handled) */

/* "key": for a key the code names as a literal: JB_KEY(b, "id"). Inline,
 * so the quoted key's length is a constant and it is copied in place
 * (vigil_jtext_put); jb_key measures the key, checks it for escapes and
 * makes two calls, about 120 instructions, and a room record writes over
 * a hundred keys. */
VIGIL_JTEXT_INLINE void jb_key_quoted(jbuf *b, const char *quoted, size_t len)
{
    if (b->comma)
        vigil_jtext_put(&b->t, ",", 1);
    b->comma = false;
    vigil_jtext_put(&b->t, quoted, len);
}
#define JB_QUOTED(k) "\"" k "\":"
#define JB_KEY(b, k) jb_key_quoted((b), JB_QUOTED(k), sizeof JB_QUOTED(k) - 1)
void jb_str(jbuf *b, const char *s);    /* a string value, escaped */
void jb_i64(jbuf *b, int64_t v);
void jb_dbl(jbuf *b, double v);         /* non-finite written as 0 */
void jb_bool(jbuf *b, bool v);
void jb_num(jbuf *b, const char *text);  /* a number already written as text */
/* A string value the caller writes in place, bytes that need no escape
 * (digits, commas, letters): room for len of them, returned (NULL when out
 * of memory), then jb_str_end with what jb_str_room returned and the
 * count written. No copy, no escaping scan: a record's lists of times. */
char *jb_str_room(jbuf *b, size_t len);
void jb_str_end(jbuf *b, char *at, size_t written);
/* "key":value pairs, the key a literal copied in place (JB_KEY): a
 * decision's payload and the economics write about twenty per input,
 * each about 200 instructions through jb_key */
#define jb_kstr(b, key, s) (JB_KEY((b), key), jb_str((b), (s)))
#define jb_ki64(b, key, v) (JB_KEY((b), key), jb_i64((b), (v)))
/* Takes the text (NULL if a write failed); the buffer is then empty. */
char *jb_take(jbuf *b);

#endif
