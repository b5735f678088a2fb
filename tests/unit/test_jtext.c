/* test_jtext.c - JSON written as text equals what json-c writes for the
 * same values: plain and escaped strings (whole, as keys, and their
 * insides alone), the extreme integers, and an
 * allocation that fails leaves nothing behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/jtext.h"

static const int FLAGS = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;

static void strings_are_written_as_json_c_writes_them(void **state)
{
    (void)state;
    const char *cases[] = {"", "ann", "a/b", "q\"uote", "back\\slash", "tab\there",
                           "nl\n", "\x01\x1f", "del\x7f", "\xc3\xa9t\xc3\xa9"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vigil_jtext b = {0};
        vigil_jtext_str(&b, cases[i]);
        char *t = vigil_jtext_take(&b);
        json_object *o = json_object_new_string(cases[i]);
        assert_string_equal(t, json_object_to_json_string_ext(o, FLAGS));
        json_object_put(o);
        free(t);
    }
}

/* Every byte value, alone and between plain text (the escaper copies
 * runs of plain bytes at once). */
static void every_byte_is_escaped_as_json_c_escapes_it(void **state)
{
    (void)state;
    for (int c = 1; c < 256; c++) {
        for (int framed = 0; framed < 2; framed++) {
            char in[8];
            if (framed)
                snprintf(in, sizeof in, "ab%cc", c);
            else
                snprintf(in, sizeof in, "%c", c);
            vigil_jtext b = {0};
            vigil_jtext_str(&b, in);
            char *t = vigil_jtext_take(&b);
            json_object *o = json_object_new_string(in);
            assert_string_equal(t, json_object_to_json_string_ext(o, FLAGS));
            json_object_put(o);
            free(t);
        }
    }
}

/* Every byte value at every place of plain strings of 1 to 25 bytes, and
 * next to others (the escaper copies plain text 8 bytes at a time, checks
 * each group of 8 at once, and ends with an overlapping word or, below 8
 * bytes, two overlapping halves). */
static void every_byte_at_every_place_of_a_long_string(void **state)
{
    (void)state;
    for (int c = 1; c < 256; c++) {
        for (int len = 1; len <= 25; len++) {
            for (int at = 0; at < len; at++) {
                for (int second = 0; second < 2; second++) {
                    char in[32];
                    memset(in, 'x', (size_t)len);
                    in[len] = '\0';
                    in[at] = (char)c;
                    /* a second, other byte, within the word or the one
                     * before it (the tail of 1 to 7 bytes is written with
                     * the word that ends the text, over bytes already
                     * written) */
                    int other = second ? at - 5 : at + 9;
                    if (other >= 0 && other < len)
                        in[other] = (char)(c ^ 0x40 ? c ^ 0x40 : 1);
                    vigil_jtext b = {0};
                    vigil_jtext_lit(&b, "[");
                    vigil_jtext_str(&b, in);
                    vigil_jtext_key(&b, ',', in);
                    /* the inside alone, quoted here: the same string */
                    vigil_jtext_lit(&b, ",\"");
                    vigil_jtext_esc(&b, in);
                    vigil_jtext_ch(&b, '"');
                    char *t = vigil_jtext_take(&b);
                    json_object *o = json_object_new_string(in);
                    const char *want = json_object_to_json_string_ext(o, FLAGS);
                    char full[512];
                    snprintf(full, sizeof full, "[%s,%s:,%s", want, want, want);
                    assert_string_equal(t, full);
                    json_object_put(o);
                    free(t);
                }
            }
        }
    }
}

/* Keys (with and without a separator before them) are escaped as json-c
 * escapes an object's keys, every byte value included. */
static void keys_are_written_as_json_c_writes_them(void **state)
{
    (void)state;
    for (int c = 1; c < 256; c++) {
        char key[24];
        snprintf(key, sizeof key, "key%cwith a longer tail", c);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "a", json_object_new_int(0));
        json_object_object_add(o, key, json_object_new_int(1));
        vigil_jtext b = {0};
        vigil_jtext_key(&b, 0, "a");
        vigil_jtext_put(&b, "0", 1);
        vigil_jtext_key(&b, ',', key);
        vigil_jtext_put(&b, "1", 1);
        char *t = vigil_jtext_take(&b);
        char want[128];
        snprintf(want, sizeof want, "{%s}", t);
        assert_string_equal(want, json_object_to_json_string_ext(o, FLAGS));
        json_object_put(o);
        free(t);
    }
}

