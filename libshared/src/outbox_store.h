/* outbox_store.h - private to libshared/src: the Redis side of the outbox
 * publisher (outbox.c): pipelined trim + read, and the atomic move of a
 * head entry to the dead-letter list (deadletter.h). */
#ifndef VIGIL_OUTBOX_STORE_H
#define VIGIL_OUTBOX_STORE_H
#include <stddef.h>
#include "vigil/redis.h"
#include "vigil/store.h"

/* One outbox entry as stored, NUL-terminated: the string of the Redis
 * reply that read it (owner, freed with it: a copy of each output cost a
 * malloc, a copy and a free), or a malloc'd text (owner NULL). Moved by
 * copying the struct and clearing the source; freed only with
 * vigil_outbox_raw_free. */
typedef struct vigil_outbox_raw {
    char *buf;
    size_t len;
    void *owner;
} vigil_outbox_raw;

/* Removes the trim_n oldest entries, then reads up to max entries starting
 * at index offset of what is left, in one round trip (LTRIM and LRANGE
 * pipelined). Returns the number read (0..max), or -1 on a Redis error,
 * after which it is unknown whether the trim happened: the caller must read
 * again from index 0. max 0 only trims. */
int vigil_outbox_store_sync(vigil_store *s, int trim_n, long offset, int max,
                            vigil_outbox_raw *out);
void vigil_outbox_raw_free(vigil_outbox_raw *out, int n);

/* Moves the outbox's head entry to the dead-letter list dl_key if it still
 * equals raw (one script: LINDEX check, LPOP, RPUSH). Returns the list's new
 * length (> 0), 0 if the head is another entry, -1 on a Redis error. */
long long vigil_outbox_store_dead_letter(vigil_store *s, vigil_script *script, const char *dl_key,
                                         const char *raw, size_t len);

/* LLEN of a key, or -1. */
long long vigil_outbox_store_llen(vigil_store *s, const char *key);

#define VIGIL_LUA_DEAD_LETTER                                                         \
    "local h = redis.call('LINDEX', KEYS[1], 0)\n"                                    \
    "if h ~= ARGV[1] then return 0 end\n"                                             \
    "redis.call('LPOP', KEYS[1])\n"                                                   \
    "return redis.call('RPUSH', KEYS[2], h)\n"

#endif
