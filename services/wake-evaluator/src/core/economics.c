/* economics.c - the seed's "token economics": tokens spent on LLM wake
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
#include "internal.h"

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

int wake_publish_economics(const wake_room *r, int64_t now, const wake_sink *sink)
{
    int64_t spent = wake_tokens_spent(r), saved = wake_saved_tokens(r, now);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "room", json_object_new_string(r->id));
    json_object_object_add(o, "tokens_spent", json_object_new_int64(spent));
    json_object_object_add(o, "tokens_saved_estimate", json_object_new_int64(saved));
    json_object_object_add(o, "evaluations", json_object_new_int64(r->evaluations));
    json_object_object_add(o, "llm_evaluations", json_object_new_int64(r->llm_evaluations));
    json_object_object_add(o, "autopilot_runs", json_object_new_int64(r->autopilot_runs));
    json_object_object_add(o, "tokens_spent_wake", json_object_new_int64(r->tokens_wake));
    json_object_object_add(o, "tokens_spent_autopilot", json_object_new_int64(r->tokens_autopilot));
    json_object_object_add(o, "messages_saved_estimate",
                           wake_json_number(wake_saved_messages(r, now), 2));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    char topic[WAKE_ID_MAX + 32];
    snprintf(topic, sizeof topic, "room/%s/economics", r->id);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = s ? sink->publish(sink->ctx, topic, s, true) : -1;
    json_object_put(o);
    if (rc == 0 && sink->economics)
        sink->economics(sink->ctx, r->id, spent, saved);
    return rc;
}
