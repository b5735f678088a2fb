/* human_reentry.c - rule 3: a human message ends the quiet period, cancels
 * pending suggestions and snoozes, and wakes every persona whose dormancy
 * came from human absence (rules 1 and 2). Personas that stepped back by
 * choice stay, except that a human message never meets fewer than
 * min_awake personas able to answer it: the ones that answered humans most
 * recently are woken too. human_wakes_all restores the literal rule
 * (any human message wakes every dormant persona). Each wake names the message.
 * The rule is libshared's vigil_human_wake_apply; this file applies it to
 * the record and words the reasons. */
#include <inttypes.h>
#include <stdio.h>
#include <vigil/human_wake.h>
#include <vigil/jtext.h>
#include <vigil/str.h>
#include "step.h"

_Static_assert(DORMANCY_CAUSE_NONE == (int)VIGIL_CAUSE_NONE &&
                   DORMANCY_CAUSE_ABSENCE == (int)VIGIL_CAUSE_ABSENCE &&
                   DORMANCY_CAUSE_CHOICE == (int)VIGIL_CAUSE_CHOICE,
               "dormancy_cause is the contract's vigil_cause");

/* The step and the message, for the shared rule's callbacks; the reasons
 * are written when a persona is woken, not on every human message
 * (printing them was a fortieth of an input's instructions). */
typedef struct reentry {
    dormancy_step *s;
    const dormancy_event *ev;
    const bool *mentioned;
    char reason[DORMANCY_REASON_MAX];
    bool have_reason;
    vigil_wake_why reason_for;
} reentry;

static void view(void *ctx, int i, vigil_wake_view *out)
{
    const reentry *x = ctx;
    const dormancy_persona *p = &x->s->room->personas[i];
    dormancy_config cb;
    const dormancy_config *c = step_cfg(x->s, p, &cb);
    *out = (vigil_wake_view){.level = (vigil_level)p->level, .cause = (vigil_cause)p->cause,
                             .auto_wake = c->auto_wake, .mentioned = x->mentioned[i],
                             .answered_human = p->answered_human};
}

static void wake(void *ctx, int i, vigil_wake_why why)
{
    reentry *x = ctx;
    const dormancy_event *ev = x->ev;
    const char *id = ev->id ? ev->id : "";
    if (!x->have_reason || x->reason_for != why) {
        if (why == VIGIL_WAKE_ABSENCE) {
            vigil_concat(x->reason, sizeof x->reason, "human message ", id, " from ",
                         ev->msg.sender ? ev->msg.sender : "", (const char *)NULL);
        } else {
            char n[VIGIL_I64_TEXT_MAX + 1];
            vigil_i64_text(n, x->s->cfg->min_awake);
            vigil_concat(x->reason, sizeof x->reason, "human message ", id,
                         " would meet fewer than ", n, " personas able to answer",
                         (const char *)NULL);
        }
        x->have_reason = true;
        x->reason_for = why;
    }
    step_set_level(x->s, &x->s->room->personas[i], DORMANCY_ACTIVE,
                   DORMANCY_TRIGGER_HUMAN_REENTRY, DORMANCY_CAUSE_NONE, x->reason,
                   DORMANCY_TEXT_HUMAN_WAKE, ev->id);
}

void human_reentry_on_message(dormancy_step *s, const dormancy_event *ev, const bool *mentioned)
{
    dormancy_room *r = s->room;
    r->last_human = s->now;
    r->ai_only_since = 0;
    suggestion_cancel_all(s);

    /* the rule itself is libshared's (vigil/human_wake.h): floor-control
     * predicts it with the same code */
    reentry x = {.s = s, .ev = ev, .mentioned = mentioned};
    vigil_human_wake_config c = {.auto_wake = s->cfg->auto_wake,
                                 .human_wakes_all = s->cfg->human_wakes_all,
                                 .min_awake = s->cfg->min_awake};
    vigil_wake_room room = {.n = r->n_personas, .view = view, .wake = wake, .ctx = &x};
    vigil_human_wake_apply(&room, &c);
}
