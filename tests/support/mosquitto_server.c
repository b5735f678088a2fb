/* mosquitto_server.c - a throwaway mosquitto for tests. See mosquitto_server.h. */
#include "mosquitto_server.h"
#include "poll_until.h"
#include "vigil/mqtt_link.h"
#include "vigil/mqtt_links.h"
#include "proc.h"
#include "vigil/clock.h"
#include "vigil/mqtt.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 5000
#define TERM_TIMEOUT_MS 3000
#define TOOL_TIMEOUT_MS 10000

struct vt_mosq {
    pid_t pid; /* 0 when not running */
    int port;
    char dir[256];
    char conf[300];
    char url[64];
    bool acl; /* write acl_file <dir>/acl into the config */
};

/* Prints the end of the server's output, to explain a failed start. */
static void dump_log(const vt_mosq *s)
{
    char path[300];
    snprintf(path, sizeof path, "%s/mosquitto.log", s->dir);
    vt_dump_tail(path, "vt_mosq: broker log");
}

/* The config for this port and directory. As root, mosquitto would switch
 * to user "mosquitto", which cannot write our 0700 temp dir (docs/architecture.md);
 * `user root` (accepted by 2.0.11) keeps it as root. */
static int write_conf(const vt_mosq *s)
{
    FILE *f = fopen(s->conf, "w");
    if (!f) {
        fprintf(stderr, "vt_mosq: cannot write %s: %s\n", s->conf, strerror(errno));
        return -1;
    }
    fprintf(f,
            "listener %d 127.0.0.1\n"
            "allow_anonymous true\n"
            "persistence true\n"
            "persistence_location %s/\n"
            "autosave_on_changes true\n"
            "autosave_interval 1\n"
            "max_queued_messages 0\n"
            "max_queued_bytes 268435456\n"
            "max_packet_size 1100000\n"
            "set_tcp_nodelay true\n"
            "log_dest stderr\n"
            "log_timestamp_format %%H:%%M:%%S\n",
            s->port, s->dir);
    if (geteuid() == 0)
        fprintf(f, "user root\n");
    if (s->acl)
        fprintf(f, "acl_file %s/acl\n", s->dir);
    return fclose(f) == 0 ? 0 : -1;
}

static const char *mosquitto_bin(void)
{
    const char *bin = getenv("VT_MOSQUITTO");
    return bin && *bin ? bin : "mosquitto";
}

static pid_t spawn(const vt_mosq *s)
{
    char out[300];
    snprintf(out, sizeof out, "%s/mosquitto.log", s->dir);
    char *const argv[] = { (char *)mosquitto_bin(), "-c", (char *)s->conf, NULL };
    return vt_spawn(argv, out, "vt_mosq");
}

static bool port_accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    bool ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

/* Waits until the broker's port accepts a connection, or it exits, or the
 * deadline passes (then it is killed). */
static int wait_ready(vt_mosq *s)
{
    int rc = vt_wait_ready(&s->pid, port_accepts, s->port, READY_TIMEOUT_MS);
    if (rc == VT_WAIT_TIMEOUT) {
        fprintf(stderr, "vt_mosq: port %d not accepting within %d ms\n", s->port,
                READY_TIMEOUT_MS);
        vt_mosq_kill9(s);
    }
    return rc == 0 ? 0 : -1;
}

static int launch(vt_mosq *s)
{
    s->pid = spawn(s);
    if (s->pid < 0) {
        fprintf(stderr, "vt_mosq: fork: %s\n", strerror(errno));
        s->pid = 0;
        return -1;
    }
    return wait_ready(s);
}

