/* levels.c - the one way a persona's level changes: record it and announce
 * it on persona/{p}/dormancy, so no rule can change a level silently. */
#include <string.h>
#include "step.h"

bool persona_can_answer(const dormancy_persona *p)
{
    return p->level == DORMANCY_ACTIVE || p->level == DORMANCY_HUMAN_ONLY;
}

/* until is the timed end the forced change will set (the caller sets it
 * after): the same level with another end, or an end instead of none, is
 * announced like any change. */
static bool change(dormancy_step *s, dormancy_persona *p, dormancy_level level,
                   dormancy_trigger trigger, dormancy_cause cause, const char *reason,
                   const char *text, const char *message_id, bool forced, int64_t until)
{
    dormancy_cause new_cause = level == DORMANCY_ACTIVE ? DORMANCY_CAUSE_NONE : cause;
    if (p->level == level &&
        (!forced || (p->trigger == trigger && p->cause == new_cause && p->until == until)))
        return false;
    dormancy_level previous = p->level;
    persona_touch(p);
    p->level = level;
    snapshot_roster_update(s->room, p->id, previous, -1); /* room/{r}/state lists it */
    snapshot_roster_update(s->room, p->id, level, 1);
    p->since = s->now;
    p->trigger = trigger;
    vigil_utf8_copy(p->reason, sizeof p->reason, reason);
    p->cause = new_cause;
    p->until = 0;
    p->snap_digest = 0; /* the persona/{p}/state entry carries the new reason */
    /* A pending suggestion is moot once the level moved; a snooze only
     * concerns active personas. */
    memset(&p->sugg, 0, sizeof p->sugg);
    if (level != DORMANCY_ACTIVE)
        p->snoozed_until = 0;

    dormancy_action *a = step_event(s, DORMANCY_OUT_CHANGE, p->id);
    if (!a)
        return true;
    a->level = level;
    a->previous = previous;
    a->trigger = trigger;
    a->since = s->now;
    vigil_utf8_copy(a->reason, sizeof a->reason, reason);
    vigil_utf8_copy(a->text, sizeof a->text, text);
    vigil_utf8_copy(a->message_id, sizeof a->message_id, message_id);
    return true;
}

bool step_set_level(dormancy_step *s, dormancy_persona *p, dormancy_level level,
                    dormancy_trigger trigger, dormancy_cause cause, const char *reason,
                    const char *text, const char *message_id)
{
    return change(s, p, level, trigger, cause, reason, text, message_id, false, 0);
}

bool step_set_level_forced(dormancy_step *s, dormancy_persona *p, dormancy_level level,
                           dormancy_trigger trigger, dormancy_cause cause, const char *reason,
                           const char *text, const char *message_id, int64_t until)
{
    return change(s, p, level, trigger, cause, reason, text, message_id, true, until);
}
