/* durations.c - how ages are written for people in the status checker's
 * lines: cut down and never rounded up, so an age just under a limit
 * never reads as the limit (or past it). The reasons' windows and ages
 * are libshared's vigil_span_text. */
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
