/* proc.h - small helpers shared by the test servers (redis_server.c,
 * mosquitto_server.c): a free loopback port, starting a server as a child
 * that dies with the test, waiting until it is ready, removing a temp
 * tree, and showing the end of a server's log when it fails to start. */
#ifndef VT_PROC_H
#define VT_PROC_H
#include <stdbool.h>
#include <sys/types.h>

/* A port that was free on 127.0.0.1 a moment ago (bind to 0, read back). */
int vt_free_port(void);
/* Forks a child running argv (execvp; argv[0] is the binary) with stdin
 * from /dev/null and stdout and stderr appended to log; it is killed with
 * SIGKILL when the test process dies, even if it crashes. who names the
 * caller in an exec failure. The child's pid, or -1 when fork failed. */
pid_t vt_spawn(char *const argv[], const char *log, const char *who);

#define VT_WAIT_EXITED (-1)  /* the child exited (*pid is set to 0) */
#define VT_WAIT_TIMEOUT (-2) /* not ready in time (the caller kills it) */
/* Waits, polling every 20 ms, until ready(port) is true (0), the child
 * exits, or timeout_ms passes. */
int vt_wait_ready(pid_t *pid, bool (*ready)(int port), int port, int timeout_ms);

/* Removes a directory tree (or a file). */
void vt_rm_rf(const char *path);
/* Prints the last ~2 KiB of the file at path to stderr under a title. */
void vt_dump_tail(const char *path, const char *title);

#endif
