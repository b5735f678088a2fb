/* Unit tests of reading model output (llm_parse.c): a corpus of good,
 * fenced, prose-wrapped, truncated, wrong-typed and hostile answers in
 * tests/unit/llm_corpus/, plus generated hostile inputs (deep nesting,
 * a megabyte of garbage) that must fail clearly and quickly.
 *
 * Corpus files are loaded into buffers of exactly their size with no NUL
 * terminator, so ASan catches any read past the length. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vigil/llm.h"

/* Generous bound for one parse of a megabyte under ASan on a slow box;
 * the point is "linear, not quadratic" (quadratic would take minutes). */
#define HOSTILE_MAX_MS 3000

static char g_corpus_dir[1024];

static void find_corpus_dir(void)
{
    const char *src = getenv("VIGIL_SOURCE_DIR");
    if (src && *src) {
        snprintf(g_corpus_dir, sizeof g_corpus_dir, "%s/tests/unit/llm_corpus", src);
        return;
    }
    /* __FILE__ is absolute under CMake: .../tests/unit/test_llm_parse.c */
    snprintf(g_corpus_dir, sizeof g_corpus_dir, "%s", __FILE__);
    char *slash = strrchr(g_corpus_dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(g_corpus_dir, sizeof g_corpus_dir, ".");
    strncat(g_corpus_dir, "/llm_corpus", sizeof g_corpus_dir - strlen(g_corpus_dir) - 1);
}

/* Reads a corpus file into a malloc'd buffer of exactly its size (at least
 * 1 byte allocated so an empty file still gives a non-NULL pointer). */
static char *load(const char *name, size_t *len)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_corpus_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open corpus file %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    assert_int_equal(got, (size_t)n);
    *len = (size_t)n;
    return buf;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* Object corpus                                                      */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *file;
    vigil_llm_parse_status want;
    int should_wake;    /* expected shouldWake (-1: not checked) */
    double confidence;  /* expected confidence (< 0: not checked) */
    const char *reason; /* expected reason (NULL: not checked) */
} obj_case;

