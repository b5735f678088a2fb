/* redis.h - one hiredis connection that reconnects, with Lua scripts called
 * by SHA and pipelining.
 *
 * A vigil_redis is NOT thread-safe: use one per thread. After any I/O or
 * protocol error the underlying context is freed and the next call connects
 * anew (hiredis contexts cannot be reused after an error). Scripts are sent
 * with EVALSHA and loaded again on NOSCRIPT (Redis forgets scripts on
 * restart). */
#ifndef VIGIL_REDIS_H
#define VIGIL_REDIS_H
#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

typedef struct vigil_redis_addr {
    char host[256];
    int port;          /* 6379 */
    int db;            /* 0 */
    char password[256];/* "" = no AUTH */
} vigil_redis_addr;

/* Parses redis://[:password@]host[:port][/db]. Returns 0 or -1 with err. */
int vigil_redis_url_parse(const char *url, vigil_redis_addr *out, char *err, size_t errlen);

typedef struct vigil_redis vigil_redis;

/* Creates a handle (does not connect yet). timeout_ms bounds connect and
 * every command. */
vigil_redis *vigil_redis_new(const vigil_redis_addr *addr, int timeout_ms);
void vigil_redis_free(vigil_redis *r);

/* Connects (AUTH, SELECT) if not connected. Returns true when connected.
 * Never loops: the caller decides about retries and backoff. Each failed
 * attempt increments vigil_redis_errors_total; each successful connect
 * after the first increments vigil_redis_reconnects_total. */
bool vigil_redis_ensure(vigil_redis *r);
bool vigil_redis_connected(const vigil_redis *r);
/* Last error text ("" if none). */
const char *vigil_redis_last_error(const vigil_redis *r);

/* True unless the error reply msg says the data itself is wrong
 * (WRONGTYPE, a value that is no number, NOGROUP/BUSYGROUP, NOSCRIPT, and
 * VIGIL_BAD_DATA from our own scripts). Only such an error may refuse an
 * input; every other one (LOADING while Redis replays its AOF, BUSY, OOM,
 * NOAUTH, MASTERDOWN, READONLY, MISCONF, unknown codes) is retried like a
 * lost connection. The one place this is decided. */
bool vigil_redis_error_transient(const char *msg);

/* Runs one command. Returns the reply (caller frees with freeReplyObject),
 * including error replies that concern the data (see
 * vigil_redis_error_transient), or NULL on a connection/IO error or a
 * transient error reply (the connection is dropped and will be
 * re-established by the next call; vigil_redis_last_error says why). */
redisReply *vigil_redis_command(vigil_redis *r, const char *fmt, ...);
redisReply *vigil_redis_commandv(vigil_redis *r, int argc, const char **argv,
                                 const size_t *argvlen);

/* Pipelining: append any number of commands, then collect the replies in
 * order. vigil_redis_pipeline_get returns NULL on IO error (connection
 * dropped; remaining replies are lost). */
int vigil_redis_append(vigil_redis *r, int argc, const char **argv, const size_t *argvlen);
redisReply *vigil_redis_pipeline_get(vigil_redis *r);

typedef struct vigil_script {
    const char *source; /* Lua source, static storage */
    char sha[41];       /* filled on first load */
} vigil_script;

#define VIGIL_SCRIPT(src) { (src), { 0 } }

/* EVALSHA script with nkeys keys followed by the other arguments
 * (argv[0..argc) = keys then args). On NOSCRIPT (or no sha yet) loads the
 * script and retries once. Same return convention as vigil_redis_command.
 * A vigil_script may be shared by several threads only after its sha is
 * set; the store and timer modules keep one per handle. */
redisReply *vigil_redis_eval(vigil_redis *r, vigil_script *s, int nkeys, int argc,
                             const char **argv, const size_t *argvlen);

#endif
