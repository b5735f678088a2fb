/* failalloc.c - an LD_PRELOAD library that makes one library's allocations
 * fail on demand, so a test can drive a real service process out of
 * memory where it matters (json-c parsing an input) without touching the
 * service's code.
 *
 * VT_FAILALLOC_TRIGGER=<path>: while that file exists, malloc, calloc,
 * realloc and strdup called directly from a library whose path contains
 * VT_FAILALLOC_LIBRARY (default "libjson-c"; the program's own path names
 * the program) return NULL with ENOMEM; "<path>.seen" is written when the
 * failing starts. VT_FAILALLOC_SIZE=<n>, when set, narrows that to the
 * allocations of exactly n bytes (strdup: the string's length + 1), so a
 * test can fail one chosen allocation of the program (a field of a
 * chosen length) and nothing before it.
 * Every other allocation goes through. The file is polled every 10 ms by
 * a thread of the library's own, so an allocation costs one atomic load
 * while nothing fails. Not built with the sanitizers: it forwards to the
 * next malloc in the lookup order (ASan's, in the sanitizer build). strdup
 * is its own because ASan's strdup allocates without calling malloc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

static atomic_int failing;
static atomic_long failed;
static char trigger[1024];
static char library[128] = "libjson-c";
static long long fail_size = -1; /* VT_FAILALLOC_SIZE; -1: any size */

/* dlsym may allocate before the next allocator is known: a small static
 * arena serves those calls and is never freed. */
static _Alignas(16) char early[65536];
static size_t early_used;

static void *early_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (early_used + n > sizeof early)
        return NULL;
    void *p = early + early_used;
    early_used += n;
    return p;
}

static int is_early(const void *p)
{
    return (const char *)p >= early && (const char *)p < early + sizeof early;
}

/* Polls the trigger file. Each time it starts failing it writes
 * "<trigger>.seen", so a test knows allocations fail from then on. */
static void *poll_main(void *arg)
{
    (void)arg;
    char seen[sizeof trigger + 8];
    snprintf(seen, sizeof seen, "%s.seen", trigger);
    for (;;) {
        struct stat st;
        int now = stat(trigger, &st) == 0;
        if (now && !atomic_exchange(&failing, 1)) {
            int fd = open(seen, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                close(fd);
        } else if (!now) {
            atomic_store(&failing, 0);
        }
        usleep(10000);
    }
    return NULL;
}

/* Looks the next allocator up on first use: another library's constructor
 * may allocate before this one's runs. dlsym itself may allocate; those
 * calls are served from the arena. */
static atomic_int resolving; /* not thread-local: TLS of a shared library may allocate */

static void resolve(void)
{
    if (next_free || atomic_exchange(&resolving, 1))
        return;
    next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

__attribute__((constructor)) static void failalloc_init(void)
{
    resolve();
    const char *t = getenv("VT_FAILALLOC_TRIGGER");
    const char *l = getenv("VT_FAILALLOC_LIBRARY");
    const char *z = getenv("VT_FAILALLOC_SIZE");
    if (l && *l && strlen(l) < sizeof library)
        strcpy(library, l);
    if (z && *z)
        fail_size = strtoll(z, NULL, 10);
    if (t && *t && strlen(t) < sizeof trigger) {
        strcpy(trigger, t);
        pthread_t th;
        if (pthread_create(&th, NULL, poll_main, NULL) == 0)
            pthread_detach(th);
    }
}

/* Whether the allocation of n bytes at return address ret is one to fail:
 * failing is on, it comes from the library, and it has the size asked for
 * (if one was). */
static int should_fail(void *ret, size_t n)
{
    if (!atomic_load_explicit(&failing, memory_order_relaxed))
        return 0;
    if (fail_size >= 0 && (unsigned long long)fail_size != n)
        return 0;
    Dl_info di;
    if (!dladdr(ret, &di) || !di.dli_fname || !strstr(di.dli_fname, library))
        return 0;
    atomic_fetch_add(&failed, 1);
    errno = ENOMEM;
    return 1;
}

void *malloc(size_t n)
{
    resolve();
    if (!next_malloc)
        return early_alloc(n);
    if (should_fail(__builtin_return_address(0), n))
        return NULL;
    return next_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    resolve();
    if (!next_calloc) {
        if (n && k > SIZE_MAX / n)
            return NULL;
        void *p = early_alloc(k * n);
        if (p)
            memset(p, 0, k * n);
        return p;
    }
    if (should_fail(__builtin_return_address(0), n && k > SIZE_MAX / n ? SIZE_MAX : k * n))
        return NULL;
    return next_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    resolve();
    if (is_early(p) || !next_realloc) {
        void *q = next_malloc ? next_malloc(n) : early_alloc(n);
        if (q && p) {
            size_t room = (size_t)(early + sizeof early - (const char *)p);
            memcpy(q, p, n < room ? n : room);
        }
        return q;
    }
    if (should_fail(__builtin_return_address(0), n))
        return NULL;
    return next_realloc(p, n);
}

/* strdup through this library's malloc rules, judged by strdup's caller:
 * ASan's own strdup takes its memory without calling malloc, so without
 * this a program's strdup could never fail here. */
char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    if (should_fail(__builtin_return_address(0), n))
        return NULL;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void free(void *p)
{
    if (!p || is_early(p))
        return;
    resolve();
    if (next_free)
        next_free(p);
}
