/* test_redis_errors.c - which Redis error replies may refuse an input and
 * which are retried as an outage (vigil_redis_error_transient), checked on
 * the classification itself and through a planted reply: a tiny RESP server
 * on a loopback port answers every command with the reply the test chose,
 * so a -LOADING (or -BUSY, -OOM, ...) reaches the real hiredis code path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vigil/log.h"
#include "vigil/redis.h"
#include "vigil/store.h"
#include "vigil/timers.h"

/* ---- the planted-reply server ------------------------------------------ */

typedef struct planted {
    int listen_fd;
    int port;
    pthread_t thread;
    atomic_int stop;
    char reply[256];      /* sent for every command received */
    atomic_int commands;  /* commands answered */
} planted;

/* Counts the commands in a buffer of RESP arrays: each starts with '*' at
 * the beginning of a line. Good enough for the commands hiredis sends. */
static int count_commands(const char *buf, ssize_t n)
{
    int c = 0;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '*' && (i == 0 || buf[i - 1] == '\n'))
            c++;
    return c;
}

static void *planted_main(void *arg)
{
    planted *p = arg;
    while (!atomic_load(&p->stop)) {
        int fd = accept(p->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
            int cmds = count_commands(buf, n);
            for (int i = 0; i < cmds; i++) {
                /* the client may have hung up on the reply before this
                 * one (it drops a connection at a transient error):
                 * MSG_NOSIGNAL, or SIGPIPE would end the whole test */
                if (send(fd, p->reply, strlen(p->reply), MSG_NOSIGNAL) < 0)
                    break;
                atomic_fetch_add(&p->commands, 1);
            }
        }
        close(fd);
    }
    return NULL;
}

static planted *planted_start(const char *reply)
{
    planted *p = calloc(1, sizeof *p);
    assert_non_null(p);
    snprintf(p->reply, sizeof p->reply, "%s", reply);
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(p->listen_fd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(p->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(p->listen_fd, 8), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(p->listen_fd, (struct sockaddr *)&a, &al), 0);
    p->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&p->thread, NULL, planted_main, p), 0);
    return p;
}

static void planted_stop(planted *p)
{
    atomic_store(&p->stop, 1);
    /* Wake accept() with one last connection. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p->port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0) {
        (void)connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
    }
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
    free(p);
}

static vigil_redis *connect_planted(const planted *p)
{
    vigil_redis_addr a = { .host = "127.0.0.1", .port = p->port };
    vigil_redis *r = vigil_redis_new(&a, 2000);
    assert_non_null(r);
    return r;
}

/* ---- the classification -------------------------------------------------- */

static void test_transient_codes(void **state)
{
    (void)state;
    const char *transient[] = {
        "LOADING Redis is loading the dataset in memory",
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        "NOAUTH Authentication required.",
        "OOM command not allowed when used memory > 'maxmemory'.",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        "READONLY You can't write against a read only replica.",
        "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "ERR max number of clients reached",
        "SOMETHINGNEW we have never heard of",
        "",
    };
    for (size_t i = 0; i < sizeof transient / sizeof *transient; i++)
        assert_true(vigil_redis_error_transient(transient[i]));
    assert_true(vigil_redis_error_transient(NULL));
}

static void test_data_codes(void **state)
{
    (void)state;
    const char *data[] = {
        "WRONGTYPE Operation against a key holding the wrong kind of value",
        "WRONGTYPE Operation against a key holding the wrong kind of value script: abc, on "
        "@user_script:12.",
        "ERR value is not an integer or out of range",
        "ERR value is not a valid float",
        "ERR hash value is not an integer",
        "ERR no such key",
        "NOGROUP No such key 'x' or consumer group 'g'",
        "BUSYGROUP Consumer Group name already exists",
        "NOSCRIPT No matching script. Please use EVAL.",
        "VIGIL_BAD_DATA vigil:x:state:r is a string, not a hash",
    };
    for (size_t i = 0; i < sizeof data / sizeof *data; i++)
        assert_false(vigil_redis_error_transient(data[i]));
}

/* ---- planted replies through the real client --------------------------- */

static void test_loading_is_an_outage(void **state)
{
    (void)state;
    planted *p = planted_start("-LOADING Redis is loading the dataset in memory\r\n");
    vigil_redis *r = connect_planted(p);
    redisReply *rep = vigil_redis_command(r, "SMEMBERS %s", "k");
    assert_null(rep); /* as if the connection was lost: the caller retries */
    assert_non_null(strstr(vigil_redis_last_error(r), "LOADING"));
    assert_false(vigil_redis_connected(r)); /* dropped: the next call reconnects */
    const char *argv[] = { "GET", "k" };
    assert_null(vigil_redis_commandv(r, 2, argv, NULL));
    vigil_redis_free(r);
    planted_stop(p);
}

static void test_every_transient_code_fails_every_path(void **state)
{
    (void)state;
    const char *replies[] = {
        "-BUSY Redis is busy running a script\r\n",
        "-NOAUTH Authentication required.\r\n",
        "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
        "-MASTERDOWN Link with MASTER is down\r\n",
        "-READONLY You can't write against a read only replica.\r\n",
    };
    for (size_t i = 0; i < sizeof replies / sizeof *replies; i++) {
        planted *p = planted_start(replies[i]);
        vigil_redis *r = connect_planted(p);
        /* plain command */
        assert_null(vigil_redis_command(r, "GET k"));
        /* pipeline */
        const char *a1[] = { "GET", "a" };
        assert_int_equal(vigil_redis_append(r, 2, a1, NULL), 0);
        assert_null(vigil_redis_pipeline_get(r));
        /* script (SCRIPT LOAD gets the same reply) */
        static vigil_script s = VIGIL_SCRIPT("return 1");
        const char *k[] = { "k" };
        assert_null(vigil_redis_eval(r, &s, 1, 1, k, NULL));
        /* the store's load and commit, and the timer claim: errors to retry */
        vigil_store_config sc = { .prefix = "t:", .service = "svc" };
        vigil_store *st = vigil_store_new(r, &sc);
        int64_t v = 0;
        char *state_json = NULL;
        int seen = 0;
        assert_int_equal(vigil_store_load(st, "room1", "id1", &seen, &v, &state_json), -1);
        vigil_effects fx;
        vigil_effects_init(&fx);
        vigil_commit c = { .key = "room1", .expected_version = 0, .input_id = "id1", .fx = &fx };
        assert_int_equal(vigil_store_commit(st, &c, &v, &state_json), VIGIL_COMMIT_ERROR);
        vigil_timer_claim claims[4];
        assert_int_equal(vigil_timers_claim(st, 1000, 100, 4, claims), -1);
        vigil_effects_free(&fx);
        vigil_store_free(st);
        vigil_redis_free(r);
        planted_stop(p);
    }
}

static void test_wrongtype_is_a_reply(void **state)
{
    (void)state;
    planted *p =
        planted_start("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    vigil_redis *r = connect_planted(p);
    redisReply *rep = vigil_redis_command(r, "SMEMBERS %s", "k");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    assert_true(vigil_redis_connected(r));
    vigil_redis_reply_free(rep);
    vigil_redis_free(r);
    planted_stop(p);
}

int main(void)
{
    vigil_log_init("test_redis_errors", "test", VIGIL_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transient_codes),
        cmocka_unit_test(test_data_codes),
        cmocka_unit_test(test_loading_is_an_outage),
        cmocka_unit_test(test_every_transient_code_fails_every_path),
        cmocka_unit_test(test_wrongtype_is_a_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
