/* record_cache.h - the state records a service decided on last, kept
 * parsed. A commit usually starts from the record the previous commit of
 * the same key wrote (the runtime hands that exact text back), and parsing
 * a large record (a room of hundreds of personas) costs more than the
 * decision. Entries are keyed by key and the exact record text, so a hit is
 * always the record the text holds; a miss just parses as before.
 * Thread-safe (intake and job workers share one cache). Records are the
 * service's own type, handled through a small table of functions. */
#ifndef VIGIL_RECORD_CACHE_H
#define VIGIL_RECORD_CACHE_H
#include <stdatomic.h>
#include <stddef.h>

typedef struct vigil_record_ops {
    void *(*clone)(const void *rec); /* a private deep copy; NULL when out of memory */
    void (*free)(void *rec);
} vigil_record_ops;

typedef struct vigil_record_cache vigil_record_cache;

#define VIGIL_RECORD_CACHE_DEFAULT 256              /* entries when 0 is asked */
#define VIGIL_RECORD_CACHE_BYTES (32u * 1024 * 1024) /* memory bound when 0 is asked */

/* A cache of at most `slots` keys (0: VIGIL_RECORD_CACHE_DEFAULT) holding
 * at most max_bytes (0: VIGIL_RECORD_CACHE_BYTES; texts plus the record
 * sizes vigil_record_cache_put_sized is told), the key used longest ago evicted first; a lookup
 * is a hash, whatever the number of keys. A single record larger than the
 * bound is not kept. NULL when out of memory. */
vigil_record_cache *vigil_record_cache_new_bounded(const vigil_record_ops *ops, int slots,
                                                   size_t max_bytes);
/* vigil_record_cache_new_bounded(ops, slots, 0) */
vigil_record_cache *vigil_record_cache_new(const vigil_record_ops *ops, int slots);
void vigil_record_cache_free(vigil_record_cache *c);
/* The cache *slot holds, made on first use (by the first thread to get
 * there; the others use that one): a service's one process-wide cache
 * without its own once-initialisation. NULL when out of memory (tried
 * again at the next call; every function here takes a NULL cache as one
 * that never hits). */
vigil_record_cache *vigil_record_cache_shared(vigil_record_cache *_Atomic *slot,
                                              const vigil_record_ops *ops, int slots,
                                              size_t max_bytes);

/* A private copy of the record key's text `json` holds, or NULL on a miss
 * (or when the copy cannot be made): then parse it yourself. */
void *vigil_record_cache_get(vigil_record_cache *c, const char *key, const char *json);

/* Like vigil_record_cache_get, but hands over the cached record itself
 * (no copy) and forgets the key: for a caller that will put the record it
 * derives back (the usual decide-then-put). A stale entry of the key is
 * dropped. NULL on a miss. */
void *vigil_record_cache_take(vigil_record_cache *c, const char *key, const char *json);

/* Remembers rec as the record of key whose text is json: 0 and it takes
 * both (json malloc'd; the entry it replaces is freed), or -1 (no cache,
 * out of memory) and the caller still owns both. */
int vigil_record_cache_put(vigil_record_cache *c, const char *key, char *json, void *rec);
/* The same, telling the bytes rec holds (besides its text) for the memory
 * bound: a record too large for the bound is refused (-1). */
int vigil_record_cache_put_sized(vigil_record_cache *c, const char *key, char *json, void *rec,
                                 size_t rec_bytes);

#endif
