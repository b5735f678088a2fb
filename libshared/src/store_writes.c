/* store_writes.c - the writes of a commit's transaction (store_commit.c
 * runs the rounds): the record and its parts, the processed id, timers,
 * auxiliary keys, and the outbox entries, the retained snapshot payloads
 * among them, assembled here from the snapshot hash read in the first
 * round plus the commit's own changes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_commit.h"
#include "vigil/jtext.h"
#include "vigil/limits.h"
#include "vigil/str.h"

/* see store_trims_length */
#define STREAM_LENGTH_TRIM_EVERY 16

void store_put(w2 *w, int argc, const char **argv, const size_t *lens)
{
    if (w->rc != 0)
        return;
    if (vigil_redis_append(w->s->r, argc, argv, lens) != 0)
        w->rc = -1;
    else
        w->queued++;
}

/* A field name as cjson.encode writes it (the script's snapshot payloads
 * did; kept so payloads stay byte for byte what they were): control
 * characters, '"', '\\', '/' and DEL escaped, other bytes as they are. */
static void cjson_str(vigil_jtext *b, const char *v, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    vigil_jtext_ch(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        const char *e = NULL;
        switch (ch) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '/': e = "\\/"; break;
        case '\b': e = "\\b"; break;
        case '\t': e = "\\t"; break;
        case '\n': e = "\\n"; break;
        case '\f': e = "\\f"; break;
        case '\r': e = "\\r"; break;
        default: break;
        }
        if (e) {
            vigil_jtext_lit(b, e);
        } else if (ch < 0x20 || ch == 0x7f) {
            char u[7] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15], 0 };
            vigil_jtext_lit(b, u);
        } else {
            vigil_jtext_ch(b, (char)ch);
        }
    }
    vigil_jtext_ch(b, '"');
}

/* A snapshot hash's fields while a commit changes them. */
typedef struct fieldv {
    const char *f, *v;
    size_t fl, vl;
} fieldv;

typedef struct snapmap {
    fieldv *e;
    size_t n, cap;
} snapmap;

static int map_from(snapmap *m, const redisReply *hm)
{
    m->n = 0;
    m->cap = hm->elements / 2 + 4;
    m->e = malloc(m->cap * sizeof *m->e);
    if (!m->e)
        return -1;
    for (size_t i = 0; i + 1 < hm->elements; i += 2) {
        const redisReply *f = hm->element[i], *v = hm->element[i + 1];
        if (!rep_str(f) || !rep_str(v))
            continue;
        m->e[m->n++] = (fieldv){ f->str, v->str, f->len, v->len };
    }
    return 0;
}

static int map_apply(snapmap *m, const vigil_snapshot_op *op)
{
    size_t fl = strlen(op->field);
    size_t i = 0;
    while (i < m->n && !(m->e[i].fl == fl && memcmp(m->e[i].f, op->field, fl) == 0))
        i++;
    if (!op->value_json) {
        if (i < m->n)
            m->e[i] = m->e[--m->n];
        return 0;
    }
    if (i == m->n) {
        if (m->n == m->cap) {
            fieldv *e = realloc(m->e, 2 * m->cap * sizeof *e);
            if (!e)
                return -1;
            m->e = e;
            m->cap *= 2;
        }
        m->n++;
    }
    m->e[i] = (fieldv){ op->field, op->value_json, fl, strlen(op->value_json) };
    return 0;
}

/* A commit that follows another of its record (vigil_commit.follows) read
 * its snapshot hashes before any write of the transaction: the changes
 * the transaction's earlier commits make to the same hash go in first, in
 * order, so the snapshot it publishes shows them as the hash will hold
 * them. (Any other commit of a transaction has hashes of its own.) */
static int map_earlier(const w2 *w, const pend *p, const char *key, snapmap *m)
{
    for (const pend *q = w->batch; q && q < p; q++) {
        if (!q->c || q->res != VIGIL_COMMIT_OK || !q->c->fx)
            continue;
        for (size_t k = 0; k < q->ns; k++)
            if (strcmp(q->snap_keys[k], key) == 0 && map_apply(m, &q->c->fx->snaps[k]) != 0)
                return -1;
    }
    return 0;
}