static const obj_case OBJ_CASES[] = {
    {"good_plain.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage needs the SRE"},
    {"good_pretty.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_fenced_json.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_fenced_bare.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_fenced_upper_tag.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_prose_before.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_prose_around.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_prose_braces_then_fence.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    /* the fenced answer wins over a valid example in the prose */
    {"good_example_then_fence.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_braces_in_strings.txt", VIGIL_LLM_PARSE_OK, 1, 0.92,
     "user typed \"}{\" and {curly} [brackets] ]]"},
    {"good_escaped_backslash.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "path C:\\ends\\ here\\"},
    {"good_snake_case.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_python_dict.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_trailing_comma.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_array_before_object.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_broken_then_good.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_two_objects.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_nested.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_crlf_bom.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_nul_in_prose.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_bad_utf8_in_prose.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, "server outage"},
    {"good_unicode.txt", VIGIL_LLM_PARSE_OK, 1, 0.92, NULL},
    /* found, but every field is mistyped: readers fall back (checked below) */
    {"wrong_typed.txt", VIGIL_LLM_PARSE_OK, -1, -1, NULL},
    {"wrong_typed_2.txt", VIGIL_LLM_PARSE_OK, -1, -1, NULL},
    {"empty_object.txt", VIGIL_LLM_PARSE_OK, 0, 0.5, NULL},
    /* [{"shouldWake": true}]: the one object wrapped in an array is the answer */
    {"only_array.txt", VIGIL_LLM_PARSE_OK, 1, 0.5, NULL},
    /* two objects in the array: which one is meant is unknown */
    {"only_array_two.txt", VIGIL_LLM_PARSE_WRONG_TYPE, -1, -1, NULL},
    {"no_json.txt", VIGIL_LLM_PARSE_NOT_FOUND, -1, -1, NULL},
    {"whitespace.txt", VIGIL_LLM_PARSE_EMPTY, -1, -1, NULL},
    {"truncated.txt", VIGIL_LLM_PARSE_UNBALANCED, -1, -1, NULL},
    /* never the inner {"signals":..} of a cut-off answer */
    {"truncated_nested.txt", VIGIL_LLM_PARSE_UNBALANCED, -1, -1, NULL},
    {"truncated_fenced.txt", VIGIL_LLM_PARSE_UNBALANCED, -1, -1, NULL},
    {"unterminated_string.txt", VIGIL_LLM_PARSE_UNBALANCED, -1, -1, NULL},
    {"invalid_json.txt", VIGIL_LLM_PARSE_INVALID, -1, -1, NULL},
    {"nul_inside.bin", VIGIL_LLM_PARSE_BAD_UTF8, -1, -1, NULL},
    {"bad_utf8_inside.bin", VIGIL_LLM_PARSE_BAD_UTF8, -1, -1, NULL},
    {"surrogate_inside.bin", VIGIL_LLM_PARSE_BAD_UTF8, -1, -1, NULL},
};

static void object_corpus(void **unused)
{
    (void)unused;
    size_t ncases = sizeof OBJ_CASES / sizeof OBJ_CASES[0];
    int failures = 0;
    for (size_t i = 0; i < ncases; i++) {
        const obj_case *tc = &OBJ_CASES[i];
        size_t len;
        char *text = load(tc->file, &len);
        vigil_llm_parse_error err;
        json_object *o = vigil_llm_extract_object(text, len, &err);
        bool ok = true;
        if (err.status != tc->want || (tc->want == VIGIL_LLM_PARSE_OK) != (o != NULL)) {
            print_error("%s: want %s, got %s (%s)\n", tc->file,
                        vigil_llm_parse_status_name(tc->want),
                        vigil_llm_parse_status_name(err.status), err.detail);
            ok = false;
        }
        if (o && ok) {
            assert_true(json_object_is_type(o, json_type_object));
            bool wake = false;
            double conf = -1;
            const char *reason = NULL;
            vigil_llm_read_bool(o, "shouldWake", false, &wake);
            vigil_llm_read_confidence(o, "confidence", 0.5, &conf);
            vigil_llm_read_string(o, "reason", NULL, &reason);
            if (tc->should_wake >= 0 && (int)wake != tc->should_wake) {
                print_error("%s: shouldWake %d\n", tc->file, (int)wake);
                ok = false;
            }
            if (tc->confidence >= 0 && fabs(conf - tc->confidence) > 1e-9) {
                print_error("%s: confidence %g\n", tc->file, conf);
                ok = false;
            }
            if (tc->reason && (!reason || strcmp(reason, tc->reason) != 0)) {
                print_error("%s: reason '%s'\n", tc->file, reason ? reason : "(null)");
                ok = false;
            }
        }
        if (!ok)
            failures++;
        if (tc->want != VIGIL_LLM_PARSE_OK)
            assert_true(err.detail[0] != '\0'); /* a failure always says why */
        json_object_put(o);
        free(text);
    }
    assert_int_equal(failures, 0);
}

/* The failure names the byte where the trouble starts. */
static void failure_points_at_the_opener(void **unused)
{
    (void)unused;
    const char *t = "Answer: {\"shouldWake\": true, \"reason\": \"cut";
    vigil_llm_parse_error err;
    assert_null(vigil_llm_extract_object(t, strlen(t), &err));
    assert_int_equal(err.status, VIGIL_LLM_PARSE_UNBALANCED);
    assert_int_equal(err.offset, 8);
    assert_non_null(strstr(err.detail, "truncated"));
    assert_string_equal(vigil_llm_parse_status_name(err.status), "unbalanced");
}

static void wrong_types_fall_back_to_defaults(void **unused)
{
    (void)unused;
    size_t len;
    char *text = load("wrong_typed.txt", &len);
    json_object *o = vigil_llm_extract_object(text, len, NULL);
    assert_non_null(o);
    bool b = true;
    double d = 0;
    const char *s = NULL;
    assert_int_equal(vigil_llm_read_bool(o, "shouldWake", false, &b), VIGIL_LLM_FIELD_BAD);
    assert_false(b);
    assert_int_equal(vigil_llm_read_confidence(o, "confidence", 0.3, &d), VIGIL_LLM_FIELD_BAD);
    assert_true(d == 0.3);
    assert_int_equal(vigil_llm_read_string(o, "reason", "none", &s), VIGIL_LLM_FIELD_BAD);
    assert_string_equal(s, "none");
    assert_int_equal(vigil_llm_read_string(o, "alternativeSuggestion", "dflt", &s),
                     VIGIL_LLM_FIELD_ABSENT);
    assert_string_equal(s, "dflt");
    json_object_put(o);
    free(text);

    text = load("wrong_typed_2.txt", &len);
    o = vigil_llm_extract_object(text, len, NULL);
    assert_non_null(o);
    assert_int_equal(vigil_llm_read_bool(o, "shouldWake", true, &b), VIGIL_LLM_FIELD_BAD);
    assert_true(b);
    assert_int_equal(vigil_llm_read_confidence(o, "confidence", 0.4, &d), VIGIL_LLM_FIELD_BAD);
    assert_true(d == 0.4);
    assert_int_equal(vigil_llm_read_string(o, "reason", NULL, &s), VIGIL_LLM_FIELD_BAD);
    json_object_put(o);
    free(text);
}

/* ------------------------------------------------------------------ */
/* Array corpus                                                       */
/* ------------------------------------------------------------------ */

static const char *const WRAP_KEYS[] = {"decisions", "actions", NULL};
static const char *const ONLY_DECISIONS[] = {"decisions", NULL};

typedef struct {
    const char *file;
    const char *const *keys;
    vigil_llm_parse_status want;
    size_t length;
} arr_case;

static const arr_case ARR_CASES[] = {
    {"array_plain.txt", NULL, VIGIL_LLM_PARSE_OK, 2},
    {"array_fenced_prose.txt", NULL, VIGIL_LLM_PARSE_OK, 2},
    {"array_wrapped.txt", WRAP_KEYS, VIGIL_LLM_PARSE_OK, 2},
    {"array_wrapped.txt", NULL, VIGIL_LLM_PARSE_OK, 2},
    {"array_wrapped_two.txt", NULL, VIGIL_LLM_PARSE_WRONG_TYPE, 0},
    {"array_wrapped_two.txt", ONLY_DECISIONS, VIGIL_LLM_PARSE_OK, 2},
    {"array_truncated.txt", NULL, VIGIL_LLM_PARSE_UNBALANCED, 0},
    {"good_plain.txt", NULL, VIGIL_LLM_PARSE_WRONG_TYPE, 0},
    {"good_plain.txt", WRAP_KEYS, VIGIL_LLM_PARSE_WRONG_TYPE, 0},
    {"only_array.txt", NULL, VIGIL_LLM_PARSE_OK, 1},
    {"no_json.txt", NULL, VIGIL_LLM_PARSE_NOT_FOUND, 0},
    {"whitespace.txt", NULL, VIGIL_LLM_PARSE_EMPTY, 0},
};

static void array_corpus(void **unused)
{
    (void)unused;
    int failures = 0;
    for (size_t i = 0; i < sizeof ARR_CASES / sizeof ARR_CASES[0]; i++) {
        const arr_case *tc = &ARR_CASES[i];
        size_t len;
        char *text = load(tc->file, &len);
        vigil_llm_parse_error err;
        json_object *a = vigil_llm_extract_array(text, len, tc->keys, &err);
        if (err.status != tc->want || (tc->want == VIGIL_LLM_PARSE_OK) != (a != NULL) ||
            (a && json_object_array_length(a) != tc->length)) {
            print_error("case %zu %s: want %s/%zu, got %s (%s)\n", i, tc->file,
                        vigil_llm_parse_status_name(tc->want), tc->length,
                        vigil_llm_parse_status_name(err.status), err.detail);
            failures++;
        }
        if (a && strncmp(tc->file, "array_", 6) == 0) {
            json_object *first = json_object_array_get_idx(a, 0);
            const char *persona = NULL;
            assert_int_equal(vigil_llm_read_string(first, "persona", NULL, &persona),
                             VIGIL_LLM_FIELD_OK);
        }
        json_object_put(a);
        free(text);
    }
    assert_int_equal(failures, 0);
}

/* The unwrapped array outlives the object it came from. */
static void unwrapped_array_is_an_owned_reference(void **unused)
{
    (void)unused;
    const char *t = "{\"actions\": [1, 2, 3]}";
    json_object *a = vigil_llm_extract_array(t, strlen(t), WRAP_KEYS, NULL);
    assert_non_null(a);
    assert_int_equal(json_object_array_length(a), 3);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(a, 2)), 3);
    json_object_put(a); /* ASan/LSan: neither a leak nor a double free */
}

/* ------------------------------------------------------------------ */
/* Typed readers                                                      */
/* ------------------------------------------------------------------ */

static json_object *obj(const char *s)
{
    json_object *o = json_tokener_parse(s);
    assert_non_null(o);
    return o;
}

static void bool_coercion(void **unused)
{
    (void)unused;
    static const struct {
        const char *json;
        vigil_llm_field want;
        bool value;
    } cases[] = {
        {"{\"v\": true}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": false}", VIGIL_LLM_FIELD_OK, false},
        {"{\"v\": \"true\"}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": \"TRUE\"}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": \" Yes \"}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": \"no\"}", VIGIL_LLM_FIELD_OK, false},
        {"{\"v\": \"False\"}", VIGIL_LLM_FIELD_OK, false},
        {"{\"v\": \"1\"}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": \"0\"}", VIGIL_LLM_FIELD_OK, false},
        {"{\"v\": 1}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": 0}", VIGIL_LLM_FIELD_OK, false},
        {"{\"v\": 1.0}", VIGIL_LLM_FIELD_OK, true},
        {"{\"v\": 2}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": -1}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": \"maybe\"}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": \"\"}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": \"yes, definitely wake them up now\"}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": [true]}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": {}}", VIGIL_LLM_FIELD_BAD, true},
        {"{\"v\": null}", VIGIL_LLM_FIELD_ABSENT, true},
        {"{\"w\": false}", VIGIL_LLM_FIELD_ABSENT, true},
        {"{\"V\": false}", VIGIL_LLM_FIELD_OK, false}, /* loose name match */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_object *o = obj(cases[i].json);
        bool out = !cases[i].value;
        vigil_llm_field r = vigil_llm_read_bool(o, "v", true, &out);
        if (r != cases[i].want || out != cases[i].value)
            fail_msg("%s: got field %d value %d", cases[i].json, (int)r, (int)out);
        json_object_put(o);
    }
}

