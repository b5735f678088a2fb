/* shard_fence.h - knowing when a replica's session has delivered its
 * backlog, so the shard counts it was consumed under may be dropped.
 *
 * A replica holds the shard counts its session ran under before
 * (shard_view.h, "Held") because the session may still queue input
 * published under them. The broker gives no queue length, but it delivers
 * one session's messages in order: a message the replica publishes to a
 * topic only its own session subscribes to (sys/{service}/fence/{index})
 * arrives after everything queued before it. So the replica sends such a
 * fence when it sees held counts, and when its own fence comes back the
 * counts held at the time of sending are released.
 *
 * This is the state machine only (no I/O, the clock passed in): runtime.c
 * publishes the payloads it returns and hands it what arrives. A fence is
 * recognised by the process's random nonce (a fence left in the queue by
 * an earlier process of the same index proves nothing about this one's
 * backlog) and a sequence number: any of this process's fences sent after
 * the held counts were taken down proves the backlog before them drained.
 * A fence lost with the broker is sent again after retry_ms. */
#ifndef VIGIL_SHARD_FENCE_H
#define VIGIL_SHARD_FENCE_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shard_view.h"

#define VIGIL_FENCE_TOPIC_MAX 128
#define VIGIL_FENCE_PAYLOAD_MAX 256

typedef struct vigil_shard_fence {
    pthread_mutex_t mu; /* sender (timer thread) and receiver (intake) */
    char topic[VIGIL_FENCE_TOPIC_MAX];
    char shard[24];       /* "i/N", in the payload for people watching */
    char nonce[33];       /* 32 hex digits, new for every process */
    uint64_t next_seq;    /* the next fence's number, from 1 */
    uint64_t first_seq;   /* first fence sent for `snapshot`; 0 = none outstanding */
    int64_t sent_at_ms;   /* when the last one was sent (caller's monotonic clock) */
    vigil_shard_view snapshot; /* the held counts the outstanding fence releases */
} vigil_shard_fence;

/* Sets up index's fence of service (topic, a fresh nonce). */
void vigil_shard_fence_init(vigil_shard_fence *f, const char *service, int index, int count);
void vigil_shard_fence_destroy(vigil_shard_fence *f);

/* Whether topic is some replica's fence of service (what an adopted
 * session of another index may deliver: not an input). */
bool vigil_shard_fence_is_fence_topic(const char *service, const char *topic);

/* Given the counts held now: whether a fence is to be sent (true, with its
 * payload, NUL-terminated, in out) - the first one for these counts, or
 * again when the last went unanswered for retry_ms. With nothing held, any
 * outstanding fence is forgotten. */
bool vigil_shard_fence_due(vigil_shard_fence *f, const vigil_shard_view *held, int64_t now_ms,
                           int64_t retry_ms, char *out, size_t outlen);

/* A message on this replica's fence topic: 1 when it is one of this
 * process's fences that releases the outstanding counts, copied to
 * release (the fence is then no longer outstanding); 0 for any other
 * fence (an earlier process's, one already answered); -1 when the payload
 * is no fence at all (the caller reports it as bad input). */
int vigil_shard_fence_arrived(vigil_shard_fence *f, const void *payload, size_t len,
                               vigil_shard_view *release);

#endif
