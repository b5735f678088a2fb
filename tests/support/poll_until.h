/* poll_until.h - a test waits for a condition another thread brings about:
 * checked every 10 ms, bounded by a timeout (never an open-ended sleep). */
#ifndef VT_POLL_UNTIL_H
#define VT_POLL_UNTIL_H
#include <stdbool.h>

/* True as soon as done(ctx) is; false once timeout_ms passed without it. */
bool vt_poll_until(bool (*done)(void *ctx), void *ctx, int timeout_ms);

#endif
