/* Unit tests of json_build.c through vigil_json_parse_object: the tree it
 * builds is the one json-c 0.16's tokener builds (json_tokener_parse_ex,
 * JSON_TOKENER_STRICT, depth 32, called here directly), node for node:
 * the same text written back, the same type of every node (int64 and
 * uint64 told apart by their getters), the same string bytes and lengths
 * (a "\u0000" kept), the same keys in the same order. Inputs: hand-written
 * edge cases, a few thousand generated objects, and every JSON text in
 * the repository's corpora (tests/unit/llm_corpus, topics/). Then json-c's
 * depth limit gives the same answer, and running out of memory in the
 * middle of a tree gives out_of_memory and frees what was built. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vigil/json.h"

#define DEPTH 32
#define RANDOM_OBJECTS 3000
#define SEED 0x5eed1234abcdULL
#define TEXT (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) /* as test_json compares */

/* ---- the two parsers ------------------------------------------------ */

/* json-c's own tree of buf[0..len), as vigil_json_parse_object made it
 * before it built the tree itself. */
static json_object *tokener_parse(const char *buf, size_t len, enum json_tokener_error *jerr,
                                  size_t *end)
{
    json_tokener *tok = json_tokener_new_ex(DEPTH);
    assert_non_null(tok);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
    *jerr = json_tokener_get_error(tok);
    *end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (*jerr != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    return o;
}

/* Fails unless a and b are the same tree. */
static void same_tree(json_object *a, json_object *b, const char *what, const char *path)
{
    enum json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
    if (ta != tb)
        fail_msg("%s: at %s: %s, json-c has %s", what, path, json_type_to_name(ta),
                 json_type_to_name(tb));
    switch (ta) {
    case json_type_null:
        break;
    case json_type_boolean:
        assert_int_equal(json_object_get_boolean(a), json_object_get_boolean(b));
        break;
    case json_type_int:
        if (json_object_get_int64(a) != json_object_get_int64(b) ||
            json_object_get_uint64(a) != json_object_get_uint64(b))
            fail_msg("%s: at %s: integer %s, json-c has %s", what, path,
                     json_object_to_json_string(a), json_object_to_json_string(b));
        break;
    case json_type_double: {
        double da = json_object_get_double(a), db = json_object_get_double(b);
        if (memcmp(&da, &db, sizeof da) != 0)
            fail_msg("%s: at %s: double %.17g, json-c has %.17g", what, path, da, db);
        break;
    }
    case json_type_string: {
        int la = json_object_get_string_len(a), lb = json_object_get_string_len(b);
        if (la != lb || memcmp(json_object_get_string(a), json_object_get_string(b), (size_t)la))
            fail_msg("%s: at %s: string of %d bytes differs from json-c's of %d", what, path, la,
                     lb);
        break;
    }
    case json_type_array: {
        size_t n = json_object_array_length(a);
        assert_int_equal(n, json_object_array_length(b));
        for (size_t i = 0; i < n; i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%.200s[%zu]", path, i);
            same_tree(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i), what, sub);
        }
        break;
    }
    case json_type_object: {
        if (json_object_object_length(a) != json_object_object_length(b))
            fail_msg("%s: at %s: %d keys, json-c has %d", what, path,
                     json_object_object_length(a), json_object_object_length(b));
        struct json_object_iterator ia = json_object_iter_begin(a), ib = json_object_iter_begin(b);
        struct json_object_iterator ea = json_object_iter_end(a);
        for (; !json_object_iter_equal(&ia, &ea); json_object_iter_next(&ia), json_object_iter_next(&ib)) {
            const char *ka = json_object_iter_peek_name(&ia), *kb = json_object_iter_peek_name(&ib);
            if (strcmp(ka, kb) != 0)
                fail_msg("%s: at %s: key '%s', json-c has '%s'", what, path, ka, kb);
            char sub[256];
            snprintf(sub, sizeof sub, "%.150s.%.80s", path, ka);
            same_tree(json_object_iter_peek_value(&ia), json_object_iter_peek_value(&ib), what, sub);
        }
        break;
    }
    }
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Parses buf[0..len) both ways. Whenever vigil_json_parse_object gives a
 * tree, json-c gives the same one; when it refuses for json-c's depth,
 * json-c refused there too. must_accept: the input is a JSON object
 * json-c takes. Returns whether the trees were compared. */
static bool check_both(const char *buf, size_t len, bool must_accept, const char *what)
{
    vigil_error err = {0};
    json_object *v = vigil_json_parse_object(buf, len, len + 1, &err);
    enum json_tokener_error jerr;
    size_t end;
    json_object *t = tokener_parse(buf, len, &jerr, &end);
    bool compared = false;
    if (v) {
        if (!t)
            fail_msg("%s: accepted, json-c refused it: %s at %zu", what,
                     json_tokener_error_desc(jerr), end);
        for (size_t i = end; i < len; i++)
            if (!is_ws(buf[i]))
                fail_msg("%s: accepted, json-c stopped at byte %zu", what, end);
        const char *tv = json_object_to_json_string_ext(v, TEXT);
        const char *tt = json_object_to_json_string_ext(t, TEXT);
        if (strcmp(tv, tt) != 0)
            fail_msg("%s: written back as\n  %.300s\njson-c's:\n  %.300s", what, tv, tt);
        same_tree(v, t, what, "$");
        compared = true;
    } else {
        if (must_accept)
            fail_msg("%s: refused: %s (%s)", what, vigil_reject_name(err.reason), err.detail);
        assert_int_not_equal(err.reason, VIGIL_REJECT_NO_MEMORY);
        if (jerr == json_tokener_error_depth && err.reason == VIGIL_REJECT_NOT_JSON &&
            strncmp(err.detail, "nesting too deep", 16) == 0) {
            char want[64];
            snprintf(want, sizeof want, "nesting too deep at byte %zu", end);
            assert_string_equal(err.detail, want);
        }
    }
    json_object_put(v);
    json_object_put(t);
    return compared;
}

static void check_text(const char *s)
{
    check_both(s, strlen(s), true, s);
}

/* ---- hand-written edge cases ---------------------------------------- */

static void test_escapes_and_unicode(void **state)
{
    (void)state;
    const char *docs[] = {
        "{}",
        " {\"a\":{},\"b\":[],\"c\":[[]],\"d\":[{}]} ",
        "{\"s\":\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"}",
        "{\"s\":\"\\u0041\\u00e9\\u00E9\\u07ff\\u0800\\uffff\\uFFFE\\u007f\\u0080\"}",
        "{\"s\":\"\\u0000\",\"t\":\"a\\u0000b\\u0000\",\"u\":\"\\u0000\\u0000\\u0000\"}",
        "{\"s\":\"\\ud83d\\ude00\",\"t\":\"\\uD83D\\uDE00\",\"u\":\"\\udbff\\udfff\",\"v\":\"\\ud800\\udc00\"}",
        /* lone surrogates: U+FFFD, whatever follows */
        "{\"s\":\"\\ud800\"}",
        "{\"s\":\"\\udc00\"}",
        "{\"s\":\"\\ud800x\"}",
        "{\"s\":\"\\ud800\\n\",\"t\":\"\\ud800\\\\\",\"u\":\"\\ud800\\/\",\"v\":\"\\ud800\\\"\"}",
        "{\"s\":\"\\ud800\\u0041\",\"t\":\"\\ud800\\u00e9\",\"u\":\"\\ud800\\u20ac\"}",
        "{\"s\":\"\\ud800\\ud800\\udc00\",\"t\":\"\\udc00\\ud800\",\"u\":\"\\ud800\\ud800\"}",
        "{\"s\":\"\\udfff\\udfff\\ud83d\",\"t\":\"x\\ud83dy\\ude00z\"}",
        /* a pair whose code point has D800..DFFF in its low 16 bits: json-c
         * takes it for another surrogate */
        "{\"s\":\"\\ud836\\udc00\",\"t\":\"\\ud836\\udc00x\",\"u\":\"\\ud836\\udc00\\udc00\"}",
        "{\"s\":\"\\ud836\\udc00\\u0041\",\"t\":\"\\ud837\\udfff\\ud800\\udc00\",\"u\":\"\\udb77\\udc00\"}",
        /* keys: escapes, a NUL ends a key, duplicates keep the first place */
        "{\"\\u0061\":1,\"a\":2}",
        "{\"a\\u0000b\":1,\"a\":2,\"a\\u0000c\":3}",
        "{\"\\ud800\":1,\"\\ufffd\":2,\"\\n\\t\":3,\"\\\"\":4,\"\":5,\"\\u0000\":6}",
        "{\"k\":1,\"k\":[2],\"j\":3,\"k\":{\"k\":4,\"k\":5}}",
        "{\"a\":1,\"b\":2,\"a\":null,\"c\":3,\"b\":true}",
        "{\"x\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x92\xa4\",\"\xf0\x9f\x92\xa4\":\"\xe2\x82\xac\\u20ac\"}",
        "{\"t\":true,\"f\":false,\"n\":null,\"a\":[true,false,null,\"\"]}",
        "\t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" :\n{ } }\r\n",
        /* the contract's member names, which json-c is given as constants:
         * duplicates, nested, escaped, near misses, next to other keys */
        "{\"id\":1,\"ts\":2,\"id\":3,\"room\":{\"id\":4,\"room\":[{\"id\":5}]},\"ids\":6}",
        "{\"\\u0069d\":1,\"id\":2,\"i\\u0064\":3}",
        "{\"id\":1,\"i\\u0000d\":2,\"id\\u0000\":3,\"Id\":4,\"iD\":5,\"d\":6,\"i\":7}",
        "{\"sender_type\":\"ai\",\"sender_typ\":1,\"sender_types\":2,\"sender\":3,\"k\":4}",
        "{\"inputEventId\":1,\"inputEventIdx\":2,\"mentions\":[],\"reply_to\":null}",
        "{\"text\":\"id\",\"id\":\"text\",\"mentions\":[\"id\",{\"id\":{\"id\":{}}}]}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
        check_text(docs[i]);
}

