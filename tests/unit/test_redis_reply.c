/* test_redis_reply.c - libshared's reply objects (redis_reply.c), made by
 * hiredis's own reader from RESP bytes fed to it, as on a connection:
 * every kind of reply reads as hiredis's objects read (type, str, len,
 * integer, elements), strings keep their bytes (a NUL inside, an empty
 * one, a large one), the shared objects come back for "+OK", "+QUEUED",
 * nil, 0 and 1 and are never freed, and a reply the reader abandons part
 * way (a protocol error inside an array) is freed without a leak or a
 * double free (the sanitizer build checks both). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/redis_raw.h"

/* The one reply the reader makes of text, or NULL when the text is not
 * complete; fails the test on a protocol error. */
static redisReply *read_one(const char *text, size_t len)
{
    redisReader *rd = redisReaderCreateWithFunctions(&vigil_redis_reply_functions);
    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, text, len), REDIS_OK);
    void *rep = NULL;
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    redisReaderFree(rd);
    return rep;
}

static redisReply *read_text(const char *text) { return read_one(text, strlen(text)); }

static void test_each_kind_reads_as_hiredis_makes_it(void **state)
{
    (void)state;
    redisReply *r = read_text("$5\r\nhello\r\n");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 5);
    assert_string_equal(r->str, "hello");
    vigil_redis_reply_free(r);

    r = read_text("$0\r\n\r\n");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 0);
    assert_string_equal(r->str, "");
    vigil_redis_reply_free(r);

    r = read_one("$3\r\na\0b\r\n", 9);
    assert_int_equal(r->len, 3);
    assert_memory_equal(r->str, "a\0b", 4); /* the terminating NUL too */
    vigil_redis_reply_free(r);

    r = read_text("-ERR wrong type\r\n");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "ERR wrong type");
    assert_int_equal(r->len, 14);
    vigil_redis_reply_free(r);

    r = read_text("+PONG\r\n");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, "PONG");
    vigil_redis_reply_free(r);

    const long long ints[] = { 2, -1, 42, -9223372036854775807LL - 1, 9223372036854775807LL };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, ":%lld\r\n", ints[i]);
        r = read_text(text);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        assert_true(r->integer == ints[i]);
        vigil_redis_reply_free(r);
    }

    r = read_text("*0\r\n");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 0);
    assert_null(r->element);
    vigil_redis_reply_free(r);

    r = read_text("*-1\r\n");
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    vigil_redis_reply_free(r);
    vigil_redis_reply_free(NULL);
}

static void test_a_large_string_keeps_every_byte(void **state)
{
    (void)state;
    size_t n = 1u << 20;
    char *text = malloc(n + 32);
    assert_non_null(text);
    int head = snprintf(text, 32, "$%zu\r\n", n);
    for (size_t i = 0; i < n; i++)
        text[head + i] = (char)('a' + i % 26);
    memcpy(text + head + n, "\r\n", 2);
    redisReply *r = read_one(text, head + n + 2);
    assert_int_equal(r->len, n);
    assert_memory_equal(r->str, text + head, n);
    assert_int_equal(r->str[n], '\0');
    free(text);
    vigil_redis_reply_free(r);
}

/* A commit's pipeline: MULTI's +OK, a +QUEUED per command, then EXEC's
 * array of replies of every kind, nested. */
