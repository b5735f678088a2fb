/* deadletter.h - the outbox's dead-letter list, and how to list and replay it.
 *
 * An outbox entry that can never be published (undecodable, or refused by
 * the broker VIGIL_OUTBOX_DEAD_LETTER_AFTER times in a row, e.g. by an ACL)
 * would hold up every output behind it. The publisher moves it, atomically
 * with its removal from the outbox, to the list
 *   P S ":deadletter"        (P = VIGIL_REDIS_PREFIX, S = service)
 * oldest first, each element the outbox entry exactly as it was stored
 * ("<0|1 retain><topic>\n<payload>"). Nothing is deleted: an operator lists
 * them (`vigil deadletter list SERVICE`), fixes the cause (ACL, broker
 * limit) and replays them (`vigil deadletter replay SERVICE`), which appends
 * them, in order, to an outbox the running service publishes. */
#ifndef VIGIL_DEADLETTER_H
#define VIGIL_DEADLETTER_H
#include <stdbool.h>
#include <stddef.h>
#include "redis.h"

/* The list's key: prefix service ":deadletter". Returns 0, or -1 if it
 * does not fit. */
int vigil_deadletter_key(const char *prefix, const char *service, char *out, size_t outlen);

/* One dead letter, decoded for display. topic is NULL when the entry is
 * not in the outbox form (it is then shown raw). */
typedef struct vigil_deadletter {
    const char *raw;      /* the stored entry */
    size_t raw_len;
    const char *topic;    /* NUL-terminated copy, or NULL */
    const char *payload;  /* points into raw */
    size_t payload_len;
    bool retain;
} vigil_deadletter;

typedef void (*vigil_deadletter_fn)(void *ctx, long long index, const vigil_deadletter *d);

/* Calls fn for each dead letter of service, oldest first. Returns the count,
 * or -1 on a Redis error. */
long long vigil_deadletter_list(vigil_redis *r, const char *prefix, const char *service,
                                vigil_deadletter_fn fn, void *ctx);

/* Moves every dead letter of service, in order, to the tail of the outbox of
 * shard_index (P S ":outbox:" i), atomically. Returns the number moved, or -1
 * on a Redis error. The running service's publisher finds them within its
 * idle poll (half a second). */
long long vigil_deadletter_replay(vigil_redis *r, const char *prefix, const char *service,
                                  int shard_index);

/* Decodes an outbox entry "<0|1><topic>\n<payload>" in place: *topic gets a
 * malloc'd NUL-terminated copy. Returns false (and *topic NULL) when the
 * entry is not in that form or its topic is not publishable (empty, a
 * wildcard, a NUL byte). */
bool vigil_outbox_entry_decode(const char *raw, size_t len, char **topic, const char **payload,
                               size_t *payload_len, bool *retain);

#endif