/* Byte order, a prefix first (Lua's string order in the C locale). */
static int field_cmp(const void *a, const void *b)
{
    const fieldv *x = a, *y = b;
    size_t n = x->fl < y->fl ? x->fl : y->fl;
    int c = memcmp(x->f, y->f, n);
    return c ? c : (x->fl > y->fl) - (x->fl < y->fl);
}

/* The outbox entry of a snapshot: "1" topic "\n" payload, the payload
 * being the envelope with map_name set to the hash (values spliced as
 * they are, fields sorted) and "ts" the commit time. */
static char *snapshot_entry(snapmap *m, const vigil_snapshot_op *op, int64_t now, size_t *len)
{
    char *env = store_envelope(op->envelope_json, op->map_name);
    if (!env)
        return NULL;
    qsort(m->e, m->n, sizeof *m->e, field_cmp);
    vigil_jtext b = { 0 };
    size_t est = strlen(op->topic) + strlen(env) + strlen(op->map_name) + 48;
    for (size_t i = 0; i < m->n; i++)
        est += m->e[i].fl + m->e[i].vl + 8;
    vigil_jtext_reserve(&b, est);
    vigil_jtext_ch(&b, '1');
    vigil_jtext_lit(&b, op->topic);
    vigil_jtext_ch(&b, '\n');
    size_t el = strlen(env);
    if (strcmp(env, "{}") == 0) {
        vigil_jtext_ch(&b, '{');
    } else {
        vigil_jtext_put(&b, env, el - 1);
        vigil_jtext_ch(&b, ',');
    }
    free(env);
    vigil_jtext_str(&b, op->map_name);
    vigil_jtext_lit(&b, ":{");
    for (size_t i = 0; i < m->n; i++) {
        if (i)
            vigil_jtext_ch(&b, ',');
        cjson_str(&b, m->e[i].f, m->e[i].fl);
        vigil_jtext_ch(&b, ':');
        vigil_jtext_put(&b, m->e[i].v, m->e[i].vl);
    }
    vigil_jtext_lit(&b, "},\"ts\":");
    vigil_jtext_i64(&b, now);
    vigil_jtext_ch(&b, '}');
    *len = b.n;
    return vigil_jtext_take(&b);
}

static int entry_add(entries *e, const char *v, size_t len, bool owned)
{
    if (!v)
        return -1;
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        const char **nv = realloc(e->v, (cap + 2) * sizeof *nv);
        if (nv)
            e->v = nv;
        size_t *nl = realloc(e->len, (cap + 2) * sizeof *nl);
        if (nl)
            e->len = nl;
        char **no = realloc(e->owned, cap * sizeof *no);
        if (no)
            e->owned = no;
        if (!nv || !nl || !no)
            return -1;
        e->cap = cap;
    }
    e->v[2 + e->n] = v; /* [0], [1]: RPUSH and the key */
    e->len[2 + e->n] = len;
    e->n++;
    if (owned)
        e->owned[e->n_owned++] = (char *)v;
    return 0;
}

/* Frees the owned strings and empties e (its arrays are kept). */
static void entries_clear(entries *e)
{
    for (size_t i = 0; i < e->n_owned; i++)
        free(e->owned[i]);
    e->n = e->n_owned = 0;
}

static void entries_free(entries *e)
{
    entries_clear(e);
    free(e->v);
    free(e->len);
    free(e->owned);
    memset(e, 0, sizeof *e);
}

/* Sends e as one command (cmd key v...), then empties it. */
static void entries_send(w2 *w, entries *e, const char *cmd, const char *key)
{
    if (e->n > 0) {
        e->v[0] = cmd;
        e->len[0] = strlen(cmd);
        e->v[1] = key;
        e->len[1] = strlen(key);
        store_put(w, (int)e->n + 2, e->v, e->len);
    }
    entries_clear(e);
}

