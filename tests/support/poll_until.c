/* poll_until.c - see poll_until.h. */
#include "poll_until.h"

#include <stdint.h>

#include "vigil/clock.h"

bool vt_poll_until(bool (*done)(void *ctx), void *ctx, int timeout_ms)
{
    int64_t deadline = vigil_mono_ms() + timeout_ms;
    while (!done(ctx)) {
        if (vigil_mono_ms() >= deadline)
            return false;
        vigil_sleep_ms(10, NULL);
    }
    return true;
}
