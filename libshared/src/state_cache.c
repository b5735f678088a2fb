/* state_cache.c - see state_cache.h. A chained hash table under one mutex:
 * inputs are handled one at a time per thread, so contention is low. */
#include "vigil/state_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/str.h"

typedef struct entry {
    struct entry *next;
    char *key;
    char *state;
    int64_t version;
    bool taken; /* its text is out with an input (vigil_state_cache_take) */
} entry;

struct vigil_state_cache {
    pthread_mutex_t mu;
    entry **buckets;
    size_t nbuckets;
    size_t count;
    size_t max;
};

vigil_state_cache *vigil_state_cache_new(size_t max_entries)
{
    vigil_state_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max = max_entries ? max_entries : 1;
    c->nbuckets = 1024;
    while (c->nbuckets < c->max && c->nbuckets < (1u << 20))
        c->nbuckets <<= 1;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void entry_free(entry *e)
{
    free(e->key);
    free(e->state);
    free(e);
}

static void clear_locked(vigil_state_cache *c)
{
    for (size_t i = 0; i < c->nbuckets; i++) {
        entry *e = c->buckets[i];
        while (e) {
            entry *n = e->next;
            entry_free(e);
            e = n;
        }
        c->buckets[i] = NULL;
    }
    c->count = 0;
}

void vigil_state_cache_free(vigil_state_cache *c)
{
    if (!c)
        return;
    clear_locked(c);
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static entry **slot(vigil_state_cache *c, const char *key)
{
    size_t b = (size_t)(vigil_hash_mem(key, strlen(key)) & (c->nbuckets - 1));
    entry **pp = &c->buckets[b];
    while (*pp && strcmp((*pp)->key, key) != 0)
        pp = &(*pp)->next;
    return pp;
}

bool vigil_state_cache_get(vigil_state_cache *c, const char *key, int64_t *version, char **state)
{
    bool hit = false;
    pthread_mutex_lock(&c->mu);
    entry *e = *slot(c, key);
    if (e && !e->taken) {
        char *copy = e->state ? strdup(e->state) : NULL;
        if (!e->state || copy) {
            *version = e->version;
            *state = copy;
            hit = true;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

bool vigil_state_cache_take(vigil_state_cache *c, const char *key, int64_t *version, char **state)
{
    bool hit = false;
    pthread_mutex_lock(&c->mu);
    entry *e = *slot(c, key);
    if (e && !e->taken) {
        *version = e->version;
        *state = e->state;
        e->taken = e->state != NULL; /* "no record" is not taken away */
        e->state = NULL;
        hit = true;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

void vigil_state_cache_give_back(vigil_state_cache *c, const char *key, int64_t version,
                                 char *state)
{
    pthread_mutex_lock(&c->mu);
    entry *e = *slot(c, key);
    if (e && e->taken) {
        e->state = state;
        e->version = version;
        e->taken = false;
        state = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(state); /* the entry was put again (or dropped) meanwhile: newer */
}

void vigil_state_cache_put(vigil_state_cache *c, const char *key, int64_t version, const char *state)
{
    char *copy = state ? strdup(state) : NULL;
    if (state && !copy) {
        vigil_state_cache_drop(c, key);
        return;
    }
    vigil_state_cache_put_owned(c, key, version, copy);
}

void vigil_state_cache_put_owned(vigil_state_cache *c, const char *key, int64_t version,
                                 char *copy)
{
    pthread_mutex_lock(&c->mu);
    entry **pp = slot(c, key);
    if (*pp) {
        free((*pp)->state);
        (*pp)->state = copy;
        (*pp)->version = version;
        (*pp)->taken = false;
    } else {
        if (c->count >= c->max) {
            clear_locked(c);
            pp = slot(c, key);
        }
        entry *e = calloc(1, sizeof *e);
        char *k = strdup(key);
        if (!e || !k) {
            free(e);
            free(k);
            free(copy);
        } else {
            e->key = k;
            e->state = copy;
            e->version = version;
            *pp = e;
            c->count++;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void vigil_state_cache_drop(vigil_state_cache *c, const char *key)
{
    pthread_mutex_lock(&c->mu);
    entry **pp = slot(c, key);
    if (*pp) {
        entry *e = *pp;
        *pp = e->next;
        entry_free(e);
        c->count--;
    }
    pthread_mutex_unlock(&c->mu);
}

size_t vigil_state_cache_size(vigil_state_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->count;
    pthread_mutex_unlock(&c->mu);
    return n;
}
