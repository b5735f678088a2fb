/* prompt.c - the specified heartbeat prompt: identity, the checklist
 * (HEARTBEAT.md), the current time in the user's time zone, minutes since
 * the last interaction, the last 10 messages of the room cut to 100
 * characters, then the instruction to answer HEARTBEAT_OK or the message.
 * Not the specified text exactly: its last line, which ends at "compose the
 * message to send", goes on with ", as JSON: {...}", asking for a priority
 * and a category, which the specified design had no use for (it scored
 * every message "normal" and had no allow list by category) and Vigil has:
 * the VoI gate scores by them and `allow_proactive` lists categories. A
 * model that answers plain text anyway is read as plain text was meant to
 * be, a normal message (reply.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/jtext.h>
#include "heartbeat.h"

static const char *const WEEKDAYS[7] = {"Sunday", "Monday", "Tuesday", "Wednesday",
                                        "Thursday", "Friday", "Saturday"};

char *hb_prompt(const hb_state *s, const hb_local *l, const char *tz_name, int64_t now)
{
    vigil_jtext b = {0};
    const hb_persona_cfg *c = &s->cfg;
    if (c->identity && c->identity[0])
        vigil_jtext_printf(&b, "%s\n\n", c->identity);
    else
        vigil_jtext_printf(&b, "You are %s, an AI persona in the chat room \"%s\". You keep an eye out for %s.\n\n",
            s->persona, c->room, c->user);
    vigil_jtext_printf(&b, "%s\n\n", c->checklist ? c->checklist : "");
    int off = l->offset_s < 0 ? -l->offset_s : l->offset_s;
    vigil_jtext_printf(&b, "Current time: %s %04d-%02d-%02d %02d:%02d (%s, UTC%c%02d:%02d)\n", WEEKDAYS[l->wday],
        l->year, l->month, l->day, l->hour, l->minute, tz_name && tz_name[0] ? tz_name : "UTC",
        l->offset_s < 0 ? '-' : '+', off / 3600, off / 60 % 60);
    int64_t last = s->last_user_msg > 0 ? s->last_user_msg : s->last_activity;
    int64_t mins = now > last ? (now - last + 30000) / 60000 : 0;
    vigil_jtext_printf(&b, "Time since last user interaction: %lld minutes\n\n", (long long)mins);
    vigil_jtext_printf(&b, "Recent conversation summary:\n");
    if (s->n_recent == 0)
        vigil_jtext_printf(&b, "(no recent conversations)\n");
    for (int i = 0; i < s->n_recent; i++)
        vigil_jtext_printf(&b, "%s: %s\n", s->recent[i].sender, s->recent[i].text);
    vigil_jtext_printf(&b, "\nRun the heartbeat check. If nothing needs attention, reply only with: %s\n"
            "If something needs attention, compose the message to send, as JSON: "
            "{\"message\": \"...\", \"priority\": \"urgent\"|\"normal\"|\"low\", "
            "\"category\": \"reminder\"|\"deadline\"|\"alert\"|\"notification\"|\"check-in\"|"
            "\"update\"}",
        HB_TOKEN);
    return vigil_jtext_take(&b);
}
