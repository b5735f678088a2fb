/* store_commit.c - the commit without a script: one round trip of reads
 * under WATCH, then the writes in one MULTI/EXEC.
 *
 * Why not a Lua script: Redis spent 75-110 us in the commit script per
 * input (the interpreter: 2,000-3,000 operations and about 15 redis.call
 * per commit), most of Redis's CPU. The same writes as plain commands in a
 * transaction cost Redis about two thirds of that, measured as process CPU
 * on pipelined runs (the commands themselves: under 20 us).
 *
 * The commit, per vigil_commit:
 *   round 1  WATCH the record, its processed ids, every snapshot hash it
 *            updates and every queue it flushes; read the version, whether
 *            the input id was seen, the type of every other key it writes,
 *            the snapshot hashes, the queues, the record's part names (a
 *            parts reset) and a completed timer's lease.
 *   decide   BAD_DATA (a key of another type: nothing is written),
 *            DUPLICATE, CONFLICT or OK, as the script did.
 *   round 2  MULTI, the writes of every OK commit (and a DUPLICATE's lease
 *            completion), EXEC; then, for each CONFLICT, the record as it
 *            is now (HGETALL). The writes to the shard's own keys (timers,
 *            their claimed deadlines, the outbox) are gathered across the
 *            batch and go out as one command each before EXEC
 *            (store_writes.c, w2).
 * A watched key that changed between the rounds makes EXEC return nil and
 * nothing is written: the whole batch is read and decided again (at most
 * COMMIT_ATTEMPTS times; then the commits that wanted to write report a
 * CONFLICT without a record, and the caller loads it). The keys written
 * without being watched (the shard's outbox, timers and timer dues, and
 * auxiliary keys) are only ever appended to or overwritten, so what round 1
 * read of them (their type) stays true unless someone retypes a key by
 * hand in that instant.
 *
 * Pipelined commits (vigil_store_commit_send) share both rounds: every
 * commit's round 1 goes out as it is sent, and the first _recv reads them
 * all and sends one transaction for the batch. A commit that reads a key
 * an earlier commit of the batch writes (the same record, snapshot hash or
 * queue) first completes the batch before it, so each one reads what the
 * ones before it wrote, as they would one at a time. A commit that follows
 * the batch's earlier commit of its record (vigil_commit.follows) reads
 * only its input id: the record and its snapshot hashes are watched and
 * read already (share_reads); and what it writes again (the record's
 * head, a snapshot field) is left out of the earlier one's writes
 * (store_writes.c). */
#include "vigil/store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store_commit.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/str.h"

#define COMMIT_ATTEMPTS 5 /* rounds of reads and transaction when watched keys keep changing */
/* Commits in one transaction at most: Redis 7.0 looks for a key among the
 * keys the connection already watches one by one (watchForKey), so WATCH
 * grows with the batch; past this many the batch is completed first. */
#define BATCH_MAX 32
#define REPLIES_LOST "vigil_commit_replies_lost_total"
#define REPLIES_LOST_HELP                                                                    \
    "Pipelined commits failed unread because their Redis replies were dropped first (a lost " \
    "connection, or another command); each is done again by its caller"

struct store_batch {
    pend *p;
    int n, cap;
    uint64_t *written; /* hashes of the keys the batch's commits read and write */
    int n_written, cap_written;
    /* the connection's epoch when the batch's round 1s were sent: if it
     * changed, their replies are gone (vigil_redis_epoch) */
    uint64_t epoch;
    /* results completed and not yet handed out by _recv, oldest first */
    struct done {
        vigil_commit_result res;
        int64_t version;
        char *cur;
    } *done;
    int done_head, done_n, done_cap;
};

static void pend_free(pend *p)
{
    size_t ns = p->ns, na = p->na;
    for (size_t j = 0; p->snap_keys && j < ns; j++)
        free(p->snap_keys[j]);
    for (size_t j = 0; p->aux_keys && j < na; j++)
        free(p->aux_keys[j]);
    for (size_t j = 0; p->snap_rep && j < ns; j++)
        if (p->snap_rep[j])
            vigil_redis_reply_free(p->snap_rep[j]);
    for (size_t j = 0; p->queue_rep && j < na; j++)
        if (p->queue_rep[j])
            vigil_redis_reply_free(p->queue_rep[j]);
    if (p->part_rep)
        vigil_redis_reply_free(p->part_rep);
    free(p->block);
    free(p->cur);
    memset(p, 0, sizeof *p);
}

/* Forgets what round 1 read (before reading again). */
static void pend_reset_reads(pend *p)
{
    size_t ns = p->ns, na = p->na;
    for (size_t j = 0; j < ns; j++)
        if (p->snap_rep[j]) {
            vigil_redis_reply_free(p->snap_rep[j]);
            p->snap_rep[j] = NULL;
        }
    for (size_t j = 0; j < na; j++) {
        if (p->queue_rep[j]) {
            vigil_redis_reply_free(p->queue_rep[j]);
            p->queue_rep[j] = NULL;
        }
        p->xlen_at[j] = -1;
    }
    if (p->part_rep) {
        vigil_redis_reply_free(p->part_rep);
        p->part_rep = NULL;
    }
    free(p->cur);
    p->cur = NULL;
    p->res = VIGIL_COMMIT_ERROR;
    p->version = 0;
    p->lease_hit = false;
    p->shard_bad = false;
    p->send_failed = false;
    p->n_r1 = 0;
}

