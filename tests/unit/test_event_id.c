/* test_event_id.c - derived event ids (event_id.h): deterministic,
 * scoped, cut to the caller's buffer with a hash of the whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/event_id.h"
#include "vigil/json.h"

static void test_event_id_short(void **state)
{
    char id[128];
    vigil_event_id(id, sizeof id, "msg-1", "ann", 0);
    assert_string_equal(id, "msg-1:ann:0");
    vigil_event_id(id, sizeof id, "msg-1", "ann", 12);
    assert_string_equal(id, "msg-1:ann:12");
}

static void test_event_id_exact_fit(void **state)
{
    char id[12]; /* "abcde:fg:10" is 11 chars: fits exactly */
    vigil_event_id(id, sizeof id, "abcde", "fg", 10);
    assert_string_equal(id, "abcde:fg:10");
}

static void test_event_id_long_is_truncated_unique_deterministic(void **state)
{
    char in1[200], in2[200];
    memset(in1, 'x', sizeof in1 - 1);
    in1[sizeof in1 - 1] = '\0';
    memcpy(in2, in1, sizeof in2);
    in2[150] = 'y'; /* differs only beyond what fits */
    char a[64], b[64], c[64], d[64];
    vigil_event_id(a, sizeof a, in1, "room1", 0);
    vigil_event_id(b, sizeof b, in1, "room1", 0);
    vigil_event_id(c, sizeof c, in2, "room1", 0);
    vigil_event_id(d, sizeof d, in1, "room1", 1);
    assert_int_equal(strlen(a), sizeof a - 1);
    assert_string_equal(a, b);       /* deterministic */
    assert_string_not_equal(a, c);   /* the excess still counts */
    assert_string_not_equal(a, d);   /* n still counts */
    assert_memory_equal(a, in1, 46); /* readable prefix */
    assert_int_equal(a[46], '~');
    for (int i = 47; i < 63; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
}

static void test_event_id_huge_input(void **state)
{
    /* beyond the internal stack buffer: same rules */
    char *in1 = malloc(3000), *in2 = malloc(3000);
    memset(in1, 'h', 2999);
    in1[2999] = '\0';
    memcpy(in2, in1, 3000);
    in2[2500] = 'i';
    char a[128], b[128], c[128];
    vigil_event_id(a, sizeof a, in1, "k", 0);
    vigil_event_id(b, sizeof b, in1, "k", 0);
    vigil_event_id(c, sizeof c, in2, "k", 0);
    assert_int_equal(strlen(a), 127);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    free(in1);
    free(in2);
}

static void test_event_id_tiny_buffers(void **state)
{
    char tiny[8];
    vigil_event_id(tiny, sizeof tiny, "a-long-input-id", "key", 3);
    assert_int_equal(strlen(tiny), 7);
    char again[8];
    vigil_event_id(again, sizeof again, "a-long-input-id", "key", 3);
    assert_string_equal(tiny, again);
    char one[1] = { 'z' };
    vigil_event_id(one, 1, "a", "b", 1);
    assert_int_equal(one[0], '\0');
    char untouched = 'q';
    vigil_event_id(&untouched, 0, "a", "b", 1);
    assert_int_equal(untouched, 'q');
}

/* The scope is part of the id: one input id in two rooms (a message id
 * is unique only within its room) gives two ids; the same input in the
 * same room, the same one. */
static void test_event_id_in_scoped(void **state)
{
    (void)state;
    char a[VIGIL_EVENT_ID_MAX + 1], b[VIGIL_EVENT_ID_MAX + 1], c[VIGIL_EVENT_ID_MAX + 1];
    vigil_event_id_in(a, sizeof a, "m1", "general", "wake:sre");
    vigil_event_id_in(b, sizeof b, "m1", "ops", "wake:sre");
    vigil_event_id_in(c, sizeof c, "m1", "general", "wake:sre");
    assert_string_equal(a, "m1:general:wake:sre");
    assert_string_equal(b, "m1:ops:wake:sre");
    assert_string_equal(a, c);
    vigil_event_id_in(a, sizeof a, NULL, NULL, NULL);
    assert_string_equal(a, "::");
}

/* vigil_event_id is vigil_event_id_in with the rank as key, cut or not. */
static void test_event_id_is_scoped_with_rank(void **state)
{
    (void)state;
    char in[300];
    memset(in, 'q', sizeof in - 1);
    in[sizeof in - 1] = '\0';
    char a[VIGIL_EVENT_ID_MAX + 1], b[VIGIL_EVENT_ID_MAX + 1];
    vigil_event_id(a, sizeof a, in, "general", 7);
    vigil_event_id_in(b, sizeof b, in, "general", "7");
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), VIGIL_EVENT_ID_MAX);
    /* the hash is of the whole id: "<in>:general:7" */
    char whole[320], hex[17];
    snprintf(whole, sizeof whole, "%s:general:7", in);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)vigil_hash64(whole, strlen(whole)));
    assert_int_equal(a[VIGIL_EVENT_ID_MAX - 17], '~');
    assert_string_equal(a + VIGIL_EVENT_ID_MAX - 16, hex);
}

/* Cut ids of long inputs in two scopes stay apart. */
static void test_event_id_in_long_scopes_apart(void **state)
{
    (void)state;
    char in[VIGIL_EVENT_ID_MAX + 1];
    memset(in, 'a', VIGIL_EVENT_ID_MAX);
    in[VIGIL_EVENT_ID_MAX] = '\0';
    char a[VIGIL_EVENT_ID_MAX + 1], b[VIGIL_EVENT_ID_MAX + 1];
    vigil_event_id_in(a, sizeof a, in, "general", "wake:sre");
    vigil_event_id_in(b, sizeof b, in, "ops", "wake:sre");
    assert_string_not_equal(a, b);
    assert_null(strpbrk(a, "/+#"));
}

/* A rejection's id: from service, topic and bytes, never the clock (a
 * redelivered bad input is one error); two services rejecting one input
 * at the same instant make two ids. */
static void test_error_event_id(void **state)
{
    (void)state;
    char a[32], b[32], c[32], d[32];
    vigil_error_event_id(a, sizeof a, "wake-evaluator", "room/r/message", "{x", 2);
    vigil_error_event_id(b, sizeof b, "wake-evaluator", "room/r/message", "{x", 2);
    vigil_error_event_id(c, sizeof c, "chat-router", "room/r/message", "{x", 2);
    vigil_error_event_id(d, sizeof d, "wake-evaluator", "room/s/message", "{x", 2);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_not_equal(a, d);
    assert_int_equal(strlen(a), 4 + 16);
    assert_int_equal(strncmp(a, "err-", 4), 0);
    /* the separator keeps ("ab", "c") and ("a", "bc") apart */
    vigil_error_event_id(c, sizeof c, "ab", "c", "", 0);
    vigil_error_event_id(d, sizeof d, "a", "bc", "", 0);
    assert_string_not_equal(c, d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_id_short),
        cmocka_unit_test(test_event_id_exact_fit),
        cmocka_unit_test(test_event_id_long_is_truncated_unique_deterministic),
        cmocka_unit_test(test_event_id_huge_input),
        cmocka_unit_test(test_event_id_tiny_buffers),
        cmocka_unit_test(test_event_id_in_scoped),
        cmocka_unit_test(test_event_id_is_scoped_with_rank),
        cmocka_unit_test(test_event_id_in_long_scopes_apart),
        cmocka_unit_test(test_error_event_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
