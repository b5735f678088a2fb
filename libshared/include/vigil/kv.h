/* kv.h - small typed reads of a service's own auxiliary Redis keys (the
 * records it writes through vigil_fx_key_set / vigil_fx_stream_add), for
 * route() lookups and for a service's reader library. Values are copied
 * out, so callers need no hiredis types. */
#ifndef VIGIL_KV_H
#define VIGIL_KV_H
#include <stddef.h>
#include <stdint.h>
#include "redis.h"

/* GET key. Returns 1 with *out (malloc'd, NUL-terminated; caller frees)
 * when the key holds a string, 0 when it does not exist, -1 on a
 * connection error or another type (WRONGTYPE). */
int vigil_kv_get(vigil_redis *r, const char *key, char **out, size_t *len);

/* Calls fn for the entries of stream key (field "m"), newest first when
 * newest_first, at most count (<= 0: 100). fn returns 0 to go on, non-zero
 * to stop. Returns the number of entries given to fn, or -1 on error. A
 * missing stream gives 0. */
typedef int (*vigil_kv_entry_fn)(void *ctx, const char *id, const char *value, size_t len);
int vigil_kv_stream_range(vigil_redis *r, const char *key, int newest_first, int count,
                          vigil_kv_entry_fn fn, void *ctx);

#endif
