/* tcp_cut.c - see tcp_cut.h. One thread polls the listening socket, a
 * wake-up pipe and every relayed pair; the test's thread only asks it to
 * reset or stop, and waits until it has. */
#include "tcp_cut.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CUT_MAX_PAIRS 16

struct vt_tcp_cut {
    int lfd;
    int port, target;
    int wake[2];
    int pairs[CUT_MAX_PAIRS][2]; /* [client side, server side], -1 unused */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int req_reset; /* resets asked for */
    int done_reset;
    int last_cut;
    bool stop;
    vt_tcp_gate_fn gate;
    void *gate_ctx;
    unsigned char pending[4096]; /* a passed first segment, for the server */
    int npending;
};

static void pair_close(vt_tcp_cut *c, int i, bool rst)
{
    for (int k = 0; k < 2; k++) {
        int fd = c->pairs[i][k];
        if (fd < 0)
            continue;
        if (rst) {
            struct linger lg = { 1, 0 }; /* close sends RST, not FIN */
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        close(fd);
        c->pairs[i][k] = -1;
    }
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Copies what is readable on from to to; false when the pair is done. */
static bool relay(int from, int to)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0)
        return false;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w <= 0)
            return false;
        off += w;
    }
    return true;
}

/* Reads a new connection's first segment (1 s at most) and lets the gate
 * decide; a passed segment is forwarded first thing once the server side
 * is dialled (c->pending). Closes cfd itself when it does not pass. */
static bool gate_passes(vt_tcp_cut *c, vt_tcp_gate_fn gate, void *ctx, int cfd)
{
    struct pollfd p = { .fd = cfd, .events = POLLIN };
    int n = poll(&p, 1, 1000) == 1 ? (int)read(cfd, c->pending, sizeof c->pending) : -1;
    unsigned char reply[64];
    int rlen = 0;
    int verdict = n > 0 ? gate(c->pending, n, ctx, reply, &rlen) : -1;
    if (verdict == 0) {
        c->npending = n;
        return true;
    }
    if (verdict == 1 && rlen > 0 && rlen <= (int)sizeof reply)
        (void)!write(cfd, reply, (size_t)rlen);
    close(cfd);
    return false;
}

static void *cut_main(void *arg)
{
    vt_tcp_cut *c = arg;
    for (;;) {
        struct pollfd p[2 + 2 * CUT_MAX_PAIRS];
        int idx[2 + 2 * CUT_MAX_PAIRS];
        int n = 0;
        p[n] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
        idx[n++] = -1;
        p[n] = (struct pollfd){ .fd = c->wake[0], .events = POLLIN };
        idx[n++] = -2;
        for (int i = 0; i < CUT_MAX_PAIRS; i++)
            for (int k = 0; k < 2; k++)
                if (c->pairs[i][k] >= 0) {
                    p[n] = (struct pollfd){ .fd = c->pairs[i][k], .events = POLLIN };
                    idx[n++] = i * 2 + k;
                }
        if (poll(p, (nfds_t)n, 1000) < 0 && errno != EINTR)
            break;
        pthread_mutex_lock(&c->mu);
        bool stop = c->stop;
        int want = c->req_reset;
        vt_tcp_gate_fn gate = c->gate;
        void *gate_ctx = c->gate_ctx;
        pthread_mutex_unlock(&c->mu);
        if (stop)
            break;
        if (p[1].revents) {
            char b[64];
            (void)!read(c->wake[0], b, sizeof b);
        }
        if (want != c->done_reset) {
            int cut = 0;
            for (int i = 0; i < CUT_MAX_PAIRS; i++)
                if (c->pairs[i][0] >= 0) {
                    pair_close(c, i, true);
                    cut++;
                }
            pthread_mutex_lock(&c->mu);
            c->done_reset = want;
            c->last_cut = cut;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
            continue; /* the poll set is stale */
        }
        for (int j = 2; j < n; j++) {
            if (!p[j].revents)
                continue;
            int i = idx[j] / 2, k = idx[j] % 2;
            if (c->pairs[i][k] < 0)
                continue;
            if (!relay(c->pairs[i][k], c->pairs[i][1 - k]))
                pair_close(c, i, false);
        }
        if (p[0].revents & POLLIN) {
            int cfd = accept(c->lfd, NULL, NULL);
            if (cfd >= 0 && gate && !gate_passes(c, gate, gate_ctx, cfd))
                cfd = -1;
            if (cfd >= 0) {
                int sfd = dial(c->target);
                int slot = -1;
                for (int i = 0; i < CUT_MAX_PAIRS && slot < 0; i++)
                    if (c->pairs[i][0] < 0)
                        slot = i;
                if (sfd < 0 || slot < 0) {
                    close(cfd);
                    if (sfd >= 0)
                        close(sfd);
                } else {
                    c->pairs[slot][0] = cfd;
                    c->pairs[slot][1] = sfd;
                    if (c->npending > 0 &&
                        write(sfd, c->pending, (size_t)c->npending) != c->npending)
                        pair_close(c, slot, false);
                }
                c->npending = 0;
            }
        }
    }
    for (int i = 0; i < CUT_MAX_PAIRS; i++)
        pair_close(c, i, false);
    return NULL;
}

vt_tcp_cut *vt_tcp_cut_start(int target_port)
{
    vt_tcp_cut *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->target = target_port;
    for (int i = 0; i < CUT_MAX_PAIRS; i++)
        c->pairs[i][0] = c->pairs[i][1] = -1;
    c->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(c->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (c->lfd < 0 || bind(c->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(c->lfd, 16) != 0 || getsockname(c->lfd, (struct sockaddr *)&a, &al) != 0 ||
        pipe(c->wake) != 0) {
        if (c->lfd >= 0)
            close(c->lfd);
        free(c);
        return NULL;
    }
    c->port = ntohs(a.sin_port);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (pthread_create(&c->th, NULL, cut_main, c) != 0) {
        close(c->lfd);
        close(c->wake[0]);
        close(c->wake[1]);
        free(c);
        return NULL;
    }
    return c;
}

void vt_tcp_cut_set_gate(vt_tcp_cut *c, vt_tcp_gate_fn gate, void *ctx)
{
    pthread_mutex_lock(&c->mu);
    c->gate = gate;
    c->gate_ctx = ctx;
    pthread_mutex_unlock(&c->mu);
}

int vt_tcp_cut_port(const vt_tcp_cut *c)
{
    return c ? c->port : -1;
}

int vt_tcp_cut_reset(vt_tcp_cut *c)
{
    pthread_mutex_lock(&c->mu);
    int ticket = ++c->req_reset;
    pthread_mutex_unlock(&c->mu);
    (void)!write(c->wake[1], "r", 1);
    pthread_mutex_lock(&c->mu);
    while (c->done_reset < ticket)
        pthread_cond_wait(&c->cv, &c->mu);
    int cut = c->last_cut;
    pthread_mutex_unlock(&c->mu);
    return cut;
}

void vt_tcp_cut_stop(vt_tcp_cut *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_mutex_unlock(&c->mu);
    (void)!write(c->wake[1], "s", 1);
    pthread_join(c->th, NULL);
    close(c->lfd);
    close(c->wake[0]);
    close(c->wake[1]);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}
