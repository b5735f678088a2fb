/* proc.c - see proc.h. */
#include "proc.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vigil/clock.h"

int vt_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

void vt_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char child[1024];
                snprintf(child, sizeof child, "%s/%s", path, e->d_name);
                vt_rm_rf(child);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

void vt_dump_tail(const char *path, const char *title)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[2048];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "%s (tail):\n%s\n", title, buf);
}

pid_t vt_spawn(char *const argv[], const char *log, const char *who)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid; /* parent, or -1 */
    /* child: die with the test, even if it crashes */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0) {
        dup2(nul, STDIN_FILENO);
        close(nul);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "%s: exec %s: %s\n", who, argv[0], strerror(errno));
    _exit(127);
}

int vt_wait_ready(pid_t *pid, bool (*ready)(int port), int port, int timeout_ms)
{
    long long deadline = vigil_mono_ms() + timeout_ms;
    while (vigil_mono_ms() < deadline) {
        int status;
        if (waitpid(*pid, &status, WNOHANG) == *pid) {
            *pid = 0;
            return VT_WAIT_EXITED;
        }
        if (ready(port))
            return 0;
        vigil_sleep_ms(20, NULL);
    }
    return VT_WAIT_TIMEOUT;
}