vt_mosq *vt_mosq_start(void)
{
    vt_mosq *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/vigil-mosq-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s->dir)) {
        fprintf(stderr, "vt_mosq: mkdtemp %s: %s\n", s->dir, strerror(errno));
        free(s);
        return NULL;
    }
    snprintf(s->conf, sizeof s->conf, "%s/mosquitto.conf", s->dir);
    for (int attempt = 0; attempt < 3; attempt++) {
        s->port = vt_free_port();
        if (s->port <= 0 || write_conf(s) != 0)
            continue;
        snprintf(s->url, sizeof s->url, "mqtt://127.0.0.1:%d", s->port);
        if (launch(s) == 0)
            return s;
    }
    fprintf(stderr, "vt_mosq: mosquitto did not start\n");
    dump_log(s);
    vt_rm_rf(s->dir);
    free(s);
    return NULL;
}

const char *vt_mosq_url(const vt_mosq *s)
{
    return s->url;
}

int vt_mosq_port(const vt_mosq *s)
{
    return s->port;
}

const char *vt_mosq_dir(const vt_mosq *s)
{
    return s->dir;
}

pid_t vt_mosq_pid(const vt_mosq *s)
{
    return s->pid;
}

int vt_mosq_kill9(vt_mosq *s)
{
    if (!s || s->pid <= 0)
        return -1;
    kill(s->pid, SIGKILL);
    int status;
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {
    }
    s->pid = 0;
    return 0;
}

int vt_mosq_wipe_db(vt_mosq *s)
{
    if (!s || s->pid > 0)
        return -1;
    char path[300];
    snprintf(path, sizeof path, "%s/mosquitto.db", s->dir);
    if (unlink(path) != 0 && errno != ENOENT)
        return -1;
    return 0;
}

int vt_mosq_restart(vt_mosq *s)
{
    if (!s)
        return -1;
    if (s->pid > 0)
        vt_mosq_kill9(s);
    /* The old listening socket is gone with the process; retry briefly in
     * case the kernel is slow to release the port. */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (launch(s) == 0)
            return 0;
        vigil_sleep_ms(200, NULL);
    }
    fprintf(stderr, "vt_mosq: restart on port %d failed\n", s->port);
    dump_log(s);
    return -1;
}

int vt_mosq_set_acl(vt_mosq *s, const char *acl)
{
    if (!s)
        return -1;
    if (acl) {
        char path[300];
        snprintf(path, sizeof path, "%s/acl", s->dir);
        FILE *f = fopen(path, "w");
        if (!f)
            return -1;
        fputs(acl, f);
        if (fclose(f) != 0)
            return -1;
    }
    s->acl = acl != NULL;
    return write_conf(s);
}

void vt_mosq_stop(vt_mosq *s)
{
    if (!s)
        return;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        long long deadline = vigil_mono_ms() + TERM_TIMEOUT_MS;
        int status;
        bool reaped = false;
        while (vigil_mono_ms() < deadline) {
            if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
                reaped = true;
                break;
            }
            vigil_sleep_ms(10, NULL);
        }
        if (!reaped)
            vt_mosq_kill9(s);
        s->pid = 0;
    }
    vt_rm_rf(s->dir);
    free(s);
}

/* ---- mosquitto_pub / mosquitto_sub ---------------------------------------- */

/* Runs argv with stdout captured into out (NUL-terminated, may be NULL),
 * killing it after timeout_ms. Returns the exit status, or -1. */
static int run_capture(char *const argv[], char *out, size_t outlen, int timeout_ms)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, STDIN_FILENO);
            dup2(nul, STDERR_FILENO);
            close(nul);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    long long deadline = vigil_mono_ms() + timeout_ms;
    bool eof = false;
    while (!eof) {
        long long left = deadline - vigil_mono_ms();
        if (left <= 0)
            break;
        struct pollfd p = { fds[0], POLLIN, 0 };
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        char buf[512];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            eof = true;
            break;
        }
        if (out && outlen > 1) {
            size_t take = (size_t)n;
            if (take > outlen - 1 - used)
                take = outlen - 1 - used;
            memcpy(out + used, buf, take);
            used += take;
        }
    }
    close(fds[0]);
    if (out && outlen > 0)
        out[used] = '\0';
    if (!eof)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!eof)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int vt_mosq_pub(const vt_mosq *s, const char *topic, const char *payload, int qos, bool retain)
{
    char port[16], q[8];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(q, sizeof q, "%d", qos);
    char *argv[16];
    int i = 0;
    argv[i++] = "mosquitto_pub";
    argv[i++] = "-V";
    argv[i++] = "mqttv5";
    argv[i++] = "-h";
    argv[i++] = "127.0.0.1";
    argv[i++] = "-p";
    argv[i++] = port;
    argv[i++] = "-q";
    argv[i++] = q;
    argv[i++] = "-t";
    argv[i++] = (char *)topic;
    if (payload && *payload) {
        argv[i++] = "-m";
        argv[i++] = (char *)payload;
    } else {
        argv[i++] = "-n";
    }
    if (retain)
        argv[i++] = "-r";
    argv[i] = NULL;
    return run_capture(argv, NULL, 0, TOOL_TIMEOUT_MS) == 0 ? 0 : -1;
}

