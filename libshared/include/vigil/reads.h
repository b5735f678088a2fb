/* reads.h - typed reads of Redis values for services, their reader
 * libraries and the CLI, so none of them handles a raw reply
 * (vigil/redis_raw.h stays inside libshared): a string, a flag, the
 * entries of a stream. Values are copied out. Each takes a vigil_redis of
 * the calling thread (vigil_runtime_redis() in route(),
 * vigil_runtime_conn_redis() on a worker, the CLI's own connection). */
#ifndef VIGIL_READS_H
#define VIGIL_READS_H
#include <stdbool.h>
#include <stddef.h>
#include "redis.h"

typedef enum {
    VIGIL_READ_OK = 0,           /* read (an absent key reads as its empty value) */
    VIGIL_READ_UNREACHABLE = -1, /* no answer from Redis (or no memory): retry later */
    VIGIL_READ_WRONG_TYPE = -2   /* the key holds something else; err says what */
} vigil_read_result;

/* GET key. VIGIL_READ_OK with *out malloc'd (NUL-terminated; the caller
 * frees it) and *len (may be NULL) its length when the key holds a string,
 * or *out NULL when the key does not exist. err (may be NULL) receives
 * Redis' error text on VIGIL_READ_WRONG_TYPE. */
vigil_read_result vigil_read_string(vigil_redis *r, const char *key, char **out, size_t *len,
                                    char *err, size_t errlen);

/* A flag stored as a string: *on is true when the value is "1", false when
 * it is anything else or the key is absent. */
vigil_read_result vigil_read_flag(vigil_redis *r, const char *key, bool *on, char *err,
                                  size_t errlen);

/* Calls fn for the entries of stream key (their field "m"; an entry whose
 * first field is another is skipped), newest first when newest_first, at
 * most count (<= 0: 100), read by vigil_stream_range (stream_reads.h).
 * fn returns 0 to go on,
 * non-zero to stop. Returns the number of entries given to fn (0 for a
 * missing stream), or -1 when Redis is away or key is not a stream. */
typedef int (*vigil_read_entry_fn)(void *ctx, const char *id, const char *value, size_t len);
int vigil_read_stream(vigil_redis *r, const char *key, bool newest_first, int count,
                      vigil_read_entry_fn fn, void *ctx);

#endif
