/* test_reads.c - typed reads of Redis values (vigil/reads.h) against a
 * real redis-server: GET of a string, a missing key and another type; a
 * flag; stream ranges in both orders, stopped early, of a missing stream. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/reads.h"
#include "vigil/log.h"

static void flags(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    bool on = true;
    assert_int_equal(vigil_read_flag(r, "f", &on, NULL, 0), VIGIL_READ_OK);
    assert_false(on); /* absent */
    assert_true(vt_redis_exec(vt_srv, "SET f 1"));
    assert_int_equal(vigil_read_flag(r, "f", &on, NULL, 0), VIGIL_READ_OK);
    assert_true(on);
    assert_true(vt_redis_exec(vt_srv, "SET f 10"));
    assert_int_equal(vigil_read_flag(r, "f", &on, NULL, 0), VIGIL_READ_OK);
    assert_false(on);
    assert_true(vt_redis_exec(vt_srv, "RPUSH l a"));
    on = true;
    assert_int_equal(vigil_read_flag(r, "l", &on, NULL, 0), VIGIL_READ_WRONG_TYPE);
    assert_false(on);
    assert_int_equal(vigil_read_flag(NULL, "f", &on, NULL, 0), VIGIL_READ_UNREACHABLE);
    vigil_redis_free(r);
}

static void get_string_missing_and_wrong_type(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    assert_true(vt_redis_exec(vt_srv, "SET k hello"));
    char *v = NULL;
    size_t len = 0;
    assert_int_equal(vigil_read_string(r, "k", &v, &len, NULL, 0), VIGIL_READ_OK);
    assert_string_equal(v, "hello");
    assert_int_equal(len, 5);
    free(v);
    assert_int_equal(vigil_read_string(r, "missing", &v, NULL, NULL, 0), VIGIL_READ_OK);
    assert_null(v);
    assert_true(vt_redis_exec(vt_srv, "RPUSH l a"));
    char why[128] = "";
    assert_int_equal(vigil_read_string(r, "l", &v, NULL, why, sizeof why), VIGIL_READ_WRONG_TYPE);
    assert_null(v);
    assert_non_null(strstr(why, "WRONGTYPE"));
    vigil_redis_free(r);
}

typedef struct seen {
    char values[8][16];
    int n;
} seen;

static int collect(void *ctx, const char *id, const char *value, size_t len)
{
    (void)id;
    (void)len;
    seen *s = ctx;
    snprintf(s->values[s->n++], sizeof s->values[0], "%s", value);
    return strcmp(value, "stop") == 0;
}

static void stream_ranges(void **state)
{
    (void)state;
    assert_true(vt_redis_exec(vt_srv, "FLUSHALL"));
    vigil_redis *r = vt_redis_connect();
    assert_true(vt_redis_exec(vt_srv, "XADD s * m one"));
    assert_true(vt_redis_exec(vt_srv, "XADD s * m two"));
    assert_true(vt_redis_exec(vt_srv, "XADD s * other x"));
    assert_true(vt_redis_exec(vt_srv, "XADD s * m three"));
    seen a = {0};
    assert_int_equal(vigil_read_stream(r, "s", false, 10, collect, &a), 3);
    assert_string_equal(a.values[0], "one");
    assert_string_equal(a.values[2], "three");
    seen b = {0};
    assert_int_equal(vigil_read_stream(r, "s", true, 2, collect, &b), 1); /* COUNT 2: three, x */
    assert_string_equal(b.values[0], "three");
    assert_true(vt_redis_exec(vt_srv, "XADD s * m stop"));
    assert_true(vt_redis_exec(vt_srv, "XADD s * m after"));
    seen c = {0};
    assert_int_equal(vigil_read_stream(r, "s", false, 10, collect, &c), 4); /* stops at "stop" */
    seen d = {0};
    assert_int_equal(vigil_read_stream(r, "nothing", true, 10, collect, &d), 0);
    assert_true(vt_redis_exec(vt_srv, "SET str x"));
    assert_int_equal(vigil_read_stream(r, "str", true, 10, collect, &d), -1);
    vigil_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_string_missing_and_wrong_type),
        cmocka_unit_test(stream_ranges),
        cmocka_unit_test(flags),
    };
    return cmocka_run_group_tests(tests, vt_redis_group_setup, vt_redis_group_teardown);
}
