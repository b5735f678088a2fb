/* json.c - strict payload parsing and typed field access.
 *
 * json-c 0.16 with JSON_TOKENER_STRICT still accepts several things that are
 * not JSON (checked on this machine): NaN, Infinity and -Infinity as values,
 * single-quoted strings, raw control characters inside strings, "1." as a
 * number. NaN in particular would poison every comparison in a core. So a
 * payload is read by a small RFC 8259 syntax checker (check_syntax below),
 * which also builds the tree: each token it accepts becomes the json-c node
 * json-c's tokener would have made of it (json_build.c), so the tree is the
 * one json_tokener_parse_ex gave before, without a second reading of the
 * bytes. The answers are the same as when the whole syntax was checked
 * before the tokener built the tree: a syntax error anywhere comes first,
 * then json-c's own depth limit (a value inside the 32nd container), then
 * memory. */
#include "vigil/json.h"
#include "vigil/jtext.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_build.h"
#include "json_words.h"

/* json-c's default depth: 33 nested containers are a syntax error, and a
 * value inside the 32nd is refused as json-c's tokener refuses it (an
 * empty 32nd is fine). */
#define JSON_MAX_DEPTH 32
#define SAMPLE_BYTES 200
#define DETAIL_VALUE_BYTES 48 /* how much of a bad value a detail quotes */

static const char *const REJECT_NAMES[VIGIL_REJECT__COUNT] = {
    [VIGIL_REJECT_NONE] = "none",
    [VIGIL_REJECT_OVERSIZE] = "oversize",
    [VIGIL_REJECT_UTF8] = "invalid_utf8",
    [VIGIL_REJECT_NOT_JSON] = "not_json",
    [VIGIL_REJECT_NOT_OBJECT] = "not_object",
    [VIGIL_REJECT_MISSING_FIELD] = "missing_field",
    [VIGIL_REJECT_WRONG_TYPE] = "wrong_type",
    [VIGIL_REJECT_BAD_ID] = "bad_id",
    [VIGIL_REJECT_BAD_TOPIC] = "bad_topic",
    [VIGIL_REJECT_TOPIC_MISMATCH] = "topic_mismatch",
    [VIGIL_REJECT_BAD_VALUE] = "bad_value",
    [VIGIL_REJECT_LIMIT] = "limit",
    [VIGIL_REJECT_STORED_DATA] = "bad_stored_data",
    [VIGIL_REJECT_TOO_MANY_KEYS] = "too_many_keys",
    [VIGIL_REJECT_NO_MEMORY] = "out_of_memory",
};

const char *vigil_reject_name(vigil_reject_reason r)
{
    if ((int)r < 0 || r >= VIGIL_REJECT__COUNT)
        return "unknown";
    return REJECT_NAMES[r];
}

int vigil_error_set(vigil_error *err, vigil_reject_reason r, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->reason = r;
    err->detail[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->detail, sizeof err->detail, fmt, ap);
        va_end(ap);
        /* a detail longer than the buffer is cut between characters (the
         * error event carries it as JSON text) */
        if (n >= (int)sizeof err->detail)
            err->detail[vigil_utf8_cut(err->detail, strlen(err->detail))] = '\0';
    }
    return -1;
}

/* ---- UTF-8 ---------------------------------------------------------- */

/* Offset of the first byte that is not part of a well-formed UTF-8 sequence
 * (Unicode 15, table 3-7), or n when all of s[0..n) is valid. NUL counts as
 * invalid: it would truncate every C string made from the payload. */
static size_t utf8_first_bad(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (n - i >= 8 && vigil_word_plain_ascii(vigil_word_at(s + i))) {
            i += 8;
            continue;
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            if (c == 0)
                return i;
            i++;
            continue;
        }
        size_t need;
        unsigned char lo = 0x80, hi = 0xBF; /* range of the 2nd byte */
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0; /* overlong below U+0800 */
            else if (c == 0xED)
                hi = 0x9F; /* UTF-16 surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90; /* overlong below U+10000 */
            else if (c == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            return i; /* continuation byte, C0/C1 overlong lead, F5..FF */
        }
        if (n - i <= need)
            return i; /* truncated sequence */
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return i;
        i += need + 1;
    }
    return n;
}

