/* test_redis.c - URL parsing, commands, reconnect after a crash of the
 * server, scripts surviving SCRIPT FLUSH, pipelining. Runs a real
 * redis-server (tests/support/redis_server.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "fixture_redis.h"
#include "vigil/log.h"
#include "vigil/redis_raw.h"
#include "vigil/metrics.h"
#include "vigil/redis.h"

static int flush(void **state)
{
    return vt_redis_exec(vt_srv, "FLUSHALL") ? 0 : -1;
}

static vigil_redis *connect_srv(void)
{
    vigil_redis *r = vt_redis_connect();
    assert_non_null(r);
    return r;
}

/* ---- URL parsing ---- */

static void test_url_defaults(void **state)
{
    vigil_redis_addr a;
    char err[128];
    assert_int_equal(vigil_redis_url_parse("redis://localhost", &a, err, sizeof err), 0);
    assert_string_equal(a.host, "localhost");
    assert_int_equal(a.port, 6379);
    assert_int_equal(a.db, 0);
    assert_string_equal(a.password, "");
}

static void test_url_full(void **state)
{
    vigil_redis_addr a;
    char err[128];
    assert_int_equal(
        vigil_redis_url_parse("redis://:s3cret@10.0.0.7:6380/3", &a, err, sizeof err), 0);
    assert_string_equal(a.host, "10.0.0.7");
    assert_int_equal(a.port, 6380);
    assert_int_equal(a.db, 3);
    assert_string_equal(a.password, "s3cret");
}

static void test_url_user_and_password(void **state)
{
    vigil_redis_addr a;
    char err[128];
    assert_int_equal(vigil_redis_url_parse("redis://bob:pw@cache:7000", &a, err, sizeof err), 0);
    assert_string_equal(a.host, "cache");
    assert_int_equal(a.port, 7000);
    assert_string_equal(a.user, "bob");
    assert_string_equal(a.password, "pw");
    /* a user without password means no AUTH */
    assert_int_equal(vigil_redis_url_parse("redis://bob@cache", &a, err, sizeof err), 0);
    assert_string_equal(a.host, "cache");
    assert_string_equal(a.user, "bob");
    assert_string_equal(a.password, "");
    /* no user: AUTH password (the default user) */
    assert_int_equal(vigil_redis_url_parse("redis://:pw@cache", &a, err, sizeof err), 0);
    assert_string_equal(a.user, "");
    assert_string_equal(a.password, "pw");
    /* both percent-decoded: '@', ':' and '/' in user or password */
    assert_int_equal(
        vigil_redis_url_parse("redis://svc%3Adm:p%40%3A%2Fw@h:1/2", &a, err, sizeof err), 0);
    assert_string_equal(a.user, "svc:dm");
    assert_string_equal(a.password, "p@:/w");
    assert_string_equal(a.host, "h");
    assert_int_equal(a.db, 2);
    /* a bad escape in the user is an error that quotes no credential */
    assert_int_equal(vigil_redis_url_parse("redis://b%zz:s3cr3t@h", &a, err, sizeof err), -1);
    assert_null(strstr(err, "s3cr3t"));
}

static void test_url_password_percent_and_at(void **state)
{
    vigil_redis_addr a;
    char err[128];
    assert_int_equal(vigil_redis_url_parse("redis://:p%40ss%2Fw@h/1", &a, err, sizeof err), 0);
    assert_string_equal(a.password, "p@ss/w");
    assert_int_equal(a.db, 1);
    /* an unencoded '@' in the password: the last '@' ends the user info */
    assert_int_equal(vigil_redis_url_parse("redis://:a@b@h:1", &a, err, sizeof err), 0);
    assert_string_equal(a.password, "a@b");
    assert_string_equal(a.host, "h");
    assert_int_equal(a.port, 1);
}