static void test_numbers(void **state)
{
    (void)state;
    const char *nums[] = {
        "0", "-0", "1", "-1", "7", "123456789012345678", "-123456789012345678",
        "999999999999999999", "1000000000000000000", "-999999999999999999",
        "-1000000000000000000", "9223372036854775806", "9223372036854775807",
        "9223372036854775808", "-9223372036854775807", "-9223372036854775808",
        "-9223372036854775809", "18446744073709551614", "18446744073709551615",
        "18446744073709551616", "99999999999999999999", "-99999999999999999999",
        "123456789012345678901234567890", "-123456789012345678901234567890",
        "0.0", "-0.0", "0.5", "-0.5", "1.0", "3.0", "2.50", "0.1", "1e5", "1E5", "1e+5",
        "1E-7", "1e-7", "-1e-7", "0e0", "-0e-0", "1e400", "-1e400", "1E400", "1e-400",
        "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "1.7976931348623159e308",
        "123456789012345678901234567890.5", "0.30000000000000004", "1.5e300", "9007199254740993",
        "9007199254740993.0", "12345678901234567890e-5",
    };
    char doc[256];
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        snprintf(doc, sizeof doc, "{\"n\":%s,\"a\":[%s],\"m\":%s }", nums[i], nums[i], nums[i]);
        check_text(doc);
    }
    /* the integers at the edges have the type json-c gives them */
    vigil_error err = {0};
    const char *s = "{\"i\":9223372036854775807,\"u\":9223372036854775808,\"c\":99999999999999999999}";
    json_object *o = vigil_json_parse_object(s, strlen(s), 1000, &err);
    assert_non_null(o);
    assert_int_equal(json_object_get_int64(json_object_object_get(o, "i")), INT64_MAX);
    assert_true(json_object_get_uint64(json_object_object_get(o, "u")) == 9223372036854775808ULL);
    assert_true(json_object_get_uint64(json_object_object_get(o, "c")) == UINT64_MAX);
    json_object_put(o);
    /* a number's text is kept: written back as written */
    s = "{\"d\":1E-7,\"e\":1e400,\"z\":-0.0,\"t\":2.50}";
    o = vigil_json_parse_object(s, strlen(s), 1000, &err);
    assert_non_null(o);
    assert_string_equal(json_object_to_json_string_ext(o, TEXT), s);
    json_object_put(o);
}

