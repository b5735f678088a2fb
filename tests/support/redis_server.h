/* redis_server.h - a throwaway redis-server for tests.
 *
 * vt_redis_start() runs `redis-server` (found on PATH) on a free loopback
 * port in a fresh temporary directory, with AOF on (appendfsync everysec)
 * and RDB saving off, and returns once it answers PING (at most 5 s). The
 * child is killed with SIGKILL if the test process dies (PR_SET_PDEATHSIG;
 * note this follows the thread that started it: start it from the main
 * thread). Every wait is bounded. Set VT_REDIS_SERVER to use another
 * binary. */
#ifndef VT_REDIS_SERVER_H
#define VT_REDIS_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "vigil/redis.h"

typedef struct vt_redis vt_redis;

/* Starts a server; NULL on failure (the reason is printed on stderr).
 * Also sets SIGPIPE to SIG_IGN in the calling process. */
vt_redis *vt_redis_start(void);

/* Address to connect to (127.0.0.1, the port, db 0, no password). */
vigil_redis_addr vt_redis_addr(const vt_redis *s);
int vt_redis_port(const vt_redis *s);
/* "redis://127.0.0.1:PORT/0" */
void vt_redis_url(const vt_redis *s, char *out, size_t outlen);
/* The server's working directory (holds the AOF). */
const char *vt_redis_dir(const vt_redis *s);
pid_t vt_redis_pid(const vt_redis *s);

/* Kills the server with SIGKILL and reaps it (a crash). Returns 0, or -1
 * if it was not running or did not die within 5 s. */
int vt_redis_kill9(vt_redis *s);

/* Starts the server again on the same port and directory, so AOF data
 * survives (kill9 first, or it is killed here). Returns 0 once it answers
 * PING, -1 otherwise. */
int vt_redis_restart(vt_redis *s);

/* Runs one command on a fresh direct connection and returns true if the
 * reply is not an error (e.g. vt_redis_exec(s, "FLUSHALL")). For test
 * setup and checks. */
bool vt_redis_exec(const vt_redis *s, const char *cmd);

/* Kills the server, removes its directory, frees s. NULL is ignored. */
void vt_redis_stop(vt_redis *s);

#endif