static void integers_are_written_as_json_c_writes_them(void **state)
{
    (void)state;
    const int64_t cases[] = {0, 7, -7, 1732448000000, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vigil_jtext b = {0};
        vigil_jtext_i64(&b, cases[i]);
        char *t = vigil_jtext_take(&b);
        json_object *o = json_object_new_int64(cases[i]);
        assert_string_equal(t, json_object_to_json_string_ext(o, FLAGS));
        json_object_put(o);
        free(t);
    }
    /* every number of digits, on both sides of each power of ten */
    for (int64_t p = 1; p > 0 && p <= INT64_MAX / 10; p *= 10) {
        const int64_t near[] = {p - 1, p, p + 1, -(p - 1), -p, -(p + 1), p * 10 - 1};
        for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
            vigil_jtext b = {0};
            vigil_jtext_i64(&b, near[i]);
            char *t = vigil_jtext_take(&b);
            char want[32];
            snprintf(want, sizeof want, "%lld", (long long)near[i]);
            assert_string_equal(t, want);
            free(t);
        }
    }
}

/* Pseudo-random values of every magnitude (internal zeros, eight-digit
 * groups that start with zeros), against snprintf. */
static void random_integers_match_snprintf(void **state)
{
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t v = (int64_t)(x >> (i % 64)); /* every width, both signs */
        if (i % 5 == 0)
            v = (v / 1000000) * 1000000 + (i % 7); /* zeros inside */
        char got[VIGIL_I64_TEXT_MAX + 1], want[32];
        size_t n = vigil_i64_text(got, v);
        snprintf(want, sizeof want, "%lld", (long long)v);
        assert_string_equal(got, want);
        assert_int_equal(n, strlen(want));
    }
}

static void a_document_and_a_failed_one(void **state)
{
    (void)state;
    vigil_jtext b = {0};
    vigil_jtext_lit(&b, "{\"k\":");
    vigil_jtext_str(&b, "v");
    vigil_jtext_lit(&b, ",\"n\":[");
    for (int i = 0; i < 1000; i++) { /* grows past the first buffer */
        if (i > 0)
            vigil_jtext_put(&b, ",", 1);
        vigil_jtext_i64(&b, i);
    }
    vigil_jtext_lit(&b, "]}");
    char *t = vigil_jtext_take(&b);
    json_object *o = json_tokener_parse(t);
    assert_non_null(o);
    assert_string_equal(t, json_object_to_json_string_ext(o, FLAGS));
    json_object_put(o);
    free(t);
    assert_null(b.s);
    char *empty = vigil_jtext_take(&b); /* nothing written: "" */
    assert_string_equal(empty, "");
    free(empty);
    vigil_jtext f = {0};
    vigil_jtext_lit(&f, "{");
    f.oom = true; /* as after a failed realloc */
    vigil_jtext_lit(&f, "more");
    assert_null(vigil_jtext_take(&f));
}

/* Formatted prose: short appends in place, one longer than the buffer
 * (formatted again after growing), exactly what snprintf writes. */
/* A run of numbers written in place after one reservation reads as the
 * same appends one by one would, growing the buffer as needed. */
static void room_then_advance_appends_in_place(void **state)
{
    (void)state;
    vigil_jtext a = {0}, b = {0};
    vigil_jtext_lit(&a, "[");
    vigil_jtext_lit(&b, "[");
    char *p = vigil_jtext_room(&b, 300 * (VIGIL_I64_TEXT_MAX + 1));
    assert_non_null(p);
    char *at = p;
    for (int64_t i = 0; i < 300; i++) {
        int64_t v = i * i * i * 1000003 - 7;
        if (i > 0) {
            vigil_jtext_ch(&a, ',');
            *at++ = ',';
        }
        vigil_jtext_i64(&a, v);
        at += vigil_i64_text(at, v);
    }
    vigil_jtext_advance(&b, (size_t)(at - p));
    vigil_jtext_lit(&a, "]");
    vigil_jtext_lit(&b, "]");
    assert_int_equal(a.n, b.n);
    assert_string_equal(a.s, b.s);
    /* advancing past the room reserved is refused, not an overrun */
    size_t n = b.n;
    vigil_jtext_advance(&b, b.cap);
    assert_int_equal(b.n, n);
    free(vigil_jtext_take(&a));
    free(vigil_jtext_take(&b));
}

