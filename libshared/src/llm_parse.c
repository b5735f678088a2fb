/* llm_parse.c - finding the JSON a model meant inside what it wrote, and
 * reading its fields with the coercions models need.
 *
 * Models asked for JSON answer plain JSON, JSON in ```json fences, JSON
 * after "Sure! Here is my answer:", JSON cut short by max_tokens, or
 * nonsense. Everything here is pure (no I/O, no globals) and bounded: the
 * text is scanned linearly, at most once per pass, nesting is counted
 * rather than recursed, and only a balanced candidate span is handed to
 * json-c, with its depth limit. */
#include "vigil/llm.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <json-c/json_object_iterator.h>

#include "vigil/json.h"

/* Passes over fenced blocks are capped so a text made of thousands of ```
 * markers cannot multiply the work. */
#define MAX_FENCES 16
/* Candidate spans handed to json-c per extraction. Scanning is linear, but
 * each parse costs an allocation: a text of a million "{}" must not mean a
 * million parses. A model's answer is among its first few candidates. */
#define MAX_CANDIDATES 256

typedef enum { WANT_OBJECT, WANT_ARRAY } want_kind;

/* What a search remembers about its failures: the first candidate that
 * failed (most precise reason), and whether some opener never closed. */
typedef struct {
    vigil_llm_parse_error first;
    bool have_first;
    bool unbalanced;
    size_t unbalanced_at;
    int tried; /* candidates parsed so far, capped by MAX_CANDIDATES */
} search_state;

static const char *const PARSE_NAMES[VIGIL_LLM_PARSE__COUNT] = {
    "ok", "empty", "too_large", "not_found", "unbalanced",
    "invalid_json", "too_deep", "invalid_utf8", "wrong_type",
};

const char *vigil_llm_parse_status_name(vigil_llm_parse_status s)
{
    if ((int)s < 0 || s >= VIGIL_LLM_PARSE__COUNT)
        return "unknown";
    return PARSE_NAMES[s];
}

static void set_err(vigil_llm_parse_error *err, vigil_llm_parse_status st, size_t off,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void set_err(vigil_llm_parse_error *err, vigil_llm_parse_status st, size_t off,
                    const char *fmt, ...)
{
    if (!err)
        return;
    err->status = st;
    err->offset = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->detail, sizeof err->detail, fmt, ap);
    va_end(ap);
}

static void note_failure(search_state *s, vigil_llm_parse_status st, size_t off,
                         const char *what)
{
    if (s->have_first)
        return;
    s->have_first = true;
    set_err(&s->first, st, off, "candidate at offset %zu: %s", off, what);
}

/* An opener counts as the start of JSON only if what follows could begin
 * its content: '{' must be followed by a key (either quote) or '}', '[' by
 * a value or ']'.
 * This skips prose like "{name}" or "(see [a])" without parsing it, which
 * is what lets an unbalanced plausible opener mean "truncated" (we stop)
 * instead of "stray brace" (we would have to rescan). */
static bool plausible_opener(const char *t, size_t len, size_t i)
{
    size_t j = i + 1;
    while (j < len && vigil_json_space(t[j]))
        j++;
    if (j >= len)
        return true; /* "{" at the very end: truncated JSON, not prose */
    char nx = t[j];
    if (t[i] == '{')
        return nx == '"' || nx == '\'' || nx == '}';
    return nx == '{' || nx == '[' || nx == '"' || nx == '\'' || nx == ']' || nx == '-' ||
           (nx >= '0' && nx <= '9') || nx == 't' || nx == 'f' || nx == 'n';
}

/* Next balanced span starting at a plausible opener at or after pos and
 * before end. Strings (with backslash escapes) are skipped so braces inside
 * them do not count; single-quoted strings too, because json-c's lenient
 * mode accepts the Python-style dicts some models write ({'a': True}). Returns 1 with [*s0, *s1) and its nesting depth, 0 when
 * no opener remains, -1 when an opener at *s0 is never closed. */