/* Keeps block until the gathered timer writes are sent; freed at once
 * (and w failed) when it cannot be kept. */
static void own_block(w2 *w, void *block)
{
    if (w->n_blocks == w->cap_blocks) {
        size_t cap = w->cap_blocks ? 2 * w->cap_blocks : 16;
        void **nb = realloc(w->blocks, cap * sizeof *nb);
        if (!nb) {
            free(block);
            w->rc = -1;
            return;
        }
        w->blocks = nb;
        w->cap_blocks = cap;
    }
    w->blocks[w->n_blocks++] = block;
}

static void entries_compact(entries *e);

/* Sends the gathered timer changes: removals (lease completions and
 * cancels) before additions, as within one commit a completed lease comes
 * before the timer set again; then the claimed deadlines dropped. */
static void flush_timers(w2 *w)
{
    entries_compact(&w->zrem);
    entries_compact(&w->zadd);
    entries_compact(&w->hdel);
    entries_send(w, &w->zrem, "ZREM", w->s->timers_key);
    entries_send(w, &w->zadd, "ZADD", w->s->timers_key);
    entries_send(w, &w->hdel, "HDEL", w->s->dues_key);
    for (size_t i = 0; i < w->n_blocks; i++)
        free(w->blocks[i]);
    w->n_blocks = 0;
    w->n_members = 0;
}

/* A gathered argument dropped by entries_drop: its length, which no
 * argument has; flush_timers leaves it out. */
#define DROPPED_LEN SIZE_MAX

/* Drops from e what was gathered for member m: the member itself, and
 * with pairs (ZADD's score and member) its score too. Only marked here
 * (entries_compact leaves them out before sending): a busy room's commits
 * each dropped their members from the transaction's lists, which moved
 * every argument after them, and compared each by its text (about 2,800
 * instructions per input in dormancy-monitor). The lengths gathered with
 * the arguments come first; a dropped one's matches no member. */
static void entries_drop(entries *e, const char *m, bool pairs)
{
    size_t step = pairs ? 2 : 1, at = pairs ? 1 : 0, ml = strlen(m);
    const char **v = e->v + 2;
    size_t *len = e->len + 2;
    for (size_t i = 0; i + step <= e->n; i += step) {
        if (len[i + at] != ml || memcmp(v[i + at], m, ml) != 0)
            continue;
        for (size_t k = 0; k < step; k++)
            len[i + k] = DROPPED_LEN;
    }
}

/* Leaves out the arguments entries_drop marked, in order. */
static void entries_compact(entries *e)
{
    const char **v = e->v + 2;
    size_t *len = e->len + 2, kept = 0;
    for (size_t i = 0; i < e->n; i++) {
        if (len[i] == DROPPED_LEN)
            continue;
        v[kept] = v[i];
        len[kept++] = len[i];
    }
    e->n = kept;
}

/* A commit's timer members (n of them, hashed, and their names): what an
 * earlier commit of the transaction gathered for one of them is dropped,
 * since each change sets the member whole (a score, or gone) and the
 * later commit's change is the one the member keeps, as if they were
 * applied one after another; a busy room's commits, each moving the same
 * timers, cost one ZADD and one ZREM for the transaction instead of a
 * pair each. (A hash match of another member drops nothing.) Then they
 * are noted. */
static void claim_members(w2 *w, const uint64_t *h, const char *const *names, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        bool seen = false;
        for (size_t k = 0; k < w->n_members && !seen; k++)
            seen = w->members[k] == h[j];
        if (!seen)
            continue;
        entries_drop(&w->zrem, names[j], false);
        entries_drop(&w->zadd, names[j], true);
        entries_drop(&w->hdel, names[j], false);
    }
    if (w->n_members + n > w->cap_members) {
        size_t cap = w->cap_members ? 2 * w->cap_members : 64;
        while (cap < w->n_members + n)
            cap *= 2;
        uint64_t *nm = realloc(w->members, cap * sizeof *nm);
        if (!nm) {
            w->rc = -1;
            return;
        }
        w->members = nm;
        w->cap_members = cap;
    }
    for (size_t j = 0; j < n; j++)
        w->members[w->n_members++] = h[j];
}