/* 0..1 as is, a whole number 2..100 or "n%" as a percentage; any other
 * number is RANGE (never divided nor clamped: 1.5 read as 1.5 % turned a
 * confident "wake" into "stay asleep"). */
static void confidence_coercion(void **unused)
{
    (void)unused;
    static const struct {
        const char *json;
        vigil_llm_field want;
        double value;
    } cases[] = {
        {"{\"c\": 0.92}", VIGIL_LLM_FIELD_OK, 0.92},
        {"{\"c\": 0}", VIGIL_LLM_FIELD_OK, 0.0},
        {"{\"c\": 1}", VIGIL_LLM_FIELD_OK, 1.0},
        {"{\"c\": 85}", VIGIL_LLM_FIELD_OK, 0.85},
        {"{\"c\": 100}", VIGIL_LLM_FIELD_OK, 1.0},
        {"{\"c\": 2}", VIGIL_LLM_FIELD_OK, 0.02},
        {"{\"c\": 85.0}", VIGIL_LLM_FIELD_OK, 0.85},  /* whole, written as a double */
        {"{\"c\": 1.0}", VIGIL_LLM_FIELD_OK, 1.0},    /* 1 is 1, not 1 % */
        {"{\"c\": -0.0}", VIGIL_LLM_FIELD_OK, 0.0},
        {"{\"c\": 1.5}", VIGIL_LLM_FIELD_RANGE, 0.25}, /* neither 0..1 nor a whole % */
        {"{\"c\": 1.0001}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": 1.9999}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": 99.5}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": 150}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": 250}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": 1e300}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": -0.3}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": -85}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": \"1.5\"}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": \"1\"}", VIGIL_LLM_FIELD_OK, 1.0},
        {"{\"c\": \"0.85\"}", VIGIL_LLM_FIELD_OK, 0.85},
        {"{\"c\": \" 85 \"}", VIGIL_LLM_FIELD_OK, 0.85},
        {"{\"c\": \"85%\"}", VIGIL_LLM_FIELD_OK, 0.85},
        {"{\"c\": \"70 %\"}", VIGIL_LLM_FIELD_OK, 0.70},
        {"{\"c\": \"0.5%\"}", VIGIL_LLM_FIELD_OK, 0.005},
        {"{\"c\": \"100%\"}", VIGIL_LLM_FIELD_OK, 1.0},
        {"{\"c\": \"1.5%\"}", VIGIL_LLM_FIELD_OK, 0.015}, /* the sign says percent */
        {"{\"c\": \"150%\"}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": \"-5%\"}", VIGIL_LLM_FIELD_RANGE, 0.25},
        {"{\"c\": \"high\"}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": \"85 percent\"}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": \"%\"}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": \"\"}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": \"nan\"}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": \"inf\"}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": NaN}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": true}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": [0.9]}", VIGIL_LLM_FIELD_BAD, 0.25},
        {"{\"c\": null}", VIGIL_LLM_FIELD_ABSENT, 0.25},
        {"{\"x\": 0.9}", VIGIL_LLM_FIELD_ABSENT, 0.25},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_object *o = obj(cases[i].json);
        double out = -42;
        vigil_llm_field r = vigil_llm_read_confidence(o, "c", 0.25, &out);
        if (r != cases[i].want || fabs(out - cases[i].value) > 1e-9)
            fail_msg("%s: got field %d value %g", cases[i].json, (int)r, out);
        assert_true(out >= 0.0 && out <= 1.0);
        json_object_put(o);
    }
}

