/* stream_reads.h - typed reads of Redis streams, sets and strings that a
 * service does not own (another service's log, a set indexing kept keys),
 * for reader threads and HTTP handlers. Values are copied out into
 * caller-freed arrays, so callers need no hiredis types; a connection error
 * (VIGIL_READ_UNREACHABLE: retry, or drop the connection) is told apart from
 * an empty result (VIGIL_READ_OK with none) and from a key of another type
 * (VIGIL_READ_WRONG_TYPE). Running out of memory while copying also reads
 * as VIGIL_READ_UNREACHABLE (nothing is returned). Each takes a vigil_redis
 * of the calling thread. */
#ifndef VIGIL_STREAM_READS_H
#define VIGIL_STREAM_READS_H
#include <stddef.h>
#include "reads.h"
#include "redis.h"

/* A stream id is at most "<u64>-<u64>": 41 characters. */
#define VIGIL_STREAM_ID_MAX 48

/* One stream entry: its id and its first field/value pair (the logs read
 * here carry one field per entry). field and value are malloc'd and
 * NUL-terminated; len is value's length (it may hold NUL bytes). */
typedef struct vigil_stream_entry {
    char id[VIGIL_STREAM_ID_MAX];
    char *field;
    char *value;
    size_t len;
} vigil_stream_entry;

/* Frees n entries and the array (NULL is fine). */
void vigil_stream_entries_free(vigil_stream_entry *e, size_t n);

/* XRANGE key start end COUNT count (reverse: XREVRANGE key start end, so
 * start is the upper bound, e.g. "+" "-"). start/end are as Redis takes
 * them: "-", "+", an id, or "(" and an id for an exclusive bound. count <=
 * 0: no COUNT. *out (caller frees with vigil_stream_entries_free) holds *n
 * entries in the command's order; a missing stream reads as none. */
vigil_read_result vigil_stream_range(vigil_redis *r, const char *key, const char *start,
                                     const char *end, int count, bool reverse,
                                     vigil_stream_entry **out, size_t *n);

/* The id of the stream's newest entry into id (idlen >= VIGIL_STREAM_ID_MAX
 * holds any); "" when the stream is empty or missing. */
vigil_read_result vigil_stream_last_id(vigil_redis *r, const char *key, char *id, size_t idlen);

/* What XINFO STREAM says of a stream's history, which its entries alone
 * do not: how many entries were ever added (Redis 7.0 on), so a reader can
 * tell a stream that dropped entries (trimmed by MAXLEN, deleted) from one
 * that never did, and the top id it ever gave, which never goes down while
 * the key lives, so a reader can tell the stream was replaced (flushed,
 * deleted, Redis restarted without it) when it falls below what it read. */
typedef struct vigil_stream_info {
    bool exists;               /* false: no such key, every field below 0 or "" */
    unsigned long long length; /* entries held */
    long long entries_added;   /* entries ever added; -1 when the server does not say (< 7.0) */
    char first_id[VIGIL_STREAM_ID_MAX]; /* the oldest entry held; "" when empty */
    char top_id[VIGIL_STREAM_ID_MAX];   /* last-generated-id: the greatest id it ever gave */
} vigil_stream_info;

/* XINFO STREAM key into *out. A missing key is VIGIL_READ_OK with
 * exists false; a key of another type VIGIL_READ_WRONG_TYPE. */
vigil_read_result vigil_stream_read_info(vigil_redis *r, const char *key, vigil_stream_info *out);

/* XREAD COUNT count BLOCK block_ms STREAMS key after: the entries after id
 * `after`, waiting up to block_ms for one (block_ms < 0: no BLOCK). A wait
 * that ends with nothing new reads as none. The connection's command
 * timeout must exceed block_ms. */
vigil_read_result vigil_stream_read_after(vigil_redis *r, const char *key, const char *after,
                                          int count, int block_ms, vigil_stream_entry **out,
                                          size_t *n);

/* SMEMBERS key: *out (caller frees with vigil_strings_free) holds *n
 * malloc'd, NUL-terminated members; a missing set reads as none. */
vigil_read_result vigil_read_members(vigil_redis *r, const char *key, char ***out, size_t *n);
void vigil_strings_free(char **s, size_t n);

/* A string: vigil_read_string in reads.h. */

#endif