static int next_candidate(const char *t, size_t pos, size_t end, size_t *s0, size_t *s1,
                          long *depth_out)
{
    size_t i = pos;
    for (;;) {
        while (i < end && t[i] != '{' && t[i] != '[')
            i++;
        if (i >= end)
            return 0;
        if (plausible_opener(t, end, i))
            break;
        i++;
    }
    size_t start = i;
    long depth = 0, maxd = 0;
    char quote = 0; /* the quote of the string we are in, 0 outside */
    bool esc = false;
    for (; i < end; i++) {
        char ch = t[i];
        if (quote) {
            if (esc)
                esc = false;
            else if (ch == '\\')
                esc = true;
            else if (ch == quote)
                quote = 0;
            continue;
        }
        if (ch == '"' || ch == '\'') {
            quote = ch;
        } else if (ch == '{' || ch == '[') {
            if (++depth > maxd)
                maxd = depth;
        } else if (ch == '}' || ch == ']') {
            if (--depth == 0) {
                *s0 = start;
                *s1 = i + 1;
                *depth_out = maxd;
                return 1;
            }
        }
    }
    *s0 = start;
    return -1;
}

/* Case-, '_'- and '-'-insensitive equality: the spellings models use for
 * one field name (shouldWake, should_wake, ShouldWake, should-wake). */
static bool loose_name_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_' || *a == '-')
            a++;
        while (*b == '_' || *b == '-')
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
        a++;
        b++;
    }
}

json_object *vigil_llm_field_get(json_object *o, const char *name)
{
    if (!o || !name || !json_object_is_type(o, json_type_object))
        return NULL;
    json_object *v = NULL;
    if (json_object_object_get_ex(o, name, &v))
        return v;
    struct json_object_iterator it = json_object_iter_begin(o);
    struct json_object_iterator end = json_object_iter_end(o);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        if (loose_name_eq(json_object_iter_peek_name(&it), name))
            return json_object_iter_peek_value(&it);
    }
    return NULL;
}

/* The array an object wraps: under one of keys (first match), or with
 * keys NULL, its only array member. NULL when there is none or (keys NULL)
 * more than one. */
static json_object *unwrap_array(json_object *o, const char *const *keys)
{
    if (keys) {
        for (size_t k = 0; keys[k]; k++) {
            json_object *v = vigil_llm_field_get(o, keys[k]);
            if (v && json_object_is_type(v, json_type_array))
                return v;
        }
        return NULL;
    }
    json_object *found = NULL;
    struct json_object_iterator it = json_object_iter_begin(o);
    struct json_object_iterator end = json_object_iter_end(o);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        json_object *v = json_object_iter_peek_value(&it);
        if (v && json_object_is_type(v, json_type_array)) {
            if (found)
                return NULL;
            found = v;
        }
    }
    return found;
}

/* Parses one balanced span and checks it is the kind wanted. NUL bytes and
 * invalid UTF-8 are refused before json-c sees the bytes (json-c would stop
 * at a NUL and does not validate UTF-8 by default). Returns a new reference
 * or NULL after noting why in s. */
