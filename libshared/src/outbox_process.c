/* outbox_process.c - the outbox publisher as a child process (see
 * outbox_process.h).
 *
 * Parent side: a thread reads the child's records (metrics) until the
 * socket ends, which happens only when the child exits (it holds fd 3 to
 * the end); it then reaps the child and, unless stopping, starts another
 * one a second later. Kicks and ephemeral messages are sent without ever
 * blocking the caller, which is the intake callback: a full socket means
 * the child already has a kick queued, or (ephemeral) the message is
 * dropped and counted like the publisher thread's bounded queue. The
 * socket is SOCK_SEQPACKET, so each send is one record and needs no
 * framing. */
#define _GNU_SOURCE
#include "vigil/outbox_process.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vigil/clock.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/thread_name.h"

extern char **environ;

#define CHILD_ENV "VIGIL_OUTBOX_CHILD"
#define LINK_FD 3
#define KICK_FD 4 /* a shared page: the kick flag (see vigil_outbox_set_kick_flag) */
#define RESTART_DELAY_MS 1000
#define RESTART_DELAY_MAX_MS 30000
#define RESTART_QUICK_MS 10000 /* a child that lived less doubles the next delay */
#define KILL_GRACE_MS 2000 /* the child also closes its broker connection (1 s at most) */
#define RECORD_MAX (256 * 1024)
#define CHILD_IDLE_KICK_MS 1000

#define M_RESTARTS "vigil_outbox_process_restarts_total"
#define M_RESTARTS_HELP "Outbox publisher processes started again after an unexpected exit"
#define M_DROPPED "vigil_outbox_dropped_total"
#define M_DROPPED_HELP "Ephemeral messages dropped because the in-memory queue was full"

struct vigil_outbox_proc {
    char **argv;
    char **envp; /* environ plus CHILD_ENV=<our pid>; strings borrowed but the last */
    char child_env[48];

    pthread_mutex_t mu; /* fd, pid, stopping, done */
    pthread_cond_t cv;
    int fd;    /* our end of the link; -1 while no child runs */
    int kick_fd;          /* memfd of the shared page, handed to each child */
    atomic_int *kick;     /* in that page: 1 = a kick is on its way or not yet taken in */
    pid_t pid; /* 0 while no child runs */
    bool armed; /* vigil_outbox_proc_go was called: children may start */
    bool stopping;
    bool done; /* the thread has ended */
    int64_t started_ms; /* mono, when the current child started */
    pthread_t thread;

    atomic_ullong published;
};

/* ---- parent ------------------------------------------------------------ */

/* Starts one child on a new link. Caller holds mu. */
static int spawn_locked(vigil_outbox_proc *p, char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, errlen, "outbox process: socketpair: %s", strerror(errno));
        return -1;
    }
    /* dup2 onto the same number would keep FD_CLOEXEC, and KICK_FD is
     * taken next: keep sv[1] above both. */
    if (sv[1] <= KICK_FD) {
        int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, KICK_FD + 1);
        close(sv[1]);
        sv[1] = moved;
        if (moved < 0) {
            close(sv[0]);
            snprintf(err, errlen, "outbox process: fcntl: %s", strerror(errno));
            return -1;
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], LINK_FD);
    posix_spawn_file_actions_adddup2(&fa, p->kick_fd, KICK_FD);
    /* Our broker, Redis and HTTP sockets are not the child's business. */
    posix_spawn_file_actions_addclosefrom_np(&fa, KICK_FD + 1);
    /* A new child reads the whole outbox at start: the next commit kicks. */
    atomic_store(p->kick, 0);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, p->argv, p->envp);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        snprintf(err, errlen, "outbox process: cannot start %s: %s", p->argv[0], strerror(rc));
        return -1;
    }
    p->fd = sv[0];
    p->pid = pid;
    p->started_ms = vigil_mono_ms();
    vigil_log(VIGIL_LOG_INFO, "outbox publisher process %d started", (int)pid);
    return 0;
}

/* Applies one metrics record: op, then name, help and labels each ended by
 * a NUL, then the value as a double. */
