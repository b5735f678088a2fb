/* adaptive.c - rule 7 and the room's activity figures: recent message
 * times give velocity (messages a minute) and the AI-to-human ratio; with
 * adaptive thresholds on, the no-human threshold becomes 3/5 of its value
 * above 5 messages a minute with a ratio above 3, and 7/5 of it below 1
 * message a minute (3/5/7 minutes at the default 5). The band is
 * judged on the window ending at the moment the deadline is checked, so a
 * deadline computed in a busy minute is re-checked (and moved) when it
 * fires in a slower one. */
#include <string.h>
#include "step.h"

void activity_record(dormancy_step *s, bool human)
{
    dormancy_room *r = s->room;
    if (r->n_recent == DORMANCY_MAX_RECENT) {
        memmove(&r->recent_ts[0], &r->recent_ts[1], (size_t)(r->n_recent - 1) * sizeof r->recent_ts[0]);
        memmove(&r->recent_human[0], &r->recent_human[1],
                (size_t)(r->n_recent - 1) * sizeof r->recent_human[0]);
        r->n_recent--;
        recent_text_dropped(r, 1);
    }
    r->recent_ts[r->n_recent] = s->now;
    r->recent_human[r->n_recent] = human;
    r->n_recent++;
    recent_text_appended(r);
}

void activity_prune(dormancy_step *s)
{
    dormancy_room *r = s->room;
    int drop = 0;
    while (drop < r->n_recent && r->recent_ts[drop] <= s->now - s->cfg->velocity_window_ms)
        drop++;
    if (drop > 0) {
        memmove(&r->recent_ts[0], &r->recent_ts[drop], (size_t)(r->n_recent - drop) * sizeof r->recent_ts[0]);
        memmove(&r->recent_human[0], &r->recent_human[drop],
                (size_t)(r->n_recent - drop) * sizeof r->recent_human[0]);
        r->n_recent -= drop;
        recent_text_dropped(r, drop);
    }
}

/* Messages in the window ending at now, divided by the window, except that
 * a room younger than the window is measured over its age (but never less
 * than a fifth of the window, so a room's first message is not a burst). */
dormancy_metrics dormancy_room_metrics(const dormancy_room *r, const dormancy_config *cfg,
                                       int64_t now)
{
    int64_t window = cfg->velocity_window_ms > 0 ? cfg->velocity_window_ms : 1;
    /* Without branches (called a few times per input over up to
     * DORMANCY_MAX_RECENT times): now - window < t <= now is
     * now - t in [0, window), one unsigned compare; the subtraction wraps
     * instead of overflowing for any t. */
    int humans = 0, in_window = 0;
    for (int i = 0; i < r->n_recent; i++) {
        int in = (uint64_t)now - (uint64_t)r->recent_ts[i] < (uint64_t)window;
        in_window += in;
        humans += in & (int)r->recent_human[i];
    }
    int ais = in_window - humans;
    int64_t span = r->first_seen ? now - r->first_seen : window;
    if (span > window)
        span = window;
    if (span < window / 5)
        span = window / 5;
    if (span < 1)
        span = 1;
    dormancy_metrics m = {humans, ais, (double)(humans + ais) * 60000.0 / (double)span,
                          humans > 0 ? (double)ais / (double)humans : 0.0};
    return m;
}

int64_t dormancy_no_human_threshold(const dormancy_room *r, const dormancy_config *eff,
                                    const dormancy_config *base, int64_t now)
{
    int64_t thr = eff->no_human_ms;
    if (!eff->adaptive)
        return thr;
    dormancy_metrics m = dormancy_room_metrics(r, base, now);
    /* no human message at all in the window is the highest ratio there is */
    bool ai_heavy = m.humans == 0 ? m.ais > 0 : m.ai_to_human_ratio > 3.0;
    if (m.velocity_per_min > 5.0 && ai_heavy)
        return thr * 3 / 5;
    if (m.velocity_per_min < 1.0)
        return thr * 7 / 5;
    return thr;
}
