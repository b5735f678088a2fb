/* json_build.c - see json_build.h. json-c's tokener re-reads every byte
 * the syntax check has read, through its printbuf, and switches the
 * thread's locale around each parse: about four fifths of a room message's
 * parse (callgrind). These make the same nodes from the tokens directly.
 *
 * What the tokener of json-c 0.16 makes, read in json-c's source and
 * checked on this machine against the library (tests/unit/test_json_build.c
 * compares the two trees on every input it has):
 * - strings: json_object_new_string_len, so a "\u0000" stays in a value;
 *   a key is strdup'ed, so it ends at its first NUL. \u escapes: a high
 *   surrogate followed by "\u" and a low one is one code point; a lone
 *   surrogate, high or low, is U+FFFD. The tokener tests "is a surrogate"
 *   on the low 16 bits of the code point of a pair, so a pair that decodes
 *   to U+xD800..U+xDFFF (U+1D800, say) is taken for another surrogate:
 *   kept as such, not fixed.
 * - integers: strtoll for a negative one, strtoull otherwise, both
 *   clamping (no error) out of range; up to INT64_MAX an int64 node, above
 *   a uint64 one. "-0" is the integer 0.
 * - a fraction or exponent: a double of strtod's value in the "C" locale,
 *   with the number's text kept for output (json_object_new_double_s), so
 *   "1e400" is written back as 1e400, its value infinity. */
#include "json_build.h"

#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_BYTES 256 /* keys, escaped strings and numbers up to this size use the stack */
#define INT_FAST_DIGITS 18 /* 18 digits never leave int64: no strtoll needed */

#define IS_HIGH_SURROGATE(u) (((u)&0xFC00) == 0xD800)
#define IS_LOW_SURROGATE(u) (((u)&0xFC00) == 0xDC00)
#define DECODE_SURROGATE_PAIR(hi, lo) ((((hi)&0x3FF) << 10) + ((lo)&0x3FF) + 0x10000)

/* ---- strings -------------------------------------------------------- */

static unsigned hex_value(unsigned char c)
{
    return c <= '9' ? (unsigned)(c - '0') : (c & 7u) + 9;
}

static unsigned hex4(const unsigned char *p)
{
    return hex_value(p[0]) << 12 | hex_value(p[1]) << 8 | hex_value(p[2]) << 4 | hex_value(p[3]);
}

static unsigned char *put_replacement(unsigned char *o)
{
    *o++ = 0xEF;
    *o++ = 0xBF;
    *o++ = 0xBD;
    return o;
}

/* The bytes of one \uXXXX (or pair) as the tokener writes them, in its
 * order of tests. *high is a high surrogate waiting for its low half:
 * set when u is one, 0 otherwise. */