static void field_names_match_loosely(void **unused)
{
    (void)unused;
    json_object *o = obj("{\"should_wake\": true, \"Alternative-Suggestion\": \"ping ops\"}");
    bool b = false;
    const char *s = NULL;
    assert_int_equal(vigil_llm_read_bool(o, "shouldWake", false, &b), VIGIL_LLM_FIELD_OK);
    assert_true(b);
    assert_int_equal(vigil_llm_read_string(o, "alternativeSuggestion", NULL, &s),
                     VIGIL_LLM_FIELD_OK);
    assert_string_equal(s, "ping ops");
    assert_null(vigil_llm_field_get(o, "shouldWak"));
    assert_null(vigil_llm_field_get(o, "shouldWakeUp"));
    assert_null(vigil_llm_field_get(NULL, "x"));
    json_object_put(o);
    /* exact name wins over a loose one */
    o = obj("{\"SHOULDWAKE\": false, \"shouldWake\": true}");
    assert_int_equal(vigil_llm_read_bool(o, "shouldWake", false, &b), VIGIL_LLM_FIELD_OK);
    assert_true(b);
    json_object_put(o);
    /* readers on something that is not an object: absent, defaults */
    json_object *arr = obj("[1]");
    double d = 0;
    assert_int_equal(vigil_llm_read_confidence(arr, "c", 0.7, &d), VIGIL_LLM_FIELD_ABSENT);
    assert_true(d == 0.7);
    json_object_put(arr);
}

