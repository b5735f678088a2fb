/* suggestions.c - suggest, don't force: the pending suggestion of a persona
 * (from rule 1, rule 4 or the autopilot), its answer and its default.
 *
 * A persona has at most one pending suggestion. "yes" (or no answer within
 * the suggestion timeout) moves it to mention-only; "no" leaves it as it
 * is; "snooze" (no-human suggestions only) asks again after the snooze
 * time if the room is still quiet. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "step.h"

/* The longest text a duration is written as ("-9223372036854775808ms"). */
#define DURATION_TEXT_MAX 22
/* Every suggestion's text fits the record whole (dormancy_suggestion.text):
 * the longest question with its options and snooze, each duration the
 * longest (the "%s" of each format is replaced). */
_Static_assert(sizeof DORMANCY_TEXT_NO_HUMAN_FMT - 2 + DURATION_TEXT_MAX +
                       sizeof DORMANCY_TEXT_OPTIONS - 1 + sizeof DORMANCY_TEXT_SNOOZE_FMT - 2 +
                       DURATION_TEXT_MAX <= DORMANCY_SUGG_TEXT_MAX &&
                   sizeof DORMANCY_TEXT_REDUNDANT + sizeof DORMANCY_TEXT_OPTIONS - 1 <=
                       DORMANCY_SUGG_TEXT_MAX &&
                   sizeof DORMANCY_TEXT_AUTOPILOT + sizeof DORMANCY_TEXT_OPTIONS - 1 <=
                       DORMANCY_SUGG_TEXT_MAX,
               "a suggestion's text fits its place in the record");

/* The notification a persona is shown ends with its choices, as the
 * specified one does ("... Switch to mention-only? [Yes] [No] [Snooze 5min]"):
 * a reader of the text alone sees what it may answer and how long a snooze
 * lasts. `options` in the payload stays the machine-readable form. */
static void with_options(char *out, size_t outlen, const char *question,
                         dormancy_suggest_kind kind, int64_t snooze_ms)
{
    char snooze[48] = "";
    if (kind == DORMANCY_SUGGEST_NO_HUMAN) {
        char d[32];
        dormancy_format_duration(snooze_ms, d, sizeof d);
        snprintf(snooze, sizeof snooze, DORMANCY_TEXT_SNOOZE_FMT, d);
    }
    snprintf(out, outlen, "%s" DORMANCY_TEXT_OPTIONS "%s", question, snooze);
}

bool suggestion_make(dormancy_step *s, dormancy_persona *p, dormancy_suggest_kind kind,
                     const char *text, const char *reason, const char *message_id)
{
    if (p->sugg.kind != DORMANCY_SUGGEST_NONE)
        return false;
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    dormancy_action *a = step_event(s, DORMANCY_OUT_SUGGESTION, p->id);
    if (!a)
        return false;
    a->suggest = kind;
    a->level = DORMANCY_MENTION_ONLY;
    a->default_after_ms = c->suggestion_timeout_ms;
    if (kind == DORMANCY_SUGGEST_NO_HUMAN) /* the only kind with a snooze option */
        a->snooze_ms = c->snooze_ms;
    with_options(a->text, sizeof a->text, text, kind, c->snooze_ms);
    vigil_utf8_copy(a->reason, sizeof a->reason, reason);
    vigil_utf8_copy(a->message_id, sizeof a->message_id, message_id);

    persona_touch(p);
    p->sugg.kind = kind;
    vigil_utf8_copy(p->sugg.id, sizeof p->sugg.id, a->id);
    p->sugg.at = s->now;
    p->sugg.default_at = s->now + c->suggestion_timeout_ms;
    vigil_utf8_copy(p->sugg.message_id, sizeof p->sugg.message_id, message_id);
    vigil_utf8_copy(p->sugg.reason, sizeof p->sugg.reason, reason);
    vigil_utf8_copy(p->sugg.text, sizeof p->sugg.text, a->text);
    return true;
}

/* The cause decides whether the next human message undoes it: a no-human
 * suggestion is about absence; a pile-on or autopilot one is a choice to
 * step back. */