static void printf_appends_what_snprintf_writes(void **state)
{
    (void)state;
    vigil_jtext b = {0};
    vigil_jtext_printf(&b, "%s=%d;", "a", 1);
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    vigil_jtext_printf(&b, "[%s]", big);
    vigil_jtext_printf(&b, "%lld", (long long)-42);
    char want[3100];
    snprintf(want, sizeof want, "a=1;[%s]-42", big);
    assert_int_equal(b.n, strlen(want));
    char *s = vigil_jtext_take(&b);
    assert_string_equal(s, want);
    free(s);
    vigil_jtext e = {0};
    vigil_jtext_printf(&e, "%s", "");
    s = vigil_jtext_take(&e);
    assert_string_equal(s, "");
    free(s);
}

/* Appends of every length up to past the short-copy limit, at every
 * offset within a word, copy exactly their bytes (the short copies move
 * overlapping words) and keep the text NUL-terminated. */
static void short_appends_copy_exactly_their_bytes(void **state)
{
    (void)state;
    const char src[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t lead = 0; lead < 8; lead++)
        for (size_t len = 0; len <= 20; len++) {
            vigil_jtext b = { 0 };
            vigil_jtext_put(&b, "--------", lead);
            vigil_jtext_put(&b, src + lead, len);
            vigil_jtext_lit(&b, "|");
            char want[64];
            snprintf(want, sizeof want, "%.*s%.*s|", (int)lead, "--------", (int)len, src + lead);
            char *got = vigil_jtext_take(&b);
            assert_non_null(got);
            assert_string_equal(got, want);
            free(got);
        }
}

/* Literals (whose length the compiler knows, copied in place when there
 * is room) of lengths around the in-place limit of 32, into a buffer with
 * room and into one without, come out exactly. */
static void literals_are_copied_exactly_with_room_or_without(void **state)
{
    (void)state;
#define LITS(X)                                                                 \
    X("") X("a") X("abc") X("abcdefg") X("abcdefgh") X("abcdefghijklmnop")    \
    X("abcdefghijklmnopqrstuvwxyz01234") X("abcdefghijklmnopqrstuvwxyz012345") \
    X("abcdefghijklmnopqrstuvwxyz0123456")
    for (int room = 0; room < 2; room++) {
        vigil_jtext b = { 0 };
        char want[512] = "";
        if (room)
            vigil_jtext_reserve(&b, 400);
#define APPEND(L)                       \
    vigil_jtext_lit(&b, L);             \
    vigil_jtext_lit(&b, "|");           \
    strcat(want, L "|");
        LITS(APPEND)
#undef APPEND
        assert_int_equal(b.n, strlen(want));
        char *got = vigil_jtext_take(&b);
        assert_string_equal(got, want);
        free(got);
    }
#undef LITS
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strings_are_written_as_json_c_writes_them),
        cmocka_unit_test(every_byte_is_escaped_as_json_c_escapes_it),
        cmocka_unit_test(every_byte_at_every_place_of_a_long_string),
        cmocka_unit_test(keys_are_written_as_json_c_writes_them),
        cmocka_unit_test(integers_are_written_as_json_c_writes_them),
        cmocka_unit_test(random_integers_match_snprintf),
        cmocka_unit_test(a_document_and_a_failed_one),
        cmocka_unit_test(printf_appends_what_snprintf_writes),
        cmocka_unit_test(room_then_advance_appends_in_place),
        cmocka_unit_test(short_appends_copy_exactly_their_bytes),
        cmocka_unit_test(literals_are_copied_exactly_with_room_or_without),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
