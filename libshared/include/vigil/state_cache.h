/* state_cache.h - a replica's cache of state records (key -> version, JSON).
 *
 * It lets the steady state cost one Redis round trip per input: the runtime
 * decides on the cached record and commits with its version; a stale entry
 * only costs a CONFLICT, which returns the current record. The cache is
 * never the source of truth. Thread-safe; bounded (when full it is
 * cleared, which is always correct, merely slower for a moment). */
#ifndef VIGIL_STATE_CACHE_H
#define VIGIL_STATE_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vigil_state_cache vigil_state_cache;

vigil_state_cache *vigil_state_cache_new(size_t max_entries);
void vigil_state_cache_free(vigil_state_cache *c);

/* On a hit, sets *version and *state (a malloc'd copy, NULL when the record
 * does not exist yet) and returns true. */
bool vigil_state_cache_get(vigil_state_cache *c, const char *key, int64_t *version, char **state);
/* As vigil_state_cache_get, but the text itself moves to the caller (no
 * copy): until the entry is put again, get and take miss it (the record
 * is then loaded from Redis, which is always correct). For an input that
 * puts the record back when it is done with it: the text it committed
 * (vigil_state_cache_put_owned), or the one it took when nothing changed
 * (vigil_state_cache_give_back); on any other outcome the entry is
 * dropped or put again by whoever loads the record next. */
bool vigil_state_cache_take(vigil_state_cache *c, const char *key, int64_t *version, char **state);
/* Returns a text taken and left unchanged: it goes back only if its entry
 * is still out (nobody put or dropped it meanwhile, which would be newer);
 * otherwise it is freed. */
void vigil_state_cache_give_back(vigil_state_cache *c, const char *key, int64_t version,
                                 char *state);
/* Stores a copy (state may be NULL: the record is known not to exist). */
void vigil_state_cache_put(vigil_state_cache *c, const char *key, int64_t version, const char *state);
/* As vigil_state_cache_put, taking state itself (malloc'd; the cache owns
 * it from now on, and frees it if the entry cannot be made): saves a copy
 * of the record on every commit. */
void vigil_state_cache_put_owned(vigil_state_cache *c, const char *key, int64_t version,
                                 char *state);
void vigil_state_cache_drop(vigil_state_cache *c, const char *key);
size_t vigil_state_cache_size(vigil_state_cache *c);

#endif