void store_batch_free(vigil_store *s)
{
    struct store_batch *b = s->batch;
    if (!b)
        return;
    for (int i = 0; i < b->n; i++)
        pend_free(&b->p[i]);
    for (int i = 0; i < b->done_n; i++)
        free(b->done[(b->done_head + i) % b->done_cap].cur);
    free(b->p);
    free(b->written);
    free(b->done);
    free(b);
    s->batch = NULL;
}

static char *key_of(const vigil_store *s, const char *kind, const char *name)
{
    size_t n = strlen(s->base) + strlen(kind) + strlen(name) + 1;
    char *k = malloc(n);
    if (k)
        vigil_concat(k, n, s->base, kind, name, (char *)NULL);
    return k;
}

/* The keys a commit names, and room for what its rounds read. Its record
 * and ids keys and its per-op arrays share one block, made with malloc and
 * memset rather than six callocs: glibc's calloc skips the thread's cache
 * of freed chunks, and a commit is made and freed per input. */
static int pend_init(const vigil_store *s, pend *p, const vigil_commit *c)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    const vigil_effects *fx = c->fx;
    size_t ns = fx ? fx->n_snaps : 0, na = fx ? fx->n_aux : 0;
    p->ns = ns;
    p->na = na;
    size_t bl = strlen(s->base), kl = strlen(c->key);
    size_t ptrs = 2 * (ns + 1) + 2 * (na + 1), ints = 3 * (ns + 1) + (na + 1);
    size_t size = ptrs * sizeof(void *) + ints * sizeof(int) + (bl + 6 + kl + 1) + (bl + 4 + kl + 1);
    char *m = malloc(size);
    if (!m)
        return -1;
    memset(m, 0, ptrs * sizeof(void *) + ints * sizeof(int));
    p->block = m;
    p->snap_keys = (char **)(void *)m;
    p->snap_rep = (redisReply **)(void *)(p->snap_keys + ns + 1);
    p->aux_keys = (char **)(void *)(p->snap_rep + ns + 1);
    p->queue_rep = (redisReply **)(void *)(p->aux_keys + na + 1);
    p->snap_src = (int *)(void *)(p->queue_rep + na + 1);
    p->snap_pend = p->snap_src + ns + 1;
    p->snap_op = p->snap_pend + ns + 1;
    p->xlen_at = p->snap_op + ns + 1;
    p->skey = (char *)(p->xlen_at + na + 1);
    vigil_concat(p->skey, bl + 6 + kl + 1, s->base, "state:", c->key, (char *)NULL);
    p->ikey = p->skey + bl + 6 + kl + 1;
    vigil_concat(p->ikey, bl + 4 + kl + 1, s->base, "ids:", c->key, (char *)NULL);
    for (size_t j = 0; j < ns; j++) {
        if (!(p->snap_keys[j] = key_of(s, "", fx->snaps[j].hash)))
            return -1;
        p->snap_src[j] = (int)j;
        p->snap_pend[j] = -1;
        for (size_t k = 0; k < j; k++)
            if (strcmp(fx->snaps[k].hash, fx->snaps[j].hash) == 0) {
                p->snap_src[j] = p->snap_src[k];
                break;
            }
    }
    for (size_t j = 0; j < na; j++) {
        if (!(p->aux_keys[j] = key_of(s, "", fx->aux[j].name)))
            return -1;
        p->xlen_at[j] = -1;
    }
    p->res = VIGIL_COMMIT_ERROR;
    p->follows = -1;
    return 0;
}

/* ---- the batch's read and write sets --------------------------------- */

static uint64_t key_hash(const char *k)
{
    return vigil_hash_mem(k, strlen(k));
}

static bool written_has(const struct store_batch *b, const char *k)
{
    uint64_t h = key_hash(k);
    for (int i = 0; i < b->n_written; i++)
        if (b->written[i] == h)
            return true;
    return false;
}

static int written_add(struct store_batch *b, const char *k)
{
    if (b->n_written == b->cap_written) {
        int cap = b->cap_written ? 2 * b->cap_written : 64;
        uint64_t *w = realloc(b->written, (size_t)cap * sizeof *w);
        if (!w)
            return -1;
        b->written = w;
        b->cap_written = cap;
    }
    b->written[b->n_written++] = key_hash(k);
    return 0;
}

static bool is_queue(vigil_aux_kind k)
{
    return k == VIGIL_AUX_QUEUE_PUSH || k == VIGIL_AUX_QUEUE_FLUSH;
}

/* Does p read a key an earlier commit of the batch writes? (A hash
 * collision only costs an extra round trip.) A commit that follows the
 * earlier one of its record reads neither that record (it was decided on
 * what the earlier one writes) nor its snapshot hashes (the transaction
 * applies the earlier commits' changes to them first: store_writes.c). */