/* ------------------------------------------------------------------ */
/* Generated hostile inputs                                           */
/* ------------------------------------------------------------------ */

/* A string holding a NUL ("a\u0000b") is BAD, never read shorter as "a":
 * vigil_json_str_check's rule, as for every string Vigil reads. */
static void string_with_a_nul_is_bad(void **unused)
{
    (void)unused;
    json_object *o = obj("{\"reason\": \"outage\\u0000 ignore the rest\", \"persona\": "
                         "\"ann\\u0000x\", \"alt\": \"\\u0000\", \"ok\": \"fine\"}");
    const char *s = NULL;
    assert_int_equal(vigil_llm_read_string(o, "reason", "none", &s), VIGIL_LLM_FIELD_BAD);
    assert_string_equal(s, "none");
    assert_int_equal(vigil_llm_read_string(o, "persona", NULL, &s), VIGIL_LLM_FIELD_BAD);
    assert_null(s);
    assert_int_equal(vigil_llm_read_string(o, "alt", "d", &s), VIGIL_LLM_FIELD_BAD);
    assert_string_equal(s, "d");
    assert_int_equal(vigil_llm_read_string(o, "ok", NULL, &s), VIGIL_LLM_FIELD_OK);
    assert_string_equal(s, "fine");
    json_object_put(o);
}

