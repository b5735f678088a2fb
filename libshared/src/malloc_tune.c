/* malloc_tune.c - see vigil/malloc_tune.h. */
#include "vigil/malloc_tune.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set for the new start: a C library that erased the tunable (a set-user-id
 * program's start does) must not make the program start itself forever. */
#define RESTARTED_ENV "VIGIL_MALLOC_TUNED"

/* Whether the colon-separated list names the tunable (name=value). */
static bool names_tunable(const char *list)
{
    size_t n = strlen(VIGIL_MALLOC_TUNABLE);
    for (const char *p = list; p && *p;) {
        if (strncmp(p, VIGIL_MALLOC_TUNABLE, n) == 0 && p[n] == '=')
            return true;
        p = strchr(p, ':');
        if (p)
            p++;
    }
    return false;
}

char *vigil_malloc_tunables(const char *cur)
{
    if (names_tunable(cur))
        return NULL;
    char ours[64];
    snprintf(ours, sizeof ours, "%s=%d", VIGIL_MALLOC_TUNABLE, VIGIL_MALLOC_TCACHE_COUNT);
    size_t len = (cur && *cur ? strlen(cur) + 1 : 0) + strlen(ours) + 1;
    char *v = malloc(len);
    if (!v)
        return NULL;
    if (cur && *cur)
        snprintf(v, len, "%s:%s", cur, ours);
    else
        snprintf(v, len, "%s", ours);
    return v;
}

void vigil_malloc_tune(char **argv)
{
#ifdef __GLIBC__
    if (getenv(RESTARTED_ENV)) {
        unsetenv(RESTARTED_ENV); /* the outbox's publisher process starts clean */
        return;
    }
    if (!argv || !argv[0])
        return;
    const char *cur = getenv("GLIBC_TUNABLES");
    char *keep = cur ? strdup(cur) : NULL;
    char *v = vigil_malloc_tunables(cur);
    if (!v || (cur && !keep)) {
        free(v);
        free(keep);
        return;
    }
    /* The program's own path, not /proc/self/exe: the process takes its
     * name (ps, top, pkill) from the file name it is started from. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0 && setenv("GLIBC_TUNABLES", v, 1) == 0 && setenv(RESTARTED_ENV, "1", 1) == 0) {
        self[n] = '\0';
        execv(self, argv);
    }
    /* Still here: no /proc, or the file is gone (rebuilt or removed: the
     * link then ends in " (deleted)"). Go on untuned, with the environment
     * as it was. */
    unsetenv(RESTARTED_ENV);
    if (keep)
        setenv("GLIBC_TUNABLES", keep, 1);
    else
        unsetenv("GLIBC_TUNABLES");
    free(keep);
    free(v);
#else
    (void)argv;
#endif
}
