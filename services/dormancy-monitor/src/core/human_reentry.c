/* human_reentry.c - rule 3: a human message ends the quiet period, cancels
 * pending suggestions and snoozes, and wakes every persona whose dormancy
 * came from human absence (rules 1 and 2). Personas that stepped back by
 * choice stay, except that a human message never meets fewer than
 * min_awake personas able to answer it: the ones that answered humans most
 * recently are woken too. human_wakes_all restores the literal rule
 * (any human message wakes every dormant persona). Each wake names the message. */
#include <inttypes.h>
#include <stdio.h>
#include <vigil/jtext.h>
#include <vigil/str.h>
#include "step.h"

/* Mentioned, a mention-only persona may answer, and a sleeping one is
 * woken by the mention right after this rule (engine.c). */
static bool able(const dormancy_persona *p, bool mentioned)
{
    return persona_can_answer(p) ||
           (mentioned && (p->level == DORMANCY_MENTION_ONLY || p->level == DORMANCY_SLEEP));
}

static void wake(dormancy_step *s, dormancy_persona *p, const char *reason, const char *msg_id)
{
    step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_HUMAN_REENTRY, DORMANCY_CAUSE_NONE,
                   reason, DORMANCY_TEXT_HUMAN_WAKE, msg_id);
}

/* The dormant persona that answered a human most recently (ties: the one
 * that joined first), or -1. */
static int most_recent_answerer(const dormancy_step *s, const bool *mentioned)
{
    const dormancy_room *r = s->room;
    int best = -1;
    for (int i = 0; i < r->n_personas; i++) {
        const dormancy_persona *p = &r->personas[i];
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, p, &cb);
        if (able(p, mentioned[i]) || !c->auto_wake)
            continue;
        if (best < 0 || p->answered_human > r->personas[best].answered_human)
            best = i;
    }
    return best;
}

void human_reentry_on_message(dormancy_step *s, const dormancy_event *ev, const bool *mentioned)
{
    dormancy_room *r = s->room;
    r->last_human = s->now;
    r->ai_only_since = 0;
    suggestion_cancel_all(s);

    /* The reasons are written when a persona is woken, not on every human
     * message (printing them was a fortieth of an input's instructions). */
    char reason[DORMANCY_REASON_MAX];
    bool have_reason = false;
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_persona *p = &r->personas[i];
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, p, &cb);
        if (!c->auto_wake || p->level == DORMANCY_ACTIVE)
            continue;
        if (c->human_wakes_all || p->cause == DORMANCY_CAUSE_ABSENCE) {
            if (!have_reason)
                vigil_concat(reason, sizeof reason, "human message ", ev->id ? ev->id : "",
                             " from ", ev->msg.sender ? ev->msg.sender : "", (const char *)NULL);
            have_reason = true;
            wake(s, p, reason, ev->id);
        }
    }

    int count = 0;
    for (int i = 0; i < r->n_personas; i++)
        if (able(&r->personas[i], mentioned[i]))
            count++;
    if (count < s->cfg->min_awake) {
        char n[VIGIL_I64_TEXT_MAX + 1];
        vigil_i64_text(n, s->cfg->min_awake);
        vigil_concat(reason, sizeof reason, "human message ", ev->id ? ev->id : "",
                     " would meet fewer than ", n, " personas able to answer", (const char *)NULL);
    }
    while (count < s->cfg->min_awake) {
        int i = most_recent_answerer(s, mentioned);
        if (i < 0)
            break;
        wake(s, &r->personas[i], reason, ev->id);
        count++;
    }
}