static void test_url_ipv6_and_trailing_slash(void **state)
{
    vigil_redis_addr a;
    char err[128];
    assert_int_equal(vigil_redis_url_parse("redis://[::1]:7001/2", &a, err, sizeof err), 0);
    assert_string_equal(a.host, "::1");
    assert_int_equal(a.port, 7001);
    assert_int_equal(a.db, 2);
    assert_int_equal(vigil_redis_url_parse("redis://h:65535/", &a, err, sizeof err), 0);
    assert_int_equal(a.port, 65535);
    assert_int_equal(a.db, 0);
}

static void test_url_errors(void **state)
{
    static const char *bad[] = {
        "http://h",        "rediss://h",   "unix:///tmp/r.sock", "redis://",
        "redis://:pw@",    "redis://h:",   "redis://h:0",        "redis://h:65536",
        "redis://h:12ab",  "redis://h:-1", "redis://h/x",        "redis://h/-1",
        "redis://h/1/2",   "redis://h/1x", "redis://[::1",       "redis://:p%4@h",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vigil_redis_addr a;
        memset(&a, 0x5a, sizeof a);
        vigil_redis_addr before = a;
        char err[128] = "";
        if (vigil_redis_url_parse(bad[i], &a, err, sizeof err) != -1)
            fail_msg("accepted bad url '%s'", bad[i]);
        if (err[0] == '\0')
            fail_msg("no error text for '%s'", bad[i]);
        assert_memory_equal(&a, &before, sizeof a); /* out untouched */
    }
    char err[128] = "";
    vigil_redis_addr a;
    assert_int_equal(vigil_redis_url_parse(NULL, &a, err, sizeof err), -1);
}

/* ---- commands ---- */

static void test_command_and_binary_args(void **state)
{
    vigil_redis *r = connect_srv();
    assert_false(vigil_redis_connected(r)); /* lazy */
    redisReply *rep = vigil_redis_command(r, "SET %s %s", "k", "v1");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    vigil_redis_reply_free(rep);
    assert_true(vigil_redis_connected(r));

    const char *argv[] = { "SET", "bin", "a\0b" };
    size_t lens[] = { 3, 3, 3 };
    rep = vigil_redis_commandv(r, 3, argv, lens);
    assert_non_null(rep);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_command(r, "GET bin");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_int_equal(rep->len, 3);
    assert_memory_equal(rep->str, "a\0b", 3);
    vigil_redis_reply_free(rep);

    /* an error reply is a reply, not a connection failure */
    rep = vigil_redis_command(r, "INCR %s", "k");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    vigil_redis_reply_free(rep);
    assert_true(vigil_redis_connected(r));
    vigil_redis_free(r);
}

/* Commands of every size through the connection's reused command buffer:
 * a small one, one that grows it, one too large to keep (2 MiB), then a
 * small one again; each value comes back byte for byte. */
static void test_commands_of_every_size(void **state)
{
    (void)state;
    vigil_redis *r = connect_srv();
    /* each side of the lengths written with one and two digits inline */
    const size_t sizes[] = { 0, 5, 9, 10, 11, 99, 100, 101, 4000, 70000, 2u << 20, 9 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char *v = malloc(n + 1);
        assert_non_null(v);
        for (size_t k = 0; k < n; k++)
            v[k] = (char)('a' + (k * 7 + i) % 26);
        v[n] = '\0';
        const char *argv[] = { "SET", "sized", v };
        size_t lens[] = { 3, 5, n };
        redisReply *rep = vigil_redis_commandv(r, 3, argv, lens);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        vigil_redis_reply_free(rep);
        const char *get[] = { "GET", "sized" };
        rep = vigil_redis_commandv(r, 2, get, NULL); /* lengths by strlen */
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STRING);
        assert_int_equal(rep->len, n);
        assert_memory_equal(rep->str, v, n);
        vigil_redis_reply_free(rep);
        free(v);
    }
    /* argument counts on each side of 10 and 100 ("*<argc>") */
    const int counts[] = { 9, 10, 11, 99, 100, 101 };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const char *argv[101];
        char items[101][16];
        argv[0] = "RPUSH";
        argv[1] = "wide";
        for (int k = 2; k < counts[i]; k++) {
            snprintf(items[k], sizeof items[k], "v%d", k);
            argv[k] = items[k];
        }
        const char *del[] = { "DEL", "wide" };
        redisReply *rep = vigil_redis_commandv(r, 2, del, NULL);
        assert_non_null(rep);
        vigil_redis_reply_free(rep);
        rep = vigil_redis_commandv(r, counts[i], argv, NULL);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
        assert_int_equal(rep->integer, counts[i] - 2);
        vigil_redis_reply_free(rep);
    }
    vigil_redis_free(r);
}

