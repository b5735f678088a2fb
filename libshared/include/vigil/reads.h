/* reads.h - typed reads of Redis values for services and the CLI, so none
 * of them handles a raw reply (vigil/redis_raw.h stays inside libshared).
 * Each takes a vigil_redis of the calling thread (vigil_runtime_redis() in
 * route(), vigil_runtime_conn_redis() on a worker). */
#ifndef VIGIL_READS_H
#define VIGIL_READS_H
#include <stdbool.h>
#include <stddef.h>
#include "redis.h"

typedef enum {
    VIGIL_READ_OK = 0,           /* read (an absent key reads as its empty value) */
    VIGIL_READ_UNREACHABLE = -1, /* no answer from Redis: retry later */
    VIGIL_READ_WRONG_TYPE = -2   /* the key holds something else; err says what */
} vigil_read_result;

/* A flag stored as a string: *on is true when the value is "1", false when
 * it is anything else or the key is absent. err (may be NULL) receives
 * Redis' error text on VIGIL_READ_WRONG_TYPE. */
vigil_read_result vigil_read_flag(vigil_redis *r, const char *key, bool *on, char *err,
                                  size_t errlen);

#endif
