/* after_llm.c - the choice between the model's answer and the rules once
 * a wake job's LLM call is over (the worker only reports what came back). */
#include <stdio.h>
#include <string.h>
#include "wake.h"

void wake_decide_after_llm(const wake_reader *rd, const wake_job *j, const wake_llm_answer *a,
                           int64_t now, wake_decision *d)
{
    char why[300] = "", note[400];
    memset(d, 0, sizeof *d);
    bool ok = a->ok && a->content &&
              wake_interpret(rd, j->tier, a->content, a->len, j->threshold, d, why, sizeof why) == 0;
    if (ok) {
        snprintf(d->id, sizeof d->id, "%s", j->job);
        snprintf(d->persona, sizeof d->persona, "%s", j->persona);
        snprintf(d->room, sizeof d->room, "%s", j->room);
        snprintf(d->message_id, sizeof d->message_id, "%s", j->message_id);
    } else {
        if (a->ok)
            snprintf(note, sizeof note, "LLM answer unusable%s: %.*s",
                     a->truncated ? " (output truncated)" : "", (int)vigil_utf8_cut_max(why, 250),
                     why);
        else
            snprintf(note, sizeof note, "LLM %s: %.*s", a->status ? a->status : "error",
                     (int)vigil_utf8_cut_max(a->error, 150), a->error ? a->error : "");
        wake_decide_rules(j, WAKE_VIA_FALLBACK, note, d);
    }
    d->latency_ms = j->enqueued > 0 && now > j->enqueued ? now - j->enqueued : a->latency_ms;
    d->llm_latency_ms = a->latency_ms;
    d->tokens = a->tokens > 0 ? a->tokens : (a->ok ? 0 : -1);
    snprintf(d->llm_status, sizeof d->llm_status, "%s", a->status ? a->status : "");
}