static void apply_record(vigil_outbox_proc *p, const char *rec, size_t n)
{
    if (n < 1 + 3 + sizeof(double) || (rec[0] != 'c' && rec[0] != 'g'))
        return;
    const char *f[3];
    size_t at = 1;
    for (int i = 0; i < 3; i++) {
        const char *end = memchr(rec + at, '\0', n - at);
        if (!end)
            return;
        f[i] = rec + at;
        at = (size_t)(end - rec) + 1;
    }
    if (n - at != sizeof(double))
        return;
    double v;
    memcpy(&v, rec + at, sizeof v);
    if (rec[0] == 'c') {
        vigil_counter_add(f[0], f[1], f[2], v);
        if (strcmp(f[0], "vigil_outputs_total") == 0 && v > 0)
            atomic_fetch_add(&p->published, (unsigned long long)v);
    } else {
        vigil_gauge_set(f[0], f[1], f[2], v);
    }
}

/* Waits up to ms on cv unless stopping. Caller holds mu. */
static void nap_locked(vigil_outbox_proc *p, int64_t ms)
{
    struct timespec ts = vigil_mono_deadline(ms);
    while (!p->stopping)
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT)
            break;
}

/* Starts each child and serves its link: its metrics until it exits, then
 * reaps it and, unless stopping, starts the next one after a delay that
 * doubles (to 30 s) while children keep ending quickly. Every child is
 * started by this thread, which outlives them all: PR_SET_PDEATHSIG acts
 * when the thread that started the child ends. */
static void *link_main(void *arg)
{
    vigil_outbox_proc *p = arg;
    vigil_thread_name("vigil-outboxlnk");
    char *buf = malloc(RECORD_MAX);
    int64_t delay = RESTART_DELAY_MS;
    pthread_mutex_lock(&p->mu);
    while (!p->armed && !p->stopping)
        pthread_cond_wait(&p->cv, &p->mu);
    if (buf && !p->stopping) {
        char err[256];
        if (spawn_locked(p, err, sizeof err) != 0)
            vigil_log_kv(VIGIL_LOG_ERROR, "outbox publisher process", "error", err, NULL);
    }
    while (buf && !p->stopping) {
        int fd = p->fd;
        pid_t pid = p->pid;
        pthread_mutex_unlock(&p->mu);
        if (fd >= 0) {
            for (;;) {
                ssize_t n = recv(fd, buf, RECORD_MAX, 0);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0)
                    break; /* the child exited (or closed the link) */
                apply_record(p, buf, (size_t)n);
            }
        }
        int status = 0;
        if (pid > 0)
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        pthread_mutex_lock(&p->mu);
        if (p->fd >= 0)
            close(p->fd);
        p->fd = -1;
        p->pid = 0;
        if (p->stopping)
            break;
        if (pid > 0) {
            char how[64];
            if (WIFSIGNALED(status))
                snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
            else
                snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
            vigil_log_kv(VIGIL_LOG_ERROR, "outbox publisher process ended: starting another",
                         "how", how, NULL);
            vigil_counter_add(M_RESTARTS, M_RESTARTS_HELP, NULL, 1);
        }
        bool quick = vigil_mono_ms() - p->started_ms < RESTART_QUICK_MS;
        if (!quick)
            delay = RESTART_DELAY_MS;
        nap_locked(p, delay);
        if (quick && delay < RESTART_DELAY_MAX_MS)
            delay = delay * 2 < RESTART_DELAY_MAX_MS ? delay * 2 : RESTART_DELAY_MAX_MS;
        if (p->stopping)
            break;
        char err[256];
        if (spawn_locked(p, err, sizeof err) != 0)
            vigil_log_kv(VIGIL_LOG_ERROR, "outbox publisher process", "error", err, NULL);
    }
    if (!buf)
        vigil_log(VIGIL_LOG_ERROR, "outbox process: out of memory: outputs wait for a restart");
    p->done = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    free(buf);
    return NULL;
}

/* Frees what vigil_outbox_proc_start made, once its thread has ended or
 * never started. */
static void proc_free(vigil_outbox_proc *p)
{
    if (p->fd >= 0)
        close(p->fd);
    munmap(p->kick, sizeof(atomic_int));
    close(p->kick_fd);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->envp);
    free(p);
}