static json_object *try_span(const char *t, size_t s0, size_t s1, long depth, want_kind want,
                             const char *const *wrap_keys, search_state *s)
{
    const char *p = t + s0;
    size_t n = s1 - s0;
    json_tokener *tok = NULL;
    json_object *obj = NULL;
    json_object *ret = NULL;
    char what[120];

    if (depth > VIGIL_LLM_PARSE_MAX_DEPTH) {
        snprintf(what, sizeof what, "nesting depth %ld above %d", depth,
                 VIGIL_LLM_PARSE_MAX_DEPTH);
        note_failure(s, VIGIL_LLM_PARSE_TOO_DEEP, s0, what);
        goto cleanup;
    }
    const char *nul = memchr(p, '\0', n);
    if (nul) {
        snprintf(what, sizeof what, "NUL byte at offset %zu", s0 + (size_t)(nul - p));
        note_failure(s, VIGIL_LLM_PARSE_BAD_UTF8, s0, what);
        goto cleanup;
    }
    if (!vigil_utf8_valid(p, n)) {
        note_failure(s, VIGIL_LLM_PARSE_BAD_UTF8, s0, "not valid UTF-8");
        goto cleanup;
    }
    tok = json_tokener_new_ex(VIGIL_LLM_PARSE_MAX_DEPTH);
    if (!tok) {
        note_failure(s, VIGIL_LLM_PARSE_INVALID, s0, "out of memory");
        goto cleanup;
    }
    obj = json_tokener_parse_ex(tok, p, (int)n);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (!obj || jerr != json_tokener_success) {
        snprintf(what, sizeof what, "%s",
                 jerr == json_tokener_continue ? "incomplete JSON"
                                               : json_tokener_error_desc(jerr));
        note_failure(s, jerr == json_tokener_error_depth ? VIGIL_LLM_PARSE_TOO_DEEP
                                                          : VIGIL_LLM_PARSE_INVALID,
                     s0, what);
        goto cleanup;
    }
    if (json_tokener_get_parse_end(tok) != n) {
        note_failure(s, VIGIL_LLM_PARSE_INVALID, s0, "JSON ends before the closing bracket");
        goto cleanup;
    }
    if (want == WANT_OBJECT) {
        /* a model that wraps its one answer in an array ([{...}]) means
         * that answer; two or more objects are ambiguous */
        json_object *only = json_object_is_type(obj, json_type_array) &&
                                    json_object_array_length(obj) == 1
                                ? json_object_array_get_idx(obj, 0)
                                : NULL;
        if (json_object_is_type(obj, json_type_object)) {
            ret = obj;
            obj = NULL;
        } else if (only && json_object_is_type(only, json_type_object)) {
            ret = json_object_get(only);
        } else {
            note_failure(s, VIGIL_LLM_PARSE_WRONG_TYPE, s0,
                         "an array, not an object (nor an array of one object)");
        }
    } else if (json_object_is_type(obj, json_type_array)) {
        ret = obj;
        obj = NULL;
    } else {
        json_object *inner = unwrap_array(obj, wrap_keys);
        if (inner) {
            ret = json_object_get(inner);
        } else {
            note_failure(s, VIGIL_LLM_PARSE_WRONG_TYPE, s0,
                         "an object without the expected array");
        }
    }
cleanup:
    json_object_put(obj);
    if (tok)
        json_tokener_free(tok);
    return ret;
}

/* One linear pass over t[r0, r1): candidates in order until one is the kind
 * wanted. A failed candidate is skipped as a whole (we never return an
 * object nested in a broken one); an unclosed plausible opener ends the
 * pass, because everything after it is inside it. */
static json_object *search_region(const char *t, size_t r0, size_t r1, want_kind want,
                                  const char *const *wrap_keys, search_state *s)
{
    size_t pos = r0;
    while (pos < r1) {
        size_t s0 = 0, s1 = 0;
        long depth = 0;
        int rc = next_candidate(t, pos, r1, &s0, &s1, &depth);
        if (rc == 0)
            return NULL;
        if (rc < 0) {
            if (!s->unbalanced) {
                s->unbalanced = true;
                s->unbalanced_at = s0;
            }
            return NULL;
        }
        if (s->tried++ >= MAX_CANDIDATES)
            return NULL;
        json_object *o = try_span(t, s0, s1, depth, want, wrap_keys, s);
        if (o)
            return o;
        pos = s1;
    }
    return NULL;
}

/* Finds "```" at or after pos; returns its offset or len. */
static size_t find_fence(const char *t, size_t len, size_t pos)
{
    while (pos + 3 <= len) {
        const char *q = memchr(t + pos, '`', len - pos);
        if (!q)
            return len;
        size_t i = (size_t)(q - t);
        if (i + 3 <= len && t[i + 1] == '`' && t[i + 2] == '`')
            return i;
        pos = i + 1;
    }
    return len;
}

