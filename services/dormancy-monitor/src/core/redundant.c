/* redundant.c - rule 4: when more than `keep` (2) AIs answer the same human
 * message within the window (30 s), every responder after the first two
 * gets a yes/no mention-only suggestion.
 *
 * An AI message answers the human message it names in reply_to, or else
 * the latest human message in the room. A persona counts once per human
 * message. Answering a human (at any delay) is also what the minimum-awake
 * guarantee of rule 3 ranks personas by. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "step.h"

void redundant_on_human(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_room *r = s->room;
    if (r->n_humans == DORMANCY_MAX_HUMAN_MSGS) {
        r->human0 = (r->human0 + 1) % DORMANCY_MAX_HUMAN_MSGS;
        r->n_humans--;
    }
    dormancy_human_msg *m = dormancy_room_human(r, r->n_humans++);
    memset(m, 0, sizeof *m);
    vigil_utf8_copy(m->id, sizeof m->id, ev->id);
    m->ts = s->now;
}

static dormancy_human_msg *target_of(dormancy_room *r, const char *reply_to)
{
    if (reply_to && reply_to[0]) {
        for (int i = r->n_humans - 1; i >= 0; i--)
            if (strcmp(dormancy_room_human(r, i)->id, reply_to) == 0)
                return dormancy_room_human(r, i);
        return NULL; /* replies to an AI message, or one too old to matter */
    }
    return r->n_humans > 0 ? dormancy_room_human(r, r->n_humans - 1) : NULL;
}

static bool already_responded(const dormancy_human_msg *m, const char *persona)
{
    int kept = m->n_responders < DORMANCY_MAX_RESPONDERS ? m->n_responders
                                                         : DORMANCY_MAX_RESPONDERS;
    for (int i = 0; i < kept; i++)
        if (strcmp(m->responders[i], persona) == 0)
            return true;
    return false;
}

void redundant_on_ai(dormancy_step *s, const dormancy_event *ev, dormancy_persona *p)
{
    if (!p)
        return;
    dormancy_human_msg *m = target_of(s->room, ev->msg.reply_to);
    if (!m || already_responded(m, p->id))
        return;
    persona_touch(p);
    p->answered_human = s->now;
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    int64_t delay = s->now - m->ts;
    if (delay > c->redundant_window_ms)
        return; /* a late answer is not a pile-on */
    int index = m->n_responders;
    if (index < DORMANCY_MAX_RESPONDERS)
        vigil_utf8_copy(m->responders[index], sizeof m->responders[index], p->id);
    m->n_responders++;
    m->text_len = 0; /* its record entry changed */
    if (index < c->redundant_keep || !c->auto_suggest || !persona_can_answer(p) ||
        step_presence_blocks(s, p))
        return;
    char reason[DORMANCY_REASON_MAX];
    snprintf(reason, sizeof reason,
             "responder %d to human message %s within %" PRId64 " ms (keep %d)", index + 1,
             m->id, delay, c->redundant_keep);
    suggestion_make(s, p, DORMANCY_SUGGEST_REDUNDANT, DORMANCY_TEXT_REDUNDANT, reason, m->id);
}

/* Human messages older than every window in force are dropped, except the
 * latest one (still the target of AI answers without reply_to). */
void redundant_prune(dormancy_step *s)
{
    dormancy_room *r = s->room;
    int64_t window = s->cfg->redundant_window_ms;
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, &r->personas[i], &cb);
        if (c->redundant_window_ms > window)
            window = c->redundant_window_ms;
    }
    int drop = 0;
    while (drop < r->n_humans - 1 && dormancy_room_human(r, drop)->ts < s->now - window)
        drop++;
    r->human0 = (r->human0 + drop) % DORMANCY_MAX_HUMAN_MSGS;
    r->n_humans -= drop;
}