static bool overlaps(const struct store_batch *b, const pend *p)
{
    const vigil_effects *fx = p->c->fx;
    bool follows = p->follows >= 0;
    if (!follows && written_has(b, p->skey))
        return true;
    for (size_t j = 0; fx && j < fx->n_snaps && !follows; j++)
        if (written_has(b, p->snap_keys[j]))
            return true;
    for (size_t j = 0; fx && j < fx->n_aux; j++)
        if (fx->aux[j].kind == VIGIL_AUX_QUEUE_FLUSH && written_has(b, p->aux_keys[j]))
            return true;
    return false;
}

static int note_written(struct store_batch *b, const pend *p)
{
    const vigil_effects *fx = p->c->fx;
    int rc = written_add(b, p->skey);
    for (size_t j = 0; fx && j < fx->n_snaps; j++)
        rc |= written_add(b, p->snap_keys[j]);
    for (size_t j = 0; fx && j < fx->n_aux; j++)
        if (is_queue(fx->aux[j].kind))
            rc |= written_add(b, p->aux_keys[j]);
    return rc;
}

/* The index of the batch's latest commit of record key; -1 when it has
 * none, or when a commit after it failed to send (its place is unknown).
 * Each commit's skey is base "state:" and its key (pend_init), so only
 * the key part is compared (it ran for most inputs over up to a batch of
 * commits, and comparing the base and "state:" again each time was half
 * of it). */
static int latest_of(const struct store_batch *b, const char *base, const char *key)
{
    size_t at = strlen(base) + 6;
    for (int i = b->n - 1; i >= 0; i--) {
        if (!b->p[i].c)
            return -1;
        if (strcmp(b->p[i].skey + at, key) == 0)
            return i;
    }
    return -1;
}

/* The index of the batch's commit that p follows (vigil_commit.follows):
 * the latest one of the same record, if p's expected version is that
 * one's version after it. -1: p waits for the batch instead, as every
 * commit did before, when it resets the record's parts (its HKEYS would
 * miss the parts the earlier one adds), completes a lease, flushes a
 * queue, or a commit of the batch failed to send (its place is unknown). */
static int followed(const vigil_store *s, const struct store_batch *b, const pend *p)
{
    const vigil_commit *c = p->c;
    const vigil_effects *fx = c->fx;
    if (!c->follows || (fx && fx->parts_reset) || (c->leased_timer && *c->leased_timer))
        return -1;
    for (size_t j = 0; fx && j < fx->n_aux; j++)
        if (fx->aux[j].kind == VIGIL_AUX_QUEUE_FLUSH)
            return -1;
    int i = latest_of(b, s->base, c->key);
    if (i < 0)
        return -1;
    const pend *q = &b->p[i];
    const vigil_effects *qf = q->c->fx;
    int64_t after = q->c->expected_version + (qf && qf->new_state ? 1 : 0);
    return after == c->expected_version && !q->dry ? i : -1;
}

/* ---- round 1 ----------------------------------------------------------- */

/* The Redis type an auxiliary op's key must hold (NULL: any, it is
 * overwritten or deleted). */
static const char *aux_type(vigil_aux_kind k)
{
    switch (k) {
    case VIGIL_AUX_STREAM_ADD:
    case VIGIL_AUX_JOB_ADD:
        return "stream";
    case VIGIL_AUX_QUEUE_PUSH:
    case VIGIL_AUX_QUEUE_FLUSH:
        return "list";
    case VIGIL_AUX_SET_ADD:
    case VIGIL_AUX_SET_REMOVE:
        return "set";
    default:
        return NULL;
    }
}

static int cmd(vigil_store *s, pend *p, int argc, const char **argv)
{
    if (vigil_redis_append(s->r, argc, argv, NULL) != 0)
        return -1;
    p->n_r1++;
    return 0;
}

/* Which of p's reads the batch's earlier commits of its record already
 * make, when p follows one (vigil_commit.follows): the connection watches
 * its record (and its ids key, if one of them has an id) until EXEC;
 * the version p would read is not used (p is decided on the one it
 * follows, and gets its version from it); and a snapshot hash the one it
 * follows reads, p's own HGETALL would read the same (every round 1 of
 * the batch comes before its writes, and a change by anyone else in
 * between aborts EXEC), so p uses that reply (store_snap_reply). p is
 * applied only if the one it follows is (follow_result), so whatever it
 * shares was read without error when p writes. In a busy room most
 * commits follow another: each saved Redis a WATCH (its keys looked up
 * among every key the transaction watches), an HGET and an HGETALL. */