/* The shared driver of both extractors: fenced blocks first (a model that
 * fences its answer means the fenced part, even when its prose holds
 * braces or an example), then the whole text. */
static json_object *extract(const char *text, size_t len, want_kind want,
                            const char *const *wrap_keys, vigil_llm_parse_error *err)
{
    if (err) {
        err->status = VIGIL_LLM_PARSE_OK;
        err->offset = 0;
        err->detail[0] = '\0';
    }
    if (!text || len == 0) {
        set_err(err, VIGIL_LLM_PARSE_EMPTY, 0, "no text");
        return NULL;
    }
    if (len > VIGIL_LLM_PARSE_MAX_INPUT) {
        set_err(err, VIGIL_LLM_PARSE_TOO_LARGE, 0, "%zu bytes, limit %u", len,
                VIGIL_LLM_PARSE_MAX_INPUT);
        return NULL;
    }
    size_t k = 0;
    while (k < len && (vigil_json_space(text[k]) || text[k] == '\v' || text[k] == '\f'))
        k++;
    if (k == len) {
        set_err(err, VIGIL_LLM_PARSE_EMPTY, 0, "only whitespace");
        return NULL;
    }

    search_state s;
    memset(&s, 0, sizeof s);
    size_t pos = 0;
    for (int fences = 0; fences < MAX_FENCES; fences++) {
        size_t open = find_fence(text, len, pos);
        if (open >= len)
            break;
        /* The info string (```json, ```JSON, ```) runs to the end of line. */
        size_t body = open + 3;
        while (body < len && text[body] != '\n')
            body++;
        size_t close = find_fence(text, len, body);
        json_object *o = search_region(text, body, close, want, wrap_keys, &s);
        if (o)
            return o;
        if (close >= len)
            break;
        pos = close + 3;
    }
    json_object *o = search_region(text, 0, len, want, wrap_keys, &s);
    if (o)
        return o;

    if (s.have_first) {
        if (err)
            *err = s.first;
    } else if (s.unbalanced) {
        set_err(err, VIGIL_LLM_PARSE_UNBALANCED, s.unbalanced_at,
                "%s opened at offset %zu is never closed (truncated output?)",
                text[s.unbalanced_at] == '{' ? "object" : "array", s.unbalanced_at);
    } else {
        set_err(err, VIGIL_LLM_PARSE_NOT_FOUND, 0, "no JSON %s in %zu bytes of text",
                want == WANT_OBJECT ? "object" : "array", len);
    }
    return NULL;
}

json_object *vigil_llm_extract_object(const char *text, size_t len, vigil_llm_parse_error *err)
{
    return extract(text, len, WANT_OBJECT, NULL, err);
}

json_object *vigil_llm_extract_array(const char *text, size_t len, const char *const *wrap_keys,
                                     vigil_llm_parse_error *err)
{
    return extract(text, len, WANT_ARRAY, wrap_keys, err);
}

/* ------------------------------------------------------------------ */
/* Typed readers                                                      */
/* ------------------------------------------------------------------ */

/* Copies s without surrounding whitespace into buf (cut to fit); the word
 * forms models use are short, so a long string simply fails to match. */
static void trimmed(const char *s, char *buf, size_t cap)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