static void test_a_commit_pipeline_and_its_shared_replies(void **state)
{
    (void)state;
    redisReply *ok = read_text("+OK\r\n");
    redisReply *queued = read_text("+QUEUED\r\n");
    redisReply *queued2 = read_text("+QUEUED\r\n");
    assert_string_equal(ok->str, "OK");
    assert_int_equal(ok->len, 2);
    assert_int_equal(ok->type, REDIS_REPLY_STATUS);
    assert_string_equal(queued->str, "QUEUED");
    assert_int_equal(queued->len, 6);
    assert_ptr_equal(queued, queued2); /* shared: not allocated */
    vigil_redis_reply_free(ok);
    vigil_redis_reply_free(queued);
    vigil_redis_reply_free(queued2);
    /* Still intact after being "freed" (read-only and never freed). */
    redisReply *again = read_text("+QUEUED\r\n");
    assert_string_equal(again->str, "QUEUED");

    redisReply *r = read_text("*6\r\n:1\r\n:0\r\n$-1\r\n+OK\r\n*2\r\n$2\r\nab\r\n*1\r\n:7\r\n"
                              "-ERR x\r\n");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 6);
    assert_int_equal(r->element[0]->type, REDIS_REPLY_INTEGER);
    assert_true(r->element[0]->integer == 1);
    assert_true(r->element[1]->integer == 0);
    assert_int_equal(r->element[2]->type, REDIS_REPLY_NIL);
    assert_string_equal(r->element[3]->str, "OK");
    redisReply *inner = r->element[4];
    assert_int_equal(inner->elements, 2);
    assert_string_equal(inner->element[0]->str, "ab");
    assert_true(inner->element[1]->element[0]->integer == 7);
    assert_string_equal(r->element[5]->str, "ERR x");
    vigil_redis_reply_free(r);

    /* A status that only starts like a shared one is its own object. */
    r = read_text("+OKAY\r\n");
    assert_string_equal(r->str, "OKAY");
    assert_ptr_not_equal(r, ok);
    vigil_redis_reply_free(r);
    r = read_text("$2\r\nOK\r\n"); /* a bulk "OK" is a string, not the status */
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    vigil_redis_reply_free(r);
}

/* The reader abandons a reply on a protocol error part way through an
 * array and frees what it built with our free: under ASan a leak or a
 * double free fails the test. */
static void test_a_reply_cut_by_a_protocol_error_is_freed(void **state)
{
    (void)state;
    redisReader *rd = redisReaderCreateWithFunctions(&vigil_redis_reply_functions);
    assert_non_null(rd);
    const char *text = "*4\r\n$3\r\nabc\r\n*2\r\n:5\r\n?bad\r\n";
    assert_int_equal(redisReaderFeed(rd, text, strlen(text)), REDIS_OK);
    void *rep = NULL;
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_ERR);
    assert_null(rep);
    redisReaderFree(rd);

    /* And a reader freed while a reply is half read frees it too. */
    rd = redisReaderCreateWithFunctions(&vigil_redis_reply_functions);
    text = "*3\r\n$3\r\nabc\r\n:9\r\n";
    assert_int_equal(redisReaderFeed(rd, text, strlen(text)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    assert_null(rep); /* not complete yet */
    redisReaderFree(rd);
}

/* An element detached from an array outlives the array, keeps its bytes
 * and is freed on its own; the array frees the rest once (ASan checks
 * both). No element, or no array, gives NULL. */
static void test_a_detached_element_outlives_its_array(void **state)
{
    (void)state;
    redisReply *r = read_text("*3\r\n$5\r\n0a\nb1\r\n$3\r\nxyz\r\n+OK\r\n");
    assert_non_null(r);
    redisReply *a = vigil_redis_reply_detach(r, 0);
    redisReply *ok = vigil_redis_reply_detach(r, 2);
    assert_non_null(a);
    assert_null(r->element[0]);
    assert_null(vigil_redis_reply_detach(r, 3));
    assert_null(vigil_redis_reply_detach(a, 0)); /* not an array */
    assert_null(vigil_redis_reply_detach(NULL, 0));
    vigil_redis_reply_free(r); /* frees "xyz", not the detached ones */
    assert_int_equal(a->type, REDIS_REPLY_STRING);
    assert_int_equal(a->len, 5);
    assert_memory_equal(a->str, "0a\nb1", 6); /* with its NUL */
    assert_string_equal(ok->str, "OK"); /* a shared object: never freed */
    vigil_redis_reply_free(a);
    vigil_redis_reply_free(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_kind_reads_as_hiredis_makes_it),
        cmocka_unit_test(test_a_large_string_keeps_every_byte),
        cmocka_unit_test(test_a_commit_pipeline_and_its_shared_replies),
        cmocka_unit_test(test_a_reply_cut_by_a_protocol_error_is_freed),
        cmocka_unit_test(test_a_detached_element_outlives_its_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
