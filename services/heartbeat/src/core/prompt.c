/* prompt.c - the seed's heartbeat prompt: identity, the checklist
 * (HEARTBEAT.md), the current time in the user's time zone, minutes since
 * the last interaction, the last 10 messages of the room cut to 100
 * characters, then the instruction to answer HEARTBEAT_OK or the message
 * (as JSON with priority and category, which the VoI gate needs). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heartbeat.h"

typedef struct buf {
    char *p;
    size_t n, cap;
    bool oom;
} buf;

__attribute__((format(printf, 2, 3))) static void put(buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) {
        b->oom = true;
        return;
    }
    if (b->n + (size_t)need + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 1024);
        while (cap < b->n + (size_t)need + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

static const char *const WEEKDAYS[7] = {"Sunday", "Monday", "Tuesday", "Wednesday",
                                        "Thursday", "Friday", "Saturday"};

char *hb_prompt(const hb_state *s, const hb_local *l, const char *tz_name, int64_t now)
{
    buf b = {0};
    const hb_persona_cfg *c = &s->cfg;
    if (c->identity && c->identity[0])
        put(&b, "%s\n\n", c->identity);
    else
        put(&b, "You are %s, an AI persona in the chat room \"%s\". You keep an eye out for %s.\n\n",
            s->persona, c->room, c->user);
    put(&b, "%s\n\n", c->checklist ? c->checklist : "");
    int off = l->offset_s < 0 ? -l->offset_s : l->offset_s;
    put(&b, "Current time: %s %04d-%02d-%02d %02d:%02d (%s, UTC%c%02d:%02d)\n", WEEKDAYS[l->wday],
        l->year, l->month, l->day, l->hour, l->minute, tz_name && tz_name[0] ? tz_name : "UTC",
        l->offset_s < 0 ? '-' : '+', off / 3600, off / 60 % 60);
    int64_t last = s->last_user_msg > 0 ? s->last_user_msg : s->last_activity;
    int64_t mins = now > last ? (now - last + 30000) / 60000 : 0;
    put(&b, "Time since last user interaction: %lld minutes\n\n", (long long)mins);
    put(&b, "Recent conversation summary:\n");
    if (s->n_recent == 0)
        put(&b, "(no recent conversations)\n");
    for (int i = 0; i < s->n_recent; i++)
        put(&b, "%s: %s\n", s->recent[i].sender, s->recent[i].text);
    put(&b, "\nRun the heartbeat check. If nothing needs attention, reply only with: %s\n"
            "If something needs attention, compose the message to send, as JSON: "
            "{\"message\": \"...\", \"priority\": \"urgent\"|\"normal\"|\"low\", "
            "\"category\": \"reminder\"|\"deadline\"|\"alert\"|\"notification\"|\"check-in\"|"
            "\"update\"}",
        HB_TOKEN);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