/* Strings, keys and numbers around the size the builder keeps on its
 * stack (256 bytes), plus long ones; escapes at the edges. */
static void test_long_tokens(void **state)
{
    (void)state;
    size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 250, 254, 255, 256, 257, 258, 300, 1000, 5000, 70000};
    const char *fills[] = {"x", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\u0000", "\xc3\xa9"};
    for (size_t f = 0; f < sizeof fills / sizeof *fills; f++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            size_t n = sizes[i], fl = strlen(fills[f]);
            size_t cap = 4 * n * fl + 64;
            char *doc = malloc(cap), *s = malloc(n * fl + 1);
            size_t k = 0;
            for (size_t j = 0; j < n; j++) {
                memcpy(s + k, fills[f], fl);
                k += fl;
            }
            s[k] = '\0';
            snprintf(doc, cap, "{\"%s\":\"%s\",\"v\":\"a%sz\",\"%s\":1}", s, s, s, s);
            char what[64];
            snprintf(what, sizeof what, "%zu x '%s'", n, fills[f]);
            check_both(doc, strlen(doc), true, what);
            free(doc);
            free(s);
        }
    }
    /* numbers of every length to 300 digits */
    for (size_t n = 1; n <= 300; n++) {
        char doc[1400];
        char digits[310];
        for (size_t j = 0; j < n; j++)
            digits[j] = (char)('1' + j % 9);
        digits[n] = '\0';
        snprintf(doc, sizeof doc, "{\"i\":%s,\"j\":-%s,\"d\":%s.5,\"e\":-%se-3}", digits, digits,
                 digits, digits);
        check_both(doc, strlen(doc), true, doc);
    }
}

