/* unique.c - see unique.h. */
#include "vigil/unique.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

void vigil_random_bytes(void *buf, size_t n)
{
    if (getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t y = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf;
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)((i % 16 < 8 ? x >> (8 * (i % 8)) : y >> (8 * (i % 8))) ^ (i / 16));
}

static uint64_t start;
static _Atomic uint64_t next;

static void draw_start(void)
{
    vigil_random_bytes(&start, sizeof start);
}

/* The random start plus a counter, mixed (splitmix64's finaliser, a
 * bijection): distinct for each count within the process. */
uint64_t vigil_unique_u64(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, draw_start);
    for (;;) {
        uint64_t z = start + atomic_fetch_add(&next, 1) * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        if (z != 0)
            return z;
    }
}
