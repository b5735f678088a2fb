/* fixture_redis.c - the shared Redis setup of libshared's unit tests
 * (fixture_redis.h). */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "fixture_redis.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vigil/log.h"
#include "vigil/redis_raw.h"

vt_redis *vt_srv;
vigil_redis *vt_conn;

int vt_redis_group_setup(void **state)
{
    (void)state;
    /* the program's name is the test's (test_store, test_reads, ...) */
    vigil_log_init(program_invocation_short_name, "test", VIGIL_LOG_ERROR);
    vt_srv = vt_redis_start();
    return vt_srv ? 0 : -1;
}

int vt_redis_group_teardown(void **state)
{
    (void)state;
    vt_redis_stop(vt_srv);
    vt_srv = NULL;
    return 0;
}

int vt_redis_group_setup_conn(void **state)
{
    if (vt_redis_group_setup(state) != 0)
        return -1;
    vt_conn = vt_redis_connect();
    return vt_conn ? 0 : -1;
}

int vt_redis_group_teardown_conn(void **state)
{
    vigil_redis_free(vt_conn);
    vt_conn = NULL;
    return vt_redis_group_teardown(state);
}

vigil_redis *vt_redis_connect(void)
{
    vigil_redis_addr a = vt_redis_addr(vt_srv);
    return vigil_redis_new(&a, 2000);
}

long long vt_redis_int(vigil_redis *r, const char *fmt, const char *arg)
{
    redisReply *rep = vigil_redis_command(r, fmt, arg);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    long long v = rep->integer;
    vigil_redis_reply_free(rep);
    return v;
}

long long vt_redis_calls(vigil_redis *r, const char *command)
{
    redisReply *rep = vigil_redis_command(r, "INFO commandstats");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:calls=", command);
    const char *at = strstr(rep->str, key);
    long long n = at ? atoll(at + strlen(key)) : 0;
    vigil_redis_reply_free(rep);
    return n;
}

long long vt_redis_zscore(vigil_redis *r, const char *key, const char *member)
{
    redisReply *rep = vigil_redis_command(r, "ZSCORE %s %s", key, member);
    assert_non_null(rep);
    long long d = rep->type == REDIS_REPLY_STRING ? strtoll(rep->str, NULL, 10) : -1;
    vigil_redis_reply_free(rep);
    return d;
}

char *vt_redis_lindex(vigil_redis *r, const char *key, int i)
{
    redisReply *rep = vigil_redis_command(r, "LINDEX %s %d", key, i);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    char *s = strdup(rep->str);
    vigil_redis_reply_free(rep);
    return s;
}

int vt_store_fixture_setup(void **state, const vigil_store_config *cfg)
{
    if (!vt_redis_exec(vt_srv, "FLUSHALL"))
        return -1;
    vt_store_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->r = vt_redis_connect();
    f->s = f->r ? vigil_store_new(f->r, cfg) : NULL;
    *state = f;
    return f->r && f->s ? 0 : -1;
}

int vt_store_fixture_teardown(void **state)
{
    vt_store_fixture *f = *state;
    if (!f)
        return 0;
    vigil_store_free(f->s);
    vigil_redis_free(f->r);
    free(f);
    *state = NULL;
    return 0;
}