static void share_reads(const vigil_store *s, pend *p)
{
    const vigil_commit *c = p->c;
    size_t ns = c->fx ? c->fx->n_snaps : 0;
    bool id = c->input_id && *c->input_id;
    p->watch_sent = p->hget_sent = true;
    p->ids_watched = id;
    for (size_t j = 0; j < ns; j++)
        p->snap_pend[j] = -1;
    if (p->follows < 0)
        return;
    const pend *q = &s->batch->p[p->follows];
    p->hget_sent = false;
    p->ids_watched = id || q->ids_watched;
    for (size_t j = 0; j < ns; j++) {
        if (p->snap_src[j] != (int)j)
            continue;
        for (size_t k = 0; k < q->ns; k++) {
            if (q->snap_src[k] != (int)k || strcmp(q->snap_keys[k], p->snap_keys[j]) != 0)
                continue;
            bool owned = q->snap_pend[k] < 0;
            p->snap_pend[j] = owned ? p->follows : q->snap_pend[k];
            p->snap_op[j] = owned ? (int)k : q->snap_op[k];
            break;
        }
    }
}

/* Appends p's reads (see the top of the file). -1 when the connection
 * failed or memory ran out; p->n_r1 counts what was appended. */
static int round1_send(vigil_store *s, pend *p)
{
    const vigil_commit *c = p->c;
    const vigil_effects *fx = c->fx;
    size_t ns = fx ? fx->n_snaps : 0, na = fx ? fx->n_aux : 0;
    bool id = c->input_id && *c->input_id;
    bool follower = p->follows >= 0;
    const pend *q = follower ? &s->batch->p[p->follows] : NULL;
    share_reads(s, p);
    const char **w = malloc((3 + ns + na) * sizeof *w);
    if (!w)
        return -1;
    int wn = 0;
    w[wn++] = "WATCH";
    if (!follower)
        w[wn++] = p->skey;
    if (id && !(q && q->ids_watched))
        w[wn++] = p->ikey;
    for (size_t j = 0; j < ns; j++)
        if (p->snap_src[j] == (int)j && p->snap_pend[j] < 0)
            w[wn++] = p->snap_keys[j];
    for (size_t j = 0; j < na; j++)
        if (fx->aux[j].kind == VIGIL_AUX_QUEUE_FLUSH)
            w[wn++] = p->aux_keys[j];
    p->watch_sent = wn > 1;
    int rc = p->watch_sent ? cmd(s, p, wn, w) : 0;
    free(w);
    if (rc != 0)
        return -1;
    const char *hget[] = { "HGET", p->skey, "v" };
    if (p->hget_sent && cmd(s, p, 3, hget) != 0)
        return -1;
    if (id) {
        const char *zs[] = { "ZSCORE", p->ikey, c->input_id };
        if (cmd(s, p, 3, zs) != 0)
            return -1;
    }
    if (p->types) {
        const char *const shard[] = { s->outbox_key, s->timers_key, s->dues_key };
        for (int k = 0; k < 3; k++) {
            const char *t[] = { "TYPE", shard[k] };
            if (cmd(s, p, 2, t) != 0)
                return -1;
        }
    }
    for (size_t j = 0; j < na; j++) {
        if (!aux_type(fx->aux[j].kind) || fx->aux[j].kind == VIGIL_AUX_QUEUE_FLUSH)
            continue; /* a flushed queue's LRANGE below checks its type */
        const char *t[] = { "TYPE", p->aux_keys[j] };
        if (cmd(s, p, 2, t) != 0)
            return -1;
    }
    for (size_t j = 0; j < ns; j++) {
        if (p->snap_src[j] != (int)j || p->snap_pend[j] >= 0)
            continue;
        const char *h[] = { "HGETALL", p->snap_keys[j] };
        if (cmd(s, p, 2, h) != 0)
            return -1;
    }
    for (size_t j = 0; j < na; j++) {
        if (fx->aux[j].kind != VIGIL_AUX_QUEUE_FLUSH)
            continue;
        const char *l[] = { "LRANGE", p->aux_keys[j], "0", "-1" };
        if (cmd(s, p, 4, l) != 0)
            return -1;
    }
    if (fx && fx->parts_reset) {
        const char *h[] = { "HKEYS", p->skey };
        if (cmd(s, p, 2, h) != 0)
            return -1;
    }
    if (c->leased_timer && *c->leased_timer) {
        const char *z[] = { "ZSCORE", s->timers_key, c->leased_timer };
        if (cmd(s, p, 3, z) != 0)
            return -1;
    }
    return 0;
}

/* Reads round 1's next reply: NULL when the connection failed (p->res is
 * then ERROR, and nothing more can be read). */
static redisReply *next(vigil_store *s, pend *p, int *left)
{
    redisReply *r = vigil_redis_pipeline_get(s->r);
    (*left)--;
    if (!r)
        p->res = VIGIL_COMMIT_ERROR;
    return r;
}

/* A data error in round 1: logged once per commit (the first), the commit
 * is refused. */
static void bad(pend *p, const char *what, const char *detail)
{
    if (p->res != VIGIL_COMMIT_BAD_DATA)
        vigil_log(VIGIL_LOG_ERROR, "store commit %s: VIGIL_BAD_DATA %s: %s", p->c->key, what,
                  detail);
    p->res = VIGIL_COMMIT_BAD_DATA;
}

