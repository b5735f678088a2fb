/* room_cache.c - see room_cache.h. A handful of entries, replaced round
 * robin: the hot rooms of a replica stay, the rest parse as before. The
 * entries live in a static table, so they are reachable until exit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "room_cache.h"

#define CACHE_SLOTS 16

typedef struct entry {
    char room[WAKE_ID_MAX + 1];
    char *json;
    wake_room *r;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry slots[CACHE_SLOTS];
static int next_slot;

wake_room *wake_room_cache_get(const char *room_id, const char *json, bool *corrupt)
{
    if (corrupt)
        *corrupt = false;
    if (json && json[0]) {
        wake_room *copy = NULL;
        bool hit = false;
        pthread_mutex_lock(&lock);
        for (int i = 0; i < CACHE_SLOTS && !hit; i++)
            if (slots[i].json && strcmp(slots[i].room, room_id) == 0 &&
                strcmp(slots[i].json, json) == 0) {
                hit = true;
                copy = wake_room_clone(slots[i].r);
            }
        pthread_mutex_unlock(&lock);
        if (hit)
            return copy;
    }
    return wake_room_from_json(room_id, json, corrupt);
}

void wake_room_cache_put(const char *room_id, char *json, wake_room *r)
{
    pthread_mutex_lock(&lock);
    int k = -1;
    for (int i = 0; i < CACHE_SLOTS && k < 0; i++)
        if (slots[i].json && strcmp(slots[i].room, room_id) == 0)
            k = i;
    if (k < 0) {
        k = next_slot;
        next_slot = (next_slot + 1) % CACHE_SLOTS;
    }
    entry old = slots[k];
    strncpy(slots[k].room, room_id, WAKE_ID_MAX);
    slots[k].room[WAKE_ID_MAX] = '\0';
    slots[k].json = json;
    slots[k].r = r;
    pthread_mutex_unlock(&lock);
    free(old.json);
    wake_room_free(old.r);
}
