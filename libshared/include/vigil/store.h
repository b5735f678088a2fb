/* store.h - versioned state records in Redis, committed atomically with the
 * processed input id, the outbox and timer changes: one round trip of
 * reads under WATCH, then every write in one MULTI/EXEC (store_commit.c;
 * no script: Redis runs plain commands for about two thirds of a Lua
 * script's CPU).
 *
 * Keys (P = VIGIL_REDIS_PREFIX, S = service name, i = shard index):
 *   P S ":state:" key       hash {v: version, s: state JSON, "p:" name: part JSON
 *                           for a record kept in parts (vigil_fx_state_part)}
 *   P S ":ids:" key         zset of processed input ids scored by commit time
 *                           (trimmed to the newest dedupe_keep on about one
 *                           commit in dedupe_keep / 256, at most 32: a few
 *                           dozen over it between trims; expiring
 *                           dedupe_ttl_ms after the last id added, plus up
 *                           to the refresh period: store_writes.c)
 *   P S ":outbox:" i        list of pending output messages, oldest first;
 *                           each entry is "<0|1 retain><topic>\n<payload>"
 *   P S ":timers:" i        zset of timer members "<key>|<name>" scored by due ms
 *                           (a claimed member: by its lease's end)
 *   P S ":timers:" i ":due" hash member -> original due ms of claimed timers
 *                           (stable event ids and firing ids on a re-claim)
 *   P S ":" hash            snapshot hashes (effects.h)
 *
 * A commit succeeds only if the record's version still equals the version
 * the decision was made on (compare-and-set); otherwise it returns CONFLICT
 * with the current record so the caller decides again without another round
 * trip. An input id already recorded for the key returns DUPLICATE and
 * changes nothing. */
#ifndef VIGIL_STORE_H
#define VIGIL_STORE_H
#include <stdint.h>
#include "effects.h"
#include "redis.h"

typedef struct vigil_store_config {
    const char *prefix;  /* "vigil:" */
    const char *service; /* "dormancy-monitor" */
    int shard_index;     /* selects the outbox and timer set */
    int dedupe_keep;     /* processed ids kept per key (default 10000 if 0) */
    int64_t dedupe_ttl_ms; /* the ids key outlives its last id this long; 0 never expires */
} vigil_store_config;

typedef struct vigil_store vigil_store;

/* The store uses r for every call and does not own it (one store per thread
 * that owns r). */
vigil_store *vigil_store_new(vigil_redis *r, const vigil_store_config *cfg);
void vigil_store_free(vigil_store *s);

typedef enum {
    VIGIL_COMMIT_OK = 0,
    VIGIL_COMMIT_CONFLICT,  /* version moved: the current record is returned */
    VIGIL_COMMIT_DUPLICATE, /* input id already applied to this key */
    VIGIL_COMMIT_ERROR,     /* Redis unreachable or a transient error reply: retry later */
    VIGIL_COMMIT_BAD_DATA   /* a key holds another type, or an argument is malformed:
                             * refused before any write (nothing was written); the
                             * same commit would fail again */
} vigil_commit_result;

/* vigil_store_load's result when the record's key holds another type. */
#define VIGIL_STORE_BAD_DATA (-2)

/* Loads a record. Returns 0 with *version (0 = no record) and *state
 * (malloc'd JSON, NULL when no record; a record kept in parts comes whole:
 * the head with a member "parts" of every part by name), -1 on a Redis
 * error (retry), or
 * VIGIL_STORE_BAD_DATA when a key holds another type (a data error). If input_id
 * is not NULL, *seen is set to whether that id was already processed for key
 * (same round trip, pipelined). */
int vigil_store_load(vigil_store *s, const char *key, const char *input_id, int *seen,
                     int64_t *version, char **state);

