/* no_human.c - rule 1: after the no-human threshold (counted from the last
 * human message, or the first message seen in the room), each persona still
 * active and not snoozed gets one mention-only suggestion per quiet period.
 *
 * The quiet period is identified by its start time: a persona remembers the
 * start it was asked in (asked_quiet), so it is never asked twice in the
 * same period, and a human message (a new start) makes it askable again. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include "step.h"

/* Could be asked in the current quiet period (time and presence aside). */
static bool askable(const dormancy_step *s, const dormancy_persona *p, int64_t quiet)
{
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    return quiet != 0 && c->auto_suggest && p->level == DORMANCY_ACTIVE &&
           p->asked_quiet != quiet && p->sugg.kind == DORMANCY_SUGGEST_NONE &&
           p->snoozed_until <= s->now;
}

static int64_t threshold(const dormancy_step *s, const dormancy_persona *p)
{
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    return dormancy_no_human_threshold(s->room, c, s->cfg, s->now);
}

void no_human_evaluate(dormancy_step *s)
{
    dormancy_room *r = s->room;
    int64_t quiet = dormancy_quiet_since(r);
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_persona *p = &r->personas[i];
        if (p->snoozed_until && p->snoozed_until <= s->now) {
            persona_touch(p);
            p->snoozed_until = 0; /* snooze over: askable again if still quiet */
        }
        if (!askable(s, p, quiet))
            continue;
        int64_t thr = threshold(s, p);
        if (s->now < quiet + thr || step_presence_blocks(s, p))
            continue;
        char d[32], text[DORMANCY_TEXT_MAX], reason[DORMANCY_REASON_MAX];
        dormancy_format_duration(thr, d, sizeof d);
        snprintf(text, sizeof text, DORMANCY_TEXT_NO_HUMAN_FMT, d);
        snprintf(reason, sizeof reason,
                 "no human message for %" PRId64 " ms (threshold %" PRId64 " ms)",
                 s->now - quiet, thr);
        if (suggestion_make(s, p, DORMANCY_SUGGEST_NO_HUMAN, text, reason, NULL)) {
            persona_touch(p);
            p->asked_quiet = quiet;
        }
    }
}

/* One "nohuman" deadline per room (the earliest persona's); snoozed
 * personas wait on their own "snooze:<p>". While presence blocks, no
 * deadline: the presence timer wakes the room when the block ends. */
void no_human_want(const dormancy_step *s, dormancy_want *w)
{
    const dormancy_room *r = s->room;
    int64_t quiet = dormancy_quiet_since(r);
    int64_t due = INT64_MAX; /* one "nohuman" deadline: the earliest persona's */
    for (int i = 0; i < r->n_personas; i++) {
        const dormancy_persona *p = &r->personas[i];
        if (p->snoozed_until > s->now && p->level == DORMANCY_ACTIVE) {
            char name[DORMANCY_TIMER_NAME_MAX + 1];
            timer_name(name, sizeof name, "snooze", p->id);
            want_add(w, name, p->snoozed_until);
            continue;
        }
        if (!askable(s, p, quiet) || step_presence_blocks(s, p))
            continue;
        int64_t at = quiet + threshold(s, p);
        if (at > w->now && at < due) /* one already past is not wanted (want_add) */
            due = at;
    }
    if (due != INT64_MAX)
        want_add(w, "nohuman", due);
}
