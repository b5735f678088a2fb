/* clock.h - the only place that reads the wall clock. Cores never call
 * these: the shell reads `now` once per input and passes it in. */
#ifndef VIGIL_CLOCK_H
#define VIGIL_CLOCK_H
#include <stdint.h>
#include <time.h>

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t vigil_now_ms(void);
/* Monotonic milliseconds, for measuring durations and timeouts. */
int64_t vigil_mono_ms(void);
/* Monotonic microseconds, for waits shorter than a millisecond. */
int64_t vigil_mono_us(void);
/* Sleeps ms milliseconds (restarts on EINTR unless *stop becomes nonzero;
 * stop may be NULL). */
void vigil_sleep_ms(int64_t ms, volatile int *stop);

/* Capped exponential backoff with jitter: attempt 0 -> base, doubling up to
 * cap; the result is uniformly jittered in [d/2, d]. */
int64_t vigil_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms);

/* Absolute CLOCK_MONOTONIC time ms_from_now ahead (negative = now), for
 * pthread_cond_timedwait on condition variables created with
 * pthread_condattr_setclock(CLOCK_MONOTONIC), so a wall clock jump cannot
 * stretch or cut a wait. */
struct timespec vigil_mono_deadline(int64_t ms_from_now);
#endif