static unsigned char *put_unicode(unsigned char *o, unsigned u, unsigned *high)
{
    if (*high) {
        if (IS_LOW_SURROGATE(u))
            u = DECODE_SURROGATE_PAIR(*high, u);
        else
            o = put_replacement(o);
        *high = 0;
    }
    if (u < 0x80) {
        *o++ = (unsigned char)u;
    } else if (u < 0x800) {
        *o++ = (unsigned char)(0xC0 | u >> 6);
        *o++ = (unsigned char)(0x80 | (u & 0x3F));
    } else if (IS_HIGH_SURROGATE(u)) {
        *high = u;
    } else if (IS_LOW_SURROGATE(u)) {
        o = put_replacement(o);
    } else if (u < 0x10000) {
        *o++ = (unsigned char)(0xE0 | u >> 12);
        *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (u & 0x3F));
    } else if (u < 0x110000) {
        *o++ = (unsigned char)(0xF0 | ((u >> 18) & 0x07));
        *o++ = (unsigned char)(0x80 | ((u >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (u & 0x3F));
    } else {
        o = put_replacement(o);
    }
    return o;
}

static unsigned char simple_escape(unsigned char e)
{
    switch (e) {
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return e; /* '"', '\\', '/' */
    }
}

/* Writes the unescaped s[0..n) to out and returns its length, never more
 * than n: every escape is at least as long as what it stands for (a lone
 * surrogate's 6 bytes give U+FFFD's 3, a pair's 12 give 4). */
static size_t unescape(const unsigned char *s, size_t n, unsigned char *out)
{
    const unsigned char *end = s + n;
    unsigned char *o = out;
    unsigned high = 0;
    while (s < end) {
        if (high && (s[0] != '\\' || s[1] != 'u')) {
            /* Only "\u" can carry the low half: the high one alone is
             * U+FFFD, and this byte is read again as what it is. */
            o = put_replacement(o);
            high = 0;
        }
        if (*s != '\\') {
            const unsigned char *bs = memchr(s, '\\', (size_t)(end - s));
            size_t run = (size_t)((bs ? bs : end) - s);
            memcpy(o, s, run);
            o += run;
            s += run;
            continue;
        }
        if (s[1] == 'u') {
            o = put_unicode(o, hex4(s + 2), &high);
            s += 6;
        } else {
            *o++ = simple_escape(s[1]);
            s += 2;
        }
    }
    if (high)
        o = put_replacement(o); /* the closing quote came first */
    return (size_t)(o - out);
}

json_object *vigil_jb_string(const unsigned char *s, size_t n, bool escaped)
{
    if (!escaped)
        return json_object_new_string_len((const char *)s, (int)n);
    unsigned char small[SMALL_BYTES];
    unsigned char *buf = n <= sizeof small ? small : malloc(n);
    if (!buf)
        return NULL;
    size_t m = unescape(s, n, buf);
    json_object *o = json_object_new_string_len((const char *)buf, (int)m);
    if (buf != small)
        free(buf);
    return o;
}

/* ---- member names ---------------------------------------------------- */

/* The member names of the contract's payloads. json-c copies every key
 * into its own allocation and frees it with the object: three of an
 * input's allocations in ten were its keys. A key spelled exactly like
 * one of these (and not escaped) is handed to json-c as a constant
 * instead, which json-c keeps without copying or freeing. Any other key
 * is copied as before; the tree is the same either way. */
static const char *const COMMON_KEYS[] = {
    "id", "ts", "room", "sender", "sender_type", "text", "depth", "mentions", "reply_to",
    "persona", "personas", "user", "session", "action", "agent", "level", "previous", "reason",
    "reasons", "trigger", "message_id", "source", "since", "until", "status", "answer", "by",
    "cmd", "kind", "type", "name", "mood", "run", "seq", "nonce", "question_id", "priority",
    "tokens", "tier", "category", "detail", "confidence", "shard", "service", "rooms", "enabled",
    "paused", "expires", "start", "end", "title", "model", "prompt", "options", "meta", "k",
    "loop", "held", "granted", "in_tool", "fsm_state", "last_activity", "eventId",
    "inputEventId", "instance", "role", "query", "mission",
};

#define KEY_SLOTS 256 /* a power of two, well above the keys' count */
#define KEY_MAX 15    /* longer names are never common ones */

static const char *key_slot[KEY_SLOTS];
static unsigned char key_len[KEY_SLOTS];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static unsigned key_hash(const unsigned char *k, size_t n)
{
    return (unsigned)(n * 131u + k[0] * 31u + k[n / 2] * 7u + k[n - 1]) & (KEY_SLOTS - 1);
}

static void keys_build(void)
{
    for (size_t i = 0; i < sizeof COMMON_KEYS / sizeof COMMON_KEYS[0]; i++) {
        const char *k = COMMON_KEYS[i];
        size_t n = strlen(k);
        unsigned h = key_hash((const unsigned char *)k, n);
        while (key_slot[h])
            h = (h + 1) & (KEY_SLOTS - 1);
        key_slot[h] = k;
        key_len[h] = (unsigned char)n;
    }
}

/* The common name spelled key[0..n), or NULL. */
static const char *common_key(const unsigned char *key, size_t n)
{
    if (n == 0 || n > KEY_MAX)
        return NULL;
    pthread_once(&keys_once, keys_build);
    for (unsigned h = key_hash(key, n); key_slot[h]; h = (h + 1) & (KEY_SLOTS - 1))
        if (key_len[h] == n && memcmp(key_slot[h], key, n) == 0)
            return key_slot[h];
    return NULL;
}

int vigil_jb_member(json_object *obj, const unsigned char *key, size_t n, bool escaped,
                    json_object *val)
{
    const char *common = escaped ? NULL : common_key(key, n);
    if (common) {
        /* flags as below, but json-c neither copies nor frees the name */
        if (json_object_object_add_ex(obj, common, val, JSON_C_OBJECT_KEY_IS_CONSTANT) != 0) {
            json_object_put(val);
            return -1;
        }
        return 0;
    }
    unsigned char small[SMALL_BYTES];
    unsigned char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) {
        json_object_put(val);
        return -1;
    }
    size_t m = n;
    if (escaped)
        m = unescape(key, n, buf);
    else
        memcpy(buf, key, n);
    buf[m] = '\0';
    /* Flags 0, as json_object_object_add: a key seen before is looked up
     * and its value replaced, so the last duplicate wins in the first's
     * place. On failure json-c has not taken val. */
    int rc = json_object_object_add_ex(obj, (const char *)buf, val, 0);
    if (buf != small)
        free(buf);
    if (rc != 0) {
        json_object_put(val);
        return -1;
    }
    return 0;
}

/* ---- numbers -------------------------------------------------------- */

static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void c_numeric_make(void)
{
    c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* strtod with the "C" locale's decimal point, whatever the program set:
 * the tokener switches LC_NUMERIC to "C" around each parse. Made once
 * (glibc returns its static "C" locale without allocating); -1 when it
 * could not be made. */
static int strtod_c(const char *s, double *d)
{
    pthread_once(&c_numeric_once, c_numeric_make);
    if (c_numeric == (locale_t)0)
        return -1;
    locale_t old = uselocale(c_numeric);
    *d = strtod(s, NULL);
    uselocale(old);
    return 0;
}

/* The number from its NUL-terminated text, by json-c's own calls. */
static json_object *number_from_text(const char *t, bool is_double)
{
    if (is_double) {
        double d;
        if (strtod_c(t, &d) != 0)
            return NULL;
        return json_object_new_double_s(d, t);
    }
    if (t[0] == '-')
        return json_object_new_int64(strtoll(t, NULL, 10));
    uint64_t u = strtoull(t, NULL, 10);
    if (u <= (uint64_t)INT64_MAX)
        return json_object_new_int64((int64_t)u);
    return json_object_new_uint64(u);
}

json_object *vigil_jb_number(const unsigned char *s, size_t n, bool is_double)
{
    size_t neg = s[0] == '-';
    if (!is_double && n - neg <= INT_FAST_DIGITS) {
        int64_t v = 0;
        for (size_t i = neg; i < n; i++)
            v = v * 10 + (s[i] - '0');
        return json_object_new_int64(neg ? -v : v);
    }
    char small[SMALL_BYTES];
    char *t = n < sizeof small ? small : malloc(n + 1);
    if (!t)
        return NULL;
    memcpy(t, s, n);
    t[n] = '\0';
    json_object *o = number_from_text(t, is_double);
    if (t != small)
        free(t);
    return o;
}