size_t vigil_utf8_cut(const char *s, size_t n)
{
    return s ? utf8_first_bad((const unsigned char *)s, n) : 0;
}

size_t vigil_utf8_cut_max(const char *s, size_t max)
{
    return s ? vigil_utf8_cut(s, strnlen(s, max)) : 0;
}

size_t vigil_utf8_copy_n(char *dst, size_t cap, const char *s, size_t len)
{
    if (!dst || cap == 0)
        return 0;
    size_t n = s ? vigil_utf8_cut(s, len < cap - 1 ? len : cap - 1) : 0;
    if (n)
        memcpy(dst, s, n);
    dst[n] = '\0';
    return n;
}

size_t vigil_utf8_copy(char *dst, size_t cap, const char *s)
{
    return vigil_utf8_copy_n(dst, cap, s, s && cap ? strnlen(s, cap - 1) : 0);
}

int vigil_utf8_snprintf(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    if (n >= 0 && cap > 0 && (size_t)n >= cap)
        dst[vigil_utf8_cut(dst, strlen(dst))] = '\0';
    return n;
}

bool vigil_utf8_valid(const char *s, size_t n)
{
    if (n == 0)
        return true;
    if (!s)
        return false;
    return utf8_first_bad((const unsigned char *)s, n) == n;
}

bool vigil_id_valid(const char *s, size_t n)
{
    if (!s || n == 0 || n > VIGIL_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* ---- strict syntax check (RFC 8259), building the tree -------------- */

/* Why building stopped, past the syntax: memory, or json-c's depth. */
enum { BUILD_GOING, BUILD_NO_MEMORY, BUILD_TOO_DEEP };

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    const unsigned char *start;
    const char *what; /* why it failed */
    bool escaped;     /* the last string read had a backslash */
    bool is_double;   /* the last number read had a fraction or an exponent */
    int stopped;      /* BUILD_*: why building stopped (then what is NULL) */
    const unsigned char *deep_at; /* BUILD_TOO_DEEP: the value json-c refused */
} syn;

static int syn_fail(syn *s, const char *what)
{
    s->what = what;
    return -1;
}

/* Stops the build for a reason that is not the payload's syntax; the
 * caller checks the whole syntax again, which comes first. */
static int syn_stop(syn *s, int why)
{
    s->stopped = why;
    return -1;
}

/* Stores a node just made; NULL is out of memory. */
static int syn_put(syn *s, json_object **out, json_object *node)
{
    if (!node)
        return syn_stop(s, BUILD_NO_MEMORY);
    *out = node;
    return 0;
}

static void syn_ws(syn *s)
{
    while (s->p < s->end && vigil_json_space((char)*s->p))
        s->p++;
}

static int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* A string starting at the opening quote. UTF-8 was validated already, so
 * only control characters and escapes need checking. */
static int syn_string(syn *s)
{
    s->p++; /* opening quote */
    s->escaped = false;
    while (s->p < s->end) {
        if (s->end - s->p >= 8) {
            uint64_t bits = vigil_word_escape_bits(vigil_word_at(s->p));
            if (!bits) {
                s->p += 8; /* no quote, backslash or control character among them */
                continue;
            }
            s->p += vigil_word_first(bits); /* to the first byte that matters */
        }
        unsigned char c = *s->p;
        if (c == '"') {
            s->p++;
            return 0;
        }
        if (c < 0x20)
            return syn_fail(s, "control character in string");
        if (c == '\\') {
            s->escaped = true;
            if (s->end - s->p < 2)
                break;
            unsigned char e = s->p[1];
            if (e == 'u') {
                if (s->end - s->p < 6)
                    break;
                for (int k = 2; k < 6; k++)
                    if (!is_hex(s->p[k]))
                        return syn_fail(s, "bad \\u escape");
                s->p += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0)
                return syn_fail(s, "bad escape in string");
            s->p += 2;
            continue;
        }
        s->p++;
    }
    return syn_fail(s, "unterminated string");
}

static int syn_number(syn *s)
{
    s->is_double = false;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p >= s->end)
        return syn_fail(s, "truncated number");
    if (*s->p == '0') {
        s->p++;
    } else if (is_digit(*s->p)) {
        while (s->p < s->end && is_digit(*s->p))
            s->p++;
    } else {
        return syn_fail(s, "bad number");
    }
    if (s->p < s->end && *s->p == '.') {
        s->is_double = true;
        s->p++;
        if (s->p >= s->end || !is_digit(*s->p))
            return syn_fail(s, "bad number: digit expected after '.'");
        while (s->p < s->end && is_digit(*s->p))
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->is_double = true;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (s->p >= s->end || !is_digit(*s->p))
            return syn_fail(s, "bad number: digit expected in exponent");
        while (s->p < s->end && is_digit(*s->p))
            s->p++;
    }
    return 0;
}

