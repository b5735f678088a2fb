/* clock.c - wall clock, monotonic clock, interruptible sleep and backoff.
 *
 * The only file that reads the clocks: cores get `now` as a parameter. */
#include "vigil/clock.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* Longest single nap while a stop flag is being watched: a signal handler
 * that sets the flag may run on another thread and not interrupt us. */
#define SLEEP_SLICE_MS 50

static int64_t ts_to_ms(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

int64_t vigil_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts_to_ms(&ts);
}

int64_t vigil_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts_to_ms(&ts);
}

int64_t vigil_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleeps towards an absolute monotonic deadline so EINTR restarts never
 * stretch the total; with a stop flag the nap is sliced so the flag is seen
 * within SLEEP_SLICE_MS even when no signal reaches this thread. */
void vigil_sleep_ms(int64_t ms, volatile int *stop)
{
    if (ms <= 0)
        return;
    int64_t deadline = vigil_mono_ms() + ms;
    for (;;) {
        if (stop && *stop)
            return;
        int64_t left = deadline - vigil_mono_ms();
        if (left <= 0)
            return;
        if (stop && left > SLEEP_SLICE_MS)
            left = SLEEP_SLICE_MS;
        struct timespec req = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        struct timespec rem;
        while (nanosleep(&req, &rem) != 0 && errno == EINTR) {
            if (stop && *stop)
                return;
            req = rem;
        }
    }
}

/* splitmix64 over an atomic counter: every call takes a distinct counter
 * value, so concurrent callers never share a draw and need no lock. The
 * counter is seeded once from the clock and pid so replicas restarted
 * together do not retry in lockstep. */
static _Atomic uint64_t g_rng_state;
static atomic_int g_rng_seeded;

static uint64_t rng_next(void)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&g_rng_seeded, &expected, 1)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t seed = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
                        ((uint64_t)getpid() << 32);
        atomic_fetch_add(&g_rng_state, seed);
    }
    uint64_t z = atomic_fetch_add(&g_rng_state, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* d = base * 2^attempt, capped at cap_ms (cap_ms <= 0: no cap; a cap below
 * base caps at cap); doubling stops before overflow. The result is uniform
 * in [d/2, d] so a crowd of clients reconnecting together spreads out. */
int64_t vigil_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms)
{
    if (base_ms <= 0)
        return 0;
    if (attempt < 0)
        attempt = 0;
    int64_t cap = cap_ms > 0 ? cap_ms : INT64_MAX;
    int64_t d = base_ms;
    for (int i = 0; i < attempt && d < cap; i++) {
        if (d > INT64_MAX / 2) {
            d = INT64_MAX;
            break;
        }
        d *= 2;
    }
    if (d > cap)
        d = cap;
    int64_t lo = d / 2;
    uint64_t span = (uint64_t)(d - lo) + 1;
    return lo + (int64_t)(rng_next() % span);
}

struct timespec vigil_mono_deadline(int64_t ms_from_now)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms_from_now < 0)
        ms_from_now = 0;
    ts.tv_sec += (time_t)(ms_from_now / 1000);
    ts.tv_nsec += (long)(ms_from_now % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}