static void test_connect_refused_counts_error(void **state)
{
    vigil_redis_addr a = vt_redis_addr(vt_srv);
    a.port = vt_redis_port(vt_srv) == 1 ? 2 : 1; /* nothing listens on port 1 */
    vigil_redis *r = vigil_redis_new(&a, 500);
    double before = vigil_metric_value("vigil_redis_errors_total", NULL);
    assert_false(vigil_redis_ensure(r));
    assert_false(vigil_redis_connected(r));
    assert_true(strlen(vigil_redis_last_error(r)) > 0);
    assert_null(vigil_redis_command(r, "PING"));
    assert_true(vigil_metric_value("vigil_redis_errors_total", NULL) >= before + 2);
    vigil_redis_free(r);
}

/* An ACL user in the URL sends AUTH user password (hiredis 0.14 has no
 * user of its own); a wrong password is flagged as refused credentials,
 * as is NOAUTH when no password was given at all. */
static void test_auth_acl_user(void **state)
{
    assert_true(vt_redis_exec(vt_srv, "ACL SETUSER svc on >s3cr3t-pw ~* +@all"));
    char url[160], err[128];
    vigil_redis_addr a;
    snprintf(url, sizeof url, "redis://svc:s3cr3t-pw@127.0.0.1:%d/0", vt_redis_port(vt_srv));
    assert_int_equal(vigil_redis_url_parse(url, &a, err, sizeof err), 0);
    vigil_redis *r = vigil_redis_new(&a, 2000);
    assert_true(vigil_redis_ensure(r));
    redisReply *rep = vigil_redis_command(r, "ACL WHOAMI");
    assert_non_null(rep);
    assert_string_equal(rep->str, "svc");
    vigil_redis_reply_free(rep);
    assert_false(vigil_redis_auth_refused(r));
    vigil_redis_free(r);

    snprintf(a.password, sizeof a.password, "wrong-pw");
    r = vigil_redis_new(&a, 2000);
    assert_false(vigil_redis_ensure(r));
    assert_true(vigil_redis_auth_refused(r));
    const char *e = vigil_redis_last_error(r);
    assert_non_null(strstr(e, "WRONGPASS"));
    assert_null(strstr(e, "wrong-pw"));
    vigil_redis_free(r);

    /* default user off (like requirepass): no AUTH at all gets NOAUTH */
    assert_true(vt_redis_exec(vt_srv, "ACL SETUSER default off"));
    a = vt_redis_addr(vt_srv);
    r = vigil_redis_new(&a, 2000);
    rep = vigil_redis_command(r, "PING");
    assert_null(rep);
    assert_true(vigil_redis_auth_refused(r));
    char perr[256] = "";
    assert_int_equal(vigil_redis_probe(r, perr, sizeof perr), -1);
    assert_non_null(strstr(perr, "refused user 'default'"));
    assert_non_null(strstr(perr, "NOAUTH"));
    vigil_redis_free(r);
    /* nobody listening: not a refusal, just unreachable */
    vigil_redis_addr gone = vt_redis_addr(vt_srv);
    gone.port = 1;
    r = vigil_redis_new(&gone, 500);
    assert_int_equal(vigil_redis_probe(r, perr, sizeof perr), 0);
    vigil_redis_free(r);
    snprintf(url, sizeof url, "redis://svc:s3cr3t-pw@127.0.0.1:%d/0", vt_redis_port(vt_srv));
    assert_int_equal(vigil_redis_url_parse(url, &a, err, sizeof err), 0);
    r = vigil_redis_new(&a, 2000);
    rep = vigil_redis_command(r, "ACL SETUSER default on");
    assert_non_null(rep);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_command(r, "ACL DELUSER svc");
    assert_non_null(rep);
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
}