static int syn_literal(syn *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return syn_fail(s, "unexpected character");
    s->p += n;
    return 0;
}

static int syn_value(syn *s, int depth, json_object **out);

/* The members or elements of a container, from just past its bracket to
 * just past its closing one; c (NULL: check only) takes each. */
static int syn_members(syn *s, int depth, unsigned char close, json_object *c)
{
    int is_obj = close == '}';
    syn_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        const unsigned char *key = NULL;
        size_t key_len = 0;
        bool key_escaped = false;
        syn_ws(s);
        if (is_obj) {
            if (s->p >= s->end)
                break;
            if (*s->p != '"')
                return syn_fail(s, "object key expected");
            key = s->p + 1;
            if (syn_string(s) != 0)
                return -1;
            key_len = (size_t)(s->p - 1 - key);
            key_escaped = s->escaped;
            syn_ws(s);
            if (s->p >= s->end)
                break;
            if (*s->p != ':')
                return syn_fail(s, "':' expected");
            s->p++;
        }
        json_object *v = NULL;
        if (syn_value(s, depth + 1, c ? &v : NULL) != 0)
            return -1;
        if (c) {
            int rc = is_obj ? vigil_jb_member(c, key, key_len, key_escaped, v)
                            : json_object_array_add(c, v);
            if (rc != 0) {
                if (!is_obj)
                    json_object_put(v);
                return syn_stop(s, BUILD_NO_MEMORY);
            }
        }
        syn_ws(s);
        if (s->p >= s->end)
            break;
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p == close) {
            s->p++;
            return 0;
        }
        return syn_fail(s, is_obj ? "',' or '}' expected" : "',' or ']' expected");
    }
    return syn_fail(s, "truncated JSON");
}

/* Object or array starting at its bracket; depth counts open containers.
 * out (NULL: check only) receives the container, built as json-c's
 * tokener builds it: an array trimmed to its length at the end. */
static int syn_container(syn *s, int depth, json_object **out)
{
    unsigned char close = *s->p == '{' ? '}' : ']';
    if (depth + 1 > JSON_MAX_DEPTH)
        return syn_fail(s, "nesting too deep");
    s->p++;
    if (!out)
        return syn_members(s, depth, close, NULL);
    json_object *c = close == '}' ? json_object_new_object() : json_object_new_array_ext(8);
    if (!c)
        return syn_stop(s, BUILD_NO_MEMORY);
    if (syn_members(s, depth, close, c) != 0) {
        json_object_put(c);
        return -1;
    }
    if (close == ']')
        (void)json_object_array_shrink(c, 0); /* as the tokener: gives memory back */
    *out = c;
    return 0;
}

/* A value; depth counts the containers around it. out (NULL: check only)
 * receives its node (NULL for null). */