vigil_outbox_proc *vigil_outbox_proc_start(char **argv, char *err, size_t errlen)
{
    if (!argv || !argv[0]) {
        snprintf(err, errlen, "outbox process: no argv");
        return NULL;
    }
    vigil_outbox_proc *p = calloc(1, sizeof *p);
    size_t n = 0;
    while (environ && environ[n])
        n++;
    if (p)
        p->envp = calloc(n + 2, sizeof *p->envp);
    if (!p || !p->envp) {
        if (p)
            free(p->envp);
        free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], CHILD_ENV "=", sizeof CHILD_ENV) != 0)
            p->envp[k++] = environ[i];
    snprintf(p->child_env, sizeof p->child_env, CHILD_ENV "=%ld", (long)getpid());
    p->envp[k] = p->child_env;
    p->argv = argv;
    p->fd = -1;
    p->kick_fd = memfd_create("vigil-outbox-kick", MFD_CLOEXEC);
    if (p->kick_fd >= 0 && p->kick_fd <= KICK_FD) {
        /* Above both link numbers, so spawn's dup2s cannot clobber it. */
        int moved = fcntl(p->kick_fd, F_DUPFD_CLOEXEC, KICK_FD + 1);
        close(p->kick_fd);
        p->kick_fd = moved;
    }
    if (p->kick_fd < 0 || ftruncate(p->kick_fd, (off_t)sizeof(atomic_int)) != 0 ||
        (p->kick = mmap(NULL, sizeof(atomic_int), PROT_READ | PROT_WRITE, MAP_SHARED,
                        p->kick_fd, 0)) == MAP_FAILED) {
        snprintf(err, errlen, "outbox process: shared kick flag: %s", strerror(errno));
        if (p->kick_fd >= 0)
            close(p->kick_fd);
        free(p->envp);
        free(p);
        return NULL;
    }
    atomic_init(p->kick, 0);
    atomic_init(&p->published, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    vigil_counter_add(M_RESTARTS, M_RESTARTS_HELP, NULL, 0);
    if (pthread_create(&p->thread, NULL, link_main, p) != 0) {
        snprintf(err, errlen, "outbox process: cannot start its thread");
        proc_free(p);
        return NULL;
    }
    return p;
}