/* {"a":[[...<inner>...]]} with `levels` containers in total, spaces
 * around the innermost value when spaced. */
static char *nested(int levels, const char *inner, bool objects, bool spaced)
{
    size_t cap = (size_t)levels * 12 + strlen(inner) + 32;
    char *s = malloc(cap);
    size_t k = 0;
    k += (size_t)sprintf(s, "{\"a\":");
    for (int i = 1; i < levels; i++)
        k += (size_t)sprintf(s + k, "%s", objects ? "{\"k\":" : "[");
    k += (size_t)sprintf(s + k, spaced ? " \n %s \t" : "%s", inner);
    for (int i = 1; i < levels; i++)
        s[k++] = objects ? '}' : ']';
    s[k++] = '}';
    s[k] = '\0';
    return s;
}

/* json-c refuses any value inside the 32nd container: the same refusal,
 * at the same byte; 31 around a value and 32 empty ones are fine. */
static void test_depth_as_json_c(void **state)
{
    (void)state;
    const char *inners[] = {"1", "\"x\"", "null", "[]", "{}", "[1]", "{\"z\":1}", "-0.5"};
    for (int objects = 0; objects < 2; objects++) {
        for (int spaced = 0; spaced < 2; spaced++) {
            for (size_t i = 0; i < sizeof inners / sizeof *inners; i++) {
                for (int levels = 29; levels <= 34; levels++) {
                    char *s = nested(levels, inners[i], objects, spaced);
                    vigil_error err = {0};
                    json_object *o = vigil_json_parse_object(s, strlen(s), 1 << 20, &err);
                    enum json_tokener_error jerr;
                    size_t end;
                    json_object *t = tokener_parse(s, strlen(s), &jerr, &end);
                    if (t) {
                        check_both(s, strlen(s), true, s);
                    } else {
                        assert_null(o);
                        assert_int_equal(jerr, json_tokener_error_depth);
                        char want[64];
                        snprintf(want, sizeof want, "nesting too deep at byte %zu", end);
                        assert_int_equal(err.reason, VIGIL_REJECT_NOT_JSON);
                        assert_string_equal(err.detail, want);
                    }
                    json_object_put(o);
                    json_object_put(t);
                    free(s);
                }
            }
        }
    }
    /* a syntax error after the depth json-c refuses: the syntax error */
    char *s = nested(32, "1", false, false);
    size_t n = strlen(s);
    s[n - 1] = ',';
    vigil_error err = {0};
    assert_null(vigil_json_parse_object(s, n, 1 << 20, &err));
    assert_int_equal(err.reason, VIGIL_REJECT_NOT_JSON);
    assert_string_equal(err.detail, "truncated JSON at byte 69");
    free(s);
}

