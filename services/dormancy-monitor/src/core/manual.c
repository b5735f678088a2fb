/* manual.c - rule 5, manual part: @self commands in a persona's own
 * message and the same commands on persona/{p}/command, timed dormancy,
 * status answers, and the room control topic (pause/resume/delete/wake).
 *
 * Dormancy entered here is a choice: the next human message leaves it as
 * it is (rule 3), unless the minimum-awake guarantee needs the persona. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/msg_persona.h>
#include <vigil/str.h>
#include "step.h"

#define SELF_USAGE                                                                         \
    "Unrecognised @self command. Use: @self dormant mention-only|human-only|sleep "        \
    "[for 1h | until 17:00], @self awake, @self status."

static void system_message(dormancy_step *s, const dormancy_persona *p, const char *text,
                           const char *reply_to)
{
    dormancy_action *a = step_event(s, DORMANCY_OUT_SYSTEM_MESSAGE, p ? p->id : NULL);
    if (!a)
        return;
    vigil_utf8_copy(a->text, sizeof a->text, text);
    vigil_utf8_copy(a->message_id, sizeof a->message_id, reply_to);
}

static void status_message(dormancy_step *s, const dormancy_persona *p, const char *reply_to)
{
    char text[DORMANCY_TEXT_MAX], since[40], extra[160] = "";
    format_iso(p->since, since, sizeof since);
    const char *trig = dormancy_trigger_name(p->trigger);
    if (p->until) {
        char u[40];
        format_iso(p->until, u, sizeof u);
        snprintf(extra, sizeof extra, ", until %s", u);
    } else if (p->snoozed_until > s->now) {
        char u[40];
        format_iso(p->snoozed_until, u, sizeof u);
        snprintf(extra, sizeof extra, ", suggestions snoozed until %s", u);
    }
    snprintf(text, sizeof text, "%s is at level %s in %s since %s (%s%s)%s.", p->id,
             dormancy_level_name(p->level), s->room->room, since, trig ? "trigger: " : "joined",
             trig ? trig : "", extra);
    system_message(s, p, text, reply_to);
}

/* Goes dormant by choice; `by` is who asked (the persona itself for
 * @self). A dormancy with an end sets `until`, watched by "until:<p>". */
static void go_dormant(dormancy_step *s, dormancy_persona *p, dormancy_level level,
                       int64_t until, const char *by, const char *message_id)
{
    char reason[DORMANCY_REASON_MAX], text[DORMANCY_TEXT_MAX], tail[64] = "";
    if (until && until <= s->now)
        return; /* ends before it starts */
    if (until) {
        char u[40];
        format_iso(until, u, sizeof u);
        vigil_concat(tail, sizeof tail, " until ", u, (const char *)NULL);
    }
    /* joined, not printed: an AI's "@self dormant" runs this on every one */
    const char *name = dormancy_level_name(level), *who = by && by[0] ? by : p->id;
    vigil_concat(reason, sizeof reason, name, " requested by ", who, tail, (const char *)NULL);
    vigil_concat(text, sizeof text, "\xF0\x9F\x92\xA4 Switching to ", name, tail,
                 " (requested by ", who, ").", (const char *)NULL);
    step_set_level_forced(s, p, level, DORMANCY_TRIGGER_MANUAL, DORMANCY_CAUSE_CHOICE, reason,
                          text, message_id, until);
    persona_touch(p);
    p->until = until;
}

static void go_awake(dormancy_step *s, dormancy_persona *p, const char *by, const char *message_id)
{
    char reason[DORMANCY_REASON_MAX], text[DORMANCY_TEXT_MAX];
    const char *who = by && by[0] ? by : p->id;
    snprintf(reason, sizeof reason, "awake requested by %s", who);
    snprintf(text, sizeof text, "\xE2\x9C\xA8 Awake (requested by %s).", who);
    step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_MANUAL, DORMANCY_CAUSE_NONE, reason,
                   text, message_id);
}

void manual_on_self(dormancy_step *s, dormancy_persona *p, const dormancy_event *ev)
{
    dormancy_self_cmd c = dormancy_self_parse(ev->msg.text, s->now, s->cfg->tz_offset_min);
    switch (c.kind) {
    case DORMANCY_SELF_DORMANT: go_dormant(s, p, c.level, c.until, p->id, ev->id); break;
    case DORMANCY_SELF_AWAKE: go_awake(s, p, p->id, ev->id); break;
    case DORMANCY_SELF_STATUS: status_message(s, p, ev->id); break;
    case DORMANCY_SELF_BAD: system_message(s, p, SELF_USAGE, ev->id); break;
    case DORMANCY_SELF_NONE: break;
    }
}

/* An answer changes nothing but the suggestion it answers (it never makes
 * the persona a member). One naming a room or a suggestion that is not
 * pending here is refused, visibly; except a redelivery of the answer
 * applied last, which the runtime then counts as the duplicate it is (it
 * decides on the record it holds before its commit finds the input id
 * already applied). An answer naming neither goes to every room of the
 * persona, and a room with nothing pending has nothing to do. */