void vigil_outbox_proc_kick(vigil_outbox_proc *p)
{
    if (!p)
        return;
    /* The child's publisher clears the flag before each read of the
     * outbox: while it is set, a kick is queued or the read that will see
     * this commit is still to come, so there is nothing to wake. */
    if (atomic_exchange(p->kick, 1) != 0)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->fd < 0 || send(p->fd, "k", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
        atomic_store(p->kick, 0); /* not sent: let the next commit try */
    pthread_mutex_unlock(&p->mu);
}

void vigil_outbox_proc_push_ephemeral(vigil_outbox_proc *p, const char *topic,
                                      const char *payload, bool retain)
{
    if (!p || !topic || !payload)
        return;
    size_t tl = strlen(topic), pl = strlen(payload);
    size_t n = 2 + tl + 1 + pl + 1;
    char *rec = n <= RECORD_MAX ? malloc(n) : NULL;
    bool sent = false;
    if (rec) {
        rec[0] = 'e';
        rec[1] = retain ? '1' : '0';
        memcpy(rec + 2, topic, tl + 1);
        memcpy(rec + 2 + tl + 1, payload, pl + 1);
        pthread_mutex_lock(&p->mu);
        sent = p->fd >= 0 && send(p->fd, rec, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n;
        pthread_mutex_unlock(&p->mu);
        free(rec);
    }
    if (!sent)
        vigil_counter_add(M_DROPPED, M_DROPPED_HELP, NULL, 1);
}

void vigil_outbox_proc_go(vigil_outbox_proc *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if (!p->armed) {
        p->armed = true;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
}

unsigned long long vigil_outbox_proc_published(vigil_outbox_proc *p)
{
    return p ? atomic_load(&p->published) : 0;
}

void vigil_outbox_proc_stop(vigil_outbox_proc *p, int drain_ms)
{
    if (!p)
        return;
    if (drain_ms < 0)
        drain_ms = 0;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    if (p->fd >= 0) {
        char rec[1 + sizeof(int32_t)];
        int32_t d = drain_ms;
        rec[0] = 's';
        memcpy(rec + 1, &d, sizeof d);
        (void)send(p->fd, rec, sizeof rec, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    /* The thread ends once the child has exited; past the drain and a
     * grace of 2 s, make it exit. */
    struct timespec ts = vigil_mono_deadline((int64_t)drain_ms + KILL_GRACE_MS);
    while (!p->done)
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT)
            break;
    if (!p->done && p->pid > 0) {
        vigil_log(VIGIL_LOG_WARN, "outbox publisher process %d did not stop: killed", (int)p->pid);
        kill(p->pid, SIGKILL);
    }
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    proc_free(p);
}

/* ---- child ------------------------------------------------------------- */

bool vigil_outbox_proc_is_child(void) { return getenv(CHILD_ENV) != NULL; }

static atomic_int *g_child_kick; /* the parent's kick flag, mapped by child_init */

/* Sends the outbox's own metrics to the parent, which serves them. Blocking:
 * a parent slow to read holds the publisher back a moment, never loses a
 * count. Fails silently once the parent is gone (we die with it). */
static void forward_metric(char op, const char *name, const char *help, const char *labels,
                           double v)
{
    if (!name || (strncmp(name, "vigil_outbox_", 13) != 0 && strncmp(name, "vigil_outputs_", 14) != 0))
        return;
    const char *f[3] = {name, help ? help : "", labels ? labels : ""};
    char rec[2048];
    size_t at = 1;
    rec[0] = op;
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(f[i]) + 1;
        if (at + l + sizeof v > sizeof rec)
            return;
        memcpy(rec + at, f[i], l);
        at += l;
    }
    memcpy(rec + at, &v, sizeof v);
    at += sizeof v;
    while (send(LINK_FD, rec, at, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

int vigil_outbox_proc_child_init(char *err, size_t errlen)
{
    const char *v = getenv(CHILD_ENV);
    char *end = NULL;
    long parent = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || parent <= 1) {
        snprintf(err, errlen, "%s='%s': expected the pid of the service process", CHILD_ENV,
                 v ? v : "");
        return -1;
    }
    /* From here on the kernel ends us when the parent ends; if it already
     * did, we were adopted and must not publish next to its successor. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)parent) {
        snprintf(err, errlen, "the service process %ld is gone", parent);
        return -1;
    }
    struct stat st;
    if (fstat(LINK_FD, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "fd %d is not the link to the service process (%s is set by the "
                 "service itself, not by hand)", LINK_FD, CHILD_ENV);
        return -1;
    }
    (void)fcntl(LINK_FD, F_SETFD, FD_CLOEXEC);
    void *page = mmap(NULL, sizeof(atomic_int), PROT_READ | PROT_WRITE, MAP_SHARED, KICK_FD, 0);
    if (page == MAP_FAILED) {
        snprintf(err, errlen, "fd %d is not the service process's kick flag: %s", KICK_FD,
                 strerror(errno));
        return -1;
    }
    close(KICK_FD);
    g_child_kick = page;
    vigil_metrics_set_forward(forward_metric);
    return 0;
}

int vigil_outbox_proc_child_serve(vigil_outbox *o)
{
    vigil_outbox_set_kick_flag(o, g_child_kick);
    char *buf = malloc(RECORD_MAX + 1);
    if (!buf)
        return 0;
    int drain = 0;
    /* Kicks sent before the flag was handed over: read once more. And a
     * kick the parent could not send (its send failed: the flag is then
     * cleared and the next commit sends one) would leave its commit's
     * entries waiting for the next commit: a read at least every second
     * bounds that. */
    vigil_outbox_kick(o);
    struct timeval tv = {.tv_sec = CHILD_IDLE_KICK_MS / 1000, .tv_usec = 0};
    (void)setsockopt(LINK_FD, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
        ssize_t n = recv(LINK_FD, buf, RECORD_MAX, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            vigil_outbox_kick(o);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the parent is gone: PR_SET_PDEATHSIG is on its way */
        buf[n] = '\0';
        if (buf[0] == 'k') {
            vigil_outbox_kick(o);
        } else if (buf[0] == 'e' && n >= 4) {
            const char *topic = buf + 2;
            size_t tl = strnlen(topic, (size_t)n - 2);
            if (2 + tl + 1 < (size_t)n)
                vigil_outbox_push_ephemeral(o, topic, topic + tl + 1, buf[1] == '1');
        } else if (buf[0] == 's' && n == 1 + (ssize_t)sizeof(int32_t)) {
            int32_t d;
            memcpy(&d, buf + 1, sizeof d);
            drain = d > 0 ? d : 0;
            break;
        }
    }
    vigil_outbox_set_kick_flag(o, NULL);
    free(buf);
    return drain;
}