static int syn_value(syn *s, int depth, json_object **out)
{
    syn_ws(s);
    if (s->p >= s->end)
        return syn_fail(s, "truncated JSON");
    /* json-c's tokener, with the same limit, refuses any value inside the
     * 32nd container: the syntax allows 32 containers, so an empty one. */
    if (out && depth >= JSON_MAX_DEPTH) {
        s->deep_at = s->p;
        return syn_stop(s, BUILD_TOO_DEEP);
    }
    const unsigned char *at = s->p;
    switch (*s->p) {
    case '{':
    case '[':
        return syn_container(s, depth, out);
    case '"':
        if (syn_string(s) != 0)
            return -1;
        return out ? syn_put(s, out, vigil_jb_string(at + 1, (size_t)(s->p - 1 - (at + 1)),
                                                     s->escaped))
                   : 0;
    case 't':
        if (syn_literal(s, "true") != 0)
            return -1;
        return out ? syn_put(s, out, json_object_new_boolean(1)) : 0;
    case 'f':
        if (syn_literal(s, "false") != 0)
            return -1;
        return out ? syn_put(s, out, json_object_new_boolean(0)) : 0;
    case 'n':
        return syn_literal(s, "null"); /* *out stays NULL */
    default:
        if (*s->p != '-' && !is_digit(*s->p))
            return syn_fail(s, "unexpected character");
        if (syn_number(s) != 0)
            return -1;
        return out ? syn_put(s, out, vigil_jb_number(at, (size_t)(s->p - at), s->is_double)) : 0;
    }
}

/* Returns 0 when buf is exactly one JSON value with optional surrounding
 * whitespace, else -1 with s->what and s->p at the problem. out (NULL:
 * check only) receives the value's tree; -1 with s->what NULL is a build
 * stopped for s->stopped, the syntax read only so far. */
static int check_syntax(syn *s, json_object **out)
{
    syn_ws(s);
    if (s->p >= s->end)
        return syn_fail(s, s->p == s->start ? "empty payload" : "only whitespace");
    if (syn_value(s, 0, out) != 0)
        return -1;
    syn_ws(s);
    if (s->p < s->end) {
        if (out) {
            json_object_put(*out);
            *out = NULL;
        }
        return syn_fail(s, "trailing data after the JSON value");
    }
    return 0;
}

