/* category.c - the status checker's categories: fresh < 2 h, warning 2-6 h,
 * critical 6-12 h, auto-resume > 12 h (limits configurable). An agent with
 * detected activity is fresh whatever its status age; one without a status
 * is aged from its newest signal; one with neither has no age (below). */
#include "stall.h"

const char *stall_category_name(stall_category c)
{
    switch (c) {
    case STALL_CAT_FRESH: return "fresh";
    case STALL_CAT_WARNING: return "warning";
    case STALL_CAT_CRITICAL: return "critical";
    case STALL_CAT_AUTO_RESUME: return "auto-resume";
    }
    return "fresh";
}

stall_category stall_category_of_age(const stall_config *c, int64_t age_ms)
{
    if (age_ms < c->warning_ms)
        return STALL_CAT_FRESH;
    if (age_ms < c->critical_ms)
        return STALL_CAT_WARNING;
    if (age_ms <= c->autoresume_ms)
        return STALL_CAT_CRITICAL;
    return STALL_CAT_AUTO_RESUME;
}

void stall_categorize(const stall_agent *a, const stall_config *c, bool active, int64_t now,
                      stall_assessment *as)
{
    int64_t ref = a->status.present ? a->status.ts : a->last_seen;
    as->category_from_status = a->status.present;
    as->category_age_known = a->status.present || a->last_seen > 0;
    as->category_age_ms = as->category_age_known && now > ref ? now - ref : 0;
    if (active)
        as->category = STALL_CAT_FRESH;
    else if (!as->category_age_known)
        as->category = STALL_CAT_AUTO_RESUME; /* nothing known: fail open */
    else
        as->category = stall_category_of_age(c, as->category_age_ms);
}