static void test_auth_and_select(void **state)
{
    vigil_redis *admin = connect_srv();
    redisReply *rep = vigil_redis_command(admin, "CONFIG SET requirepass %s", "pw1");
    assert_non_null(rep);
    vigil_redis_reply_free(rep);

    vigil_redis_addr a = vt_redis_addr(vt_srv);
    /* wrong password: connect fails */
    snprintf(a.password, sizeof a.password, "nope");
    vigil_redis *bad = vigil_redis_new(&a, 2000);
    assert_false(vigil_redis_ensure(bad));
    assert_non_null(strstr(vigil_redis_last_error(bad), "AUTH"));
    vigil_redis_free(bad);

    snprintf(a.password, sizeof a.password, "pw1");
    a.db = 5;
    vigil_redis *r = vigil_redis_new(&a, 2000);
    assert_true(vigil_redis_ensure(r));
    rep = vigil_redis_command(r, "SET indb5 yes");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    vigil_redis_reply_free(rep);

    /* admin (authenticated before requirepass, db 0) does not see it there */
    rep = vigil_redis_command(admin, "EXISTS indb5");
    assert_non_null(rep);
    assert_int_equal(rep->integer, 0);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_command(r, "CONFIG SET requirepass %s", "");
    assert_non_null(rep);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_command(admin, "SELECT 5");
    vigil_redis_reply_free(rep);
    rep = vigil_redis_command(admin, "EXISTS indb5");
    assert_int_equal(rep->integer, 1);
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
    vigil_redis_free(admin);
}

/* Returns a command's reply, allowing the first attempt after a server
 * restart to fail (the dropped connection is detected only then). */
static redisReply *command_retry_once(vigil_redis *r, const char *cmd)
{
    redisReply *rep = vigil_redis_command(r, cmd);
    if (!rep)
        rep = vigil_redis_command(r, cmd);
    return rep;
}

static void test_reconnect_after_kill9_and_restart(void **state)
{
    vigil_redis *r = connect_srv();
    redisReply *rep = vigil_redis_command(r, "SET durable %s", "yes");
    assert_non_null(rep);
    vigil_redis_reply_free(rep);
    double err0 = vigil_metric_value("vigil_redis_errors_total", NULL);
    double rec0 = vigil_metric_value("vigil_redis_reconnects_total", NULL);

    assert_int_equal(vt_redis_kill9(vt_srv), 0);
    rep = vigil_redis_command(r, "GET durable");
    assert_null(rep); /* server gone */
    assert_false(vigil_redis_connected(r));
    assert_true(vigil_metric_value("vigil_redis_errors_total", NULL) >= err0 + 1);
    assert_false(vigil_redis_ensure(r)); /* still down: no loop, just false */

    assert_int_equal(vt_redis_restart(vt_srv), 0);
    rep = command_retry_once(r, "GET durable");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "yes"); /* survived through the AOF */
    vigil_redis_reply_free(rep);
    assert_true(vigil_redis_connected(r));
    assert_true(vigil_metric_value("vigil_redis_reconnects_total", NULL) >= rec0 + 1);
    assert_string_equal(vigil_redis_last_error(r), "");
    vigil_redis_free(r);
}

/* ---- scripts ---- */

