/* levels.c - who is asleep: the levels dormancy-monitor reports on
 * persona/{p}/state (retained) and persona/{p}/dormancy (events), kept per
 * persona with the report's time so an older report never overwrites a
 * newer one. Entering and leaving dormancy opens and closes the dormant
 * periods the token-savings estimate counts (economics.c). */
#include <stdio.h>
#include <string.h>
#include "wake.h"

static void open_dormancy(wake_persona *p, int64_t since)
{
    int before = 0;
    for (int i = 0; i < p->n_msgs; i++)
        if (p->msg_ts[i] > since - WAKE_HOUR_MS && p->msg_ts[i] <= since)
            before++;
    p->dormant_since = since;
    p->rate_per_hour = (double)before; /* messages in one hour = per hour */
    p->sent_dormant = 0;
}

static void close_dormancy(wake_room *r, wake_persona *p, int64_t at)
{
    if (p->dormant_since > 0 && at > p->dormant_since) {
        double would = p->rate_per_hour * (double)(at - p->dormant_since) / (double)WAKE_HOUR_MS;
        double saved = would - (double)p->sent_dormant;
        if (saved > 0)
            r->saved_msgs += saved;
    }
    p->dormant_since = 0;
    p->rate_per_hour = 0;
    p->sent_dormant = 0;
}

int wake_on_level(wake_room *r, const wake_config *c, const char *persona, bool known,
                  wake_level level, int64_t since, const char *trigger, int64_t now,
                  const wake_sink *sink)
{
    wake_persona *p = wake_room_find(r, persona);
    if (!known) {
        if (!p)
            return 0;
        if (wake_level_dormant(p->level))
            close_dormancy(r, p, now);
        p->level = WAKE_LEVEL_UNKNOWN;
        p->level_ts = 0; /* as if never reported: the next report is not "older" */
        p->trigger[0] = '\0';
        if (!p->member) {
            wake_room_remove(r, persona);
            return sink->member(sink->ctx, persona, false);
        }
        return 0;
    }
    if (!p) {
        p = wake_room_join(r, c, persona, sink);
        if (!p)
            return 0; /* room full: the persona is not tracked here */
        if (sink->member(sink->ctx, persona, true) != 0)
            return -1;
    }
    if (since <= 0 || since > now)
        since = now;
    if (since < p->level_ts)
        return 0; /* an older report than the one held */
    bool was = wake_level_dormant(p->level), is = wake_level_dormant(level);
    if (!was && is)
        open_dormancy(p, since);
    else if (was && !is)
        close_dormancy(r, p, since);
    p->level = level;
    p->level_ts = since;
    vigil_utf8_copy(p->trigger, WAKE_SHORT_MAX + 1, trigger ? trigger : "");
    return 0;
}