/* ---- generated objects ---------------------------------------------- */

typedef struct {
    char *s;
    size_t n, cap;
} text;

static uint64_t rng = SEED;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1DULL;
}

static unsigned below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static void put(text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

static void gen_ws(text *t)
{
    static const char ws[] = " \t\n\r";
    if (below(4) == 0)
        for (unsigned k = below(3) + 1; k > 0; k--)
            put(t, &ws[below(4)], 1);
}

static void put_u(text *t, unsigned u)
{
    char b[8];
    snprintf(b, sizeof b, below(2) ? "\\u%04x" : "\\u%04X", u);
    puts_(t, b);
}

/* One piece of a string's text: a character, an escape, a surrogate
 * (lone, paired, or json-c's odd pair), raw UTF-8. */
static void gen_piece(text *t)
{
    static const char *simple[] = {"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"};
    static const char *raw[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x92\xa4", "\xdf\xbf",
                                "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf", "\x7f"};
    switch (below(12)) {
    case 0:
        puts_(t, simple[below(8)]);
        break;
    case 1:
        put_u(t, below(0x80));
        break;
    case 2:
        put_u(t, 0x80 + below(0x800 - 0x80));
        break;
    case 3: {
        unsigned u = 0x800 + below(0x10000 - 0x800);
        put_u(t, u);
        break;
    }
    case 4:
        put_u(t, 0xD800 + below(0x800)); /* a lone surrogate, high or low */
        break;
    case 5: { /* a pair, now and then one json-c takes apart */
        unsigned cp = 0x10000 + below(0x100000);
        if (below(3) == 0)
            cp = (cp & 0x1F0000) | 0xD800 | below(0x800);
        if (cp > 0x10FFFF)
            cp = 0x10FFFF;
        put_u(t, 0xD800 + ((cp - 0x10000) >> 10));
        put_u(t, 0xDC00 + ((cp - 0x10000) & 0x3FF));
        break;
    }
    case 6:
        puts_(t, raw[below(7)]);
        break;
    case 7:
        puts_(t, "\\u0000");
        break;
    default: {
        char c = (char)(' ' + below(95));
        if (c == '"' || c == '\\')
            c = 'q';
        put(t, &c, 1);
    }
    }
}

static void gen_string(text *t)
{
    unsigned n;
    switch (below(10)) {
    case 0:
        n = below(400);
        break;
    case 1:
        n = 0;
        break;
    default:
        n = below(12);
    }
    bool plain = below(3) == 0; /* no escapes: the zero-copy path */
    puts_(t, "\"");
    for (unsigned i = 0; i < n; i++) {
        if (plain) {
            char c = (char)('a' + below(26));
            put(t, &c, 1);
        } else {
            gen_piece(t);
        }
    }
    puts_(t, "\"");
}

static void gen_key(text *t)
{
    static const char *keys[] = {"\"a\"", "\"b\"", "\"id\"", "\"\\u0061\"", "\"a\\u0000z\"",
                                 "\"\"", "\"\\ud800\"", "\"\\ufffd\"", "\"room\""};
    if (below(2))
        puts_(t, keys[below(9)]);
    else
        gen_string(t);
}

static void gen_number(text *t)
{
    static const char *edges[] = {"0", "-0", "9223372036854775807", "9223372036854775808",
                                  "-9223372036854775808", "-9223372036854775809",
                                  "18446744073709551615", "18446744073709551616",
                                  "1e400", "-1e400", "1e-400", "0.0", "-0.0", "1E+2"};
    if (below(5) == 0) {
        puts_(t, edges[below(14)]);
        return;
    }
    char b[96];
    size_t k = 0;
    if (below(3) == 0)
        b[k++] = '-';
    unsigned digits = below(4) == 0 ? 1 + below(25) : 1 + below(6);
    b[k++] = digits == 1 ? (char)('0' + below(10)) : (char)('1' + below(9));
    for (unsigned i = 1; i < digits; i++)
        b[k++] = (char)('0' + below(10));
    if (below(4) == 0) {
        b[k++] = '.';
        for (unsigned i = 1 + below(8); i > 0; i--)
            b[k++] = (char)('0' + below(10));
    }
    if (below(6) == 0) {
        b[k++] = below(2) ? 'e' : 'E';
        if (below(2))
            b[k++] = below(2) ? '+' : '-';
        for (unsigned i = 1 + below(3); i > 0; i--)
            b[k++] = (char)('0' + below(10));
    }
    put(t, b, k);
}

static void gen_value(text *t, int depth);

static void gen_container(text *t, int depth, bool object)
{
    unsigned n = below(8) == 0 ? below(20) : below(5);
    puts_(t, object ? "{" : "[");
    gen_ws(t);
    for (unsigned i = 0; i < n; i++) {
        if (i)
            puts_(t, ",");
        gen_ws(t);
        if (object) {
            gen_key(t);
            gen_ws(t);
            puts_(t, ":");
        }
        gen_value(t, depth + 1);
        gen_ws(t);
    }
    puts_(t, object ? "}" : "]");
}

/* A value inside `depth` containers; never deeper than json-c takes. */
static void gen_value(text *t, int depth)
{
    gen_ws(t);
    unsigned pick = below(10);
    if (depth < DEPTH - 1 && pick < (depth < 4 ? 3u : 1u)) {
        gen_container(t, depth, below(2));
        return;
    }
    switch (below(6)) {
    case 0:
    case 1:
        gen_string(t);
        break;
    case 2:
    case 3:
        gen_number(t);
        break;
    case 4:
        puts_(t, below(2) ? "true" : "false");
        break;
    default:
        puts_(t, "null");
    }
}

static void test_random_objects(void **state)
{
    (void)state;
    rng = SEED;
    text t = {0};
    for (int i = 0; i < RANDOM_OBJECTS; i++) {
        t.n = 0;
        gen_ws(&t);
        gen_container(&t, 0, true);
        gen_ws(&t);
        char what[64];
        snprintf(what, sizeof what, "generated object %d", i);
        check_both(t.s, t.n, true, what);
    }
    free(t.s);
}

/* ---- the repository's JSON texts ------------------------------------ */

static char *load(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Every file of dir whole, and every stretch of it from a '{' to a '}'
 * (the JSON inside prose). Returns how many trees were compared. */
static int check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open %s", dir);
    int compared = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        size_t len;
        char *buf = load(path, &len);
        compared += check_both(buf, len, false, path);
        for (size_t i = 0; i < len && len <= 20000; i++) {
            if (buf[i] != '{')
                continue;
            for (size_t j = i + 1; j < len; j++)
                if (buf[j] == '}')
                    compared += check_both(buf + i, j + 1 - i, false, path);
        }
        free(buf);
    }
    closedir(d);
    return compared;
}

