/* durations.c - how ages and windows are written for people: in the
 * status checker's lines and in an assessment's reasons. Both cut down
 * and never round up, so an age just under a limit never reads as the
 * limit (or past it), and limits shrunk under a minute (VIGIL_STALL_*)
 * read in seconds instead of "0 min". */
#include <inttypes.h>
#include <stdio.h>
#include "stall.h"

void stall_age_text(int64_t age_ms, char *out, size_t outlen)
{
    int64_t s = age_ms > 0 ? age_ms / 1000 : 0;
    if (s < 60)
        snprintf(out, outlen, "%" PRId64 "s", s);
    else if (s < 3600)
        snprintf(out, outlen, "%" PRId64 "m", s / 60);
    else
        snprintf(out, outlen, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
}

void stall_span_text(int64_t ms, char *out, size_t outlen)
{
    if (ms < 0)
        ms = 0;
    if (ms >= STALL_MIN_MS)
        snprintf(out, outlen, "%" PRId64 " min", ms / STALL_MIN_MS);
    else if (ms >= 10000 || ms % 1000 == 0)
        snprintf(out, outlen, "%" PRId64 " s", ms / 1000);
    else
        snprintf(out, outlen, "%" PRId64 ".%" PRId64 " s", ms / 1000, ms % 1000 / 100);
}
