/* economics.c - the "token economics": tokens spent on LLM wake
 * evaluations and autopilot runs (the `usage` the endpoint reports), and an
 * estimate of the tokens dormancy saved.
 *
 * The estimate: a dormant persona would have gone on talking at its own
 * recent rate, so each dormant period saves
 *     rate (its messages in the hour before it went dormant, per hour)
 *       x the time it stayed dormant  -  the messages it sent anyway,
 * never below zero; the room's saved messages times the average tokens of
 * an AI message in the room (bytes / 4) is the tokens saved. A persona that
 * was silent before going dormant saves nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"
#include "jbuf.h"
#include <vigil/str.h>

static double open_period(const wake_persona *p, int64_t now)
{
    if (p->dormant_since <= 0 || now <= p->dormant_since)
        return 0;
    double would = p->rate_per_hour * (double)(now - p->dormant_since) / (double)WAKE_HOUR_MS;
    double saved = would - (double)p->sent_dormant;
    return saved > 0 ? saved : 0;
}

double wake_saved_messages(const wake_room *r, int64_t now)
{
    double s = r->saved_msgs;
    for (int i = 0; i < r->n_personas; i++)
        s += open_period(&r->personas[i], now);
    return s;
}

int64_t wake_saved_tokens(const wake_room *r, int64_t now)
{
    return (int64_t)llround(wake_saved_messages(r, now) * wake_room_avg_ai_tokens(r));
}

int64_t wake_tokens_spent(const wake_room *r)
{
    return r->tokens_wake + r->tokens_autopilot;
}

/* Written as text (jbuf.h), the keys in the order json-c printed them:
 * published with every decision made at intake. */
int wake_publish_economics(const wake_room *r, int64_t now, const wake_sink *sink)
{
    int64_t spent = wake_tokens_spent(r), saved = wake_saved_tokens(r, now);
    char num[64];
    wake_number_text(wake_saved_messages(r, now), 2, num, sizeof num);
    jbuf b;
    jb_init(&b);
    jb_open(&b, '{');
    jb_kstr(&b, "room", r->id);
    jb_ki64(&b, "tokens_spent", spent);
    jb_ki64(&b, "tokens_saved_estimate", saved);
    jb_ki64(&b, "evaluations", r->evaluations);
    jb_ki64(&b, "llm_evaluations", r->llm_evaluations);
    jb_ki64(&b, "autopilot_runs", r->autopilot_runs);
    jb_ki64(&b, "tokens_spent_wake", r->tokens_wake);
    jb_ki64(&b, "tokens_spent_autopilot", r->tokens_autopilot);
    jb_key(&b, "messages_saved_estimate");
    jb_num(&b, num);
    jb_ki64(&b, "ts", now);
    jb_close(&b, '}');
    char *s = jb_take(&b);
    char topic[WAKE_ID_MAX + 32];
    vigil_concat(topic, sizeof topic, "room/", r->id, "/economics", (const char *)NULL);
    int rc = s ? sink->publish(sink->ctx, topic, s, true) : -1;
    free(s);
    if (rc == 0 && sink->economics)
        sink->economics(sink->ctx, r->id, spent, saved);
    return rc;
}
