/* test_stream_reads.c - typed reads of streams, sets and strings
 * (vigil/stream_reads.h) against a real redis-server: ranges with
 * exclusive bounds and COUNT in both orders, the last id of a stream,
 * XREAD after an id (with and without new entries, and with a wait that
 * ends empty), XINFO STREAM's history, SMEMBERS and GET; a missing key
 * reads as empty, a key of another type as VIGIL_READ_WRONG_TYPE, and a
 * stopped server as VIGIL_READ_UNREACHABLE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/log.h"
#include "vigil/stream_reads.h"

static void ranges_both_orders_and_bounds(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    assert_true(vt_redis_exec(vt_srv, "XADD s 1-1 m one"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 2-1 m two"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 3-1 other three"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 4-1 m four"));
    vigil_stream_entry *e;
    size_t n;
    /* Exclusive start, COUNT 2. */
    assert_int_equal(vigil_stream_range(r, "s", "(1-1", "+", 2, false, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].id, "2-1");
    assert_string_equal(e[0].field, "m");
    assert_string_equal(e[0].value, "two");
    assert_int_equal(e[0].len, 3);
    assert_string_equal(e[1].id, "3-1");
    assert_string_equal(e[1].field, "other");
    assert_string_equal(e[1].value, "three");
    vigil_stream_entries_free(e, n);
    /* Newest first, inclusive upper bound, no COUNT. */
    assert_int_equal(vigil_stream_range(r, "s", "3-1", "-", 0, true, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].id, "3-1");
    assert_string_equal(e[2].id, "1-1");
    vigil_stream_entries_free(e, n);
    /* After the last entry: none. */
    assert_int_equal(vigil_stream_range(r, "s", "(4-1", "+", 10, false, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 0);
    assert_null(e);
    /* A missing stream is empty; a string is the wrong type. */
    assert_int_equal(vigil_stream_range(r, "nothing", "-", "+", 10, false, &e, &n),
                     VIGIL_READ_OK);
    assert_int_equal(n, 0);
    assert_true(vt_redis_exec(vt_srv, "SET str x"));
    assert_int_equal(vigil_stream_range(r, "str", "-", "+", 10, false, &e, &n),
                     VIGIL_READ_WRONG_TYPE);
    assert_int_equal(n, 0);
    assert_null(e);
    vigil_redis_free(r);
}

/* SETRANGE on a missing key pads with NUL bytes: the copy keeps them. */
static void binary_values_are_copied_whole(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    assert_true(vt_redis_exec(vt_srv, "SETRANGE b 2 x"));
    char *v;
    size_t len;
    assert_int_equal(vigil_read_string(r, "b", &v, &len, NULL, 0), VIGIL_READ_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "\0\0x", 4);
    free(v);
    vigil_redis_free(r);
}

