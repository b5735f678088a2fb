/* tz_cache.c - time zone rules for the core, read from the zoneinfo folder
 * the first time a name is asked for and kept for the life of the process
 * (the pointers the core holds stay valid). Names are checked before any
 * path is built: no "..", no absolute paths.
 *
 * No cap of its own: it holds one entry per zone file of the folder that
 * was asked for (unknown names are never kept), so the folder bounds it. A
 * cap below that would answer a valid zone as unknown, and a stored
 * record's zone as UTC (quiet hours in the wrong time), without a word. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include "adapter.h"

#define TZIF_MAX (256 * 1024) /* bytes read of a zone file (the largest are a few KiB) */

typedef struct entry {
    char name[HB_TZ_NAME_MAX + 1];
    hb_tz *tz; /* NULL: known to be unknown */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache;
static int n_cache, cap_cache;

static bool name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > HB_TZ_NAME_MAX || n[0] == '/' || n[0] == '.' || strstr(n, ".."))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '-' || c == '+'))
            return false;
    }
    return true;
}

static hb_tz *load(const hb_service *svc, const char *name)
{
    char path[HB_PATH_MAX + HB_TZ_NAME_MAX + 2], err[160];
    snprintf(path, sizeof path, "%s/%s", svc->zoneinfo, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
            return hb_tz_from_posix("UTC0", err, sizeof err);
        return NULL;
    }
    unsigned char *buf = malloc(TZIF_MAX);
    size_t n = buf ? fread(buf, 1, TZIF_MAX, f) : 0;
    fclose(f);
    hb_tz *tz = buf ? hb_tz_from_tzif(buf, n, err, sizeof err) : NULL;
    if (buf && !tz)
        vigil_log_kv(VIGIL_LOG_WARN, "time zone file unreadable", "path", path, "error", err, NULL);
    free(buf);
    return tz;
}

/* Keeps tz under name (the lock held); false when out of memory. */
static bool keep(const char *name, hb_tz *tz)
{
    if (n_cache == cap_cache) {
        int cap = cap_cache ? 2 * cap_cache : 64;
        entry *more = realloc(cache, sizeof *cache * (size_t)cap);
        if (!more)
            return false;
        cache = more;
        cap_cache = cap;
    }
    snprintf(cache[n_cache].name, sizeof cache[0].name, "%s", name);
    cache[n_cache++].tz = tz;
    return true;
}

const hb_tz *hb_tz_cache_lookup(void *arg, const char *name)
{
    const hb_service *svc = arg;
    if (!name || !name_ok(name))
        return NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_cache; i++)
        if (strcmp(cache[i].name, name) == 0) {
            hb_tz *tz = cache[i].tz;
            pthread_mutex_unlock(&lock);
            return tz;
        }
    hb_tz *tz = load(svc, name);
    /* unknown names are not cached (a bad config could fill the cache) */
    if (tz && !keep(name, tz)) {
        hb_tz_free(tz);
        tz = NULL;
        vigil_log_kv(VIGIL_LOG_ERROR, "out of memory keeping a time zone", "zone", name, NULL);
    }
    pthread_mutex_unlock(&lock);
    return tz;
}

void hb_tz_cache_free(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_cache; i++)
        hb_tz_free(cache[i].tz);
    free(cache);
    cache = NULL;
    n_cache = cap_cache = 0;
    pthread_mutex_unlock(&lock);
}