int vt_mosq_get_retained(const vt_mosq *s, const char *topic, char *out, size_t outlen,
                         int timeout_s)
{
    char port[16], w[16];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(w, sizeof w, "%d", timeout_s > 0 ? timeout_s : 1);
    char *argv[] = { "mosquitto_sub", "-V", "mqttv5", "-h", "127.0.0.1", "-p", port,
                     "-t", (char *)topic, "--retained-only", "-C", "1", "-W", w, NULL };
    char buf[4096];
    int rc = run_capture(argv, buf, sizeof buf, (timeout_s > 0 ? timeout_s : 1) * 1000 + 3000);
    if (rc != 0)
        return -1;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    if (out && outlen > 0)
        snprintf(out, outlen, "%s", buf);
    return 0;
}

bool vt_mosq_wait_retained(const vt_mosq *s, const char *topic, const char *want, int timeout_ms)
{
    long long deadline = vigil_mono_ms() + timeout_ms;
    char got[4096];
    do {
        if (vt_mosq_get_retained(s, topic, got, sizeof got, 1) == 0 && strcmp(got, want) == 0)
            return true;
        vigil_sleep_ms(50, NULL);
    } while (vigil_mono_ms() < deadline);
    return false;
}

/* ---- message recorder ------------------------------------------------------ */

typedef struct vt_rec {
    char *topic;
    char *payload;
    size_t len;
    bool retained;
} vt_rec;

struct vt_msglog {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vt_rec *recs;
    int n, cap;
};

vt_msglog *vt_msglog_new(void)
{
    vt_msglog *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    return l;
}

void vt_msglog_clear(vt_msglog *l)
{
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n; i++) {
        free(l->recs[i].topic);
        free(l->recs[i].payload);
    }
    l->n = 0;
    pthread_mutex_unlock(&l->mu);
}

