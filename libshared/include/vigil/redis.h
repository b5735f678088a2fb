/* redis.h - one hiredis connection that reconnects, with Lua scripts called
 * by SHA and pipelining.
 *
 * A vigil_redis is NOT thread-safe: use one per thread. After any I/O or
 * protocol error the underlying context is freed and the next call connects
 * anew (hiredis contexts cannot be reused after an error). Scripts are sent
 * with EVALSHA and loaded again on NOSCRIPT (Redis forgets scripts on
 * restart).
 *
 * This header names no hiredis type: services see the handle only (for
 * vigil_redis_last_error, and to pass it to libshared operations such as
 * vigil/jobs.h). Commands and replies (redisReply) are in vigil/redis_raw.h,
 * for libshared's own modules and the vigil CLI; no service includes it
 * (tests/integration/test_repo_rules.py). */
#ifndef VIGIL_REDIS_H
#define VIGIL_REDIS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vigil_redis_addr {
    char host[256];
    int port;          /* 6379 */
    int db;            /* 0 */
    char user[128];    /* ACL user; "" = the default user */
    char password[256];/* "" = no AUTH */
} vigil_redis_addr;

/* Parses redis://[[user]:password@]host[:port][/db]. User and password are
 * percent-decoded (a password holding '@', ':' or '/' is written %40, %3A,
 * %2F). With a user, connect sends AUTH user password (a Redis 6+ ACL
 * user); with only a password, AUTH password; a user without a password
 * sends no AUTH. The one parser of a Redis URL (services, CLI, metrics).
 * Returns 0 or -1 with err (which never quotes the password). */
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
/* Changes whenever replies owed to appended commands are dropped: the
 * connection failed, or a plain command read and discarded them. A
 * pipeline that began under another epoch must not read its replies: they
 * would be someone else's. */
uint64_t vigil_redis_epoch(const vigil_redis *r);
/* Last error text ("" if none). */
const char *vigil_redis_last_error(const vigil_redis *r);
/* True when the last failure was Redis refusing our credentials (AUTH
 * answered WRONGPASS, or NOAUTH/NOPERM during setup): waiting will not
 * help until the password or the ACL changes. */
bool vigil_redis_auth_refused(const vigil_redis *r);

/* Connects (AUTH, SELECT) and sends PING, which also catches a password
 * that is missing altogether (NOAUTH). Returns 1 when Redis answered, 0
 * when it cannot be reached (wait and retry), -1 when it refused the
 * credentials, with err "Redis host:port refused user 'u': <reply>" (the
 * reply never holds the password). */
int vigil_redis_probe(vigil_redis *r, char *err, size_t errlen);

/* After a good vigil_redis_probe: may this user read key (EXISTS key)?
 * Returns 1 yes, 0 when Redis cannot be reached, -1 when the user's ACL
 * refuses it (NOPERM), with err "Redis host:port refused user 'u' the
 * key K: <reply>". The refusal is the caller's to report: logged here
 * as a warning only. */
int vigil_redis_probe_key(vigil_redis *r, const char *key, char *err, size_t errlen);

/* True unless the error reply msg says the data itself is wrong
 * (WRONGTYPE, a value that is no number, NOGROUP/BUSYGROUP, NOSCRIPT, and
 * VIGIL_BAD_DATA from our own scripts). Only such an error may refuse an
 * input; every other one (LOADING while Redis replays its AOF, BUSY, OOM,
 * NOAUTH, MASTERDOWN, READONLY, MISCONF, unknown codes) is retried like a
 * lost connection. The one place this is decided. */
bool vigil_redis_error_transient(const char *msg);

/* libshared's own modules (compiled with VIGIL_LIBSHARED_INTERNAL) see the
 * commands and replies with the handle; services and the CLI include
 * vigil/redis_raw.h themselves, and services may not. */
#ifdef VIGIL_LIBSHARED_INTERNAL
#include "redis_raw.h"
#endif

#endif
