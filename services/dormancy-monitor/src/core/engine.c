/* engine.c - one decision step: dispatch the input to the rule files,
 * evaluate every deadline due at `now`, then derive timers and snapshots.
 *
 * Evaluating all due deadlines on every step (not only in the timer that
 * fired) is what makes late, duplicate or stale timer firings harmless: a
 * timer only wakes the room up; the record and `now` decide what happens. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"

void dormancy_actions_init(dormancy_actions *a)
{
    memset(a, 0, sizeof *a);
}

void dormancy_actions_init_in(dormancy_actions *a, dormancy_action *storage, size_t cap)
{
    *a = (dormancy_actions){ .v = storage, .cap = storage ? cap : 0, .fixed = storage };
}

void dormancy_actions_free(dormancy_actions *a)
{
    if (a->v != a->fixed)
        free(a->v);
    memset(a, 0, sizeof *a);
}

/* Empties an action: every number zero and every text "". Each action is
 * 1.5 KB, nearly all of it text buffers read only up to their NUL;
 * zeroing them whole was a sixth of what a step cost. */
static void action_clear(dormancy_action *a)
{
    a->kind = 0;
    a->level = a->previous = 0;
    a->trigger = 0;
    a->since = a->snoozed_until = a->until = 0;
    a->suggest = 0;
    a->default_after_ms = a->snooze_ms = a->pending_expires = a->due = 0;
    a->dormant = false;
    a->cause = DORMANCY_CAUSE_NONE;
    a->answered_human = a->order = 0;
    a->id[0] = a->persona[0] = a->reason[0] = a->text[0] = '\0';
    a->message_id[0] = a->pending_reason[0] = a->timer[0] = '\0';
    a->has_metrics = false;
    a->metrics_at = 0;
    a->metrics = (dormancy_metrics){0};
}
/* Every member of dormancy_action is cleared above: a member added to it
 * must be added there too (this sum fails to compile otherwise). */
_Static_assert(sizeof(dormancy_action) ==
                   offsetof(dormancy_action, metrics) + sizeof(dormancy_metrics),
               "dormancy_action changed: update action_clear");

dormancy_action *step_push(dormancy_step *s, dormancy_action_kind kind, const char *persona)
{
    dormancy_actions *o = s->out;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        bool moving = o->v == o->fixed; /* out of the caller's storage */
        dormancy_action *v = moving ? malloc(cap * sizeof *v) : realloc(o->v, cap * sizeof *v);
        if (!v) {
            s->failed = true;
            return NULL;
        }
        if (moving && o->n)
            memcpy(v, o->v, o->n * sizeof *v);
        o->v = v;
        o->cap = cap;
    }
    dormancy_action *a = &o->v[o->n++];
    action_clear(a);
    a->kind = kind;
    vigil_utf8_copy(a->persona, sizeof a->persona, persona);
    return a;
}

dormancy_action *step_event(dormancy_step *s, dormancy_action_kind kind, const char *persona)
{
    dormancy_action *a = step_push(s, kind, persona);
    if (!a)
        return NULL;
    if (s->ids && s->ids->make)
        s->ids->make(s->ids->ctx, s->n_events, a->id, sizeof a->id);
    else
        snprintf(a->id, sizeof a->id, "%s.%d", s->room->room, s->n_events);
    s->n_events++;
    return a;
}

/* The base config itself for a persona without overrides (nearly all):
 * rules ask for it per persona, several times per input, and copying the
 * whole config each time was a tenth of an input at 1,000 personas. */
const dormancy_config *step_cfg(const dormancy_step *s, const dormancy_persona *p,
                                dormancy_config *buf)
{
    if (!p || p->ov.has == 0)
        return s->cfg;
    *buf = dormancy_config_effective(s->cfg, &p->ov);
    return buf;
}

/* The input is refused: the step ends with this one action and nothing
 * else (the caller refuses before changing anything). */
void step_reject(dormancy_step *s, const char *persona, const char *detail)
{
    dormancy_action *a = step_push(s, DORMANCY_OUT_REJECTED, persona);
    if (a)
        vigil_utf8_copy(a->reason, sizeof a->reason, detail);
    s->rejected = true;
}

bool step_presence_blocks(const dormancy_step *s, const dormancy_persona *p)
{
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    return c->presence && dormancy_room_human_active(s->room, s->cfg, s->now);
}

/* A room message: system messages (including this service's own answers,
 * which come back to it) never feed the rules. */
