/* council_reader.h - reads council's durable records (for the `vigil
 * council` CLI and other tools), so no reader needs council's key names:
 *   the session index   (newest first),
 *   a session's record  (status, loop count, times, questions, notes),
 *   its deliberations   (the four inputs, decision, action, result per loop).
 * Records are JSON text as council writes them (see
 * services/council/README.md, "Records"). */
#ifndef COUNCIL_READER_H
#define COUNCIL_READER_H
#include <stddef.h>
#include <vigil/redis.h>

/* Called with one record (JSON text, NUL-terminated); return non-zero to
 * stop. */
typedef int (*council_reader_fn)(void *ctx, const char *json, size_t len);

/* The records of the most recent sessions (at most limit), newest first.
 * prefix is VIGIL_REDIS_PREFIX. Returns the count, or -1 on a Redis error. */
int council_reader_sessions(vigil_redis *r, const char *prefix, int limit, council_reader_fn fn,
                            void *ctx);

/* One session's record: 1 with *json (malloc'd) when found, 0 when not, -1
 * on error. */
int council_reader_session(vigil_redis *r, const char *prefix, const char *session, char **json);

/* A session's deliberations, oldest first (at most limit). Returns the
 * count, or -1 on error. */
int council_reader_deliberations(vigil_redis *r, const char *prefix, const char *session,
                                 int limit, council_reader_fn fn, void *ctx);

#endif