static const char *top_level_kind(unsigned char c)
{
    switch (c) {
    case '[':
        return "an array";
    case '"':
        return "a string";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}

bool vigil_json_valid(const char *buf, size_t len, bool want_object)
{
    if (!buf || utf8_first_bad((const unsigned char *)buf, len) != len)
        return false;
    const unsigned char *ubuf = (const unsigned char *)buf;
    syn s = {.p = ubuf, .end = ubuf + len, .start = ubuf};
    if (check_syntax(&s, NULL) != 0)
        return false;
    if (!want_object)
        return true;
    s.p = s.start;
    syn_ws(&s);
    return *s.p == '{';
}

/* The syntax check alone, from the start: 0, or -1 with err set. */
static int syntax_error(const unsigned char *buf, size_t len, vigil_error *err)
{
    syn s = {.p = buf, .end = buf + len, .start = buf};
    if (check_syntax(&s, NULL) == 0)
        return 0;
    return vigil_error_set(err, VIGIL_REJECT_NOT_JSON, "%s at byte %zu", s.what,
                           (size_t)(s.p - s.start));
}

/* A build that stopped before the end: the payload was read only up to
 * there, and a syntax error anywhere in it is its answer, as when the
 * syntax was checked whole before json-c built the tree. */
static void build_stopped(const syn *s, size_t len, vigil_error *err)
{
    if (syntax_error(s->start, len, err) != 0)
        return;
    if (s->stopped == BUILD_TOO_DEEP)
        vigil_error_set(err, VIGIL_REJECT_NOT_JSON, "nesting too deep at byte %zu",
                        (size_t)(s->deep_at - s->start));
    else /* not the payload's fault: never a refusal */
        vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory parsing JSON");
}

int64_t vigil_record_int(json_object *v, int64_t def)
{
    int64_t x = json_object_get_int64(v);
    return x >= -VIGIL_RECORD_INT_MAX && x <= VIGIL_RECORD_INT_MAX ? x : def;
}

json_object *vigil_json_parse_object(const char *buf, size_t len, size_t max, vigil_error *err)
{
    if (len > max) {
        vigil_error_set(err, VIGIL_REJECT_OVERSIZE, "payload of %zu bytes exceeds the limit of %zu",
                        len, max);
        return NULL;
    }
    if (len > (size_t)INT_MAX) { /* json-c's string lengths are ints */
        vigil_error_set(err, VIGIL_REJECT_OVERSIZE, "payload of %zu bytes is too large", len);
        return NULL;
    }
    if (len > 0 && !buf) {
        vigil_error_set(err, VIGIL_REJECT_NOT_JSON, "no payload bytes");
        return NULL;
    }
    if (len > 0) {
        size_t bad = utf8_first_bad((const unsigned char *)buf, len);
        if (bad != len) {
            vigil_error_set(err, VIGIL_REJECT_UTF8, "invalid UTF-8 at byte %zu", bad);
            return NULL;
        }
    }
    const unsigned char *ubuf = (const unsigned char *)(buf ? buf : "");
    syn s = {.p = ubuf, .end = ubuf + len, .start = ubuf};
    syn_ws(&s);
    if (s.p >= s.end || *s.p != '{') {
        /* Not an object, if JSON at all: the syntax error comes first. */
        if (syntax_error(ubuf, len, err) == 0)
            vigil_error_set(err, VIGIL_REJECT_NOT_OBJECT, "top level is %s, expected an object",
                            top_level_kind(*s.p));
        return NULL;
    }
    s.p = s.start;
    json_object *o = NULL;
    if (check_syntax(&s, &o) == 0)
        return o;
    if (s.what)
        vigil_error_set(err, VIGIL_REJECT_NOT_JSON, "%s at byte %zu", s.what,
                        (size_t)(s.p - s.start));
    else
        build_stopped(&s, len, err);
    return NULL;
}

/* ---- field getters -------------------------------------------------- */

static const char *type_name(json_object *v)
{
    return json_type_to_name(json_object_get_type(v));
}

/* How many members vigil_json_member compares one by one before it asks
 * json-c's hash table instead. */
#define MEMBER_SCAN_MAX 16

/* A payload has about ten members and a reader asks for about as many
 * fields, half of them absent: json-c's lookup hashes the name (about 180
 * instructions a field, callgrind), more than comparing it with each
 * member's name in turn. The same member either way: an object's names
 * are unique (a repeated one replaces the value) and both compare whole
 * C strings. */
json_object *vigil_json_member(json_object *o, const char *field)
{
    if (!o || !field || !json_object_is_type(o, json_type_object))
        return NULL;
    struct lh_table *t = json_object_get_object(o);
    int seen = 0;
    for (struct lh_entry *e = t ? lh_table_head(t) : NULL; e; e = lh_entry_next(e)) {
        if (++seen > MEMBER_SCAN_MAX) {
            json_object *x = NULL;
            return json_object_object_get_ex(o, field, &x) ? x : NULL;
        }
        const char *k = (const char *)lh_entry_k(e);
        if (k[0] == field[0] && strcmp(k, field) == 0)
            return (json_object *)lh_entry_v(e);
    }
    return NULL;
}

/* Looks a field up. Returns 1 (and may fill MISSING_FIELD) when it is absent
 * or null, 0 with *v set when present. Required-and-absent yields -1. */
static int field_get(json_object *o, const char *field, bool required, json_object **v,
                     vigil_error *err)
{
    json_object *x = vigil_json_member(o, field);
    if (!x) {
        if (required)
            return vigil_error_set(err, VIGIL_REJECT_MISSING_FIELD, "missing required field '%s'",
                                   field ? field : "(null)");
        return 1;
    }
    *v = x;
    return 0;
}

static int wrong_type(vigil_error *err, const char *field, const char *expected, json_object *v)
{
    return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE, "field '%s': expected %s, got %s", field,
                           expected, type_name(v));
}

/* Quotes at most DETAIL_VALUE_BYTES of a value for a detail message, in the
 * same escaped form as vigil_json_sample. */
static void detail_value(const char *s, size_t n, char *out, size_t outlen)
{
    vigil_json_sample(s, n > DETAIL_VALUE_BYTES ? DETAIL_VALUE_BYTES : n, out, outlen);
}

vigil_json_str_status vigil_json_str_check(json_object *v, const char **out)
{
    if (!v)
        return VIGIL_JSON_STR_ABSENT;
    if (!json_object_is_type(v, json_type_string))
        return VIGIL_JSON_STR_NOT_STRING;
    const char *s = json_object_get_string(v);
    if (strlen(s) != (size_t)json_object_get_string_len(v))
        return VIGIL_JSON_STR_HAS_NUL;
    if (out)
        *out = s;
    return VIGIL_JSON_STR_OK;
}

