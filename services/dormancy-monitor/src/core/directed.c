/* directed.c - rule 5, directed part: an @mention wakes a sleeping persona
 * (a mention-only one stays so: it is notified elsewhere and may answer),
 * a positive wake decision from wake-evaluator wakes the persona, and the
 * dormancy autopilot's decisions are applied as suggestions, except
 * auto-sleep, which is applied. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/text.h>
#include "step.h"

static bool in_list(const char *const *list, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (list[i] && strcmp(list[i], id) == 0)
            return true;
    return false;
}

void directed_find_mentions(dormancy_step *s, const dormancy_event *ev, bool *mentioned)
{
    dormancy_room *r = s->room;
    const char *sender = ev->msg.sender ? ev->msg.sender : "";
    vigil_mention_starts starts; /* most personas are ruled out by one bit */
    vigil_mention_starts_of(&starts, ev->msg.text);
    for (int i = 0; i < r->n_personas; i++) {
        const dormancy_persona *p = &r->personas[i];
        bool m = in_list(ev->msg.mentions, ev->msg.n_mentions, p->id) ||
                 (vigil_mention_may(&starts, p->id) &&
                  dormancy_text_mentions(ev->msg.text, p->id)) ||
                 (vigil_mention_may(&starts, p->name) &&
                  dormancy_text_mentions(ev->msg.text, p->name));
        if (!m)
            continue;
        if (ev->msg.sender_type == DORMANCY_SENDER_AI && strcmp(sender, p->id) == 0)
            continue; /* talking about oneself is not a mention */
        mentioned[i] = true;
    }
}

void directed_wake_mentioned(dormancy_step *s, const dormancy_event *ev, const bool *mentioned)
{
    dormancy_room *r = s->room;
    const char *sender = ev->msg.sender ? ev->msg.sender : "";
    for (int i = 0; i < r->n_personas; i++) {
        dormancy_persona *p = &r->personas[i];
        if (!mentioned[i] || p->level != DORMANCY_SLEEP)
            continue;
        char reason[DORMANCY_REASON_MAX], text[DORMANCY_TEXT_MAX];
        snprintf(reason, sizeof reason, "mentioned by %s in message %s", sender,
                 ev->id ? ev->id : "");
        snprintf(text, sizeof text, "\xE2\x9C\xA8 Mentioned by %s. Waking from sleep.", sender);
        step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_MENTION, DORMANCY_CAUSE_NONE,
                       reason, text, ev->id);
    }
}

static const char *via_name(dormancy_via v)
{
    return v == DORMANCY_VIA_LLM ? "llm" : v == DORMANCY_VIA_RULES ? "rules" : "fallback";
}

/* The specified rule: wake only on shouldWake && confidence > threshold. With
 * LLM wake decisions switched off, LLM-made decisions are ignored and only
 * the rules / fallback tiers count. */
void directed_on_wake(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_persona *p = dormancy_persona_find(s->room, ev->wake.persona);
    if (!p || !ev->wake.should_wake || p->level == DORMANCY_ACTIVE)
        return;
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    if (ev->wake.via == DORMANCY_VIA_LLM && !c->llm_wake)
        return;
    if (!(ev->wake.confidence > c->wake_confidence))
        return;
    /* the model's reason, cut by the buffers between characters */
    char reason[DORMANCY_REASON_MAX], text[DORMANCY_TEXT_MAX];
    vigil_utf8_snprintf(reason, sizeof reason, "wake decision (%s, confidence %.2f): %s",
             via_name(ev->wake.via), ev->wake.confidence, ev->wake.reason ? ev->wake.reason : "");
    vigil_utf8_snprintf(text, sizeof text, "\xE2\x9C\xA8 Waking: %s",
             ev->wake.reason && ev->wake.reason[0] ? ev->wake.reason : "a message needs me.");
    step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_WAKE_DECISION, DORMANCY_CAUSE_NONE,
                   reason, text, ev->wake.message_id);
}

static void ap_suggest(dormancy_step *s, dormancy_persona *p, const char *reason)
{
    dormancy_config cb;
    const dormancy_config *c = step_cfg(s, p, &cb);
    if (!c->auto_suggest || !persona_can_answer(p) || step_presence_blocks(s, p))
        return;
    suggestion_make(s, p, DORMANCY_SUGGEST_AUTOPILOT, DORMANCY_TEXT_AUTOPILOT, reason, NULL);
}

void directed_on_autopilot(dormancy_step *s, const dormancy_event *ev)
{
    for (int k = 0; k < ev->autopilot.n; k++) {
        const dormancy_ap_decision *d = &ev->autopilot.decisions[k];
        dormancy_persona *p = dormancy_persona_find(s->room, d->persona);
        if (!p)
            continue;
        char reason[DORMANCY_REASON_MAX];
        vigil_utf8_snprintf(reason, sizeof reason, "autopilot (%s): %s",
                            ev->autopilot.source ? ev->autopilot.source : "rules",
                            d->reason ? d->reason : "");
        dormancy_config cb;
        const dormancy_config *c = step_cfg(s, p, &cb);
        switch (d->action) {
        case DORMANCY_AP_SUGGEST_MENTION_ONLY:
            ap_suggest(s, p, reason);
            break;
        case DORMANCY_AP_AUTO_SLEEP:
            if (step_presence_blocks(s, p))
                break;
            if (!c->auto_sleep) { /* forced sleep switched off: suggest instead */
                ap_suggest(s, p, reason);
                break;
            }
            step_set_level(s, p, DORMANCY_SLEEP, DORMANCY_TRIGGER_AUTOPILOT,
                           DORMANCY_CAUSE_CHOICE, reason,
                           "\xF0\x9F\x92\xA4 Auto-sleeping on the dormancy autopilot's decision.",
                           NULL);
            break;
        case DORMANCY_AP_WAKE:
            step_set_level(s, p, DORMANCY_ACTIVE, DORMANCY_TRIGGER_AUTOPILOT, DORMANCY_CAUSE_NONE,
                           reason, "\xE2\x9C\xA8 The dormancy autopilot wakes you.", NULL);
            break;
        case DORMANCY_AP_KEEP:
            break;
        }
    }
}
