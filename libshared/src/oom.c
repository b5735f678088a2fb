/* oom.c - retry, then exit without acknowledging (see oom.h). */
#include "vigil/oom.h"

#include <unistd.h>

#include "vigil/clock.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

bool vigil_oom_wait(int attempt, const char *where)
{
    vigil_counter_add("vigil_out_of_memory_total",
                      "Allocation failures while handling work (retried, never acknowledged)",
                      NULL, 1);
    if (attempt == 0)
        vigil_log_kv(VIGIL_LOG_ERROR, "out of memory: retrying, the input stays unacknowledged",
                     "where", where ? where : "", NULL);
    if (attempt + 1 >= VIGIL_OOM_ATTEMPTS)
        return false;
    vigil_sleep_ms(vigil_backoff_ms(attempt, 100, 5000), NULL);
    return true;
}

_Noreturn void vigil_exit_unacknowledged(const char *why, const char *topic)
{
    vigil_log_kv(VIGIL_LOG_ERROR, why ? why : "exiting without acknowledging the message in hand",
                 "topic", topic ? topic : "", "effect",
                 "the broker delivers the message again after the restart", NULL);
    _exit(3);
}
