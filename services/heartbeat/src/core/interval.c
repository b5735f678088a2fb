/* interval.c - the adaptive interval: 2 min after recent activity
 * (under 5 min), 30 min after an hour of inactivity, 10 min otherwise; each
 * consecutive run that ended in "nothing to do" stretches the normal and the
 * inactive interval (x1.5 by default), capped at the inactive interval; no
 * runs past the idle cap. The active interval is never stretched: while the
 * user was active lately a run comes every 2 min whatever the last runs
 * answered, so a line added to the checklist (the break reminder) is acted
 * on within 2 min, as the specified test expects. */
#include "heartbeat.h"

int64_t hb_interval_ms(const hb_config *c, int64_t now, int64_t last_activity, int consecutive_ok)
{
    int64_t since = now - last_activity;
    if (since < 0)
        since = 0;
    if (since < c->recent_ms)
        return c->active_interval_ms; /* 2 min after activity, never stretched */
    int64_t base = c->normal_interval_ms;
    if (since > c->inactive_after_ms)
        base = c->inactive_interval_ms;
    /* the cap is the inactive interval, unless the base itself is above it
     * (a configuration with inactive < normal): never shorten the base */
    int64_t cap = c->inactive_interval_ms > base ? c->inactive_interval_ms : base;
    double v = (double)base;
    for (int i = 0; i < consecutive_ok && v < (double)cap; i++)
        v *= c->skip_stretch;
    if (v > (double)cap)
        v = (double)cap;
    int64_t r = (int64_t)v;
    return r < 1 ? 1 : r;
}

bool hb_idle(const hb_config *c, int64_t now, int64_t last_activity)
{
    return c->idle_cap_ms > 0 && now - last_activity >= c->idle_cap_ms;
}
