/* Unit tests of json.c: the parse order and every rejection reason, the
 * UTF-8 and id validators at their boundaries, the typed getters, sample
 * escaping, dump, hash and shard. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/json.h"

#define MAX 65536

/* Parses a NUL-terminated literal; asserts the expected reason (NONE means
 * success) and returns the object (caller puts it) or NULL. */
static json_object *parse_expect(const char *s, vigil_reject_reason want)
{
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(s, strlen(s), MAX, &err);
    if (want == VIGIL_REJECT_NONE) {
        if (!o)
            fail_msg("'%s' rejected: %s (%s)", s, vigil_reject_name(err.reason), err.detail);
    } else {
        if (o)
            fail_msg("'%s' accepted, expected %s", s, vigil_reject_name(want));
        if (err.reason != want)
            fail_msg("'%s': got %s (%s), expected %s", s, vigil_reject_name(err.reason),
                     err.detail, vigil_reject_name(want));
        assert_true(err.detail[0] != '\0');
    }
    return o;
}

static void test_reject_names(void **state)
{
    (void)state;
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_OVERSIZE), "oversize");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_UTF8), "invalid_utf8");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_NOT_JSON), "not_json");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_NOT_OBJECT), "not_object");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_MISSING_FIELD), "missing_field");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_WRONG_TYPE), "wrong_type");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_BAD_ID), "bad_id");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_BAD_TOPIC), "bad_topic");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_TOPIC_MISMATCH), "topic_mismatch");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_BAD_VALUE), "bad_value");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT_LIMIT), "limit");
    assert_string_equal(vigil_reject_name(VIGIL_REJECT__COUNT), "unknown");
}

