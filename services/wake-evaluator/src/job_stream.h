/* job_stream.h - the durable job queue: a Redis stream read through the
 * consumer group "workers" (XREADGROUP), abandoned jobs taken over after a
 * lease (XAUTOCLAIM), finished jobs acknowledged and deleted (XACK + XDEL,
 * so the stream holds only unfinished work). One vigil_redis per thread. */
#ifndef WAKE_JOB_STREAM_H
#define WAKE_JOB_STREAM_H
#include <stddef.h>
#include <stdint.h>
#include <vigil/redis.h>

typedef struct wake_entry {
    char id[48];      /* stream entry id "ms-seq" */
    char *payload;    /* field "m"; NULL when the entry was deleted */
    size_t len;
} wake_entry;

typedef struct wake_entries {
    wake_entry *v;
    int n;
} wake_entries;

void wake_entries_free(wake_entries *e);

#define WAKE_STREAM_ERROR (-1)   /* Redis unreachable or an error reply */
#define WAKE_STREAM_NOGROUP (-2) /* the group (or stream) vanished: create it */

/* XGROUP CREATE key group 0 MKSTREAM ("already exists" is success). */
int wake_stream_group_create(vigil_redis *r, const char *key, const char *group);

/* XREADGROUP from `from` (">" new entries, an id for this consumer's own
 * pending ones); block_ms <= 0: do not block. Returns 0 (out->n may be 0). */
int wake_stream_read(vigil_redis *r, const char *key, const char *group, const char *consumer,
                     const char *from, int count, int block_ms, wake_entries *out);

/* XAUTOCLAIM of entries idle at least min_idle_ms, from *cursor (updated;
 * "0-0" when the scan is complete). Deleted entries come back with a NULL
 * payload so they can be acknowledged. */
int wake_stream_autoclaim(vigil_redis *r, const char *key, const char *group,
                          const char *consumer, int64_t min_idle_ms, int count, char *cursor,
                          size_t cursorlen, wake_entries *out);

/* XACK + XDEL of n entries in one round trip. */
int wake_stream_finish(vigil_redis *r, const char *key, const char *group, const char *const *ids,
                       int n);

/* 1 when input id `job` is recorded as applied in the ids set `ids_key`
 * (the runtime's dedupe record), 0 if not, -1 on error. */
int wake_stream_decided(vigil_redis *r, const char *ids_key, const char *job);

#endif
