/* rules.c - Tier 3 (basic models, and the fallback of every
 * tier): wake for an own @mention, for a human sender, for an urgent
 * keyword as a whole word; otherwise stay asleep. */
#include <stdio.h>
#include <string.h>
#include "wake.h"
#include <vigil/str.h>

bool wake_rules_mentioned(const wake_rules_in *in)
{
    for (int i = 0; i < in->n_mentions; i++)
        if (in->mentions[i] && strcmp(in->mentions[i], in->persona) == 0)
            return true;
    return wake_text_mentions(in->text, in->persona) ||
           (in->name && in->name[0] && wake_text_mentions(in->text, in->name));
}

void wake_rules_decide(const wake_rules_in *in, bool *wake, char *reason, size_t reasonlen)
{
    const char *kw;
    *wake = true;
    if (wake_rules_mentioned(in)) {
        vigil_concat(reason, reasonlen, "rules: @mention of ", in->persona ? in->persona : "",
                     (const char *)NULL);
    } else if (in->sender_type == WAKE_SENDER_HUMAN) {
        vigil_concat(reason, reasonlen, "rules: message from a human", (const char *)NULL);
    } else if ((kw = wake_urgent_keyword(in->text)) != NULL) {
        vigil_concat(reason, reasonlen, "rules: urgent keyword '", kw, "'", (const char *)NULL);
    } else {
        *wake = false;
        vigil_concat(reason, reasonlen,
                     "rules: no @mention, not from a human, no urgent keyword: stay asleep",
                     (const char *)NULL);
    }
}

/* The rules on what a job holds: for a job enqueued before jobs carried
 * the verdict made at intake, whose text may be cut. */
static void rules_of_job_text(const wake_job *j, bool *wake, char *why, size_t whylen)
{
    /* Only "does the mentions array name this persona" matters to the
     * rules, so a one-element view is enough. */
    const char *self[1] = {j->persona};
    bool listed = false;
    for (int i = 0; i < j->n_mentions && !listed; i++)
        listed = strcmp(j->mentions[i], j->persona) == 0;
    wake_rules_in in = {j->persona, j->name, j->text ? j->text : "", j->sender_type,
                        listed ? self : NULL, listed ? 1 : 0};
    wake_rules_decide(&in, wake, why, whylen);
}

void wake_decide_rules(const wake_job *j, wake_via via, const char *note, wake_decision *d)
{
    bool wake = j->rules_wake;
    char why[WAKE_REASON_MAX];
    if (j->has_rules)
        vigil_concat(why, sizeof why, j->rules_reason, (const char *)NULL);
    else
        rules_of_job_text(j, &wake, why, sizeof why);
    snprintf(d->id, sizeof d->id, "%s", j->job);
    snprintf(d->persona, sizeof d->persona, "%s", j->persona);
    snprintf(d->room, sizeof d->room, "%s", j->room);
    snprintf(d->message_id, sizeof d->message_id, "%s", j->message_id);
    d->should_wake = wake;
    d->confidence = 1.0;
    d->tier = j->tier;
    d->via = via;
    d->alternative[0] = '\0';
    if (note && note[0])
        snprintf(d->reason, sizeof d->reason, "%.*s; %.*s", (int)vigil_utf8_cut_max(note, 250),
                 note, (int)vigil_utf8_cut_max(why, 250), why);
    else
        snprintf(d->reason, sizeof d->reason, "%s", why);
}