static void last_id(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    char id[VIGIL_STREAM_ID_MAX] = "junk";
    assert_int_equal(vigil_stream_last_id(r, "s", id, sizeof id), VIGIL_READ_OK);
    assert_string_equal(id, "");
    assert_true(vt_redis_exec(vt_srv, "XADD s 7-0 m a"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 9-3 m b"));
    assert_int_equal(vigil_stream_last_id(r, "s", id, sizeof id), VIGIL_READ_OK);
    assert_string_equal(id, "9-3");
    assert_true(vt_redis_exec(vt_srv, "XADD big 18446744073709551615-18446744073709551615 m z"));
    assert_int_equal(vigil_stream_last_id(r, "big", id, sizeof id), VIGIL_READ_OK);
    assert_string_equal(id, "18446744073709551615-18446744073709551615");
    assert_true(vt_redis_exec(vt_srv, "RPUSH l a"));
    assert_int_equal(vigil_stream_last_id(r, "l", id, sizeof id), VIGIL_READ_WRONG_TYPE);
    assert_string_equal(id, "");
    vigil_redis_free(r);
}

static void read_after(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    vigil_stream_entry *e;
    size_t n;
    /* Nothing yet: the wait ends empty (and a missing stream is fine). */
    assert_int_equal(vigil_stream_read_after(r, "s", "0-0", 10, 50, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 0);
    assert_null(e);
    assert_true(vt_redis_exec(vt_srv, "XADD s 1-0 m a"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 2-0 m b"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 3-0 m c"));
    assert_int_equal(vigil_stream_read_after(r, "s", "1-0", 10, 50, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].id, "2-0");
    assert_string_equal(e[0].value, "b");
    assert_string_equal(e[1].id, "3-0");
    vigil_stream_entries_free(e, n);
    /* COUNT bounds it; without BLOCK it answers at once. */
    assert_int_equal(vigil_stream_read_after(r, "s", "0-0", 1, -1, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].id, "1-0");
    vigil_stream_entries_free(e, n);
    assert_int_equal(vigil_stream_read_after(r, "s", "3-0", 10, -1, &e, &n), VIGIL_READ_OK);
    assert_int_equal(n, 0);
    assert_true(vt_redis_exec(vt_srv, "SET str x"));
    assert_int_equal(vigil_stream_read_after(r, "str", "0-0", 10, 50, &e, &n),
                     VIGIL_READ_WRONG_TYPE);
    assert_int_equal(n, 0);
    vigil_redis_free(r);
}

/* Reads key's XINFO STREAM and checks every field of it. */
static void assert_info(vigil_redis *r, const char *key, bool exists, unsigned long long length,
                        long long added, const char *first, const char *top)
{
    vigil_stream_info in;
    assert_int_equal(vigil_stream_read_info(r, key, &in), VIGIL_READ_OK);
    assert_int_equal(in.exists, exists);
    assert_int_equal(in.length, length);
    assert_int_equal(in.entries_added, added);
    assert_string_equal(in.first_id, first);
    assert_string_equal(in.top_id, top);
}

/* XINFO STREAM: a stream's history (entries ever added, the top id)
 * beside what it holds; trimming leaves entries_added above length, a
 * missing key reads as not existing, a key of another type is the wrong
 * type. */
static void stream_info(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    assert_info(r, "s", false, 0, 0, "", "");
    assert_true(vt_redis_exec(vt_srv, "XADD s 5-0 m a"));
    assert_true(vt_redis_exec(vt_srv, "XADD s 6-1 m b"));
    assert_info(r, "s", true, 2, 2, "5-0", "6-1");
    /* Trimmed: fewer held than added, the first entry moves on. */
    assert_true(vt_redis_exec(vt_srv, "XADD s MAXLEN = 1 7-0 m c"));
    assert_info(r, "s", true, 1, 3, "7-0", "7-0");
    /* Emptied by XDEL: the top id stays, there is no first entry. */
    assert_true(vt_redis_exec(vt_srv, "XDEL s 7-0"));
    assert_info(r, "s", true, 0, 3, "", "7-0");
    vigil_stream_info in;
    assert_true(vt_redis_exec(vt_srv, "SET str x"));
    assert_int_equal(vigil_stream_read_info(r, "str", &in), VIGIL_READ_WRONG_TYPE);
    assert_false(in.exists);
    vigil_redis_free(r);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void members_and_strings(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    char **m;
    size_t n;
    assert_int_equal(vigil_read_members(r, "set", &m, &n), VIGIL_READ_OK);
    assert_int_equal(n, 0);
    assert_null(m);
    assert_true(vt_redis_exec(vt_srv, "SADD set b/x a/y"));
    assert_int_equal(vigil_read_members(r, "set", &m, &n), VIGIL_READ_OK);
    assert_int_equal(n, 2);
    qsort(m, n, sizeof *m, cmp_str);
    assert_string_equal(m[0], "a/y");
    assert_string_equal(m[1], "b/x");
    vigil_strings_free(m, n);
    assert_true(vt_redis_exec(vt_srv, "SET str hello"));
    assert_int_equal(vigil_read_members(r, "str", &m, &n), VIGIL_READ_WRONG_TYPE);
    assert_int_equal(n, 0);

    char *v;
    size_t len;
    assert_int_equal(vigil_read_string(r, "str", &v, &len, NULL, 0), VIGIL_READ_OK);
    assert_string_equal(v, "hello");
    assert_int_equal(len, 5);
    free(v);
    assert_int_equal(vigil_read_string(r, "missing", &v, &len, NULL, 0), VIGIL_READ_OK);
    assert_null(v);
    assert_int_equal(len, 0);
    assert_int_equal(vigil_read_string(r, "set", &v, NULL, NULL, 0), VIGIL_READ_WRONG_TYPE);
    assert_null(v);
    vigil_redis_free(r);
}

/* Runs last: the server is stopped, and every read tells "unreachable"
 * apart from "empty". */
static void unreachable_is_not_empty(void **state)
{
    (void)state;
    vigil_redis *r = vt_redis_connect();
    char id[VIGIL_STREAM_ID_MAX];
    assert_int_equal(vigil_stream_last_id(r, "s", id, sizeof id), VIGIL_READ_OK);
    vt_redis_stop(vt_srv);
    vt_srv = NULL;
    vigil_stream_entry *e;
    size_t n;
    assert_int_equal(vigil_stream_range(r, "s", "-", "+", 10, false, &e, &n),
                     VIGIL_READ_UNREACHABLE);
    assert_int_equal(n, 0);
    assert_int_equal(vigil_stream_last_id(r, "s", id, sizeof id), VIGIL_READ_UNREACHABLE);
    assert_int_equal(vigil_stream_read_after(r, "s", "0-0", 10, 50, &e, &n),
                     VIGIL_READ_UNREACHABLE);
    vigil_stream_info in;
    assert_int_equal(vigil_stream_read_info(r, "s", &in), VIGIL_READ_UNREACHABLE);
    char **m;
    assert_int_equal(vigil_read_members(r, "set", &m, &n), VIGIL_READ_UNREACHABLE);
    char *v;
    assert_int_equal(vigil_read_string(r, "str", &v, NULL, NULL, 0), VIGIL_READ_UNREACHABLE);
    assert_null(v);
    assert_int_equal(vigil_stream_range(NULL, "s", "-", "+", 10, false, &e, &n),
                     VIGIL_READ_UNREACHABLE);
    vigil_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranges_both_orders_and_bounds),
        cmocka_unit_test(binary_values_are_copied_whole),
        cmocka_unit_test(last_id),
        cmocka_unit_test(read_after),
        cmocka_unit_test(stream_info),
        cmocka_unit_test(members_and_strings),
        cmocka_unit_test(unreachable_is_not_empty),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup, vt_redis_group_teardown);
}