/* Strings with an embedded NUL (from \u0000) are refused
 * (vigil_json_str_check): every consumer treats them as C strings and
 * would silently see a shorter value. */
int vigil_json_string(json_object *o, const char *field, bool required, const char **out,
                      vigil_error *err)
{
    json_object *v = NULL;
    int r = field_get(o, field, required, &v, err);
    if (r != 0)
        return r;
    switch (vigil_json_str_check(v, out)) {
    case VIGIL_JSON_STR_OK:
        return 0;
    case VIGIL_JSON_STR_HAS_NUL:
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': string contains NUL",
                               field);
    default:
        return wrong_type(err, field, "string", v);
    }
}

int vigil_json_id(json_object *o, const char *field, bool required, const char **out,
                  vigil_error *err)
{
    const char *s = NULL;
    int r = vigil_json_string(o, field, required, &s, err);
    if (r != 0)
        return r;
    if (!vigil_id_valid(s, strlen(s))) {
        char q[DETAIL_VALUE_BYTES * 5 + 1];
        detail_value(s, strlen(s), q, sizeof q);
        return vigil_error_set(err, VIGIL_REJECT_BAD_ID,
                               "field '%s': '%s' is not a valid id (1-64 of A-Z a-z 0-9 . _ -)",
                               field, q);
    }
    if (out)
        *out = s;
    return 0;
}

/* json-c clamps integers outside int64 and keeps values up to UINT64_MAX as
 * unsigned; those and non-integral doubles are not accepted as int64. */
int vigil_json_int64(json_object *o, const char *field, bool required, int64_t *out,
                     vigil_error *err)
{
    json_object *v = NULL;
    int r = field_get(o, field, required, &v, err);
    if (r != 0)
        return r;
    int64_t x;
    if (json_object_is_type(v, json_type_int)) {
        x = json_object_get_int64(v);
        if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': integer out of range",
                                   field);
    } else if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d) || d != floor(d))
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field '%s': expected int, got double %g", field, d);
        if (d < -9223372036854775808.0 || d >= 9223372036854775808.0)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': integer out of range",
                                   field);
        x = (int64_t)d;
    } else {
        return wrong_type(err, field, "int", v);
    }
    if (out)
        *out = x;
    return 0;
}

int vigil_json_double(json_object *o, const char *field, bool required, double *out,
                      vigil_error *err)
{
    json_object *v = NULL;
    int r = field_get(o, field, required, &v, err);
    if (r != 0)
        return r;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return wrong_type(err, field, "number", v);
    double d = json_object_get_double(v);
    if (!isfinite(d)) /* 1e999 parses to infinity */
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': number out of range",
                               field);
    if (out)
        *out = d;
    return 0;
}

int vigil_json_bool(json_object *o, const char *field, bool required, bool *out,
                    vigil_error *err)
{
    json_object *v = NULL;
    int r = field_get(o, field, required, &v, err);
    if (r != 0)
        return r;
    if (!json_object_is_type(v, json_type_boolean))
        return wrong_type(err, field, "boolean", v);
    if (out)
        *out = json_object_get_boolean(v) ? true : false;
    return 0;
}

int vigil_json_enum(json_object *o, const char *field, bool required,
                    const char *const *allowed, int *out, vigil_error *err)
{
    const char *s = NULL;
    int r = vigil_json_string(o, field, required, &s, err);
    if (r != 0)
        return r;
    for (int i = 0; allowed && allowed[i]; i++) {
        if (strcmp(s, allowed[i]) == 0) {
            if (out)
                *out = i;
            return 0;
        }
    }
    char list[120];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; allowed && allowed[i]; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? "|" : "", allowed[i]);
        if (w < 0 || (size_t)w >= sizeof list - used)
            break; /* a cut list still reads fine in a detail */
        used += (size_t)w;
    }
    char q[DETAIL_VALUE_BYTES * 5 + 1];
    detail_value(s, strlen(s), q, sizeof q);
    return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': expected one of %s, got \"%s\"",
                           field, list, q);
}