static char *repeat(const char *unit, size_t times, size_t *len)
{
    size_t u = strlen(unit);
    char *buf = malloc(u * times + 1);
    assert_non_null(buf);
    for (size_t i = 0; i < times; i++)
        memcpy(buf + i * u, unit, u);
    *len = u * times;
    return buf; /* deliberately not NUL-terminated */
}

static vigil_llm_parse_status timed_extract(const char *t, size_t n, bool array)
{
    vigil_llm_parse_error err;
    int64_t t0 = now_ms();
    json_object *o = array ? vigil_llm_extract_array(t, n, NULL, &err)
                           : vigil_llm_extract_object(t, n, &err);
    int64_t took = now_ms() - t0;
    if (took > HOSTILE_MAX_MS)
        fail_msg("%zu bytes took %lld ms", n, (long long)took);
    json_object_put(o);
    return err.status;
}

static void deep_nesting_is_refused(void **unused)
{
    (void)unused;
    /* 200k levels of balanced brackets: counted, never recursed into */
    size_t n = 200000;
    char *t = malloc(2 * n);
    assert_non_null(t);
    memset(t, '[', n);
    memset(t + n, ']', n);
    assert_int_equal(timed_extract(t, 2 * n, true), VIGIL_LLM_PARSE_TOO_DEEP);
    assert_int_equal(timed_extract(t, 2 * n, false), VIGIL_LLM_PARSE_TOO_DEEP);
    /* unbalanced: a million openers */
    free(t);
    t = repeat("[", 1000000, &n);
    assert_int_equal(timed_extract(t, n, true), VIGIL_LLM_PARSE_UNBALANCED);
    free(t);
    /* objects nested 40 deep fail, 20 deep pass */
    for (int depth = 20; depth <= 40; depth += 20) {
        char buf[1024];
        size_t k = 0;
        for (int i = 0; i < depth; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "{\"a\":");
        k += (size_t)snprintf(buf + k, sizeof buf - k, "1");
        for (int i = 0; i < depth; i++)
            buf[k++] = '}';
        vigil_llm_parse_error err;
        json_object *o = vigil_llm_extract_object(buf, k, &err);
        if (depth == 20) {
            assert_non_null(o);
        } else {
            assert_null(o);
            assert_int_equal(err.status, VIGIL_LLM_PARSE_TOO_DEEP);
        }
        json_object_put(o);
    }
    /* a too-deep candidate is skipped and a good answer after it found */
    char *mix = malloc(2 * 100 + 64);
    assert_non_null(mix);
    memset(mix, '[', 100);
    memset(mix + 100, ']', 100);
    const char *good = " {\"shouldWake\": true}";
    memcpy(mix + 200, good, strlen(good));
    vigil_llm_parse_error err;
    json_object *o = vigil_llm_extract_object(mix, 200 + strlen(good), &err);
    assert_non_null(o);
    json_object_put(o);
    free(mix);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void megabyte_of_garbage(void **unused)
{
    (void)unused;
    size_t n = 1u << 20;
    char *t = malloc(n);
    assert_non_null(t);
    uint64_t seed = 0x9E3779B97F4A7C15ull;

    /* printable garbage without any opener: a clear not_found */
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz ABC\"'\\:,.;!?0123456789\n\t`}]";
    for (size_t i = 0; i < n; i++)
        t[i] = alphabet[xorshift(&seed) % (sizeof alphabet - 1)];
    assert_int_equal(timed_extract(t, n, false), VIGIL_LLM_PARSE_NOT_FOUND);
    assert_int_equal(timed_extract(t, n, true), VIGIL_LLM_PARSE_NOT_FOUND);

    /* arbitrary bytes (NULs, invalid UTF-8, stray brackets): any outcome,
     * but bounded time and, if something is returned, a real object */
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < n; i++)
            t[i] = (char)(xorshift(&seed) & 0xff);
        vigil_llm_parse_error err;
        int64_t t0 = now_ms();
        json_object *o = vigil_llm_extract_object(t, n, &err);
        assert_true(now_ms() - t0 <= HOSTILE_MAX_MS);
        if (o)
            assert_true(json_object_is_type(o, json_type_object));
        else
            assert_true(err.status != VIGIL_LLM_PARSE_OK && err.detail[0]);
        json_object_put(o);
        json_object *a = vigil_llm_extract_array(t, n, NULL, &err);
        json_object_put(a);
    }
    free(t);

    /* adversarial repetitions */
    static const char *const units[] = {"{", "{\"", "{\"a\":", "```", "```json\n{",
                                        "\"", "\\", "[1,", "{}", "[]", "{\"a\":\"\\"};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t len;
        char *r = repeat(units[u], (1u << 20) / strlen(units[u]), &len);
        vigil_llm_parse_status so = timed_extract(r, len, false);
        vigil_llm_parse_status sa = timed_extract(r, len, true);
        (void)so;
        (void)sa;
        free(r);
    }
    /* a million stray prose braces, then the answer */
    size_t len;
    char *r = repeat("{x} ", 250000, &len);
    char *r2 = realloc(r, len + 32);
    assert_non_null(r2);
    memcpy(r2 + len, "{\"shouldWake\":true}", 19);
    vigil_llm_parse_error err;
    int64_t t0 = now_ms();
    json_object *o = vigil_llm_extract_object(r2, len + 19, &err);
    assert_true(now_ms() - t0 <= HOSTILE_MAX_MS);
    assert_non_null(o);
    json_object_put(o);
    free(r2);
}