/* An error reply, or the wrong type in a TYPE reply: bad(). */
static void want_type(pend *p, const redisReply *r, const char *key, const char *type)
{
    if (r->type == REDIS_REPLY_ERROR) {
        bad(p, key, r->str);
        return;
    }
    if (!rep_str(r) || strcmp(r->str, "none") == 0 || strcmp(r->str, type) == 0)
        return;
    char d[96];
    vigil_concat(d, sizeof d, "holds a ", r->str, ", not a ", type, (char *)NULL);
    bad(p, key, d);
}

/* A version as stored: a decimal integer, anything else 0 (as tonumber()
 * or 0 in the script). */
static int64_t version_of(const redisReply *r)
{
    if (!rep_str(r) || r->len == 0)
        return 0;
    char *end = NULL;
    long long v = strtoll(r->str, &end, 10);
    return end && *end == '\0' ? (int64_t)v : 0;
}

/* Reads p's round 1 and decides it. -1 when the connection failed. */
static int round1_recv(vigil_store *s, pend *p)
{
    int left = p->n_r1;
    redisReply *r = NULL;
    int rc = -1;
    p->n_r1 = 0;
    if (!p->c) { /* a commit whose sending failed: its replies are dropped */
        while (left > 0) {
            if (!(r = next(s, p, &left)))
                return -1;
            vigil_redis_reply_free(r);
        }
        return 0;
    }
    if (p->send_failed) {
        while (left > 0) {
            if (!(r = next(s, p, &left)))
                return -1;
            vigil_redis_reply_free(r);
        }
        p->res = VIGIL_COMMIT_ERROR;
        return 0;
    }
    const vigil_commit *c = p->c;
    const vigil_effects *fx = c->fx;
    size_t ns = fx ? fx->n_snaps : 0, na = fx ? fx->n_aux : 0;
    bool id = c->input_id && *c->input_id;
    bool seen = false;
    p->res = VIGIL_COMMIT_OK;

    if (p->watch_sent) {
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type == REDIS_REPLY_ERROR)
            bad(p, "WATCH", r->str);
        vigil_redis_reply_free(r);
    }
    if (p->hget_sent) { /* HGET v */
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type == REDIS_REPLY_ERROR)
            bad(p, p->skey, r->str);
        p->version = version_of(r);
        vigil_redis_reply_free(r);
    }
    if (id) {
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type == REDIS_REPLY_ERROR)
            bad(p, p->ikey, r->str);
        seen = r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_ERROR;
        vigil_redis_reply_free(r);
    }
    if (p->types) {
        const char *const shard[] = { s->outbox_key, s->timers_key, s->dues_key };
        const char *const want[] = { "list", "zset", "hash" };
        for (int k = 0; k < 3; k++) {
            if (!(r = next(s, p, &left)))
                goto out;
            want_type(p, r, shard[k], want[k]);
            p->shard_bad |= p->res == VIGIL_COMMIT_BAD_DATA;
            vigil_redis_reply_free(r);
        }
    }
    for (size_t j = 0; j < na; j++) {
        const char *t = aux_type(fx->aux[j].kind);
        if (!t || fx->aux[j].kind == VIGIL_AUX_QUEUE_FLUSH)
            continue;
        if (!(r = next(s, p, &left)))
            goto out;
        want_type(p, r, p->aux_keys[j], t);
        vigil_redis_reply_free(r);
    }
    for (size_t j = 0; j < ns; j++) {
        if (p->snap_src[j] != (int)j || p->snap_pend[j] >= 0)
            continue;
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) {
            bad(p, p->snap_keys[j], r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            vigil_redis_reply_free(r);
        } else {
            p->snap_rep[j] = r;
        }
    }
    for (size_t j = 0; j < na; j++) {
        if (fx->aux[j].kind != VIGIL_AUX_QUEUE_FLUSH)
            continue;
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type != REDIS_REPLY_ARRAY) {
            bad(p, p->aux_keys[j], r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            vigil_redis_reply_free(r);
        } else {
            p->queue_rep[j] = r;
        }
    }
    if (fx && fx->parts_reset) {
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type != REDIS_REPLY_ARRAY) {
            bad(p, p->skey, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            vigil_redis_reply_free(r);
        } else {
            p->part_rep = r;
        }
    }
    if (c->leased_timer && *c->leased_timer) {
        if (!(r = next(s, p, &left)))
            goto out;
        if (r->type == REDIS_REPLY_ERROR)
            bad(p, s->timers_key, r->str);
        else if (rep_str(r))
            p->lease_hit = strtod(r->str, NULL) == (double)c->leased_score;
        vigil_redis_reply_free(r);
    }
    rc = 0;
    if (p->res == VIGIL_COMMIT_BAD_DATA)
        goto out;
    if (fx && (fx->n_parts > 0 || fx->parts_reset) && !fx->new_state) {
        bad(p, c->key, "parts without a new state");
        goto out;
    }
    if (seen && !p->dry)
        p->res = VIGIL_COMMIT_DUPLICATE;
    else if (p->follows < 0 && p->version != c->expected_version)
        p->res = VIGIL_COMMIT_CONFLICT; /* (one that follows: batch_round1) */
out:
    if (rc != 0)
        p->res = VIGIL_COMMIT_ERROR;
    return rc;
}

/* ---- round 2 (the writes themselves: store_writes.c) ------------------- */