int vigil_json_array(json_object *o, const char *field, bool required, json_object **out,
                     vigil_error *err)
{
    json_object *v = NULL;
    int r = field_get(o, field, required, &v, err);
    if (r != 0)
        return r;
    if (!json_object_is_type(v, json_type_array))
        return wrong_type(err, field, "array", v);
    if (out)
        *out = v;
    return 0;
}

int vigil_json_object(json_object *o, const char *field, bool required, json_object **out,
                      vigil_error *err)
{
    json_object *v = NULL;
    int r = field_get(o, field, required, &v, err);
    if (r != 0)
        return r;
    if (!json_object_is_type(v, json_type_object))
        return wrong_type(err, field, "object", v);
    if (out)
        *out = v;
    return 0;
}

const char *vigil_json_field_or(json_object *o, const char *name, const char *alias)
{
    return !json_object_object_get_ex(o, name, NULL) && json_object_object_get_ex(o, alias, NULL)
               ? alias
               : name;
}

/* ---- output helpers ------------------------------------------------- */

/* The fields every error event starts with (sys-error): the caller's id,
 * the service, topic, reason, detail, sample. */
json_object *vigil_error_event_new(const char *id, const char *service, const char *topic,
                                   const char *reason, const char *detail, const char *sample)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "service", json_object_new_string(service));
    json_object_object_add(o, "topic", json_object_new_string(topic));
    json_object_object_add(o, "reason", json_object_new_string(reason));
    json_object_object_add(o, "detail", json_object_new_string(detail));
    json_object_object_add(o, "sample", json_object_new_string(sample));
    return o;
}

/* The result goes into a json-c string (which does the JSON escaping), so
 * it must be valid UTF-8 without NUL and unambiguous: valid UTF-8 is copied,
 * a backslash becomes "\\", and control characters and invalid bytes become
 * the four characters \xNN. A multibyte character cut by the 200-byte window
 * shows as \xNN bytes too. Escapes are never split at the end of out. */
void vigil_json_sample(const char *buf, size_t len, char *out, size_t outlen)
{
    static const char HEX[] = "0123456789abcdef";
    if (!out || outlen == 0)
        return;
    size_t o = 0;
    out[0] = '\0';
    if (!buf)
        return;
    const unsigned char *p = (const unsigned char *)buf;
    size_t n = len < SAMPLE_BYTES ? len : SAMPLE_BYTES;
    size_t i = 0;
    while (i < n) {
        char tmp[5];
        const char *chunk = tmp;
        size_t k; /* bytes to write */
        size_t adv = 1;
        unsigned char c = p[i];
        if (c == '\\') {
            tmp[0] = '\\';
            tmp[1] = '\\';
            k = 2;
        } else if (c >= 0x20 && c < 0x7f) {
            tmp[0] = (char)c;
            k = 1;
        } else {
            size_t good = 0;
            if (c >= 0x80) {
                size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
                if (want <= n - i && vigil_utf8_valid((const char *)p + i, want))
                    good = want;
            }
            if (good) {
                chunk = (const char *)p + i;
                k = good;
                adv = good;
            } else {
                tmp[0] = '\\';
                tmp[1] = 'x';
                tmp[2] = HEX[c >> 4];
                tmp[3] = HEX[c & 15];
                k = 4;
            }
        }
        if (k >= outlen - o)
            break;
        memcpy(out + o, chunk, k);
        o += k;
        i += adv;
    }
    out[o] = '\0';
}

#define DUMP_MAX_DEPTH 64 /* deeper documents are left to json-c */

/* Writes o as json-c prints it with PLAIN | NOSLASHESCAPE. Returns false
 * for what is left to json-c: a double (json-c prints the text it was
 * parsed from), an integer at the int64 bound (json-c may hold it as
 * uint64), a string holding a NUL byte, or a deeper document. */
