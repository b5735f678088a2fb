/* store_commit.h - private to libshared/src: what store_commit.c (the
 * commit's rounds and batches) and store_writes.c (the writes of its
 * transaction) share. */
#ifndef VIGIL_STORE_COMMIT_H
#define VIGIL_STORE_COMMIT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_lua.h"

/* One commit of a batch. */
typedef struct pend {
    const vigil_commit *c; /* NULL: a commit whose sending failed midway (its replies are dropped) */
    size_t ns, na;         /* c->fx's snapshot and auxiliary ops (c may be gone at pend_free) */
    int n_r1;              /* replies its round 1 is owed */
    bool types;            /* its round 1 carries the batch's outbox/timers/dues TYPEs */
    bool shard_bad;        /* ... and one of them holds another type */
    bool send_failed;      /* round 1 could not all be appended (memory): read, then ERROR */
    bool dry;              /* vigil_store_check: the checks and the version, no dedupe, no writes */
    bool ttl_sent;         /* its writes set the ids key's expiry (store_note_ttl once done) */
    int follows;           /* the batch's index of the commit of its record it follows, or -1 */
    /* What its round 1 sent beyond the ZSCORE of its id: a follower
     * leaves out what the batch's earlier commits of its record already
     * watch and read (store_commit.c, round1_send). */
    bool watch_sent, hget_sent;
    bool ids_watched; /* its ids key is watched (by it or a commit it follows) */
    void *block;      /* one allocation: the keys below and the per-op arrays */
    char *skey, *ikey;
    char **snap_keys; /* per snapshot op */
    char **aux_keys;  /* per auxiliary op */
    int *snap_src;    /* per snapshot op: the first op of the same hash (its HGETALL) */
    /* per snapshot op owning a hash: -1 when its own HGETALL reads it, or
     * the batch's index of the commit (and that one's op) whose HGETALL a
     * follower uses (store_snap_reply) */
    int *snap_pend, *snap_op;
    /* round 1 */
    vigil_commit_result res;
    int64_t version;
    bool lease_hit;
    redisReply **snap_rep;  /* per snapshot op owning a hash: its HGETALL */
    redisReply **queue_rep; /* per auxiliary op that is a queue flush: its LRANGE */
    redisReply *part_rep;   /* HKEYS of the record, for a parts reset */
    /* round 2 */
    int *xlen_at;   /* per auxiliary op: index of the XLEN before a job add in EXEC's reply */
    char *cur;      /* CONFLICT: the record now */
} pend;

/* Arguments of one command being gathered: v[0] and v[1] are left for
 * the command and its key; owned strings are freed once it is sent. */
typedef struct entries {
    const char **v;
    size_t *len;
    char **owned;
    size_t n, n_owned, cap;
} entries;

typedef struct w2 {
    vigil_store *s;
    const pend *batch; /* the transaction's commits, in order */
    int n_batch;
    int queued; /* commands appended */
    int base;   /* queued at MULTI: an EXEC reply's index is queued - base */
    int rc;
    /* Writes to the shard's own keys (timers, claimed deadlines, outbox)
     * gathered across the transaction's commits and sent as one command
     * each (store_write_flush): each commit's own ZADD/ZREM/HDEL/RPUSH cost
     * Redis a command and the service two replies (QUEUED and EXEC's
     * element). A member named by an earlier commit (a hash in
     * `members`; commits that follow one another share their record's
     * timers) keeps only the later commit's change, which sets it whole,
     * as applying them in commit order would leave it. */
    entries zrem, zadd, hdel, out;
    uint64_t *members;
    size_t n_members, cap_members;
    void **blocks; /* texts the gathered timer arguments point into */
    size_t n_blocks, cap_blocks;
} w2;

static inline bool rep_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* The HGETALL that read op j's snapshot hash for p: its own, or the one
 * of the earlier commit of its record it shares (NULL if not read). */
static inline const redisReply *store_snap_reply(const pend *batch, const pend *p, size_t j)
{
    int src = p->snap_src[j];
    if (p->snap_pend[src] < 0)
        return p->snap_rep[src];
    return batch[p->snap_pend[src]].snap_rep[p->snap_op[src]];
}

/* store_writes.c: appends one command to the transaction (w->rc -1 when it
 * could not be). */
void store_put(w2 *w, int argc, const char **argv, const size_t *lens);
/* store_writes.c: queues an OK commit's writes: record and parts,
 * processed id, auxiliary ops, snapshots; gathers its lease completion,
 * timers and outbox entries into w (store_write_flush). A timer or part
 * named twice keeps its last change. */
void store_write_commit(w2 *w, pend *p);
/* store_writes.c: a DUPLICATE's lease completion (nothing if the lease was
 * not the one it held). */
void store_write_lease(w2 *w, const pend *p);
/* store_writes.c: sends the gathered shard-key writes (before EXEC). */
void store_write_flush(w2 *w);
/* store_writes.c: frees what w gathered (after a failure: unsent). */
void store_write_done(w2 *w);
/* store_writes.c: job stream adds whose cap trimmed entries, from EXEC's
 * reply, counted and said. */
void store_note_trims(const pend *p, const redisReply *exec);
/* A commit done: if its writes set the ids key's expiry, the store's table
 * of recent settings learns it (store_writes.c). */
void store_note_ttl(vigil_store *s, const pend *p);

#endif