/* tests/unit/../../<rel>: __FILE__ is absolute under CMake. */
static void source_path(char *out, size_t n, const char *rel)
{
    const char *src = getenv("VIGIL_SOURCE_DIR");
    if (src && *src) {
        snprintf(out, n, "%s/%s", src, rel);
        return;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
    }
    snprintf(out, n, "%s/%s", dir, rel);
}

static void test_corpora(void **state)
{
    (void)state;
    const char *dirs[] = {"tests/unit/llm_corpus", "topics/examples", "topics/schemas"};
    int total = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char dir[1100];
        source_path(dir, sizeof dir, dirs[i]);
        int n = check_dir(dir);
        if (n == 0)
            fail_msg("no JSON object compared in %s", dir);
        total += n;
    }
    assert_true(total >= 100);
}

/* ---- out of memory -------------------------------------------------- */

/* A tree under construction when json-c's allocation of `size` bytes
 * fails: a key's copy (strdup of a 700-byte key, inside an object inside
 * an array) or a double's kept text (strdup of a 300-byte number). */
static const char *oom_doc(int which)
{
    static char doc[4096];
    char big[800];
    if (which == 0) {
        memset(big, 'k', 700);
        big[700] = '\0';
        snprintf(doc, sizeof doc,
                 "{\"a\":\"x\",\"b\":[1,\"s\",{\"c\":[true],\"%s\":{\"d\":2}}],\"e\":3}", big);
    } else {
        big[0] = '1';
        big[1] = '.';
        memset(big + 2, '5', 297);
        big[299] = '\0';
        snprintf(doc, sizeof doc, "{\"a\":{\"b\":[\"x\",{\"c\":%s}],\"d\":null},\"e\":[]}", big);
    }
    return doc;
}

