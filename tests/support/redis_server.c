/* redis_server.c - a throwaway redis-server for tests. See redis_server.h. */
#include "redis_server.h"
#include "proc.h"
#include "vigil/clock.h"
#include "vigil/redis_raw.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <hiredis/hiredis.h>

#define READY_TIMEOUT_MS 5000
#define KILL_TIMEOUT_MS 5000

struct vt_redis {
    pid_t pid; /* 0 when not running */
    int port;
    char dir[256];
};

/* Prints the end of the server's output, to explain a failed start. */
static void dump_log(const vt_redis *s)
{
    char path[300];
    snprintf(path, sizeof path, "%s/redis.out", s->dir);
    vt_dump_tail(path, "vt_redis: server output");
}

static pid_t spawn(const vt_redis *s)
{
    char port[16], out[300];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(out, sizeof out, "%s/redis.out", s->dir);
    const char *bin = getenv("VT_REDIS_SERVER");
    if (!bin || !*bin)
        bin = "redis-server";
    char *const argv[] = {
        (char *)bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "yes", "--dir", (char *)s->dir, "--daemonize", "no",
        "--logfile", "", NULL,
    };
    return vt_spawn(argv, out, "vt_redis");
}

static bool ping(int port)
{
    struct timeval tv = { 0, 200 * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    bool ok = false;
    if (c && !c->err) {
        c->reader->fn = &vigil_redis_reply_functions; /* freed as libshared's replies are */
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r)
            vigil_redis_reply_free(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

/* Waits until the child answers PING (LOADING while it replays the AOF
 * counts as not yet), or exits, or the deadline passes. */
static int wait_ready(vt_redis *s)
{
    int rc = vt_wait_ready(&s->pid, ping, s->port, READY_TIMEOUT_MS);
    if (rc == VT_WAIT_TIMEOUT) {
        fprintf(stderr, "vt_redis: no PING answer on port %d within %d ms\n", s->port,
                READY_TIMEOUT_MS);
        vt_redis_kill9(s);
    }
    return rc == 0 ? 0 : -1;
}

vt_redis *vt_redis_start(void)
{
    /* hiredis writes with write(): a test that kills the server must not
     * die of SIGPIPE on the next command (daemons ignore it too). */
    signal(SIGPIPE, SIG_IGN);
    vt_redis *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/vigil-redis-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) {
        fprintf(stderr, "vt_redis: mkdtemp %s: %s\n", s->dir, strerror(errno));
        free(s);
        return NULL;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        s->port = vt_free_port();
        if (s->port <= 0)
            continue;
        s->pid = spawn(s);
        if (s->pid < 0) {
            fprintf(stderr, "vt_redis: fork: %s\n", strerror(errno));
            s->pid = 0;
            break;
        }
        if (wait_ready(s) == 0)
            return s;
        /* most likely the port was taken meanwhile: try another */
    }
    fprintf(stderr, "vt_redis: could not start redis-server\n");
    dump_log(s);
    vt_redis_stop(s);
    return NULL;
}

vigil_redis_addr vt_redis_addr(const vt_redis *s)
{
    vigil_redis_addr a;
    memset(&a, 0, sizeof a);
    snprintf(a.host, sizeof a.host, "127.0.0.1");
    a.port = s->port;
    a.db = 0;
    return a;
}

int vt_redis_port(const vt_redis *s)
{
    return s->port;
}

void vt_redis_url(const vt_redis *s, char *out, size_t outlen)
{
    snprintf(out, outlen, "redis://127.0.0.1:%d/0", s->port);
}

const char *vt_redis_dir(const vt_redis *s)
{
    return s->dir;
}

pid_t vt_redis_pid(const vt_redis *s)
{
    return s->pid;
}

int vt_redis_kill9(vt_redis *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGKILL);
    long long deadline = vigil_mono_ms() + KILL_TIMEOUT_MS;
    while (vigil_mono_ms() < deadline) {
        int status;
        pid_t w = waitpid(s->pid, &status, WNOHANG);
        if (w == s->pid || (w < 0 && errno == ECHILD)) {
            s->pid = 0;
            return 0;
        }
        vigil_sleep_ms(5, NULL);
    }
    fprintf(stderr, "vt_redis: pid %d did not die within %d ms\n", (int)s->pid,
            KILL_TIMEOUT_MS);
    return -1;
}

int vt_redis_restart(vt_redis *s)
{
    if (s->pid > 0 && vt_redis_kill9(s) != 0)
        return -1;
    /* Same port: the old listener is gone (redis sets SO_REUSEADDR, so
     * TIME_WAIT connections do not block the bind). Retry a few times in
     * case the port is briefly unavailable. */
    for (int attempt = 0; attempt < 3; attempt++) {
        s->pid = spawn(s);
        if (s->pid < 0) {
            s->pid = 0;
            return -1;
        }
        if (wait_ready(s) == 0)
            return 0;
        vigil_sleep_ms(100, NULL);
    }
    dump_log(s);
    return -1;
}

bool vt_redis_exec(const vt_redis *s, const char *cmd)
{
    struct timeval tv = { 2, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    bool ok = false;
    if (c && !c->err) {
        c->reader->fn = &vigil_redis_reply_functions; /* freed as libshared's replies are */
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, cmd);
        ok = r && r->type != REDIS_REPLY_ERROR;
        if (r)
            vigil_redis_reply_free(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

void vt_redis_stop(vt_redis *s)
{
    if (!s)
        return;
    if (s->pid > 0)
        vt_redis_kill9(s);
    if (s->dir[0])
        vt_rm_rf(s->dir);
    free(s);
}
