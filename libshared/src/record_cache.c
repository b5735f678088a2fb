/* record_cache.c - see record_cache.h. A chained hash table of the keys,
 * with the entries on a least-recently-used list: a lookup costs one hash
 * and one text comparison whatever the number of keys, and a full cache
 * evicts the key used longest ago (a round-robin over a few slots missed
 * on every input as soon as a replica handled more keys than slots). */
#include "vigil/record_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/metrics.h"
#include "vigil/str.h"

typedef struct entry {
    struct entry *next;              /* bucket chain */
    struct entry *newer, *older;     /* LRU list */
    char *key;
    char *json;
    void *rec;
    size_t bytes; /* what the entry holds, for the memory bound */
} entry;

struct vigil_record_cache {
    vigil_record_ops ops;
    pthread_mutex_t lock;
    entry **buckets;
    size_t nbuckets, count, max;
    size_t bytes, max_bytes;
    entry *newest, *oldest;
};

vigil_record_cache *vigil_record_cache_new(const vigil_record_ops *ops, int slots)
{
    return vigil_record_cache_new_bounded(ops, slots, 0);
}

vigil_record_cache *vigil_record_cache_new_bounded(const vigil_record_ops *ops, int slots,
                                                   size_t max_bytes)
{
    vigil_record_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max = slots > 0 ? (size_t)slots : VIGIL_RECORD_CACHE_DEFAULT;
    c->max_bytes = max_bytes ? max_bytes : VIGIL_RECORD_CACHE_BYTES;
    c->nbuckets = 16;
    while (c->nbuckets < 2 * c->max && c->nbuckets < (1u << 20))
        c->nbuckets <<= 1;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    c->ops = *ops;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

vigil_record_cache *vigil_record_cache_shared(vigil_record_cache *_Atomic *slot,
                                              const vigil_record_ops *ops, int slots,
                                              size_t max_bytes)
{
    vigil_record_cache *c = atomic_load_explicit(slot, memory_order_acquire);
    if (c)
        return c;
    vigil_record_cache *made = vigil_record_cache_new_bounded(ops, slots, max_bytes);
    if (!made)
        return NULL;
    if (atomic_compare_exchange_strong(slot, &c, made))
        return made;
    vigil_record_cache_free(made); /* another thread was first: c is its cache */
    return c;
}

static void entry_free(const vigil_record_cache *c, entry *e)
{
    free(e->key);
    free(e->json);
    if (e->rec)
        c->ops.free(e->rec);
    free(e);
}

static entry **bucket_of(vigil_record_cache *c, const char *key)
{
    size_t b = (size_t)(vigil_hash_mem(key, strlen(key)) & (c->nbuckets - 1));
    entry **pp = &c->buckets[b];
    while (*pp && strcmp((*pp)->key, key) != 0)
        pp = &(*pp)->next;
    return pp;
}

static void lru_unlink(vigil_record_cache *c, entry *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void lru_push(vigil_record_cache *c, entry *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest)
        c->newest->newer = e;
    c->newest = e;
    if (!c->oldest)
        c->oldest = e;
}

/* Takes the entry *pp out of the table and the list; the caller frees it. */
static entry *unlink_at(vigil_record_cache *c, entry **pp)
{
    entry *e = *pp;
    *pp = e->next;
    lru_unlink(c, e);
    c->count--;
    c->bytes -= e->bytes;
    return e;
}

void vigil_record_cache_free(vigil_record_cache *c)
{
    if (!c)
        return;
    entry *e = c->newest;
    while (e) {
        entry *o = e->older;
        entry_free(c, e);
        e = o;
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void *vigil_record_cache_get(vigil_record_cache *c, const char *key, const char *json)
{
    if (!c || !key || !json || !json[0])
        return NULL;
    void *copy = NULL;
    pthread_mutex_lock(&c->lock);
    entry *e = *bucket_of(c, key);
    if (e && strcmp(e->json, json) == 0) {
        copy = c->ops.clone(e->rec);
        lru_unlink(c, e);
        lru_push(c, e);
    }
    pthread_mutex_unlock(&c->lock);
    return copy;
}

void *vigil_record_cache_take(vigil_record_cache *c, const char *key, const char *json)
{
    if (!c || !key || !json || !json[0])
        return NULL;
    entry *gone = NULL;
    void *rec = NULL;
    pthread_mutex_lock(&c->lock);
    entry **pp = bucket_of(c, key);
    if (*pp) {
        /* a hit leaves with its record; a stale entry is of no more use */
        gone = unlink_at(c, pp);
        if (strcmp(gone->json, json) == 0) {
            rec = gone->rec;
            gone->rec = NULL;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (gone)
        entry_free(c, gone);
    vigil_counter_add("vigil_record_cache_lookups_total",
                      "Decisions that found the decoded record they start from in memory "
                      "(result=\"hit\") or decoded its stored text again (result=\"miss\")",
                      rec ? "result=\"hit\"" : "result=\"miss\"", 1);
    return rec;
}

int vigil_record_cache_put(vigil_record_cache *c, const char *key, char *json, void *rec)
{
    return vigil_record_cache_put_sized(c, key, json, rec, 0);
}

int vigil_record_cache_put_sized(vigil_record_cache *c, const char *key, char *json, void *rec,
                                 size_t rec_bytes)
{
    if (!c || !key || !json || !rec)
        return -1;
    entry *e = calloc(1, sizeof *e);
    char *k = strdup(key);
    if (!e || !k) {
        free(e);
        free(k);
        return -1;
    }
    e->key = k;
    e->json = json;
    e->rec = rec;
    e->bytes = sizeof *e + strlen(key) + strlen(json) + rec_bytes;
    if (e->bytes > c->max_bytes) { /* would evict everything else, then itself */
        free(k);
        free(e);
        return -1;
    }
    entry *gone = NULL; /* the replaced and evicted entries, chained by next */
    pthread_mutex_lock(&c->lock);
    entry **pp = bucket_of(c, key);
    if (*pp) {
        entry *old = unlink_at(c, pp);
        old->next = gone;
        gone = old;
    }
    while (c->oldest && (c->count >= c->max || c->bytes + e->bytes > c->max_bytes)) {
        entry *lru = unlink_at(c, bucket_of(c, c->oldest->key));
        lru->next = gone;
        gone = lru;
    }
    pp = bucket_of(c, key); /* the chain may have changed */
    e->next = *pp;
    *pp = e;
    lru_push(c, e);
    c->count++;
    c->bytes += e->bytes;
    pthread_mutex_unlock(&c->lock);
    while (gone) {
        entry *n = gone->next;
        entry_free(c, gone);
        gone = n;
    }
    return 0;
}