static void test_eval_loads_and_survives_script_flush(void **state)
{
    static vigil_script echo = VIGIL_SCRIPT("return KEYS[1] .. ':' .. ARGV[1]");
    vigil_redis *r = connect_srv();
    const char *argv[] = { "key1", "arg1" };
    redisReply *rep = vigil_redis_eval(r, &echo, 1, 2, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "key1:arg1");
    vigil_redis_reply_free(rep);
    assert_int_equal(strlen(echo.sha), 40);

    rep = vigil_redis_command(r, "SCRIPT FLUSH");
    assert_non_null(rep);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_eval(r, &echo, 1, 2, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "key1:arg1");
    vigil_redis_reply_free(rep);

    /* a stale sha (e.g. set by another server) is replaced too */
    memset(echo.sha, 'a', 40);
    rep = vigil_redis_eval(r, &echo, 1, 2, argv, NULL);
    assert_non_null(rep);
    assert_string_equal(rep->str, "key1:arg1");
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
}

static void test_eval_script_error_is_reply(void **state)
{
    static vigil_script bad = VIGIL_SCRIPT("return redis.call('INCR', KEYS[1])");
    vigil_redis *r = connect_srv();
    redisReply *rep = vigil_redis_command(r, "SET notnum abc");
    vigil_redis_reply_free(rep);
    const char *argv[] = { "notnum" };
    rep = vigil_redis_eval(r, &bad, 1, 1, argv, NULL);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    vigil_redis_reply_free(rep);
    assert_true(vigil_redis_connected(r));
    vigil_redis_free(r);
}

/* ---- pipelining ---- */

static void test_pipeline_in_order(void **state)
{
    vigil_redis *r = connect_srv();
    const char *a1[] = { "RPUSH", "l", "x" };
    const char *a2[] = { "RPUSH", "l", "y" };
    const char *a3[] = { "LRANGE", "l", "0", "-1" };
    assert_int_equal(vigil_redis_append(r, 3, a1, NULL), 0);
    assert_int_equal(vigil_redis_append(r, 3, a2, NULL), 0);
    assert_int_equal(vigil_redis_append(r, 4, a3, NULL), 0);
    redisReply *rep = vigil_redis_pipeline_get(r);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_pipeline_get(r);
    assert_int_equal(rep->integer, 2);
    vigil_redis_reply_free(rep);
    rep = vigil_redis_pipeline_get(r);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_string_equal(rep->element[0]->str, "x");
    assert_string_equal(rep->element[1]->str, "y");
    vigil_redis_reply_free(rep);
    /* nothing pending: NULL, but the connection is fine */
    assert_null(vigil_redis_pipeline_get(r));
    assert_true(vigil_redis_connected(r));

    /* unread pipelined replies do not leak into the next plain command */
    assert_int_equal(vigil_redis_append(r, 3, a1, NULL), 0);
    rep = vigil_redis_command(r, "LRANGE l 0 -1");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY); /* not the RPUSH's integer */
    assert_int_equal(rep->elements, 3);
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
}

static void test_pipeline_io_error(void **state)
{
    vigil_redis *r = connect_srv();
    const char *a1[] = { "PING" };
    assert_true(vigil_redis_ensure(r));
    assert_int_equal(vt_redis_kill9(vt_srv), 0);
    /* appending only buffers; the error shows when replies are read */
    if (vigil_redis_append(r, 1, a1, NULL) == 0)
        assert_null(vigil_redis_pipeline_get(r));
    assert_false(vigil_redis_connected(r));
    assert_int_equal(vt_redis_restart(vt_srv), 0);
    assert_int_equal(vigil_redis_append(r, 1, a1, NULL), 0);
    redisReply *rep = vigil_redis_pipeline_get(r);
    assert_non_null(rep);
    assert_string_equal(rep->str, "PONG");
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
}

/* The appended commands are written together when the first reply is
 * asked for: a pipeline far larger than the socket's buffers (and than the
 * command buffer kept between writes) arrives whole and in order, and the
 * buffer is usable again afterwards. */
