/* ops_http.c - the smallest HTTP client `vigil status` needs: GET one path
 * over HTTP/1.0 with a bounded wait, the status code only (readiness is
 * the code of /readyz). Plain sockets: no library for one request line. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vigil/clock.h>
#include "ops.h"

/* Waits for fd to become ready for `events` until the deadline. */
static bool wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - vigil_mono_ms();
        if (left <= 0)
            return false;
        struct pollfd p = { fd, events, 0 };
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

static int connect_to(const char *host, int port, int64_t deadline)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = { 0 }, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, service, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        int err = 0;
        socklen_t el = sizeof err;
        if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

int ops_http_status(const char *host, int port, const char *path, int timeout_ms)
{
    int64_t deadline = vigil_mono_ms() + timeout_ms;
    int fd = connect_to(host, port, deadline);
    if (fd < 0)
        return 0;
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s:%d\r\nConnection: close\r\n\r\n",
                     path, host, port);
    int code = 0;
    size_t sent = 0;
    while (sent < (size_t)n) {
        ssize_t w = send(fd, req + sent, (size_t)n - sent, MSG_NOSIGNAL);
        if (w > 0)
            sent += (size_t)w;
        else if (w < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, deadline))
            continue;
        else
            goto done;
    }
    char buf[64];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EAGAIN && wait_fd(fd, POLLIN, deadline))
            continue;
        else
            break;
        if (memchr(buf, '\n', got))
            break;
    }
    buf[got] = '\0';
    int major, minor, status;
    if (sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) == 3 && status >= 100 && status <= 599)
        code = status;
done:
    close(fd);
    return code;
}