typedef struct vigil_commit {
    const char *key;
    int64_t expected_version; /* 0 = record must not exist yet */
    const char *input_id;     /* NULL: no dedupe. A timer firing passes
                               * "timer:<name>:<original due>": a firing
                               * already applied returns DUPLICATE and still
                               * completes the lease. */
    const vigil_effects *fx;
    int64_t now_ms;
    /* When completing a claimed timer: its member name and the lease score
     * it was claimed with; the member is removed only if its score is still
     * that lease (a newer deadline set meanwhile survives). NULL = none.
     * Removal happens before fx->timers are applied. */
    const char *leased_timer;
    int64_t leased_score;
    /* vigil_store_commit_send only: decided on the record as the commit
     * sent just before it on the same key leaves it (expected_version is
     * that commit's version after it). It then joins that commit's batch
     * instead of waiting for its result, and is OK only if that one is
     * (else CONFLICT, or DUPLICATE for the same input id). When it cannot
     * join (no such commit in the batch, versions that do not follow, a
     * full batch, or a commit that resets the record's parts, completes a
     * timer lease or flushes a queue), _send returns -1 and nothing is
     * sent: decide it again once the batch is done. */
    bool follows;
} vigil_commit;

/* Commits. Checks every key's type before the first write (the reads
 * under WATCH), so BAD_DATA means nothing was written. On OK sets
 * *new_version (unchanged version if fx->new_state is NULL). On CONFLICT
 * sets *new_version and *cur_state (malloc'd, whole as vigil_store_load
 * gives it, or NULL: no record, or watched keys kept changing and the
 * caller should load it) to the current record. */
vigil_commit_result vigil_store_commit(vigil_store *s, const vigil_commit *c,
                                       int64_t *new_version, char **cur_state);

/* A pipelined vigil_store_commit: _send appends the commit's reads to the
 * store's connection without waiting (0, or -1: not sent, e.g. no
 * connection; nothing of it will be applied); _recv returns the result of
 * the oldest commit sent, with vigil_store_commit's results, c being the
 * commit that was sent. The first _recv reads every pending commit's reads
 * and sends one transaction for all of them: commits sent together share
 * two round trips and apply in order (one that reads a record, snapshot
 * hash or queue an earlier one writes waits for the earlier ones, inside
 * _send, unless it follows the earlier commit of its record: see
 * vigil_commit.follows). c and everything it points to must stay valid until its _recv.
 * Nothing else may use the connection between them (a command would
 * discard the pending replies). A lost connection or a refused transaction
 * is VIGIL_COMMIT_ERROR: the commit may or may not have been applied,
 * which its input id tells (vigil_store_load). */
int vigil_store_commit_send(vigil_store *s, const vigil_commit *c);
vigil_commit_result vigil_store_commit_recv(vigil_store *s, const vigil_commit *c,
                                            int64_t *new_version, char **cur_state);

/* Whether a commit of key that follows (vigil_commit.follows) could join
 * the commits sent and not yet received, as far as they go: the batch
 * has room, its connection is the same, and its latest commit of key is
 * there. Its own effects can still refuse it (see follows). Asked before
 * an input is decided, it spares a decision that could not be sent. */
bool vigil_store_can_follow(const vigil_store *s, const char *key);

/* The commit's checks (key types) and its compare-and-set, writing
 * nothing (its input id is not looked at): OK (the commit would be
 * accepted on this version),
 * CONFLICT (with the current record, as vigil_store_commit), BAD_DATA or
 * ERROR. Lets an input that touches several records be checked on all of
 * them before the first is committed. */
vigil_commit_result vigil_store_check(vigil_store *s, const vigil_commit *c,
                                      int64_t *new_version, char **cur_state);

/* Deletes a record, its processed ids and its timers (e.g. room delete). */
int vigil_store_delete(vigil_store *s, const char *key);

/* Outbox access for the publisher (store of the publisher thread). */
/* Reads up to max oldest entries; returns count (>=0) or -1. Entries are
 * decoded into out[] (caller frees with vigil_outbox_entries_free). */
int vigil_store_outbox_peek(vigil_store *s, int max, vigil_outmsg *out);
/* Removes the n oldest entries. */
int vigil_store_outbox_trim(vigil_store *s, int n);
void vigil_outbox_entries_free(vigil_outmsg *out, int n);

/* Full Redis key names, for tests and tools. */
void vigil_store_key(const vigil_store *s, const char *kind, const char *key,
                     char *out, size_t outlen);

#endif