void store_write_flush(w2 *w)
{
    flush_timers(w);
    entries_send(w, &w->out, "RPUSH", w->s->outbox_key);
}

void store_write_done(w2 *w)
{
    entries_free(&w->zrem);
    entries_free(&w->zadd);
    entries_free(&w->hdel);
    entries_free(&w->out);
    for (size_t i = 0; i < w->n_blocks; i++)
        free(w->blocks[i]);
    free(w->blocks);
    free(w->members);
    w->blocks = NULL;
    w->members = NULL;
    w->n_blocks = w->cap_blocks = w->n_members = w->cap_members = 0;
}

/* Gathers one string argument (not owned): w fails when it cannot. */
static void gather(w2 *w, entries *e, const char *v)
{
    if (w->rc == 0 && entry_add(e, v, strlen(v), false) != 0)
        w->rc = -1;
}

static char *out_entry(const vigil_outmsg *m, size_t *len)
{
    size_t tl = strlen(m->topic), pl = strlen(m->payload);
    char *e = malloc(tl + pl + 3);
    if (!e)
        return NULL;
    e[0] = m->retain ? '1' : '0';
    memcpy(e + 1, m->topic, tl);
    e[1 + tl] = '\n';
    memcpy(e + 2 + tl, m->payload, pl + 1);
    *len = tl + pl + 2;
    return e;
}

/* The lease completion (what the commit script called complete_lease),
 * gathered; its member already claimed. */
static void gather_lease(w2 *w, const pend *p)
{
    if (!p->lease_hit)
        return;
    gather(w, &w->zrem, p->c->leased_timer);
    gather(w, &w->hdel, p->c->leased_timer);
}

void store_write_lease(w2 *w, const pend *p)
{
    if (!p->lease_hit)
        return;
    const char *m = p->c->leased_timer;
    uint64_t h = vigil_hash_mem(m, strlen(m));
    claim_members(w, &h, &m, 1);
    gather_lease(w, p);
}

/* Is the timer or part name j named again later in the same commit? (A
 * name named twice keeps its last change, as the ops applied one after
 * another would leave it.) */
static bool named_later(const char *const *names, size_t n, size_t j)
{
    for (size_t k = j + 1; k < n; k++)
        if (strcmp(names[k], names[j]) == 0)
            return true;
    return false;
}

/* One block for the pointer arrays and texts a write needs (one malloc,
 * not one per array): `need` bytes handed out in order, each aligned for
 * a pointer. */
typedef struct block {
    char *base;
    size_t used, cap;
} block;

