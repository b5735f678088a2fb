/* shard_view.h - which keys a replica takes while the shard count changes.
 *
 * Every replica has its own persistent MQTT session subscribed to every
 * topic, so every input reaches every replica; each acts on the keys of its
 * shard and acknowledges the rest. With one shard count N everywhere that
 * is exact. While N changes (a rolling update: some replicas run i/2,
 * others i/3) a key could belong to no running replica: its old owner
 * already skips it under the new N, its new owner still skips it under
 * the old one, and the input is acknowledged by everyone and lost.
 *
 * The view closes that gap: a replica takes a key when it owns it under
 * ANY shard count still in use, not only its own:
 *   - every replica advertises its N in P S ":shard:counts" (a sorted set scored
 *     by expiry, refreshed every 2 s, gone 10 s after the replica);
 *   - P S ":shard:settled" holds the last N for which every index 0..N-1 has a
 *     persistent session (P S ":shard:session:" i, set once the replica is
 *     connected): a new index's session does not exist before its first
 *     connect, so input published before then is queued only for the old
 *     indexes, and the old N must stay in the view until it exists.
 * A removed index's session may still hold input its replica never got
 * to (killed with a backlog), which the others skipped as not theirs: a
 * survivor adopts it (runtime.c: connects as that index, takes every
 * input it gets, whoever owns it, until a fence it publishes to the
 * session comes back behind the backlog (shard_fence.h), then ends
 * the session).
 * Held: the counts above say which counts replicas run under now, not
 * what their sessions still hold. A replica that stalled (Redis loading,
 * a long pause) keeps a backlog published under the count it ran under;
 * restarted under a new N, it would skip the backlog's keys the new N
 * gives to an index whose session did not exist when they were published.
 * So every refresh records the replica's count in P S ":shard:ran:" i, the
 * counts index i's session was consumed under, and the view keeps every
 * one of them (the "held" counts) until the replica knows its session
 * has delivered everything queued before: it publishes a fence to itself
 * (sys/{service}/fence/{i}, shard_fence.h) and, the session being one
 * queue in order, the fence's arrival means the backlog before it was
 * taken; vigil_shard_view_release then drops the held counts.
 * During a change two replicas may both take a key: harmless, the commit's
 * version check and processed-id dedupe apply the input once. A replica
 * whose index is at or beyond its own N (i/N with i >= N) owns nothing
 * under N: it drains, taking only the keys it owns under the other counts
 * still in use (a shrinking StatefulSet's surplus pods during the
 * rollout). */
#ifndef VIGIL_SHARD_VIEW_H
#define VIGIL_SHARD_VIEW_H
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Counts kept in a view: the replica's own first, then others. More than
 * this many counts in use at once is a deployment going wrong; the extra
 * ones are ignored with a warning. */
#define VIGIL_SHARD_VIEW_MAX 4

typedef struct vigil_shard_view {
    int counts[VIGIL_SHARD_VIEW_MAX];
    int n;
} vigil_shard_view;

/* A view holding only the replica's own count. */
void vigil_shard_view_init(vigil_shard_view *v, int own_count);

/* Adds a count (1..1024) unless present. Returns false when the view is
 * full and the count was not added. */
bool vigil_shard_view_add(vigil_shard_view *v, int count);

/* Whether replica `index` takes key under any count of the view. */
bool vigil_shard_view_owns(const vigil_shard_view *v, int index, const char *key);

/* Whether two views hold the same counts (in any order). */
bool vigil_shard_view_equal(const vigil_shard_view *a, const vigil_shard_view *b);

/* Writes "2,3" into out. */
void vigil_shard_view_format(const vigil_shard_view *v, char *out, size_t outlen);

/* The indexes that have had a persistent session (P S ":shard:sessions"). */
#define VIGIL_SHARD_SESSIONS_MAX 1024
typedef struct vigil_shard_sessions {
    int index[VIGIL_SHARD_SESSIONS_MAX];
    int n;
} vigil_shard_sessions;

/* One round trip: advertises (index, count) until now_ms + ttl_ms, adds
 * count to the counts index's session ran under, marks this index's
 * session as existing (for session_ms, and in the set of sessions) when
 * session_ready, settles count if every index below it has a session, and
 * fills v with the own count, every advertised count, the settled one and
 * the held ones, held (if not NULL) with the held counts alone (the other
 * counts index's session ran under), and sessions (if not NULL) with the
 * set. Returns 0, or -1 on a Redis error (v then holds the own count only:
 * not a view to decide with). */
int vigil_shard_view_refresh(vigil_store *s, int index, int count, bool session_ready,
                             int64_t now_ms, int64_t ttl_ms, int64_t session_ms,
                             vigil_shard_view *v, vigil_shard_view *held,
                             vigil_shard_sessions *sessions);

/* Index's session has delivered everything queued under counts (its
 * fence came back): they are no longer held. 0 or -1. */
int vigil_shard_view_release(vigil_store *s, int index, const vigil_shard_view *counts);

/* Whether index's replica is alive (its handover heartbeat, handover.h):
 * 1, 0, or -1 on a Redis error. */
int vigil_shard_view_alive(vigil_store *s, int index);

/* Forgets index's session once it was adopted and ended (and the counts
 * it ran under). 0 or -1. */
int vigil_shard_view_forget_session(vigil_store *s, int index);

#endif