static void answer_command(dormancy_step *s, const dormancy_event *ev)
{
    const char *sid = ev->command.suggestion_id, *in = ev->id ? ev->id : "";
    dormancy_persona *p = dormancy_persona_find(s->room, ev->command.persona);
    if (p && suggestion_answer(s, p, ev->command.answer, sid, in))
        return;
    if ((!ev->command.room && !sid) || (p && in[0] && strcmp(p->answer_in, in) == 0))
        return;
    char detail[DORMANCY_REASON_MAX];
    snprintf(detail, sizeof detail,
             "no pending suggestion%s%s%s for persona '%s' in room '%s' (unknown, already "
             "answered, withdrawn or defaulted)",
             sid ? " '" : "", sid ? sid : "", sid ? "'" : "", ev->command.persona, s->room->room);
    step_reject(s, ev->command.persona, detail);
}

/* A command naming this room makes the persona a member (it is being
 * directed here); without a room it concerns the rooms it is already in. */
void manual_on_command(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_persona *p;
    if (ev->command.cmd == DORMANCY_CMD_ANSWER) {
        answer_command(s, ev);
        return;
    }
    if (ev->command.room) {
        p = step_persona_ensure(s, ev->command.persona);
        if (!p)
            return;
        persona_touch(p);
        p->joined = true;
    } else {
        p = dormancy_persona_find(s->room, ev->command.persona);
        if (!p)
            return;
    }
    switch (ev->command.cmd) {
    case DORMANCY_CMD_DORMANT:
        go_dormant(s, p, ev->command.has_level ? ev->command.level : DORMANCY_SLEEP,
                   ev->command.until, ev->command.by, NULL);
        break;
    case DORMANCY_CMD_AWAKE: go_awake(s, p, ev->command.by, NULL); break;
    case DORMANCY_CMD_STATUS: status_message(s, p, NULL); break;
    case DORMANCY_CMD_ANSWER:
        break; /* answer_command */
    }
}

static void room_delete(dormancy_step *s)
{
    dormancy_room *r = s->room;
    for (int i = 0; i < r->n_personas; i++)
        step_push(s, DORMANCY_OUT_PERSONA_REMOVED, r->personas[i].id);
    r->n_personas = 0;
    r->members_changed = true; /* every stored part goes */
    r->roster_known = false;
    r->first_seen = r->last_message = r->last_human = r->ai_only_since = 0;
    r->paused = false;
    r->n_recent = r->n_humans = r->n_sessions = 0;
    recent_text_forget(r);
    step_push(s, DORMANCY_OUT_ROOM_CLEARED, NULL);
    s->room_cleared = true;
}

void manual_on_control(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_room *r = s->room;
    const char *by = ev->control.by && ev->control.by[0] ? ev->control.by : "room control";
    switch (ev->control.action) {
    case DORMANCY_CTL_PAUSE: r->paused = true; break;
    case DORMANCY_CTL_RESUME: r->paused = false; break;
    case DORMANCY_CTL_DELETE:
        /* chat-router's cleanup keeps a room that got a message meanwhile:
         * keep ours too, or the two services disagree about the room */
        if (ev->control.if_inactive_since > 0 && r->last_message >= ev->control.if_inactive_since)
            break;
        room_delete(s);
        break;
    case DORMANCY_CTL_WAKE: {
        char reason[DORMANCY_REASON_MAX], text[DORMANCY_TEXT_MAX];
        snprintf(reason, sizeof reason, "%s woken by %s", ev->control.all ? "room" : "persona", by);
        snprintf(text, sizeof text, "\xE2\x9C\xA8 Woken by %s.", by);
        for (int i = 0; i < r->n_personas; i++) {
            dormancy_persona *p = &r->personas[i];
            if (ev->control.all || (ev->control.persona && strcmp(ev->control.persona, p->id) == 0))
                step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_MANUAL,
                               DORMANCY_CAUSE_NONE, reason, text, NULL);
        }
        break;
    }
    }
}

void manual_evaluate(dormancy_step *s)
{
    for (int i = 0; i < s->room->n_personas; i++) {
        dormancy_persona *p = &s->room->personas[i];
        if (!p->until || p->until > s->now)
            continue;
        char reason[DORMANCY_REASON_MAX], u[40];
        format_iso(p->until, u, sizeof u);
        snprintf(reason, sizeof reason, "timed dormancy ended at %s", u);
        if (!step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_TIMED_END, DORMANCY_CAUSE_NONE,
                            reason, "\xE2\x9C\xA8 Timed dormancy ended. Back to active.", NULL)) {
            persona_touch(p);
            p->until = 0;
        }
    }
}

void manual_want(const dormancy_step *s, dormancy_want *w)
{
    for (int i = 0; i < s->room->n_personas; i++) {
        const dormancy_persona *p = &s->room->personas[i];
        if (!p->until)
            continue;
        char name[DORMANCY_TIMER_NAME_MAX + 1];
        timer_name(name, sizeof name, "until", p->id);
        want_add(w, name, p->until);
    }
}

void dormancy_command_event(const struct vigil_persona_command *c, dormancy_event *ev)
{
    ev->kind = DORMANCY_EV_COMMAND;
    ev->command.cmd = (dormancy_cmd)c->cmd;
    ev->command.room = c->room;
    ev->command.suggestion_id = c->suggestion_id;
    ev->command.by = c->by;
    ev->command.has_level = c->has_level;
    ev->command.level = (dormancy_level)c->level;
    ev->command.until = c->until > 0 ? c->until : 0;
    ev->command.answer = (dormancy_answer)c->answer;
}
