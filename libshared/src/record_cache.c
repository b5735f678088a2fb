/* record_cache.c - see record_cache.h. */
#include "vigil/record_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;
    char *json;
    void *rec;
} entry;

struct vigil_record_cache {
    vigil_record_ops ops;
    pthread_mutex_t lock;
    entry *slots;
    int n, next;
};

vigil_record_cache *vigil_record_cache_new(const vigil_record_ops *ops, int slots)
{
    vigil_record_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n = slots > 0 ? slots : 16;
    c->slots = calloc((size_t)c->n, sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return NULL;
    }
    c->ops = *ops;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void entry_clear(const vigil_record_cache *c, entry *e)
{
    free(e->key);
    free(e->json);
    if (e->rec)
        c->ops.free(e->rec);
    memset(e, 0, sizeof *e);
}

void vigil_record_cache_free(vigil_record_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        entry_clear(c, &c->slots[i]);
    free(c->slots);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void *vigil_record_cache_get(vigil_record_cache *c, const char *key, const char *json)
{
    if (!c || !key || !json || !json[0])
        return NULL;
    void *copy = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++) {
        const entry *e = &c->slots[i];
        if (e->json && strcmp(e->key, key) == 0) {
            if (strcmp(e->json, json) == 0)
                copy = c->ops.clone(e->rec);
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return copy;
}

int vigil_record_cache_put(vigil_record_cache *c, const char *key, char *json, void *rec)
{
    char *k = c && key && json && rec ? strdup(key) : NULL;
    if (!k)
        return -1;
    pthread_mutex_lock(&c->lock);
    int slot = -1;
    for (int i = 0; i < c->n && slot < 0; i++)
        if (c->slots[i].key && strcmp(c->slots[i].key, key) == 0)
            slot = i;
    if (slot < 0) {
        slot = c->next;
        c->next = (c->next + 1) % c->n;
    }
    entry old = c->slots[slot];
    c->slots[slot] = (entry){k, json, rec};
    pthread_mutex_unlock(&c->lock);
    entry_clear(c, &old);
    return 0;
}
