/* tcp_quickack.c - see tcp_quickack.h. */
#include "tcp_quickack.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* The peer port of fd if it is a connected TCP socket, else -1. */
static int peer_port(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return -1;
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)
        return -1;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

int vigil_tcp_find_peer_fds(int port, int *fds, int max)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while (n < max && (e = readdir(d)) != NULL) {
        char *end = NULL;
        long fd = strtol(e->d_name, &end, 10);
        if (!end || *end != '\0' || end == e->d_name || fd < 0 || fd == dirfd(d))
            continue;
        if (peer_port((int)fd) == port)
            fds[n++] = (int)fd;
    }
    closedir(d);
    return n;
}

void vigil_tcp_quickack(const int *fds, int n)
{
    int one = 1;
    for (int i = 0; i < n; i++)
        (void)setsockopt(fds[i], IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}