static void test_error_set(void **state)
{
    (void)state;
    vigil_error err = {0};
    assert_int_equal(vigil_error_set(&err, VIGIL_REJECT_BAD_VALUE, "x=%d", 5), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_string_equal(err.detail, "x=5");
    assert_int_equal(vigil_error_set(NULL, VIGIL_REJECT_BAD_VALUE, "x"), -1);
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    vigil_error_set(&err, VIGIL_REJECT_BAD_ID, "%s", big);
    assert_int_equal(strlen(err.detail), sizeof err.detail - 1);
    /* a detail cut by its buffer is cut between characters: "é" (2 bytes)
     * across the last byte is left out whole */
    memset(big, 'a', sizeof err.detail - 2);
    strcpy(big + sizeof err.detail - 2, "\xc3\xa9 more");
    vigil_error_set(&err, VIGIL_REJECT_BAD_ID, "%s", big);
    assert_int_equal(strlen(err.detail), sizeof err.detail - 2);
    assert_true(vigil_utf8_valid(err.detail, strlen(err.detail)));
}

/* Where a text is cut without splitting a character. */
static void test_utf8_cut(void **state)
{
    (void)state;
    const char *s = "ab\xc3\xa9\xf0\x9f\x92\xa4z"; /* a b é 💤 z */
    assert_int_equal(vigil_utf8_cut(s, 0), 0);
    assert_int_equal(vigil_utf8_cut(s, 2), 2);
    assert_int_equal(vigil_utf8_cut(s, 3), 2);  /* inside é */
    assert_int_equal(vigil_utf8_cut(s, 4), 4);
    assert_int_equal(vigil_utf8_cut(s, 5), 4);  /* inside 💤 */
    assert_int_equal(vigil_utf8_cut(s, 7), 4);
    assert_int_equal(vigil_utf8_cut(s, 8), 8);
    assert_int_equal(vigil_utf8_cut(s, 9), 9);
    assert_int_equal(vigil_utf8_cut_max(s, 100), 9); /* the whole text */
    assert_int_equal(vigil_utf8_cut_max(s, 6), 4);
    assert_int_equal(vigil_utf8_cut_max(NULL, 6), 0);
    assert_int_equal(vigil_utf8_cut(NULL, 6), 0);
}

static void test_utf8_copy(void **state)
{
    (void)state;
    const char *s = "ab\xc3\xa9\xf0\x9f\x92\xa4z"; /* a b é 💤 z */
    char out[16];
    memset(out, 'x', sizeof out);
    assert_int_equal(vigil_utf8_copy(out, 4, s), 2); /* 3 bytes would end inside é */
    assert_string_equal(out, "ab");
    assert_int_equal(vigil_utf8_copy(out, 5, s), 4);
    assert_string_equal(out, "ab\xc3\xa9");
    assert_int_equal(vigil_utf8_copy(out, 8, s), 4); /* 7 bytes: inside 💤 */
    assert_string_equal(out, "ab\xc3\xa9");
    assert_int_equal(vigil_utf8_copy(out, 9, s), 8);
    assert_int_equal(vigil_utf8_copy(out, sizeof out, s), 9); /* it fits whole */
    assert_string_equal(out, s);
    assert_int_equal(vigil_utf8_copy(out, 1, s), 0);
    assert_string_equal(out, "");
    assert_int_equal(vigil_utf8_copy(out, sizeof out, NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(vigil_utf8_copy(out, 0, s), 0); /* no room at all: untouched */
    /* a length, no NUL needed: only len bytes are read */
    assert_int_equal(vigil_utf8_copy_n(out, sizeof out, s, 3), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(vigil_utf8_copy_n(out, 6, s, 9), 4);
    assert_string_equal(out, "ab\xc3\xa9");
    assert_int_equal(vigil_utf8_copy_n(out, sizeof out, NULL, 5), 0);
    assert_string_equal(out, "");
}

static void test_utf8_snprintf(void **state)
{
    (void)state;
    char out[8];
    /* fits: as snprintf */
    assert_int_equal(vigil_utf8_snprintf(out, sizeof out, "%s!", "ab\xc3\xa9"), 5);
    assert_string_equal(out, "ab\xc3\xa9!");
    /* cut by the buffer inside 💤: the character is dropped whole */
    assert_int_equal(vigil_utf8_snprintf(out, sizeof out, "x: %s", "ab\xf0\x9f\x92\xa4"), 9);
    assert_string_equal(out, "x: ab");
    assert_true(vigil_utf8_valid(out, strlen(out)));
    /* cut on a boundary: nothing more is dropped */
    assert_int_equal(vigil_utf8_snprintf(out, sizeof out, "%s", "abc\xc3\xa9\xc3\xa9" "d"), 8);
    assert_string_equal(out, "abc\xc3\xa9\xc3\xa9");
}

static void test_utf8_valid_accepts(void **state)
{
    (void)state;
    assert_true(vigil_utf8_valid("", 0));
    assert_true(vigil_utf8_valid(NULL, 0));
    assert_true(vigil_utf8_valid("plain ascii", 11));
    assert_true(vigil_utf8_valid("\xc2\x80", 2));             /* U+0080 */
    assert_true(vigil_utf8_valid("\xdf\xbf", 2));             /* U+07FF */
    assert_true(vigil_utf8_valid("\xe0\xa0\x80", 3));         /* U+0800 */
    assert_true(vigil_utf8_valid("\xed\x9f\xbf", 3));         /* U+D7FF */
    assert_true(vigil_utf8_valid("\xee\x80\x80", 3));         /* U+E000 */
    assert_true(vigil_utf8_valid("\xef\xbf\xbf", 3));         /* U+FFFF */
    assert_true(vigil_utf8_valid("\xf0\x90\x80\x80", 4));     /* U+10000 */
    assert_true(vigil_utf8_valid("\xf4\x8f\xbf\xbf", 4));     /* U+10FFFF */
    assert_true(vigil_utf8_valid("\xf0\x9f\x92\xa4 \xe2\x9c\xa8", 8)); /* 💤 ✨ */
}

static void test_utf8_valid_rejects(void **state)
{
    (void)state;
    assert_false(vigil_utf8_valid("a\0b", 3));                /* NUL */
    assert_false(vigil_utf8_valid("\xc0\x80", 2));            /* overlong NUL */
    assert_false(vigil_utf8_valid("\xc1\xbf", 2));            /* overlong */
    assert_false(vigil_utf8_valid("\xe0\x80\x80", 3));        /* overlong */
    assert_false(vigil_utf8_valid("\xe0\x9f\xbf", 3));        /* overlong */
    assert_false(vigil_utf8_valid("\xf0\x80\x80\x80", 4));    /* overlong */
    assert_false(vigil_utf8_valid("\xf0\x8f\xbf\xbf", 4));    /* overlong */
    assert_false(vigil_utf8_valid("\xed\xa0\x80", 3));        /* U+D800 */
    assert_false(vigil_utf8_valid("\xed\xbf\xbf", 3));        /* U+DFFF */
    assert_false(vigil_utf8_valid("\xf4\x90\x80\x80", 4));    /* U+110000 */
    assert_false(vigil_utf8_valid("\xf5\x80\x80\x80", 4));    /* F5 lead */
    assert_false(vigil_utf8_valid("\xff", 1));
    assert_false(vigil_utf8_valid("\xfe", 1));
    assert_false(vigil_utf8_valid("\x80", 1));                /* stray continuation */
    assert_false(vigil_utf8_valid("a\xbf", 2));
    assert_false(vigil_utf8_valid("\xc2", 1));                /* truncated */
    assert_false(vigil_utf8_valid("\xe2\x9c", 2));
    assert_false(vigil_utf8_valid("\xf0\x9f\x92", 3));
    assert_false(vigil_utf8_valid("\xe2\x9c" "a", 3));        /* bad continuation */
    assert_false(vigil_utf8_valid("\xf0\x9f\x92" "a", 4));
    /* the length is honoured: the valid prefix alone passes */
    assert_true(vigil_utf8_valid("ab\xff", 2));
}

static void test_id_valid(void **state)
{
    (void)state;
    char id[66];
    memset(id, 'a', 65);
    id[65] = '\0';
    assert_true(vigil_id_valid(id, 64));
    assert_false(vigil_id_valid(id, 65));
    assert_true(vigil_id_valid("a", 1));
    assert_true(vigil_id_valid(".", 1));
    assert_true(vigil_id_valid("_", 1));
    assert_true(vigil_id_valid("-", 1));
    assert_true(vigil_id_valid("Room-1.general_B", 16));
    assert_false(vigil_id_valid("", 0));
    assert_false(vigil_id_valid(NULL, 3));
    assert_false(vigil_id_valid("$x", 2));
    assert_false(vigil_id_valid("a/b", 3));
    assert_false(vigil_id_valid("a+b", 3));
    assert_false(vigil_id_valid("a#b", 3));
    assert_false(vigil_id_valid("a b", 3));
    assert_false(vigil_id_valid("a\0b", 3));
    assert_false(vigil_id_valid("caf\xc3\xa9", 5));
    assert_false(vigil_id_valid("a:b", 3));
}

static void test_parse_accepts_objects(void **state)
{
    (void)state;
    json_object *o = parse_expect("{\"a\":1}", VIGIL_REJECT_NONE);
    json_object_put(o);
    o = parse_expect(" \t\r\n{\"a\":[1,2.5e-3,-0,true,false,null,\"\\u00e9\\n\"]} \n", VIGIL_REJECT_NONE);
    json_object_put(o);
    o = parse_expect("{}", VIGIL_REJECT_NONE);
    json_object_put(o);
    o = parse_expect("{\"t\":\"\xf0\x9f\x92\xa4\"}", VIGIL_REJECT_NONE);
    assert_string_equal(json_object_get_string(json_object_object_get(o, "t")), "\xf0\x9f\x92\xa4");
    json_object_put(o);
}

/* The payload is not NUL-terminated: bytes after len must not be read. */
static void test_parse_uses_length(void **state)
{
    (void)state;
    const char buf[] = "{\"a\":1}GARBAGE";
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(buf, 7, MAX, &err);
    assert_non_null(o);
    json_object_put(o);
    char *heap = malloc(7);
    memcpy(heap, "{\"b\":2}", 7);
    o = vigil_json_parse_object(heap, 7, MAX, &err);
    assert_non_null(o);
    json_object_put(o);
    free(heap);
}

static void test_parse_not_json(void **state)
{
    (void)state;
    parse_expect("{\"a\":1} x", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":1", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":1}}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":1}{}", VIGIL_REJECT_NOT_JSON);
    parse_expect("", VIGIL_REJECT_NOT_JSON);
    parse_expect("   ", VIGIL_REJECT_NOT_JSON);
    parse_expect("nul", VIGIL_REJECT_NOT_JSON);
    parse_expect("NaN", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":\"x", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":1,}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\" 1}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{a:1}", VIGIL_REJECT_NOT_JSON);
    parse_expect("[1,]", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":01}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":.5}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":+1}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":1e}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":tru}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":\"\\x41\"}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":\"\\u12G4\"}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":1}\v", VIGIL_REJECT_NOT_JSON);
}

/* Things json-c 0.16 accepts even with JSON_TOKENER_STRICT (checked on
 * this machine) but that are not JSON; the strict pre-check refuses them. */
static void test_parse_rejects_json_c_leniency(void **state)
{
    (void)state;
    parse_expect("{\"a\":NaN}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":Infinity}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":-Infinity}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{'a':1}", VIGIL_REJECT_NOT_JSON);
    parse_expect("{\"a\":\"x\ty\"}", VIGIL_REJECT_NOT_JSON); /* raw control char */
    parse_expect("{\"a\":1.}", VIGIL_REJECT_NOT_JSON);
}

static void test_parse_not_object(void **state)
{
    (void)state;
    parse_expect("[1]", VIGIL_REJECT_NOT_OBJECT);
    parse_expect("\"x\"", VIGIL_REJECT_NOT_OBJECT);
    parse_expect("1", VIGIL_REJECT_NOT_OBJECT);
    parse_expect("-1.5e3", VIGIL_REJECT_NOT_OBJECT);
    parse_expect("true", VIGIL_REJECT_NOT_OBJECT);
    parse_expect("null", VIGIL_REJECT_NOT_OBJECT);
    parse_expect(" [] ", VIGIL_REJECT_NOT_OBJECT);
}

/* Builds {"a":[[...]]} with `levels` nested containers in total. */
static char *nested(int levels)
{
    size_t n = (size_t)levels * 2 + 16;
    char *s = malloc(n);
    size_t k = 0;
    k += (size_t)sprintf(s, "{\"a\":");
    for (int i = 1; i < levels; i++)
        s[k++] = '[';
    for (int i = 1; i < levels; i++)
        s[k++] = ']';
    s[k++] = '}';
    s[k] = '\0';
    return s;
}

static void test_parse_depth(void **state)
{
    (void)state;
    char *s = nested(32);
    json_object *o = parse_expect(s, VIGIL_REJECT_NONE);
    json_object_put(o);
    free(s);
    s = nested(33);
    parse_expect(s, VIGIL_REJECT_NOT_JSON);
    free(s);
    s = nested(5000);
    parse_expect(s, VIGIL_REJECT_NOT_JSON);
    free(s);
}

static void test_parse_oversize_first(void **state)
{
    (void)state;
    size_t n = 1024 * 1024;
    char *big = malloc(n);
    memset(big, 0xff, n); /* invalid UTF-8 too: size is checked first */
    vigil_error err = {0};
    assert_null(vigil_json_parse_object(big, n, 65536, &err));
    assert_int_equal(err.reason, VIGIL_REJECT_OVERSIZE);
    assert_non_null(strstr(err.detail, "1048576"));
    free(big);

    /* exactly max is fine, max + 1 is not */
    char buf[16] = "{\"a\":12345}";
    json_object *o = vigil_json_parse_object(buf, 11, 11, &err);
    assert_non_null(o);
    json_object_put(o);
    assert_null(vigil_json_parse_object(buf, 11, 10, &err));
    assert_int_equal(err.reason, VIGIL_REJECT_OVERSIZE);
}

static void test_parse_utf8_before_syntax(void **state)
{
    (void)state;
    parse_expect("{\"a\":\"\xff\"}", VIGIL_REJECT_UTF8);
    parse_expect("\xff not json", VIGIL_REJECT_UTF8);
    parse_expect("{\"a\":\"\xed\xa0\x80\"}", VIGIL_REJECT_UTF8);
    parse_expect("{\"a\":\"\xc0\x80\"}", VIGIL_REJECT_UTF8);
    vigil_error err = {0};
    const char nul[] = "{\"a\":\"x\0y\"}";
    assert_null(vigil_json_parse_object(nul, sizeof nul - 1, MAX, &err));
    assert_int_equal(err.reason, VIGIL_REJECT_UTF8);
    assert_string_equal(err.detail, "invalid UTF-8 at byte 7");
}

static json_object *sample_obj(void)
{
    const char *s = "{\"room\":\"general\",\"n\":5,\"big\":9223372036854775808,"
                    "\"neg\":-9223372036854775808,\"d\":2.5,\"di\":3.0,\"e\":1e999,"
                    "\"t\":true,\"nul\":null,\"arr\":[1],\"obj\":{\"x\":1},"
                    "\"status\":\"x\",\"ok\":\"idle\",\"bad_id\":\"a/b\",\"z\":\"a\\u0000b\","
                    "\"huge\":1e300}";
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(s, strlen(s), MAX, &err);
    assert_non_null(o);
    return o;
}

static void test_get_string(void **state)
{
    (void)state;
    json_object *o = sample_obj();
    vigil_error err = {0};
    const char *s = NULL;
    assert_int_equal(vigil_json_string(o, "room", true, &s, &err), 0);
    assert_string_equal(s, "general");

    assert_int_equal(vigil_json_string(o, "n", true, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_string_equal(err.detail, "field 'n': expected string, got int");

    assert_int_equal(vigil_json_string(o, "text", true, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_MISSING_FIELD);
    assert_string_equal(err.detail, "missing required field 'text'");

    s = "untouched";
    assert_int_equal(vigil_json_string(o, "text", false, &s, &err), 1);
    assert_string_equal(s, "untouched");
    /* null counts as absent */
    assert_int_equal(vigil_json_string(o, "nul", false, &s, &err), 1);
    assert_int_equal(vigil_json_string(o, "nul", true, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_MISSING_FIELD);
    /* an embedded NUL would silently shorten the value */
    assert_int_equal(vigil_json_string(o, "z", true, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_string_equal(err.detail, "field 'z': string contains NUL");
    json_object_put(o);
}

/* The rule behind vigil_json_string, for callers with their own texts:
 * absent, another type, a NUL inside, or the string. */
static void test_str_check(void **state)
{
    (void)state;
    json_object *o = sample_obj(), *v = NULL;
    const char *s = "untouched";
    assert_int_equal(vigil_json_str_check(NULL, &s), VIGIL_JSON_STR_ABSENT);
    assert_true(json_object_object_get_ex(o, "n", &v));
    assert_int_equal(vigil_json_str_check(v, &s), VIGIL_JSON_STR_NOT_STRING);
    assert_true(json_object_object_get_ex(o, "z", &v));
    assert_int_equal(vigil_json_str_check(v, &s), VIGIL_JSON_STR_HAS_NUL);
    assert_string_equal(s, "untouched"); /* set only when OK */
    assert_true(json_object_object_get_ex(o, "room", &v));
    assert_int_equal(vigil_json_str_check(v, &s), VIGIL_JSON_STR_OK);
    assert_string_equal(s, "general");
    assert_int_equal(vigil_json_str_check(v, NULL), VIGIL_JSON_STR_OK);
    json_object_put(o);
}

static void test_get_id(void **state)
{
    (void)state;
    json_object *o = sample_obj();
    vigil_error err = {0};
    const char *s = NULL;
    assert_int_equal(vigil_json_id(o, "room", true, &s, &err), 0);
    assert_string_equal(s, "general");
    assert_int_equal(vigil_json_id(o, "bad_id", true, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_ID);
    assert_non_null(strstr(err.detail, "field 'bad_id': 'a/b' is not a valid id"));
    assert_int_equal(vigil_json_id(o, "n", true, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(vigil_json_id(o, "missing", false, &s, &err), 1);
    json_object_put(o);
}

static void test_get_int64(void **state)
{
    (void)state;
    json_object *o = sample_obj();
    vigil_error err = {0};
    int64_t v = 0;
    assert_int_equal(vigil_json_int64(o, "n", true, &v, &err), 0);
    assert_int_equal(v, 5);
    assert_int_equal(vigil_json_int64(o, "di", true, &v, &err), 0);
    assert_int_equal(v, 3);
    assert_int_equal(vigil_json_int64(o, "neg", true, &v, &err), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(vigil_json_int64(o, "d", true, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(vigil_json_int64(o, "big", true, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_int_equal(vigil_json_int64(o, "huge", true, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_int_equal(vigil_json_int64(o, "room", true, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_string_equal(err.detail, "field 'room': expected int, got string");
    v = 42;
    assert_int_equal(vigil_json_int64(o, "nope", false, &v, &err), 1);
    assert_int_equal(v, 42);
    json_object_put(o);
}

static void test_get_double_bool(void **state)
{
    (void)state;
    json_object *o = sample_obj();
    vigil_error err = {0};
    double d = 0;
    assert_int_equal(vigil_json_double(o, "d", true, &d, &err), 0);
    assert_true(d == 2.5);
    assert_int_equal(vigil_json_double(o, "n", true, &d, &err), 0);
    assert_true(d == 5.0);
    assert_int_equal(vigil_json_double(o, "e", true, &d, &err), -1); /* 1e999 = inf */
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_int_equal(vigil_json_double(o, "t", true, &d, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_string_equal(err.detail, "field 't': expected number, got boolean");

    bool b = false;
    assert_int_equal(vigil_json_bool(o, "t", true, &b, &err), 0);
    assert_true(b);
    assert_int_equal(vigil_json_bool(o, "n", true, &b, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(vigil_json_bool(o, "absent", true, &b, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_MISSING_FIELD);
    json_object_put(o);
}

static void test_get_enum(void **state)
{
    (void)state;
    static const char *const STATUS[] = {"active", "idle", "away", NULL};
    json_object *o = sample_obj();
    vigil_error err = {0};
    int idx = -1;
    assert_int_equal(vigil_json_enum(o, "ok", true, STATUS, &idx, &err), 0);
    assert_int_equal(idx, 1);
    assert_int_equal(vigil_json_enum(o, "status", true, STATUS, &idx, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_string_equal(err.detail, "field 'status': expected one of active|idle|away, got \"x\"");
    assert_int_equal(vigil_json_enum(o, "n", true, STATUS, &idx, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(vigil_json_enum(o, "absent", false, STATUS, &idx, &err), 1);
    json_object_put(o);
}

static void test_get_array_object(void **state)
{
    (void)state;
    json_object *o = sample_obj();
    vigil_error err = {0};
    json_object *v = NULL;
    assert_int_equal(vigil_json_array(o, "arr", true, &v, &err), 0);
    assert_int_equal(json_object_array_length(v), 1);
    assert_int_equal(vigil_json_array(o, "obj", true, &v, &err), -1);
    assert_string_equal(err.detail, "field 'obj': expected array, got object");
    assert_int_equal(vigil_json_object(o, "obj", true, &v, &err), 0);
    assert_true(json_object_is_type(v, json_type_object));
    assert_int_equal(vigil_json_object(o, "arr", true, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(vigil_json_object(o, "absent", false, &v, &err), 1);
    assert_int_equal(vigil_json_array(NULL, "arr", true, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_MISSING_FIELD);
    json_object_put(o);
}

static void test_error_event(void **state)
{
    (void)state;
    json_object *o = vigil_error_event_new("err-0000000000000abc", "svc", "room/r/message",
                                           "bad_json", "not JSON", "{x");
    assert_non_null(o);
    json_object_object_add(o, "ts", json_object_new_int64(1700000000123LL));
    char *s = vigil_json_dump(o);
    assert_string_equal(s, "{\"id\":\"err-0000000000000abc\",\"service\":\"svc\","
                           "\"topic\":\"room/r/message\",\"reason\":\"bad_json\",\"detail\":"
                           "\"not JSON\",\"sample\":\"{x\",\"ts\":1700000000123}");
    free(s);
    json_object_put(o);
}

static void test_sample(void **state)
{
    (void)state;
    char out[1200];
    vigil_json_sample("{\"a\":1}", 7, out, sizeof out);
    assert_string_equal(out, "{\"a\":1}");
    vigil_json_sample("a\xff" "b\\c\n\x01", 7, out, sizeof out);
    assert_string_equal(out, "a\\xffb\\\\c\\x0a\\x01");
    vigil_json_sample("\xe2\x9c\xa8!", 4, out, sizeof out);
    assert_string_equal(out, "\xe2\x9c\xa8!");
    vigil_json_sample("x\0y", 3, out, sizeof out);
    assert_string_equal(out, "x\\x00y");
    assert_true(vigil_utf8_valid(out, strlen(out)));

    /* only the first 200 bytes, even for a long payload */
    char big[1000];
    memset(big, 'q', sizeof big);
    vigil_json_sample(big, sizeof big, out, sizeof out);
    assert_int_equal(strlen(out), 200);

    /* 200 invalid bytes -> 800 chars, still valid UTF-8 */
    memset(big, 0xfe, sizeof big);
    vigil_json_sample(big, sizeof big, out, sizeof out);
    assert_int_equal(strlen(out), 800);
    assert_true(vigil_utf8_valid(out, strlen(out)));

    /* a small buffer cuts between escapes, never inside one */
    char small[7];
    vigil_json_sample("\xff\xff", 2, small, sizeof small);
    assert_string_equal(small, "\\xff");
    vigil_json_sample("abc", 3, small, 1);
    assert_string_equal(small, "");

    /* the result survives a round trip through a json-c string */
    vigil_json_sample("\"q\"\xc3", 4, out, sizeof out);
    json_object *s = json_object_new_string(out);
    const char *txt = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN);
    vigil_error err = {0};
    char wrapped[256];
    snprintf(wrapped, sizeof wrapped, "{\"s\":%s}", txt);
    json_object *back = vigil_json_parse_object(wrapped, strlen(wrapped), MAX, &err);
    assert_non_null(back);
    assert_string_equal(json_object_get_string(json_object_object_get(back, "s")), "\"q\"\\xc3");
    json_object_put(back);
    json_object_put(s);
}

static void test_dump(void **state)
{
    (void)state;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "topic", json_object_new_string("room/a/message"));
    json_object_object_add(o, "n", json_object_new_int(3));
    char *s = vigil_json_dump(o);
    assert_string_equal(s, "{\"topic\":\"room/a/message\",\"n\":3}");
    free(s);
    json_object_put(o);
}

static void test_hash_and_shard(void **state)
{
    (void)state;
    /* FNV-1a 64 reference values */
    assert_true(vigil_hash64("", 0) == 0xcbf29ce484222325ull);
    assert_true(vigil_hash64("a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(vigil_hash64("foobar", 6) == 0x85944171f73967e8ull);

    assert_int_equal(vigil_shard_of("general", 1), 0);
    assert_int_equal(vigil_shard_of("general", 0), 0);
    assert_int_equal(vigil_shard_of("general", -3), 0);
    assert_int_equal(vigil_shard_of("a", 7), (int)(0xaf63dc4c8601ec8cull % 7));
    int seen[4] = {0};
    char key[32];
    for (int i = 0; i < 400; i++) {
        snprintf(key, sizeof key, "room-%d", i);
        int s = vigil_shard_of(key, 4);
        assert_true(s >= 0 && s < 4);
        seen[s]++;
    }
    for (int i = 0; i < 4; i++)
        assert_true(seen[i] > 50); /* roughly even */
}

static void test_string_bounded_and_array(void **state)
{
    (void)state;
    vigil_error err;
    json_object *o = json_tokener_parse(
        "{\"a\":\"abc\",\"e\":\"\",\"ids\":[\"ann\",\"bob\"],\"bad\":[\"ok\",\"a/b\"],"
        "\"mixed\":[\"x\",3],\"words\":[\"a b\"],\"nul\":[\"a\",\"b\\u0000c\"]}");
    const char *v = NULL;
    assert_int_equal(vigil_json_string_bounded(o, "a", true, 3, &v, &err), 0);
    assert_string_equal(v, "abc");
    assert_int_equal(vigil_json_string_bounded(o, "a", true, 2, &v, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_int_equal(vigil_json_string_bounded(o, "e", true, 9, &v, &err), -1);
    v = NULL;
    assert_int_equal(vigil_json_string_bounded(o, "none", false, 9, &v, &err), 1);
    assert_null(v);

    const char **arr = NULL;
    int n = -1;
    assert_int_equal(vigil_json_string_array(o, "ids", true, true, 8, &arr, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(arr[1], "bob");
    assert_null(arr[2]);
    free(arr);
    assert_int_equal(vigil_json_string_array(o, "ids", true, true, 1, &arr, &n, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_int_equal(vigil_json_string_array(o, "bad", true, true, 8, &arr, &n, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_ID);
    assert_string_equal(err.detail, "field 'bad[1]': expected 1-64 characters of A-Z a-z 0-9 . _ -");
    assert_int_equal(vigil_json_string_array(o, "mixed", true, false, 8, &arr, &n, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_WRONG_TYPE);
    assert_int_equal(vigil_json_string_array(o, "words", true, false, 8, &arr, &n, &err), 0);
    free(arr);
    /* an element holding a NUL would be read shorter ("b"): refused */
    assert_int_equal(vigil_json_string_array(o, "nul", true, false, 8, &arr, &n, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    assert_string_equal(err.detail, "field 'nul[1]': string contains NUL");
    assert_null(arr);
    assert_int_equal(vigil_json_string_array(o, "none", false, true, 8, &arr, &n, &err), 1);
    assert_null(arr);
    assert_int_equal(n, 0);
    assert_int_equal(vigil_json_string_array(o, "none", true, true, 8, &arr, &n, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_MISSING_FIELD);
    json_object_put(o);
}

/* vigil_json_dump writes what json-c prints (PLAIN | NOSLASHESCAPE), byte
 * for byte, for documents it writes itself (strings, integers, booleans,
 * null, nesting) and for those it leaves to json-c (doubles, integers past
 * int64, NUL bytes in strings, deep nesting). */
static void test_dump_equals_json_c(void **state)
{
    (void)state;
    const char *docs[] = {
        "{}",
        "[]",
        "{\"id\":\"m-1\",\"room\":\"general\",\"sender\":\"ann\",\"sender_type\":\"human\","
        "\"text\":\"hi @bob \\\"q\\\" \\\\ a/b \\n\\t\\u0001 \\u00e9 \\ud83d\\ude00\",\"ts\":1732448000000}",
        "{\"a\":[1,-2,0,-0,9223372036854775806,-9223372036854775808],\"b\":[true,false,null],"
        "\"c\":{\"d\":{\"e\":[[],{},[{}]]}},\"f\":\"\"}",
        "{\"x\":1.5,\"y\":\"z\"}",
        "{\"x\":[1,2,3e2]}",
        "{\"big\":9223372036854775807}",
        "{\"bigger\":18446744073709551615}",
        "{\"nul\":\"a\\u0000b\"}",
        "{\"k\\\"ey\\n\":\"v\",\"\\u00e9\":1}",
        "[\"x\",{\"y\":null}]",
        "{\"dup\":1,\"dup\":2}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_object *o = json_tokener_parse(docs[i]);
        assert_non_null(o);
        char *mine = vigil_json_dump(o);
        const char *want = json_object_to_json_string_ext(
            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        assert_non_null(mine);
        assert_string_equal(mine, want);
        free(mine);
        json_object_put(o);
    }
    /* nesting deeper than the writer goes: left to json-c, same text */
    json_object *deep = json_object_new_array(), *at = deep;
    for (int d = 0; d < 80; d++) {
        json_object *inner = json_object_new_array();
        json_object_array_add(at, inner);
        at = inner;
    }
    json_object_array_add(at, json_object_new_string("bottom"));
    char *mine = vigil_json_dump(deep);
    assert_string_equal(mine, json_object_to_json_string_ext(
                                  deep, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    free(mine);
    json_object_put(deep);
}

/* The syntax pass alone: what vigil_json_parse_object accepts and
 * refuses as syntax, for any top level, without building a tree. */
static void test_valid_without_parsing(void **state)
{
    (void)state;
    const char *good[] = {"{}", "[]", "1", "-0.5e3", "\"s\"", "true", "null", " {\"a\":[1,{}]} ",
                          "{\"\\u00e9\":\"\xc3\xa9\"}"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(vigil_json_valid(good[i], strlen(good[i]), false));
    const char *bad[] = {"", " ", "{", "{}x", "NaN", "Infinity", "'a'", "{'a':1}", "01",
                         "\"tab\there\"", "\"\xff\"", "[1,]", "{\"a\":1,}", "tru"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(vigil_json_valid(bad[i], strlen(bad[i]), false));
    assert_true(vigil_json_valid(" {\"a\":1}", 8, true));
    assert_false(vigil_json_valid("[1]", 3, true));
    assert_false(vigil_json_valid("1", 1, true));
    assert_false(vigil_json_valid("{\"a\":\"\0\"}", 9, false)); /* a NUL byte */
    assert_false(vigil_json_valid(NULL, 0, false));
}

/* The checks step over 8 plain bytes at a time: a byte that matters is
 * seen at every position of a word and after every length of plain
 * prefix (NUL, a bad UTF-8 byte, a control character refused; a quote
 * ending the string and an escape read as such, so what follows is
 * checked as what it is). */
static void test_checks_see_every_byte_position(void **state)
{
    (void)state;
    for (size_t pre = 0; pre < 20; pre++) {
        char buf[64];
        /* {"a":"<pre x's><byte>yyyyyyyyyyyy"} */
        memcpy(buf, "{\"a\":\"", 6);
        size_t n = 6;
        memset(buf + n, 'x', pre);
        n += pre;
        size_t at = n;
        const char tail[] = "yyyyyyyyyyyy\"}";
        memcpy(buf + n + 1, tail, sizeof tail - 1);
        size_t len = n + 1 + sizeof tail - 1;
        buf[len] = '\0';

        buf[at] = 'z'; /* plain: valid */
        assert_true(vigil_json_valid(buf, len, true));
        assert_true(vigil_utf8_valid(buf, len));
        buf[at] = '\0'; /* NUL: not UTF-8 text we accept */
        assert_false(vigil_utf8_valid(buf, len));
        assert_false(vigil_json_valid(buf, len, true));
        buf[at] = (char)0xff; /* never valid in UTF-8 */
        assert_false(vigil_utf8_valid(buf, len));
        assert_false(vigil_json_valid(buf, len, true));
        buf[at] = (char)0xc3; /* a lead byte without its continuation */
        assert_false(vigil_utf8_valid(buf, len));
        buf[at] = (char)0xc3; /* with it: an e acute, valid */
        buf[at + 1] = (char)0xa9;
        assert_true(vigil_utf8_valid(buf, len));
        assert_true(vigil_json_valid(buf, len, true));
        buf[at + 1] = 'y';
        buf[at] = '\t'; /* a raw control character in a string */
        assert_true(vigil_utf8_valid(buf, len));
        assert_false(vigil_json_valid(buf, len, true));
        buf[at] = '"'; /* ends the string early: the y's are then outside it */
        assert_false(vigil_json_valid(buf, len, true));
        buf[at] = '\\'; /* escapes the first y: not an escape */
        assert_false(vigil_json_valid(buf, len, true));
    }
}

/* vigil_json_member finds what json_object_object_get_ex finds, in an
 * object scanned member by member and in one larger than the scan. */
static void test_member_as_get_ex(void **state)
{
    (void)state;
    const char *small = "{\"a\":1,\"ab\":\"x\",\"n\":null,\"a\":2,\"b\\u0000c\":3}";
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(small, strlen(small), 4096, &err);
    assert_non_null(o);
    const char *names[] = {"a", "ab", "n", "b", "abc", "", "z"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_object *want = NULL;
        if (!json_object_object_get_ex(o, names[i], &want))
            want = NULL;
        assert_ptr_equal(vigil_json_member(o, names[i]), want);
    }
    assert_int_equal(json_object_get_int(vigil_json_member(o, "a")), 2); /* the later one */
    assert_null(vigil_json_member(o, "n"));
    assert_null(vigil_json_member(NULL, "a"));
    assert_null(vigil_json_member(o, NULL));
    json_object *arr = json_object_new_array();
    assert_null(vigil_json_member(arr, "a"));
    json_object_put(arr);
    json_object_put(o);

    json_object *big = json_object_new_object();
    char k[16];
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof k, "k%d", i);
        json_object_object_add(big, k, json_object_new_int(i));
    }
    for (int i = 0; i < 45; i++) {
        snprintf(k, sizeof k, "k%d", i);
        json_object *want = NULL;
        if (!json_object_object_get_ex(big, k, &want))
            want = NULL;
        assert_ptr_equal(vigil_json_member(big, k), want);
        if (i < 40)
            assert_int_equal(json_object_get_int(vigil_json_member(big, k)), i);
    }
    json_object_put(big);
}

/* A stored record's number beyond +-VIGIL_RECORD_INT_MAX is damage: it
 * reads as the default, so a later sum or increment cannot overflow. */
static void test_record_int_bounds(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse("[5, -5, 2305843009213693951, 2305843009213693952, "
                                        "-2305843009213693952, 9223372036854775807, 1e300, "
                                        "\"12\", true, null]");
    assert_non_null(o);
    int64_t want[] = { 5, -5, VIGIL_RECORD_INT_MAX, 7, 7, 7, 7, 12, 1, 0 };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_int_equal(vigil_record_int(json_object_array_get_idx(o, i), 7), want[i]);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reject_names),
        cmocka_unit_test(test_dump_equals_json_c),
        cmocka_unit_test(test_error_event),
        cmocka_unit_test(test_error_set),
        cmocka_unit_test(test_utf8_valid_accepts),
        cmocka_unit_test(test_utf8_valid_rejects),
        cmocka_unit_test(test_utf8_cut),
        cmocka_unit_test(test_utf8_copy),
        cmocka_unit_test(test_utf8_snprintf),
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_parse_accepts_objects),
        cmocka_unit_test(test_parse_uses_length),
        cmocka_unit_test(test_parse_not_json),
        cmocka_unit_test(test_parse_rejects_json_c_leniency),
        cmocka_unit_test(test_parse_not_object),
        cmocka_unit_test(test_parse_depth),
        cmocka_unit_test(test_parse_oversize_first),
        cmocka_unit_test(test_parse_utf8_before_syntax),
        cmocka_unit_test(test_get_string),
        cmocka_unit_test(test_str_check),
        cmocka_unit_test(test_get_id),
        cmocka_unit_test(test_get_int64),
        cmocka_unit_test(test_get_double_bool),
        cmocka_unit_test(test_get_enum),
        cmocka_unit_test(test_get_array_object),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_hash_and_shard),
        cmocka_unit_test(test_string_bounded_and_array),
        cmocka_unit_test(test_valid_without_parsing),
        cmocka_unit_test(test_checks_see_every_byte_position),
        cmocka_unit_test(test_record_int_bounds),
        cmocka_unit_test(test_member_as_get_ex),
    };
    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