/* The child: parses oom_doc(which) with json-c's allocations of that
 * size failing (tests/support/preload/failalloc.c, preloaded), and exits
 * 0 for out_of_memory with the parse's message; LeakSanitizer, in the
 * sanitizer build, fails the exit if the part built leaked. */
static int oom_child(const char *which, const char *trigger)
{
    char seen[1100];
    snprintf(seen, sizeof seen, "%s.seen", trigger);
    for (int i = 0; i < 500 && access(seen, F_OK) != 0; i++)
        usleep(10000);
    if (access(seen, F_OK) != 0)
        return 4;
    const char *doc = oom_doc(atoi(which));
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(doc, strlen(doc), 1 << 20, &err);
    if (o) {
        json_object_put(o);
        return 2;
    }
    if (err.reason != VIGIL_REJECT_NO_MEMORY || strcmp(err.detail, "out of memory parsing JSON"))
        return 3;
    return 0;
}

static char g_self_dir[1024];

static void test_out_of_memory_mid_tree(void **state)
{
    (void)state;
    char preload[1200];
    snprintf(preload, sizeof preload, "%s/libvt_failalloc.so", g_self_dir);
    /* built with the tests (tests/CMakeLists.txt): missing is a broken
     * build, not a reason to pass without checking */
    if (access(preload, R_OK) != 0)
        fail_msg("%s is missing", preload);
    const char *sizes[] = {"701", "300"};
    for (int which = 0; which < 2; which++) {
        char trigger[128];
        snprintf(trigger, sizeof trigger, "/tmp/vt_json_build_oom.%d.%d", (int)getpid(), which);
        char seen[160];
        snprintf(seen, sizeof seen, "%s.seen", trigger);
        unlink(seen);
        FILE *f = fopen(trigger, "w");
        assert_non_null(f);
        fclose(f);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            const char *asan = getenv("ASAN_OPTIONS");
            char opts[1024];
            snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", asan ? asan : "",
                     asan && *asan ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
            setenv("LD_PRELOAD", preload, 1);
            setenv("VT_FAILALLOC_TRIGGER", trigger, 1);
            setenv("VT_FAILALLOC_SIZE", sizes[which], 1);
            char w[4];
            snprintf(w, sizeof w, "%d", which);
            execl("/proc/self/exe", "test_json_build", "--oom-child", w, trigger, (char *)NULL);
            _exit(5);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        unlink(trigger);
        unlink(seen);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("out of memory case %d: child %s %d (2: built anyway, 3: other answer, "
                     "4: failing never started; else a leak or crash)",
                     which, WIFEXITED(st) ? "exited" : "killed by",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--oom-child") == 0)
        return oom_child(argv[2], argv[3]);
    ssize_t n = readlink("/proc/self/exe", g_self_dir, sizeof g_self_dir - 1);
    if (n > 0) {
        g_self_dir[n] = '\0';
        char *slash = strrchr(g_self_dir, '/');
        if (slash)
            *slash = '\0';
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes_and_unicode),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_long_tokens),
        cmocka_unit_test(test_depth_as_json_c),
        cmocka_unit_test(test_random_objects),
        cmocka_unit_test(test_corpora),
        cmocka_unit_test(test_out_of_memory_mid_tree),
    };
    return cmocka_run_group_tests_name("json_build", tests, NULL, NULL);
}