static void accept(dormancy_step *s, dormancy_persona *p, dormancy_suggest_kind kind,
                   const char *sugg_id, const char *message_id, bool defaulted)
{
    if (!persona_can_answer(p))
        return; /* already mention-only or asleep: nothing to switch */
    char reason[DORMANCY_REASON_MAX], text[DORMANCY_TEXT_MAX];
    dormancy_cause cause = kind == DORMANCY_SUGGEST_NO_HUMAN ? DORMANCY_CAUSE_ABSENCE
                                                             : DORMANCY_CAUSE_CHOICE;
    dormancy_trigger trigger;
    if (defaulted) {
        char d[32];
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, p, &cb);
        dormancy_format_duration(c->suggestion_timeout_ms, d, sizeof d);
        trigger = DORMANCY_TRIGGER_SUGGESTION_DEFAULT;
        snprintf(reason, sizeof reason, "%s suggestion %s not answered within %s: default yes",
                 dormancy_suggest_trigger_name(kind), sugg_id, d);
        snprintf(text, sizeof text,
                 "\xF0\x9F\x92\xA4 No answer within %s. Switching to mention-only.", d);
    } else {
        dormancy_trigger_parse(dormancy_suggest_trigger_name(kind), &trigger);
        snprintf(reason, sizeof reason, "%s suggestion %s accepted",
                 dormancy_suggest_trigger_name(kind), sugg_id);
        switch (kind) {
        case DORMANCY_SUGGEST_NO_HUMAN:
            vigil_utf8_copy(text, sizeof text,
                    "\xF0\x9F\x92\xA4 Switching to mention-only: no human activity.");
            break;
        case DORMANCY_SUGGEST_REDUNDANT:
            vigil_utf8_copy(text, sizeof text,
                    "\xF0\x9F\x92\xA4 Switching to mention-only: multiple AIs already responded.");
            break;
        default:
            vigil_utf8_copy(text, sizeof text,
                    "\xF0\x9F\x92\xA4 Switching to mention-only on the dormancy autopilot's suggestion.");
            break;
        }
    }
    step_set_level(s, p, DORMANCY_MENTION_ONLY, trigger, cause, reason, text,
                   message_id && message_id[0] ? message_id : NULL);
}

bool suggestion_answer(dormancy_step *s, dormancy_persona *p, dormancy_answer answer,
                       const char *suggestion_id, const char *input_id)
{
    if (p->sugg.kind == DORMANCY_SUGGEST_NONE)
        return false; /* nothing pending: a late or repeated answer */
    if (suggestion_id && strcmp(suggestion_id, p->sugg.id) != 0)
        return false; /* answers an older suggestion */
    dormancy_suggestion sg = p->sugg;
    persona_touch(p);
    memset(&p->sugg, 0, sizeof p->sugg);
    vigil_utf8_copy(p->answer_in, sizeof p->answer_in, input_id);
    switch (answer) {
    case DORMANCY_ANSWER_YES:
        accept(s, p, sg.kind, sg.id, sg.message_id, false);
        break;
    case DORMANCY_ANSWER_SNOOZE:
        if (sg.kind == DORMANCY_SUGGEST_NO_HUMAN) {
            dormancy_config cb;
            const dormancy_config *c = step_cfg(s, p, &cb);
            p->snoozed_until = s->now + c->snooze_ms;
            p->asked_quiet = 0; /* may be asked again once the snooze ends */
        }
        /* snooze is not an option of the yes/no suggestions: taken as no */
        break;
    case DORMANCY_ANSWER_NO:
        break; /* asked_quiet stays: not asked again in this quiet period */
    }
    return true;
}

void suggestion_cancel_all(dormancy_step *s)
{
    for (int i = 0; i < s->room->n_personas; i++) {
        dormancy_persona *p = &s->room->personas[i];
        persona_touch(p);
        memset(&p->sugg, 0, sizeof p->sugg);
        p->snoozed_until = 0;
    }
}

/* A suggestion presence blocks is withdrawn, as a human message would
 * (no default yes while a human reads along); a no-human one may be made
 * again once the block lifts, if the room is still quiet by then. */
static void withdraw(dormancy_persona *p)
{
    persona_touch(p);
    if (p->sugg.kind == DORMANCY_SUGGEST_NO_HUMAN)
        p->asked_quiet = 0;
    memset(&p->sugg, 0, sizeof p->sugg);
}

void suggestion_evaluate(dormancy_step *s)
{
    for (int i = 0; i < s->room->n_personas; i++) {
        dormancy_persona *p = &s->room->personas[i];
        if (p->sugg.kind == DORMANCY_SUGGEST_NONE)
            continue;
        if (step_presence_blocks(s, p)) {
            withdraw(p);
            continue;
        }
        if (p->sugg.default_at > s->now)
            continue;
        dormancy_suggestion sg = p->sugg;
        persona_touch(p);
        memset(&p->sugg, 0, sizeof p->sugg);
        accept(s, p, sg.kind, sg.id, sg.message_id, true);
    }
}

void suggestion_want(const dormancy_step *s, dormancy_want *w)
{
    for (int i = 0; i < s->room->n_personas; i++) {
        const dormancy_persona *p = &s->room->personas[i];
        if (p->sugg.kind == DORMANCY_SUGGEST_NONE)
            continue;
        char name[DORMANCY_TIMER_NAME_MAX + 1];
        timer_name(name, sizeof name, "suggest", p->id);
        want_add(w, name, p->sugg.default_at);
    }
}