static bool dump_value(vigil_jtext *b, json_object *o, int depth)
{
    if (depth > DUMP_MAX_DEPTH)
        return false;
    switch (json_object_get_type(o)) {
    case json_type_null:
        vigil_jtext_lit(b, "null");
        return true;
    case json_type_boolean:
        vigil_jtext_lit(b, json_object_get_boolean(o) ? "true" : "false");
        return true;
    case json_type_int: {
        int64_t v = json_object_get_int64(o);
        if (v == INT64_MAX)
            return false;
        vigil_jtext_i64(b, v);
        return true;
    }
    case json_type_string: {
        const char *str = json_object_get_string(o);
        if ((size_t)json_object_get_string_len(o) != strlen(str))
            return false;
        vigil_jtext_str(b, str);
        return true;
    }
    case json_type_array: {
        size_t n = json_object_array_length(o);
        vigil_jtext_ch(b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                vigil_jtext_ch(b, ',');
            if (!dump_value(b, json_object_array_get_idx(o, i), depth + 1))
                return false;
        }
        vigil_jtext_ch(b, ']');
        return true;
    }
    case json_type_object: {
        char sep = 0;
        vigil_jtext_ch(b, '{');
        json_object_object_foreach(o, key, val)
        {
            vigil_jtext_key(b, sep, key);
            if (!dump_value(b, val, depth + 1))
                return false;
            sep = ',';
        }
        vigil_jtext_ch(b, '}');
        return true;
    }
    case json_type_double:
    default:
        return false;
    }
}

/* Written as text (vigil/jtext.h) when it holds no double, else by json-c:
 * json-c builds its text in a printbuf kept with the object and is then
 * copied; a message's log entry and most payloads are strings and
 * integers. test_json checks both give the same bytes. */
char *vigil_json_dump(json_object *o)
{
    vigil_jtext b = {0};
    if (dump_value(&b, o, 0))
        return vigil_jtext_take(&b); /* NULL when out of memory */
    free(vigil_jtext_take(&b));
    const char *s = json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    return s ? strdup(s) : NULL;
}

uint64_t vigil_hash64_more(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t vigil_hash64(const void *data, size_t n)
{
    return vigil_hash64_more(VIGIL_HASH64_INIT, data, n);
}

int vigil_shard_of(const char *key, int count)
{
    if (count <= 1 || !key)
        return 0;
    return (int)(vigil_hash64(key, strlen(key)) % (uint64_t)count);
}

int vigil_json_string_bounded(json_object *o, const char *field, bool required, size_t max,
                              const char **out, vigil_error *err)
{
    const char *v = NULL;
    int rc = vigil_json_string(o, field, required, &v, err);
    if (rc != 0)
        return rc;
    size_t n = strlen(v);
    if (n == 0 || n > max)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': expected 1..%zu bytes",
                               field, max);
    *out = v;
    return 0;
}

int vigil_json_string_array(json_object *o, const char *field, bool required, bool ids, int max,
                            const char ***out, int *n, vigil_error *err)
{
    json_object *arr = NULL;
    *out = NULL;
    *n = 0;
    int rc = vigil_json_array(o, field, required, &arr, err);
    if (rc != 0)
        return rc;
    size_t len = json_object_array_length(arr);
    if (max < 0 || len > (size_t)max)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': more than %d entries",
                               field, max);
    const char **v = calloc(len + 1, sizeof *v);
    if (!v)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "field '%s': out of memory", field);
    for (size_t i = 0; i < len; i++) {
        const char *s = NULL;
        vigil_json_str_status st = vigil_json_str_check(json_object_array_get_idx(arr, i), &s);
        if (st == VIGIL_JSON_STR_HAS_NUL) {
            free(v);
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field '%s[%zu]': string contains NUL", field, i);
        }
        if (st != VIGIL_JSON_STR_OK) {
            free(v);
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE, "field '%s[%zu]': expected string",
                                   field, i);
        }
        if (ids && !vigil_id_valid(s, strlen(s))) {
            free(v);
            return vigil_error_set(err, VIGIL_REJECT_BAD_ID,
                                   "field '%s[%zu]': expected 1-64 characters of A-Z a-z 0-9 . _ -",
                                   field, i);
        }
        v[i] = s;
    }
    *out = v;
    *n = (int)len;
    return 0;
}

bool vigil_event_id_valid(const char *s, size_t n)
{
    if (!s || n == 0 || n > VIGIL_EVENT_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e || c == '/' || c == '+' || c == '#')
            return false;
    }
    return true;
}