static void test_pipeline_larger_than_the_socket(void **state)
{
    (void)state;
    vigil_redis *r = connect_srv();
    enum { N = 3000, VLEN = 2048 };
    static char v[VLEN + 1];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            char k[32];
            snprintf(k, sizeof k, "big:%d", i);
            memset(v, 'a' + (i + round) % 26, VLEN);
            const char *argv[] = { "SET", k, v };
            size_t lens[] = { 3, strlen(k), VLEN };
            assert_int_equal(vigil_redis_append(r, 3, argv, lens), 0);
            const char *incr[] = { "INCR", "big:count" };
            assert_int_equal(vigil_redis_append(r, 2, incr, NULL), 0);
        }
        for (int i = 0; i < N; i++) {
            redisReply *rep = vigil_redis_pipeline_get(r);
            assert_non_null(rep);
            assert_int_equal(rep->type, REDIS_REPLY_STATUS);
            vigil_redis_reply_free(rep);
            rep = vigil_redis_pipeline_get(r);
            assert_non_null(rep);
            assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
            assert_int_equal(rep->integer, round * N + i + 1);
            vigil_redis_reply_free(rep);
        }
        assert_null(vigil_redis_pipeline_get(r));
    }
    redisReply *rep = vigil_redis_command(r, "GET big:2999");
    assert_non_null(rep);
    assert_int_equal(rep->len, VLEN);
    assert_int_equal(rep->str[0], 'a' + (2999 + 1) % 26);
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
}

/* Commands appended on a connection that then fails are gone with it: they
 * are never written on the next connection, whose replies would otherwise
 * answer commands nobody reads. */
static void test_commands_appended_before_a_failure_are_not_sent_later(void **state)
{
    (void)state;
    vigil_redis *r = connect_srv();
    assert_true(vigil_redis_ensure(r));
    uint64_t epoch = vigil_redis_epoch(r);
    assert_int_equal(vt_redis_kill9(vt_srv), 0);
    const char *stale[] = { "SET", "stale", "1" };
    assert_int_equal(vigil_redis_append(r, 3, stale, NULL), 0);
    assert_null(vigil_redis_pipeline_get(r));
    assert_false(vigil_redis_connected(r));
    assert_true(vigil_redis_epoch(r) != epoch);
    assert_int_equal(vt_redis_restart(vt_srv), 0);
    const char *get[] = { "GET", "stale" };
    assert_int_equal(vigil_redis_append(r, 2, get, NULL), 0);
    redisReply *rep = vigil_redis_pipeline_get(r);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_NIL);
    vigil_redis_reply_free(rep);
    assert_null(vigil_redis_pipeline_get(r)); /* nothing else owed */
    vigil_redis_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_defaults),
        cmocka_unit_test(test_url_full),
        cmocka_unit_test(test_url_user_and_password),
        cmocka_unit_test(test_url_password_percent_and_at),
        cmocka_unit_test(test_url_ipv6_and_trailing_slash),
        cmocka_unit_test(test_url_errors),
        cmocka_unit_test_setup(test_command_and_binary_args, flush),
        cmocka_unit_test_setup(test_commands_of_every_size, flush),
        cmocka_unit_test_setup(test_connect_refused_counts_error, flush),
        cmocka_unit_test_setup(test_auth_and_select, flush),
        cmocka_unit_test_setup(test_auth_acl_user, flush),
        cmocka_unit_test_setup(test_reconnect_after_kill9_and_restart, flush),
        cmocka_unit_test_setup(test_eval_loads_and_survives_script_flush, flush),
        cmocka_unit_test_setup(test_eval_script_error_is_reply, flush),
        cmocka_unit_test_setup(test_pipeline_in_order, flush),
        cmocka_unit_test_setup(test_pipeline_io_error, flush),
        cmocka_unit_test_setup(test_pipeline_larger_than_the_socket, flush),
        cmocka_unit_test_setup(test_commands_appended_before_a_failure_are_not_sent_later, flush),
    };
    return cmocka_run_group_tests_name("redis", tests, vt_redis_group_setup, vt_redis_group_teardown);
}