static void on_message(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_room *r = s->room;
    if (ev->msg.sender_type == DORMANCY_SENDER_SYSTEM)
        return;
    if (!r->first_seen)
        r->first_seen = s->now;
    r->last_message = s->now;

    dormancy_persona *sender = NULL;
    bool self_cmd = false;
    if (ev->msg.sender_type == DORMANCY_SENDER_AI) {
        sender = step_persona_ensure(s, ev->msg.sender);
        if (sender) {
            persona_touch(sender);
            sender->joined = true;
            dormancy_self_cmd c = dormancy_self_parse(ev->msg.text, s->now, s->cfg->tz_offset_min);
            if (c.kind != DORMANCY_SELF_NONE) {
                self_cmd = true;
                manual_on_self(s, sender, ev);
            }
        }
    }
    activity_record(s, ev->msg.sender_type == DORMANCY_SENDER_HUMAN);

    /* Personas may not be added below this point: `mentioned` is indexed
     * by position. */
    bool *mentioned = calloc((size_t)r->n_personas + 1, sizeof *mentioned);
    if (!mentioned) {
        s->failed = true;
        return;
    }
    directed_find_mentions(s, ev, mentioned);
    if (ev->msg.sender_type == DORMANCY_SENDER_AI) {
        ai_only_on_ai_message(s);
        directed_wake_mentioned(s, ev, mentioned);
        if (sender && !self_cmd)
            redundant_on_ai(s, ev, dormancy_persona_find(r, ev->msg.sender));
    } else {
        /* rule 3 first: a persona it wakes gets the re-entry text, and the
         * mention wakes only those it leaves asleep (chosen sleep) */
        human_reentry_on_message(s, ev, mentioned);
        directed_wake_mentioned(s, ev, mentioned);
        redundant_on_human(s, ev);
    }
    free(mentioned);
}

static void dispatch(dormancy_step *s, const dormancy_event *ev)
{
    switch (ev->kind) {
    case DORMANCY_EV_MESSAGE: on_message(s, ev); break;
    case DORMANCY_EV_PRESENCE: presence_on_event(s, ev); break;
    case DORMANCY_EV_CONTROL: manual_on_control(s, ev); break;
    case DORMANCY_EV_AUTOPILOT: directed_on_autopilot(s, ev); break;
    case DORMANCY_EV_COMMAND: manual_on_command(s, ev); break;
    case DORMANCY_EV_META: membership_on_meta(s, ev); break;
    case DORMANCY_EV_WAKE: directed_on_wake(s, ev); break;
    }
}

/* Order matters when several deadlines are due at once: a timed dormancy
 * ends first, pending suggestions default, then the forced AI-only sleep,
 * and only then new no-human suggestions (never to a persona just put to
 * sleep). */
static int finish(dormancy_step *s)
{
    manual_evaluate(s);
    suggestion_evaluate(s);
    ai_only_evaluate(s);
    no_human_evaluate(s);
    activity_prune(s);
    redundant_prune(s);
    presence_prune(s);
    snapshot_room_decide(s);
    timers_sync(s);
    snapshot_sync(s);
    return s->failed ? -1 : 0;
}

int dormancy_room_apply(dormancy_room *r, const dormancy_event *ev, const dormancy_config *cfg,
                        int64_t now, const dormancy_ids *ids, dormancy_actions *out)
{
    dormancy_step s = {.room = r, .cfg = cfg, .now = now, .ids = ids, .out = out};
    dispatch(&s, ev);
    if (s.rejected) /* nothing changed: no deadline is looked at either */
        return s.failed ? -1 : 0;
    return finish(&s);
}

int dormancy_room_timer(dormancy_room *r, const char *timer_name, int64_t due,
                        const dormancy_config *cfg, int64_t now, const dormancy_ids *ids,
                        dormancy_actions *out)
{
    /* The store removed the fired timer; forget it so it is set again if
     * still wanted. A replica whose clock is a little behind the one that
     * set the deadline still acts on it: it fired because it was due. */
    int64_t eff_now = now;
    for (int i = 0; i < r->n_timers; i++) {
        if (strcmp(r->timers[i].name, timer_name) == 0) {
            if (r->timers[i].due == due && due > now)
                eff_now = due;
            break;
        }
    }
    timers_forget(r, timer_name);
    dormancy_step s = {.room = r, .cfg = cfg, .now = eff_now, .ids = ids, .out = out};
    return finish(&s);
}
