/* Unit tests of clock.c: the clocks move the right way, sleep honours its
 * duration and the stop flag, and backoff stays in [d/2, d] with the cap. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <time.h>

#include "vigil/clock.h"

static void test_now_is_wall_clock(void **state)
{
    (void)state;
    int64_t now = vigil_now_ms();
    int64_t sys = (int64_t)time(NULL) * 1000;
    assert_true(now > 1600000000000LL);
    assert_true(now - sys > -2000 && now - sys < 2000);
}

static void test_mono_is_monotonic(void **state)
{
    (void)state;
    int64_t prev = vigil_mono_ms();
    for (int i = 0; i < 1000; i++) {
        int64_t t = vigil_mono_ms();
        assert_true(t >= prev);
        prev = t;
    }
    /* microseconds: the same clock, a thousand times finer */
    int64_t us = vigil_mono_us(), ms = vigil_mono_ms();
    assert_true(us / 1000 <= ms && ms - us / 1000 < 1000);
    int64_t prev_us = vigil_mono_us();
    for (int i = 0; i < 1000; i++) {
        int64_t t = vigil_mono_us();
        assert_true(t >= prev_us);
        prev_us = t;
    }
}

static void test_sleep_duration(void **state)
{
    (void)state;
    int64_t t0 = vigil_mono_ms();
    vigil_sleep_ms(120, NULL);
    int64_t dt = vigil_mono_ms() - t0;
    assert_true(dt >= 120);
    assert_true(dt < 1000);

    t0 = vigil_mono_ms();
    vigil_sleep_ms(0, NULL);
    vigil_sleep_ms(-5, NULL);
    assert_true(vigil_mono_ms() - t0 < 50);
}

static void test_sleep_already_stopped(void **state)
{
    (void)state;
    volatile int stop = 1;
    int64_t t0 = vigil_mono_ms();
    vigil_sleep_ms(5000, &stop);
    assert_true(vigil_mono_ms() - t0 < 100);
}

static volatile int g_stop;

static void *set_stop_later(void *arg)
{
    (void)arg;
    vigil_sleep_ms(100, NULL);
    g_stop = 1;
    return NULL;
}

/* The flag is set by another thread and no signal arrives: the sleeper
 * must still notice it quickly. */
static void test_sleep_stops_on_flag(void **state)
{
    (void)state;
    g_stop = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, set_stop_later, NULL), 0);
    int64_t t0 = vigil_mono_ms();
    vigil_sleep_ms(10000, &g_stop);
    int64_t dt = vigil_mono_ms() - t0;
    pthread_join(th, NULL);
    assert_true(dt >= 90);
    assert_true(dt < 2000);
}

static void test_backoff_bounds(void **state)
{
    (void)state;
    /* attempt 0 -> base; each attempt doubles; jitter in [d/2, d] */
    for (int attempt = 0; attempt < 10; attempt++) {
        int64_t d = 100LL << attempt;
        if (d > 30000)
            d = 30000;
        for (int i = 0; i < 200; i++) {
            int64_t b = vigil_backoff_ms(attempt, 100, 30000);
            assert_true(b >= d / 2);
            assert_true(b <= d);
        }
    }
}

static void test_backoff_cap_and_overflow(void **state)
{
    (void)state;
    for (int i = 0; i < 200; i++) {
        int64_t b = vigil_backoff_ms(1000, 500, 8000);
        assert_true(b >= 4000 && b <= 8000);
        b = vigil_backoff_ms(100000, 1, 0); /* no cap: must not overflow */
        assert_true(b >= INT64_MAX / 2 - 1);
        b = vigil_backoff_ms(-3, 100, 1000); /* negative attempt = 0 */
        assert_true(b >= 50 && b <= 100);
        b = vigil_backoff_ms(3, 100, 50); /* cap below base */
        assert_true(b >= 25 && b <= 50);
    }
    assert_int_equal(vigil_backoff_ms(3, 0, 1000), 0);
    assert_int_equal(vigil_backoff_ms(3, -10, 1000), 0);
}

static void test_backoff_is_jittered(void **state)
{
    (void)state;
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t b = vigil_backoff_ms(4, 1000, 60000); /* d = 16000 */
        if (b < lo)
            lo = b;
        if (b > hi)
            hi = b;
    }
    /* spread over most of [8000, 16000] */
    assert_true(lo < 9000);
    assert_true(hi > 15000);
}

static void *backoff_worker(void *arg)
{
    int *bad = arg;
    for (int i = 0; i < 20000; i++) {
        int64_t b = vigil_backoff_ms(2, 100, 1000);
        if (b < 200 || b > 400)
            (*bad)++;
    }
    return NULL;
}

/* Run under the sanitizer build: concurrent callers must not race. */
static void test_backoff_threads(void **state)
{
    (void)state;
    pthread_t th[4];
    int bad[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, backoff_worker, &bad[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(bad[i], 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_now_is_wall_clock),
        cmocka_unit_test(test_mono_is_monotonic),
        cmocka_unit_test(test_sleep_duration),
        cmocka_unit_test(test_sleep_already_stopped),
        cmocka_unit_test(test_sleep_stops_on_flag),
        cmocka_unit_test(test_backoff_bounds),
        cmocka_unit_test(test_backoff_cap_and_overflow),
        cmocka_unit_test(test_backoff_is_jittered),
        cmocka_unit_test(test_backoff_threads),
    };
    return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