static void *take(block *b, size_t n)
{
    n = (n + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    if (b->used + n > b->cap)
        return NULL; /* cannot happen: sized up front */
    void *p = b->base + b->used;
    b->used += n;
    return p;
}

static size_t rounded(size_t n)
{
    return (n + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
}

/* The record's hash in two commands at most: one HDEL of the parts it
 * drops (every stored part on a parts reset, the parts deleted), then one
 * HSET of version, head and the parts set. */
static void write_record(w2 *w, pend *p, const char *version)
{
    const vigil_effects *fx = p->c->fx;
    size_t np = fx->n_parts;
    const redisReply *stored = fx->parts_reset ? p->part_rep : NULL;
    size_t ns = stored ? stored->elements : 0;
    size_t need = rounded((np + 1) * sizeof(char *)) * 2 + rounded((6 + 2 * np) * sizeof(char *)) +
                  rounded((2 + np + ns) * sizeof(char *)) + rounded((2 + np + ns) * sizeof(size_t));
    for (size_t j = 0; j < np; j++)
        need += rounded(strlen(fx->parts[j].name) + 3);
    block b = { malloc(need), 0, need };
    if (!b.base) {
        w->rc = -1;
        return;
    }
    const char **names = take(&b, (np + 1) * sizeof *names);
    char **field = take(&b, (np + 1) * sizeof *field);
    const char **hset = take(&b, (6 + 2 * np) * sizeof *hset);
    const char **hdel = take(&b, (2 + np + ns) * sizeof *hdel);
    size_t *hdl = take(&b, (2 + np + ns) * sizeof *hdl);
    for (size_t j = 0; j < np; j++) {
        names[j] = fx->parts[j].name;
        size_t fl = strlen(names[j]) + 3;
        field[j] = take(&b, fl);
        vigil_concat(field[j], fl, "p:", names[j], (char *)NULL);
    }
    int nset = 0, ndel = 0;
    hset[nset++] = "HSET";
    hset[nset++] = p->skey;
    hset[nset++] = "v";
    hset[nset++] = version;
    hset[nset++] = "s";
    hset[nset++] = fx->new_state;
    hdel[ndel] = "HDEL";
    hdl[ndel++] = 4;
    hdel[ndel] = p->skey;
    hdl[ndel++] = strlen(p->skey);
    for (size_t k = 0; k < ns; k++) {
        const redisReply *f = stored->element[k];
        if (!rep_str(f) || f->len < 2 || memcmp(f->str, "p:", 2) != 0)
            continue;
        bool set_again = false;
        for (size_t j = 0; j < np && !set_again; j++)
            set_again = fx->parts[j].text && !named_later(names, np, j) &&
                        strlen(field[j]) == f->len && memcmp(field[j], f->str, f->len) == 0;
        if (!set_again) {
            hdel[ndel] = f->str;
            hdl[ndel++] = f->len;
        }
    }
    for (size_t j = 0; j < np; j++) {
        if (named_later(names, np, j))
            continue;
        if (fx->parts[j].text) {
            hset[nset++] = field[j];
            hset[nset++] = fx->parts[j].text;
        } else {
            hdel[ndel] = field[j];
            hdl[ndel++] = strlen(field[j]);
        }
    }
    if (ndel > 2)
        store_put(w, ndel, hdel, hdl);
    store_put(w, nset, hset, NULL);
    free(b.base);
}

/* The commit's lease completion and timer changes, gathered into w's
 * ZREM, ZADD and HDEL (flush_timers): their members are claimed first. */
static void write_timers(w2 *w, const pend *p)
{
    const vigil_commit *c = p->c;
    const vigil_effects *fx = c->fx;
    size_t n = fx ? fx->n_timers : 0;
    if (n == 0) {
        store_write_lease(w, p);
        return;
    }
    size_t kl = strlen(c->key);
    size_t need = rounded(n * sizeof(char *)) * 2 + rounded(n * (VIGIL_I64_TEXT_MAX + 1)) +
                  rounded((n + 1) * sizeof(uint64_t)) + rounded((n + 1) * sizeof(char *));
    for (size_t j = 0; j < n; j++)
        need += rounded(kl + strlen(fx->timers[j].name) + 2);
    block b = { malloc(need), 0, need };
    if (!b.base) {
        w->rc = -1;
        return;
    }
    const char **names = take(&b, n * sizeof *names);
    char **member = take(&b, n * sizeof *member);
    char(*due)[VIGIL_I64_TEXT_MAX + 1] = take(&b, n * sizeof *due);
    uint64_t *h = take(&b, (n + 1) * sizeof *h);
    const char **hn = take(&b, (n + 1) * sizeof *hn); /* the names hashed in h */
    size_t nh = 0;
    if (p->lease_hit) {
        hn[nh] = c->leased_timer;
        h[nh++] = vigil_hash_mem(c->leased_timer, strlen(c->leased_timer));
    }
    for (size_t j = 0; j < n; j++) {
        names[j] = fx->timers[j].name;
        size_t ml = kl + strlen(names[j]) + 2;
        member[j] = take(&b, ml);
        vigil_concat(member[j], ml, c->key, "|", names[j], (char *)NULL);
        hn[nh] = member[j];
        h[nh++] = vigil_hash_mem(member[j], ml - 1);
    }
    claim_members(w, h, hn, nh);
    gather_lease(w, p);
    for (size_t j = 0; j < n; j++) {
        if (named_later(names, n, j))
            continue;
        if (fx->timers[j].due_ms == VIGIL_TIMER_CANCEL) {
            gather(w, &w->zrem, member[j]);
        } else {
            vigil_i64_text(due[j], fx->timers[j].due_ms);
            gather(w, &w->zadd, due[j]);
            gather(w, &w->zadd, member[j]);
        }
        gather(w, &w->hdel, member[j]);
    }
    own_block(w, b.base);
}

/* Does this commit set its ids key's expiry (VIGIL_DEDUPE_TTL_S)? When
 * this store has not set it within ttl_refresh_ms, as its table of recent
 * settings says (a miss, a collision, a clock gone back: set it). Set to
 * the TTL plus that period, every id outlives the TTL; and Redis runs one
 * PEXPIRE per key and hour instead of one per commit. */
static bool store_ttl_due(const vigil_store *s, const char *ikey, int64_t now)
{
    if (s->ttl_refresh_ms <= 0)
        return false;
    if (!s->ttl_seen)
        return true;
    uint64_t h = vigil_hash_mem(ikey, strlen(ikey));
    const struct store_ttl_seen *e = &s->ttl_seen[h % DEDUPE_TTL_SLOTS];
    return e->h != h || now < e->at || now - e->at >= s->ttl_refresh_ms;
}

void store_note_ttl(vigil_store *s, const pend *p)
{
    if (!p->ttl_sent || !s->ttl_seen)
        return;
    uint64_t h = vigil_hash_mem(p->ikey, strlen(p->ikey));
    s->ttl_seen[h % DEDUPE_TTL_SLOTS] = (struct store_ttl_seen){ h, p->c->now_ms };
}

/* Does this commit trim its key's processed ids to the newest
 * dedupe_keep? On about one commit in dedupe_keep / 256 (at most 32, at
 * least 1), chosen by the input id's hash, so a key holds at most a few
 * dozen ids over dedupe_keep between trims, and Redis runs the trim (and
 * the service reads its two replies) on few commits. */
static bool store_trims_ids(const vigil_store *s, const char *input_id)
{
    int every = s->dedupe_keep / 256;
    every = every < 1 ? 1 : every > 32 ? 32 : every;
    return vigil_hash64(input_id, strlen(input_id)) % (uint64_t)every == 0;
}

/* Does this append to a stream with both bounds (an age and a length)
 * also trim it to its length? The age bound is exact and goes with every
 * append (XADD's MINID); the length bound is approximate anyway (Redis
 * trims whole nodes of 100 entries), so its XTRIM MAXLEN ~ goes with one
 * append in STREAM_LENGTH_TRIM_EVERY and Redis runs one command per append
 * instead of two. Which one: the commit's that takes its record to a
 * multiple of that version, so a stream appended with each commit of one
 * record (a room's log) is trimmed every 16th append exactly, never more
 * than 15 entries late. A commit that writes no record trims by its input
 * id's hash (its high bits: the low ones pick the processed ids' trims),
 * and without an id, always. */
static bool store_trims_length(const pend *p)
{
    const vigil_commit *c = p->c;
    if (c->fx && c->fx->new_state)
        return p->version % STREAM_LENGTH_TRIM_EVERY == 0;
    if (!c->input_id || !*c->input_id)
        return true;
    return (vigil_hash64(c->input_id, strlen(c->input_id)) >> 40) % STREAM_LENGTH_TRIM_EVERY == 0;
}

/* The commit of the transaction that follows p (vigil_commit.follows) and
 * is applied with it, or NULL. */
static const pend *follower_of(const w2 *w, const pend *p)
{
    int i = (int)(p - w->batch);
    for (int k = i + 1; k < w->n_batch; k++) {
        const pend *q = &w->batch[k];
        if (q->c && q->follows == i && q->res == VIGIL_COMMIT_OK)
            return q;
    }
    return NULL;
}

/* Does the commit f that follows p in the same transaction set or delete
 * field `field` of snapshot hash `key` again? */
static bool snap_set_again(const pend *f, const char *key, const char *field)
{
    for (size_t k = 0; f && k < f->ns; k++)
        if (strcmp(f->snap_keys[k], key) == 0 && strcmp(f->c->fx->snaps[k].field, field) == 0)
            return true;
    return false;
}

/* Queues an OK commit's writes: the record, its processed id, auxiliary
 * keys, snapshots; gathers its lease completion and timers, and its outbox
 * entries (flushed queue items, outputs, snapshot payloads, in that
 * order) for the transaction's one RPUSH (store_write_flush). */
void store_write_commit(w2 *w, pend *p)
{
    vigil_store *s = w->s;
    const vigil_commit *c = p->c;
    const vigil_effects *fx = c->fx;
    size_t ns = fx ? fx->n_snaps : 0, na = fx ? fx->n_aux : 0;
    char num[4][VIGIL_I64_TEXT_MAX + 1];
    vigil_i64_text(num[0], c->now_ms);
    /* What the commit following p in this transaction writes again is
     * left out of p's writes: EXEC applies both at once, so nobody ever
     * sees p's value, and the keys end as they did with both written (a
     * busy room's record, about 2 KB, and its persona's entry: Redis's
     * time and the append-only file's bytes). Only a record without parts
     * (the follower's HSET sets its whole head, v and s). */
    const pend *next = follower_of(w, p);
    if (fx && fx->new_state) {
        p->version++;
        vigil_i64_text(num[1], p->version);
        bool again = next && next->c->fx && next->c->fx->new_state && fx->n_parts == 0 &&
                     !fx->parts_reset;
        if (!again)
            write_record(w, p, num[1]);
    }
    if (c->input_id && *c->input_id) {
        const char *z[] = { "ZADD", p->ikey, num[0], c->input_id };
        store_put(w, 4, z, NULL);
        p->ttl_sent = store_ttl_due(s, p->ikey, c->now_ms); /* quiet rooms lose their ids */
        if (p->ttl_sent) {
            const char *e[] = { "PEXPIRE", p->ikey, s->dedupe_ttl };
            store_put(w, 3, e, NULL);
        }
        if (store_trims_ids(s, c->input_id)) {
            vigil_i64_text(num[2], -(int64_t)s->dedupe_keep - 1);
            const char *t[] = { "ZREMRANGEBYRANK", p->ikey, "0", num[2] };
            store_put(w, 4, t, NULL);
        }
    }
    write_timers(w, p);
    entries *e = &w->out;
    for (size_t j = 0; j < na && w->rc == 0; j++) {
        const vigil_aux_op *op = &fx->aux[j];
        const char *key = p->aux_keys[j];
        const char *val = op->value ? op->value : "";
        switch (op->kind) {
        case VIGIL_AUX_STREAM_ADD:
        case VIGIL_AUX_JOB_ADD: {
            bool job = op->kind == VIGIL_AUX_JOB_ADD;
            const char *xl[] = { "XLEN", key };
            if (job) {
                p->xlen_at[j] = w->queued - w->base;
                store_put(w, 2, xl, NULL);
            }
            vigil_i64_text(num[1], op->n1);
            if (op->n2 > 0 && c->now_ms - op->n2 > 0) {
                vigil_i64_text(num[2], c->now_ms - op->n2);
                const char *x[] = { "XADD", key, "MINID", num[2], "*", "m", val };
                store_put(w, 7, x, NULL);
                if (op->n1 > 0 && store_trims_length(p)) {
                    const char *t[] = { "XTRIM", key, "MAXLEN", "~", num[1] };
                    store_put(w, 5, t, NULL);
                }
            } else if (op->n1 > 0) {
                const char *x[] = { "XADD", key, "MAXLEN", "~", num[1], "*", "m", val };
                store_put(w, 8, x, NULL);
            } else {
                const char *x[] = { "XADD", key, "*", "m", val };
                store_put(w, 5, x, NULL);
            }
            if (job)
                store_put(w, 2, xl, NULL);
            break;
        }
        case VIGIL_AUX_QUEUE_PUSH: {
            const char *a[] = { "RPUSH", key, val };
            store_put(w, 3, a, NULL);
            break;
        }
        case VIGIL_AUX_QUEUE_FLUSH: {
            const redisReply *items = p->queue_rep[j];
            for (size_t k = 0; items && k < items->elements && w->rc == 0; k++)
                if (rep_str(items->element[k]) &&
                    entry_add(e, items->element[k]->str, items->element[k]->len, false) != 0)
                    w->rc = -1;
            const char *a[] = { "DEL", key };
            store_put(w, 2, a, NULL);
            break;
        }
        case VIGIL_AUX_KEY_SET: {
            const char *a[] = { "SET", key, val };
            store_put(w, 3, a, NULL);
            break;
        }
        case VIGIL_AUX_KEY_DELETE: {
            const char *a[] = { "DEL", key };
            store_put(w, 2, a, NULL);
            break;
        }
        case VIGIL_AUX_SET_ADD:
        case VIGIL_AUX_SET_REMOVE: {
            const char *a[] = { op->kind == VIGIL_AUX_SET_ADD ? "SADD" : "SREM", key, val };
            store_put(w, 3, a, NULL);
            break;
        }
        }
    }
    for (size_t j = 0; fx && j < fx->n_out && w->rc == 0; j++) {
        size_t len = 0;
        char *entry = out_entry(&fx->out[j], &len);
        if (entry_add(e, entry, len, true) != 0) {
            free(entry);
            w->rc = -1;
        }
    }
    snapmap *maps = ns ? calloc(ns, sizeof *maps) : NULL;
    if (ns && !maps)
        w->rc = -1;
    for (size_t j = 0; j < ns && w->rc == 0; j++) {
        const vigil_snapshot_op *op = &fx->snaps[j];
        int src = p->snap_src[j];
        const redisReply *hm = store_snap_reply(w->batch, p, j);
        if (src == (int)j && (!hm || map_from(&maps[j], hm) != 0 ||
                              (p->follows >= 0 &&
                               map_earlier(w, p, p->snap_keys[j], &maps[j]) != 0))) {
            w->rc = -1;
            break;
        }
        if (snap_set_again(next, p->snap_keys[j], op->field)) {
            /* the follower's HSET or HDEL of it */
        } else if (op->value_json) {
            const char *a[] = { "HSET", p->snap_keys[j], op->field, op->value_json };
            store_put(w, 4, a, NULL);
        } else {
            const char *a[] = { "HDEL", p->snap_keys[j], op->field };
            store_put(w, 3, a, NULL);
        }
        size_t len = 0;
        char *entry = map_apply(&maps[src], op) == 0
                          ? snapshot_entry(&maps[src], op, c->now_ms, &len)
                          : NULL;
        if (entry_add(e, entry, len, true) != 0) {
            free(entry);
            w->rc = -1;
        }
    }
    for (size_t j = 0; j < ns; j++)
        free(maps[j].e);
    free(maps);
}

/* Job stream adds whose cap trimmed entries: counted and said under the
 * op's label (entries that will never run). */
void store_note_trims(const pend *p, const redisReply *exec)
{
    const vigil_effects *fx = p->c->fx;
    for (size_t j = 0; fx && j < fx->n_aux; j++) {
        int at = p->xlen_at[j];
        if (at < 0 || (size_t)at + 1 >= exec->elements)
            continue;
        const redisReply *before = exec->element[at];
        size_t after_at = (size_t)at + 2 + (fx->aux[j].n2 > 0 && p->c->now_ms - fx->aux[j].n2 > 0);
        if (after_at >= exec->elements)
            continue;
        const redisReply *after = exec->element[after_at];
        if (before->type != REDIS_REPLY_INTEGER || after->type != REDIS_REPLY_INTEGER)
            continue;
        long long gone = before->integer + 1 - after->integer;
        if (gone > 0)
            vigil_stream_trim_note(fx->aux[j].label, p->aux_keys[j], fx->aux[j].n1, gone);
    }
}

