/* ai_only.c - rule 2: when AI messages have gone on for the AI-only
 * threshold with no human message since the first of them, every AI
 * persona in the room is put to sleep: forced, not suggested (mention-only
 * and human-only personas too).
 *
 * The stretch is identified by its start (room->ai_only_since); a persona
 * remembers the stretch it was handled for (ai_only_done), so one woken by
 * an @mention during the same stretch is not put straight back to sleep.
 * The stretch starts at the first AI message after the last human one: a
 * single AI message followed by silence for the threshold is one. */
#include <stdint.h>
#include <stdio.h>
#include "step.h"

void ai_only_on_ai_message(dormancy_step *s)
{
    if (!s->room->ai_only_since)
        s->room->ai_only_since = s->now;
}

static bool pending(const dormancy_step *s, const dormancy_persona *p, int64_t since)
{
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    return since != 0 && c->auto_sleep && p->ai_only_done != since;
}

void ai_only_evaluate(dormancy_step *s)
{
    dormancy_room *r = s->room;
    int64_t since = r->ai_only_since;
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_persona *p = &r->personas[i];
        if (!pending(s, p, since))
            continue;
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, p, &cb);
        if (s->now < since + c->ai_only_ms || step_presence_blocks(s, p))
            continue;
        persona_touch(p);
        p->ai_only_done = since;
        if (p->level == DORMANCY_SLEEP)
            continue; /* already asleep (by choice): left as it is */
        /* the specified reason, with the threshold in force ("15min") */
        char d[32], reason[DORMANCY_REASON_MAX];
        dormancy_format_duration(c->ai_only_ms, d, sizeof d);
        snprintf(reason, sizeof reason, "Extended AI-only discussion (%s)", d);
        /* the usual text promises a wake on any human message: only true
         * with auto-wake on */
        step_set_level(s, p, DORMANCY_SLEEP, DORMANCY_TRIGGER_AI_ONLY, DORMANCY_CAUSE_ABSENCE,
                       reason,
                       c->auto_wake ? DORMANCY_TEXT_AI_ONLY : DORMANCY_TEXT_AI_ONLY_NO_AUTO_WAKE,
                       NULL);
    }
}

void ai_only_want(const dormancy_step *s, dormancy_want *w)
{
    const dormancy_room *r = s->room;
    int64_t due = INT64_MAX; /* one deadline: the earliest persona's */
    for (int i = 0; i < r->n_personas; i++) {
        const dormancy_persona *p = &r->personas[i];
        if (!pending(s, p, r->ai_only_since) || step_presence_blocks(s, p))
            continue;
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, p, &cb);
        int64_t at = r->ai_only_since + c->ai_only_ms;
        if (at > w->now && at < due) /* one already past is not wanted (want_add) */
            due = at;
    }
    if (due != INT64_MAX)
        want_add(w, "aionly", due);
}