void vt_msglog_free(vt_msglog *l)
{
    if (!l)
        return;
    vt_msglog_clear(l);
    free(l->recs);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

void vt_msglog_on_message(void *ctx, const char *topic, const void *payload, size_t len,
                          bool retained)
{
    vt_msglog *l = ctx;
    char *t = strdup(topic);
    char *p = malloc(len + 1);
    if (!t || !p) {
        free(t);
        free(p);
        return;
    }
    if (len)
        memcpy(p, payload, len);
    p[len] = '\0';
    pthread_mutex_lock(&l->mu);
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        vt_rec *nr = realloc(l->recs, (size_t)cap * sizeof *nr);
        if (!nr) {
            pthread_mutex_unlock(&l->mu);
            free(t);
            free(p);
            return;
        }
        l->recs = nr;
        l->cap = cap;
    }
    l->recs[l->n++] = (vt_rec){ t, p, len, retained };
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static bool rec_matches(const vt_rec *r, const char *topic, const char *payload, int retained)
{
    if (topic && strcmp(r->topic, topic) != 0)
        return false;
    if (payload && (strlen(payload) != r->len || memcmp(r->payload, payload, r->len) != 0))
        return false;
    if (retained >= 0 && r->retained != (retained != 0))
        return false;
    return true;
}

static int count_locked(vt_msglog *l, const char *topic, const char *payload, int retained)
{
    int c = 0;
    for (int i = 0; i < l->n; i++)
        if (rec_matches(&l->recs[i], topic, payload, retained))
            c++;
    return c;
}

int vt_msglog_count(vt_msglog *l, const char *topic)
{
    pthread_mutex_lock(&l->mu);
    int c = count_locked(l, topic, NULL, -1);
    pthread_mutex_unlock(&l->mu);
    return c;
}

/* Waits on the recorder's condvar (realtime clock: test-only, short). */
static bool wait_until(vt_msglog *l, const char *topic, const char *payload, int retained, int n,
                       int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    bool ok;
    while (!(ok = count_locked(l, topic, payload, retained) >= n)) {
        if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT) {
            ok = count_locked(l, topic, payload, retained) >= n;
            break;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}

bool vt_msglog_wait_count(vt_msglog *l, const char *topic, int n, int timeout_ms)
{
    return wait_until(l, topic, NULL, -1, n, timeout_ms);
}

bool vt_msglog_wait(vt_msglog *l, const char *topic, const char *payload, int retained,
                    int timeout_ms)
{
    return wait_until(l, topic, payload, retained, 1, timeout_ms);
}

int vt_msglog_get(vt_msglog *l, const char *topic, int i, char *topic_out, size_t topic_len,
                  char *payload_out, size_t payload_len, bool *retained)
{
    int rc = -1;
    pthread_mutex_lock(&l->mu);
    int seen = 0;
    for (int k = 0; k < l->n; k++) {
        const vt_rec *r = &l->recs[k];
        if (topic && strcmp(r->topic, topic) != 0)
            continue;
        if (seen++ != i)
            continue;
        if (topic_out && topic_len)
            snprintf(topic_out, topic_len, "%s", r->topic);
        if (payload_out && payload_len)
            snprintf(payload_out, payload_len, "%s", r->payload);
        if (retained)
            *retained = r->retained;
        rc = 0;
        break;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

typedef struct want_state {
    void *client;
    bool want;
} want_state;

static bool mqtt_state_is(void *ctx)
{
    want_state *w = ctx;
    return vigil_mqtt_connected(w->client) == w->want;
}

static bool link_state_is(void *ctx)
{
    want_state *w = ctx;
    return vigil_mqtt_link_connected(w->client) == w->want;
}

bool vt_mqtt_wait_connected(vigil_mqtt *m, bool want, int timeout_ms)
{
    want_state w = { m, want };
    return vt_poll_until(mqtt_state_is, &w, timeout_ms);
}

bool vt_link_wait_connected(vigil_mqtt_link *l, bool want, int timeout_ms)
{
    want_state w = { l, want };
    return vt_poll_until(link_state_is, &w, timeout_ms);
}

static bool links_state_is(void *ctx)
{
    want_state *w = ctx;
    return vigil_mqtt_links_connected(w->client) == w->want;
}

bool vt_links_wait_connected(vigil_mqtt_links *s, bool want, int timeout_ms)
{
    want_state w = { s, want };
    return vt_poll_until(links_state_is, &w, timeout_ms);
}

struct vigil_mqtt *vt_mqtt_observer(vt_mosq *b, const char *name, const char *filter,
                                    vt_msglog *log)
{
    const char *subs[] = { filter, NULL };
    char status[160];
    snprintf(status, sizeof status, "sys/%s", name);
    vigil_mqtt_config cfg = { .url = vt_mosq_url(b), .client_id = name,
                              .subscriptions = subs, .status_topic = status,
                              .ready_payload = "ready", .lost_payload = "lost",
                              .on_message = vt_msglog_on_message, .ctx = log };
    char err[256];
    vigil_mqtt *m = vigil_mqtt_new(&cfg, err, sizeof err);
    if (!m || vigil_mqtt_start(m) != 0 || !vt_mosq_wait_retained(b, status, "ready", 10000)) {
        fprintf(stderr, "vt_mqtt_observer %s: cannot subscribe: %s\n", name, m ? "" : err);
        abort();
    }
    return m;
}