vigil_llm_field vigil_llm_read_bool(json_object *o, const char *name, bool def, bool *out)
{
    *out = def;
    json_object *v = vigil_llm_field_get(o, name);
    if (!v)
        return VIGIL_LLM_FIELD_ABSENT;
    switch (json_object_get_type(v)) {
    case json_type_boolean:
        *out = json_object_get_boolean(v);
        return VIGIL_LLM_FIELD_OK;
    case json_type_int:
    case json_type_double: {
        double d = json_object_get_double(v);
        if (d == 1.0 || d == 0.0) {
            *out = d == 1.0;
            return VIGIL_LLM_FIELD_OK;
        }
        return VIGIL_LLM_FIELD_BAD;
    }
    case json_type_string: {
        char w[16];
        trimmed(json_object_get_string(v), w, sizeof w);
        if (!strcasecmp(w, "true") || !strcasecmp(w, "yes") || !strcmp(w, "1")) {
            *out = true;
            return VIGIL_LLM_FIELD_OK;
        }
        if (!strcasecmp(w, "false") || !strcasecmp(w, "no") || !strcmp(w, "0")) {
            *out = false;
            return VIGIL_LLM_FIELD_OK;
        }
        return VIGIL_LLM_FIELD_BAD;
    }
    case json_type_null:
        return VIGIL_LLM_FIELD_ABSENT;
    default:
        return VIGIL_LLM_FIELD_BAD;
    }
}

/* A number as a model means it. In 0..1 it is the confidence itself. A
 * whole number from 2 to 100 can only be a percentage (models write 85 for
 * 85 %); 1 stays 1 (certainty), since 0..1 is what was asked for. Any
 * other number has no sound reading: 1.5 may be 1.5 % or a slip on a 0..2
 * scale, 150 is no percentage, a negative is no confidence; dividing or
 * clamping would turn a confident answer into its opposite, so it is
 * RANGE and the caller treats the answer as unusable. With a '%' sign the
 * scale is explicit: 0..100. */
static vigil_llm_field confidence_of(double d, bool percent, double *out)
{
    if (percent) {
        if (d < 0.0 || d > 100.0)
            return VIGIL_LLM_FIELD_RANGE;
        d /= 100.0;
    } else if (d > 1.0) {
        if (d < 2.0 || d > 100.0 || d != floor(d))
            return VIGIL_LLM_FIELD_RANGE;
        d /= 100.0;
    } else if (d < 0.0) {
        return VIGIL_LLM_FIELD_RANGE;
    }
    *out = d + 0.0; /* -0 reads as 0 */
    return VIGIL_LLM_FIELD_OK;
}

vigil_llm_field vigil_llm_read_confidence(json_object *o, const char *name, double def,
                                          double *out)
{
    *out = def;
    json_object *v = vigil_llm_field_get(o, name);
    if (!v || json_object_is_type(v, json_type_null))
        return VIGIL_LLM_FIELD_ABSENT;
    double d;
    bool percent = false;
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        d = json_object_get_double(v);
    } else if (json_object_is_type(v, json_type_string)) {
        char w[64];
        trimmed(json_object_get_string(v), w, sizeof w);
        size_t n = strlen(w);
        if (n > 0 && w[n - 1] == '%') {
            percent = true;
            w[--n] = '\0';
            while (n > 0 && isspace((unsigned char)w[n - 1]))
                w[--n] = '\0';
        }
        if (n == 0)
            return VIGIL_LLM_FIELD_BAD;
        char *endp = NULL;
        d = strtod(w, &endp);
        if (!endp || *endp != '\0')
            return VIGIL_LLM_FIELD_BAD;
    } else {
        return VIGIL_LLM_FIELD_BAD;
    }
    if (!isfinite(d))
        return VIGIL_LLM_FIELD_BAD;
    return confidence_of(d, percent, out);
}

vigil_llm_field vigil_llm_read_string(json_object *o, const char *name, const char *def,
                                      const char **out)
{
    *out = def;
    /* vigil_json_str_check: a string holding a NUL is BAD, never read as
     * the shorter C string before it */
    switch (vigil_json_str_check(vigil_llm_field_get(o, name), out)) {
    case VIGIL_JSON_STR_OK:
        return VIGIL_LLM_FIELD_OK;
    case VIGIL_JSON_STR_ABSENT:
        return VIGIL_LLM_FIELD_ABSENT;
    case VIGIL_JSON_STR_NOT_STRING:
    case VIGIL_JSON_STR_HAS_NUL:
    default:
        return VIGIL_LLM_FIELD_BAD;
    }
}