static void size_limit_and_empty(void **unused)
{
    (void)unused;
    vigil_llm_parse_error err;
    assert_null(vigil_llm_extract_object(NULL, 10, &err));
    assert_int_equal(err.status, VIGIL_LLM_PARSE_EMPTY);
    assert_null(vigil_llm_extract_object("{}", 0, &err));
    assert_int_equal(err.status, VIGIL_LLM_PARSE_EMPTY);
    size_t n = VIGIL_LLM_PARSE_MAX_INPUT + 1;
    char *t = malloc(n);
    assert_non_null(t);
    memset(t, ' ', n);
    memcpy(t, "{}", 2);
    assert_null(vigil_llm_extract_object(t, n, &err));
    assert_int_equal(err.status, VIGIL_LLM_PARSE_TOO_LARGE);
    assert_null(vigil_llm_extract_array(t, n, NULL, &err));
    assert_int_equal(err.status, VIGIL_LLM_PARSE_TOO_LARGE);
    free(t);
    /* err may be NULL */
    assert_null(vigil_llm_extract_object("nothing", 7, NULL));
    assert_string_equal(vigil_llm_parse_status_name(VIGIL_LLM_PARSE_INVALID), "invalid_json");
    assert_string_equal(vigil_llm_parse_status_name((vigil_llm_parse_status)99), "unknown");
}

int main(void)
{
    find_corpus_dir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(object_corpus),
        cmocka_unit_test(failure_points_at_the_opener),
        cmocka_unit_test(wrong_types_fall_back_to_defaults),
        cmocka_unit_test(array_corpus),
        cmocka_unit_test(unwrapped_array_is_an_owned_reference),
        cmocka_unit_test(bool_coercion),
        cmocka_unit_test(confidence_coercion),
        cmocka_unit_test(field_names_match_loosely),
        cmocka_unit_test(string_with_a_nul_is_bad),
        cmocka_unit_test(deep_nesting_is_refused),
        cmocka_unit_test(megabyte_of_garbage),
        cmocka_unit_test(size_limit_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
