/* oom.h - what the shell does when an allocation fails while an input is
 * in hand.
 *
 * Out of memory must never acknowledge an input: paho acknowledges when the
 * message callback returns (returning 0 from it makes paho 1.3.12 ack at
 * once and keep the message in memory only), and a refusal acknowledges
 * too. So the callback retries the work after a pause (memory may come
 * back), and when it stays short the process leaves without returning:
 * the broker delivers the message again to the restarted process. */
#ifndef VIGIL_OOM_H
#define VIGIL_OOM_H
#include <stdbool.h>

/* Attempts before giving up (about 30 s of pauses in all). */
#define VIGIL_OOM_ATTEMPTS 12

/* Counts the failure, logs it (first attempt only) and pauses before
 * attempt+1. Returns false when the bound is reached: the caller must then
 * call vigil_exit_unacknowledged (intake) or give up the work it may give
 * up (a leased timer comes back by itself). */
bool vigil_oom_wait(int attempt, const char *where);

/* Leaves the process at once (_exit 3), from any thread, without
 * returning to the MQTT library: the message in hand stays
 * unacknowledged and comes back after a restart. */
_Noreturn void vigil_exit_unacknowledged(const char *why, const char *topic);

#endif
