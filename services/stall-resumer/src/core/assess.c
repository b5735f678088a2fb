/* assess.c - the activity assessment made exact:
 *   1. signals considered: the last 24 h that pass the noise filter;
 *   2. a signal counts only inside its tier's window (60/30/15 min);
 *   3. base confidence: >= 2 tier 1 -> 0.9; 1 tier 1 -> 0.7; >= 2 tier 2 ->
 *      0.7; 1 tier 2 -> 0.5; tier 3 only -> 0.3; none -> 0;
 *   4. recency penalty on the newest counted signal's age: > 60 min x 0.7,
 *      > 30 min x 0.85 (the tier-1 and tier-2 windows, so VIGIL_STALL_TIER1_MS
 *      and _TIER2_MS scale them too);
 *   5. validation: the newest signal inside the lookback and at least one
 *      tier 1 or tier 2 signal counted;
 *   6. is_active = confidence >= 0.5 and validation passed.
 * A newest signal with in_tool set stretches the lookback and the tier
 * windows to the in-tool window (a long tool call is not a stall).
 * Confidence is kept in thousandths: every factor is exact there. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <vigil/str.h>
#include "stall.h"

int stall_base_confidence(int n1, int n2, int n3)
{
    if (n1 >= 2)
        return 900;
    if (n1 == 1)
        return 700;
    if (n2 >= 2)
        return 700;
    if (n2 == 1)
        return 500;
    if (n3 >= 1)
        return 300;
    return 0;
}

int stall_recency_penalty(const stall_config *c, int base_milli, int64_t age_ms)
{
    if (age_ms > c->tier_window_ms[0])
        return base_milli * 700 / 1000;
    if (age_ms > c->tier_window_ms[1])
        return base_milli * 850 / 1000;
    return base_milli;
}

static void reason(stall_assessment *as, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(stall_assessment *as, const char *fmt, ...)
{
    if (as->n_reasons >= STALL_MAX_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(as->reasons[as->n_reasons++], STALL_REASON_LEN, fmt, ap);
    va_end(ap);
}

static int64_t age_of(int64_t ts, int64_t now)
{
    return now > ts ? now - ts : 0;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

int stall_assess(const stall_agent *a, const stall_config *c, int64_t now, stall_assessment *as,
                 char *err, size_t errlen)
{
    memset(as, 0, sizeof *as);
    int newest = -1; /* index of the newest considered signal */
    for (int i = 0; i < a->n_sig; i++) {
        const stall_signal *s = &a->sig[i];
        if (stall_source_tier(s->source) == 0) {
            snprintf(err, errlen, "signal %d has an invalid source %d", i, s->source);
            return -1;
        }
        if (age_of(s->ts, now) > STALL_SIGNAL_MAX_AGE_MS || stall_is_resumer_prompt(c, s->detail))
            continue;
        as->n_considered++;
        if (newest < 0 || s->ts > a->sig[newest].ts)
            newest = i;
    }
    as->in_tool = newest >= 0 && a->sig[newest].in_tool;
    int64_t lookback = as->in_tool ? max64(c->lookback_ms, c->in_tool_ms) : c->lookback_ms;
    int64_t window[3];
    for (int t = 0; t < 3; t++)
        window[t] = as->in_tool ? max64(c->tier_window_ms[t], c->in_tool_ms) : c->tier_window_ms[t];

    for (int i = 0; i < a->n_sig; i++) {
        const stall_signal *s = &a->sig[i];
        int64_t age = age_of(s->ts, now);
        if (age > STALL_SIGNAL_MAX_AGE_MS || stall_is_resumer_prompt(c, s->detail))
            continue;
        int t = stall_source_tier(s->source) - 1;
        if (age > window[t])
            continue;
        as->n_tier[t]++;
        as->counted[as->n_counted++] = i;
        if (s->ts > as->newest_counted)
            as->newest_counted = s->ts;
    }
    as->base_milli = stall_base_confidence(as->n_tier[0], as->n_tier[1], as->n_tier[2]);
    as->confidence_milli =
        as->n_counted ? stall_recency_penalty(c, as->base_milli, age_of(as->newest_counted, now)) : 0;

    as->last_activity = newest >= 0 ? a->sig[newest].ts : a->last_seen;
    bool recent = newest >= 0 && age_of(a->sig[newest].ts, now) <= lookback;
    bool reliable = as->n_tier[0] + as->n_tier[1] > 0;
    as->validation_passed = recent && reliable;
    as->is_active = as->validation_passed && as->confidence_milli >= c->min_confidence_milli;

    char span[2][32];
    vigil_span_text(lookback, span[0], sizeof span[0]);
    if (as->in_tool)
        reason(as, "in a tool call: windows stretched to %s", span[0]);
    if (newest < 0) {
        reason(as, "no activity in the last 24 h");
    } else if (!recent) {
        vigil_span_text(age_of(a->sig[newest].ts, now), span[1], sizeof span[1]);
        reason(as, "newest signal %s old, outside the %s lookback", span[1], span[0]);
    }
    if (newest >= 0 && !reliable)
        reason(as, "no tier-1 or tier-2 signal inside its window");
    if (as->n_counted)
        reason(as, "%d tier-1, %d tier-2, %d tier-3 signal(s) counted: base %.1f%s", as->n_tier[0],
               as->n_tier[1], as->n_tier[2], as->base_milli / 1000.0,
               as->confidence_milli != as->base_milli ? ", recency penalty applied" : "");
    reason(as, "%s: confidence %.3f %s %.1f%s", as->is_active ? "active" : "inactive",
           as->confidence_milli / 1000.0, as->confidence_milli >= c->min_confidence_milli ? ">=" : "<",
           c->min_confidence_milli / 1000.0, as->validation_passed ? "" : ", validation failed");

    stall_categorize(a, c, as->is_active, now, as);
    if (!as->category_age_known && !as->is_active)
        reason(as, "no status and no activity known: age unknown, failing open (category %s)",
               stall_category_name(as->category));
    return 0;
}

int64_t stall_idle_ms(const stall_agent *a, const stall_config *c, int64_t now)
{
    stall_assessment as;
    char err[160];
    /* a record the core finds inconsistent still has its newest signal time */
    int64_t last = stall_assess(a, c, now, &as, err, sizeof err) == 0 ? as.last_activity : a->last_seen;
    return last > 0 ? age_of(last, now) : -1;
}