/* Reads a CONFLICT's record as it is now (the HGETALL after EXEC). */
static void read_current(pend *p, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ARRAY)
        (void)store_record_of(r, &p->version, &p->cur); /* out of memory: no text, the caller loads */
}

/* Runs round 2 for the batch: the transaction (or UNWATCH when nothing is
 * written), then the record of every CONFLICT. Returns 1 when EXEC was
 * aborted (a watched key changed: read again), 0 when done, -1 when it
 * failed (every result ERROR: the commits may or may not have been
 * applied only if the connection broke after EXEC was sent). */
static int round2(vigil_store *s, struct store_batch *b)
{
    w2 w = { .s = s, .batch = b->p, .n_batch = b->n };
    bool writes = false;
    for (int i = 0; i < b->n; i++) {
        pend *p = &b->p[i];
        if (p->c && !p->dry &&
            (p->res == VIGIL_COMMIT_OK || (p->res == VIGIL_COMMIT_DUPLICATE && p->lease_hit)))
            writes = true;
    }
    if (writes) {
        const char *m[] = { "MULTI" };
        store_put(&w, 1, m, NULL);
        w.base = w.queued;
        for (int i = 0; i < b->n && w.rc == 0; i++) {
            pend *p = &b->p[i];
            if (p->c && p->res == VIGIL_COMMIT_OK) {
                if (p->follows >= 0) /* its version is the one the followed commit leaves */
                    p->version = b->p[p->follows].version;
                store_write_commit(&w, p);
            }
            else if (p->c && p->res == VIGIL_COMMIT_DUPLICATE)
                store_write_lease(&w, p);
        }
        store_write_flush(&w);
    }
    store_write_done(&w);
    /* The last command of the transaction is appended even after a failure
     * of ours (memory), as DISCARD, so the connection leaves MULTI. */
    bool ours_failed = w.rc != 0;
    const char *end[] = { !writes ? "UNWATCH" : ours_failed ? "DISCARD" : "EXEC" };
    if (vigil_redis_append(s->r, 1, end, NULL) != 0)
        ours_failed = true;
    else
        w.queued++;
    int n_tx = w.queued, n_conf = 0;
    w.rc = 0;
    for (int i = 0; i < b->n && w.rc == 0 && !ours_failed; i++) {
        pend *p = &b->p[i];
        if (p->c && p->res == VIGIL_COMMIT_CONFLICT) {
            const char *h[] = { "HGETALL", p->skey };
            store_put(&w, 2, h, NULL);
            if (w.rc == 0)
                n_conf++;
        }
    }
    /* Every reply is read, whatever it says, so the connection stays in
     * step. */
    bool aborted = false, failed = ours_failed;
    int k = 0;
    for (; k < n_tx; k++) {
        redisReply *r = vigil_redis_pipeline_get(s->r);
        if (!r)
            break;
        if (k == n_tx - 1 && writes && !ours_failed) { /* EXEC */
            if (r->type == REDIS_REPLY_NIL) {
                aborted = true;
            } else if (r->type != REDIS_REPLY_ARRAY) {
                vigil_log(VIGIL_LOG_ERROR, "store commit: transaction refused: %s",
                          r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
                failed = true;
            } else {
                for (size_t e = 0; e < r->elements; e++)
                    if (r->element[e]->type == REDIS_REPLY_ERROR)
                        vigil_log(VIGIL_LOG_ERROR, "store commit: a write failed: %s",
                                  r->element[e]->str);
                for (int i = 0; i < b->n; i++)
                    if (b->p[i].c && b->p[i].res == VIGIL_COMMIT_OK) {
                        store_note_trims(&b->p[i], r);
                        store_note_ttl(s, &b->p[i]);
                    }
            }
        } else if (r->type == REDIS_REPLY_ERROR) { /* MULTI or a command refused when queued */
            vigil_log(VIGIL_LOG_ERROR, "store commit: %s", r->str);
            failed = true;
        }
        vigil_redis_reply_free(r);
    }
    bool lost = k < n_tx;
    for (int i = 0, c = 0; i < b->n && !lost && c < n_conf; i++) {
        pend *p = &b->p[i];
        if (!p->c || p->res != VIGIL_COMMIT_CONFLICT)
            continue;
        c++;
        redisReply *r = vigil_redis_pipeline_get(s->r);
        if (!r) {
            lost = true;
            break;
        }
        read_current(p, r);
        vigil_redis_reply_free(r);
    }
    if (lost || failed) {
        for (int i = 0; i < b->n; i++)
            b->p[i].res = VIGIL_COMMIT_ERROR;
        return -1;
    }
    return aborted ? 1 : 0;
}

/* ---- the batch ------------------------------------------------------- */

static void (*between_rounds)(void *ctx);
static void *between_ctx;

void store_test_between_rounds(void (*fn)(void *ctx), void *ctx)
{
    between_rounds = fn;
    between_ctx = ctx;
}

static struct store_batch *batch_of(vigil_store *s)
{
    if (!s->batch)
        s->batch = calloc(1, sizeof *s->batch);
    return s->batch;
}

static int done_push(struct store_batch *b, vigil_commit_result res, int64_t version, char *cur)
{
    if (b->done_n == b->done_cap) {
        int cap = b->done_cap ? 2 * b->done_cap : 16;
        struct done *d = malloc((size_t)cap * sizeof *d);
        if (!d)
            return -1;
        for (int i = 0; i < b->done_n; i++)
            d[i] = b->done[(b->done_head + i) % b->done_cap];
        free(b->done);
        b->done = d;
        b->done_head = 0;
        b->done_cap = cap;
    }
    b->done[(b->done_head + b->done_n) % b->done_cap] = (struct done){ res, version, cur };
    b->done_n++;
    return 0;
}

/* Does an earlier commit of p's chain (the commits of its record it
 * follows) carry p's input id? Then p is a redelivery of it. */
static bool chain_has_id(const struct store_batch *b, const pend *p)
{
    const char *id = p->c->input_id;
    if (!id || !*id)
        return false;
    for (int i = p->follows; i >= 0; i = b->p[i].follows) {
        const char *q = b->p[i].c->input_id;
        if (q && strcmp(q, id) == 0)
            return true;
    }
    return false;
}

/* Decides a commit that follows another of its record, after the batch's
 * round 1 (in order, so the followed one is decided): it was decided on
 * what that one writes, so it is OK only if that one is, and a DUPLICATE
 * if that one or an earlier one of the chain carries its input id. Its
 * own round 1 still finds a redelivery from before the batch, and the
 * types and errors any commit finds. */
static void follow_result(const struct store_batch *b, pend *p)
{
    if (!p->c || p->follows < 0 || p->res == VIGIL_COMMIT_ERROR ||
        p->res == VIGIL_COMMIT_BAD_DATA)
        return;
    if (b->p[p->follows].res != VIGIL_COMMIT_OK)
        p->res = VIGIL_COMMIT_CONFLICT;
    else if (p->res == VIGIL_COMMIT_OK && chain_has_id(b, p))
        p->res = VIGIL_COMMIT_DUPLICATE;
}

/* Reads every round 1 of the batch and decides each commit: false when
 * the connection failed (every result ERROR). A shard key of another type
 * refuses every commit of the batch: they would all write to it. */
static bool batch_round1(vigil_store *s, struct store_batch *b)
{
    bool conn = vigil_redis_epoch(s->r) == b->epoch, shard_bad = false;
    if (!conn)
        vigil_counter_add(REPLIES_LOST, REPLIES_LOST_HELP, NULL, b->n);
    for (int i = 0; i < b->n; i++) {
        if (conn && round1_recv(s, &b->p[i]) != 0)
            conn = false;
        if (!conn)
            b->p[i].res = VIGIL_COMMIT_ERROR;
        shard_bad |= b->p[i].shard_bad;
    }
    for (int i = 0; i < b->n && shard_bad && conn; i++)
        if (b->p[i].c && b->p[i].res != VIGIL_COMMIT_ERROR)
            b->p[i].res = VIGIL_COMMIT_BAD_DATA;
    for (int i = 0; i < b->n && conn; i++)
        follow_result(b, &b->p[i]);
    return conn;
}

/* Reads every round 1 of the batch, runs round 2 (again from round 1
 * while watched keys change), and moves the results to the done queue. */
static void batch_finish(vigil_store *s, struct store_batch *b)
{
    if (b->n == 0)
        return;
    for (int attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        if (attempt > 0) {
            b->epoch = vigil_redis_epoch(s->r);
            bool first = true;
            for (int i = 0; i < b->n; i++) {
                pend *p = &b->p[i];
                if (!p->c) {
                    p->n_r1 = 0; /* read already */
                    continue;
                }
                pend_reset_reads(p);
                p->types = first;
                first = false;
                if (round1_send(s, p) != 0)
                    p->send_failed = true;
            }
        }
        if (!batch_round1(s, b))
            break;
        if (between_rounds)
            between_rounds(between_ctx);
        if (round2(s, b) <= 0)
            break;
        vigil_counter_add("vigil_commit_retries_total",
                          "Commit transactions read again because a watched key changed", NULL, 1);
        if (attempt == COMMIT_ATTEMPTS - 1)
            for (int i = 0; i < b->n; i++)
                if (b->p[i].res == VIGIL_COMMIT_OK || b->p[i].res == VIGIL_COMMIT_DUPLICATE) {
                    b->p[i].res = VIGIL_COMMIT_CONFLICT; /* no record: the caller loads it */
                    b->p[i].version = 0;
                }
    }
    for (int i = 0; i < b->n; i++) {
        pend *p = &b->p[i];
        if (p->c) {
            if (done_push(b, p->res, p->version, p->cur) == 0)
                p->cur = NULL;
            else
                (void)done_push(b, VIGIL_COMMIT_ERROR, 0, NULL); /* the queue could not grow */
        }
        pend_free(p);
    }
    b->n = 0;
    b->n_written = 0;
}

int vigil_store_commit_send(vigil_store *s, const vigil_commit *c)
{
    if (!c || !c->key || !*c->key) {
        vigil_log(VIGIL_LOG_ERROR, "store commit: no key");
        return -1;
    }
    struct store_batch *b = batch_of(s);
    if (!b || !vigil_redis_ensure(s->r))
        return -1;
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        pend *np = realloc(b->p, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        b->p = np;
        b->cap = cap;
    }
    pend p;
    if (pend_init(s, &p, c) != 0) {
        pend_free(&p);
        return -1;
    }
    /* A commit that follows another it cannot join is not sent: checked
     * after that one's batch on its version alone, it could be taken on a
     * version someone else wrote after that one failed. Its caller
     * decides it again once the batch is done. */
    p.follows = followed(s, b, &p);
    bool full = b->n >= BATCH_MAX || (b->n > 0 && vigil_redis_epoch(s->r) != b->epoch);
    if (c->follows && (p.follows < 0 || full)) {
        pend_free(&p);
        return -1;
    }
    /* full, or it reads what the batch writes, or the batch's replies are
     * lost: after the batch */
    if (full || (b->n > 0 && overlaps(b, &p))) {
        batch_finish(s, b);
        if (!vigil_redis_ensure(s->r)) {
            pend_free(&p);
            return -1;
        }
    }
    if (b->n == 0)
        b->epoch = vigil_redis_epoch(s->r);
    p.types = b->n == 0;
    int rc = round1_send(s, &p);
    if (rc == 0)
        rc = note_written(b, &p);
    if (rc != 0) {
        int owed = vigil_redis_connected(s->r) ? p.n_r1 : 0;
        pend_free(&p);
        if (owed == 0)
            return -1;
        p.n_r1 = owed; /* appended but not to be applied: read and dropped with the batch */
        p.types = false;
    }
    b->p[b->n++] = p;
    return rc;
}

bool vigil_store_can_follow(const vigil_store *s, const char *key)
{
    const struct store_batch *b = s ? s->batch : NULL;
    if (!b || !key || b->n == 0 || b->n >= BATCH_MAX || vigil_redis_epoch(s->r) != b->epoch)
        return false;
    int i = latest_of(b, s->base, key);
    return i >= 0 && !b->p[i].dry;
}

vigil_commit_result vigil_store_commit_recv(vigil_store *s, const vigil_commit *c,
                                            int64_t *new_version, char **cur_state)
{
    (void)c;
    if (cur_state)
        *cur_state = NULL;
    struct store_batch *b = s->batch;
    if (!b)
        return VIGIL_COMMIT_ERROR;
    if (b->done_n == 0)
        batch_finish(s, b);
    if (b->done_n == 0)
        return VIGIL_COMMIT_ERROR;
    struct done d = b->done[b->done_head];
    b->done_head = (b->done_head + 1) % b->done_cap;
    b->done_n--;
    if ((d.res == VIGIL_COMMIT_OK || d.res == VIGIL_COMMIT_CONFLICT) && new_version)
        *new_version = d.version;
    if (cur_state)
        *cur_state = d.cur;
    else
        free(d.cur);
    return d.res;
}

vigil_commit_result vigil_store_commit(vigil_store *s, const vigil_commit *c,
                                       int64_t *new_version, char **cur_state)
{
    if (cur_state)
        *cur_state = NULL;
    if (vigil_store_commit_send(s, c) != 0)
        return VIGIL_COMMIT_ERROR;
    return vigil_store_commit_recv(s, c, new_version, cur_state);
}

/* The commit's round 1 and decision alone: its reads, type checks and
 * version compare, then UNWATCH (and the record on a CONFLICT). */
vigil_commit_result vigil_store_check(vigil_store *s, const vigil_commit *c,
                                      int64_t *new_version, char **cur_state)
{
    if (cur_state)
        *cur_state = NULL;
    if (!c || !c->key || !*c->key) {
        vigil_log(VIGIL_LOG_ERROR, "store check: no key");
        return VIGIL_COMMIT_ERROR;
    }
    struct store_batch *b = batch_of(s);
    if (!b || b->n > 0 || b->done_n > 0 || !vigil_redis_ensure(s->r))
        return VIGIL_COMMIT_ERROR; /* never between _send and _recv */
    if (b->cap == 0) {
        b->p = calloc(16, sizeof *b->p);
        if (!b->p)
            return VIGIL_COMMIT_ERROR;
        b->cap = 16;
    }
    pend *p = &b->p[0];
    if (pend_init(s, p, c) != 0) {
        pend_free(p);
        return VIGIL_COMMIT_ERROR;
    }
    p->dry = true;
    p->types = true;
    b->n = 1;
    b->epoch = vigil_redis_epoch(s->r);
    if (round1_send(s, p) != 0)
        p->send_failed = true;
    if (batch_round1(s, b))
        (void)round2(s, b);
    vigil_commit_result res = p->res;
    if ((res == VIGIL_COMMIT_OK || res == VIGIL_COMMIT_CONFLICT) && new_version)
        *new_version = p->version;
    if (cur_state) {
        *cur_state = p->cur;
        p->cur = NULL;
    }
    pend_free(p);
    b->n = 0;
    b->n_written = 0;
    return res;
}
