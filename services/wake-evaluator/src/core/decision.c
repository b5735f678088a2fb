/* decision.c - a wake decision as published on persona/{p}/wake, and its
 * commit into the room (evaluation and token counters, economics). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"
#include "jbuf.h"

/* The text is made first and the value read back from it, rather than
 * rounded arithmetically: printf's rounding of the binary value is the one
 * the payload shows, so the two can never disagree (0.7004 -> "0.7" ->
 * 0.7, the very double a consumer's JSON parser gets). */
double wake_confidence_published(double conf, char *text, size_t len)
{
    if (!(conf >= 0))
        conf = 0;
    if (conf > 1)
        conf = 1;
    wake_number_text(conf, WAKE_CONFIDENCE_DECIMALS, text, len);
    return strtod(text, NULL);
}

/* Written as text (jbuf.h), the keys in the order json-c printed them:
 * one decision is published per evaluated persona and input, and a json-c
 * tree cost more than the decision. */
char *wake_decision_json(const wake_decision *d, int64_t now)
{
    char num[64];
    wake_confidence_published(d->confidence, num, sizeof num);
    jbuf b;
    jb_init(&b);
    jb_open(&b, '{');
    jb_kstr(&b, "id", d->id);
    jb_kstr(&b, "persona", d->persona);
    jb_kstr(&b, "room", d->room);
    jb_kstr(&b, "message_id", d->message_id);
    jb_key(&b, "should_wake");
    jb_bool(&b, d->should_wake);
    jb_key(&b, "confidence");
    jb_num(&b, num);
    jb_kstr(&b, "reason", d->reason);
    jb_kstr(&b, "tier", wake_tier_name(d->tier));
    jb_kstr(&b, "via", wake_via_name(d->via));
    if (d->alternative[0])
        jb_kstr(&b, "alternative", d->alternative);
    jb_ki64(&b, "latency_ms", d->latency_ms > 0 ? d->latency_ms : 0);
    if (d->tokens >= 0)
        jb_ki64(&b, "tokens", d->tokens);
    if (d->llm_status[0])
        jb_kstr(&b, "llm_status", d->llm_status);
    if (d->llm_latency_ms >= 0)
        jb_ki64(&b, "llm_latency_ms", d->llm_latency_ms);
    jb_ki64(&b, "ts", now);
    jb_close(&b, '}');
    return jb_take(&b);
}

int wake_on_decision(wake_room *r, const wake_config *c, const wake_decision *d, int64_t now,
                     const wake_sink *sink)
{
    (void)c;
    char topic[WAKE_ID_MAX + 32];
    snprintf(topic, sizeof topic, "persona/%s/wake", d->persona);
    char *json = wake_decision_json(d, now);
    int rc = json ? sink->publish(sink->ctx, topic, json, false) : -1;
    free(json);
    if (rc != 0)
        return -1;
    r->evaluations++;
    if (d->llm_status[0])
        r->llm_evaluations++;
    if (d->tokens > 0)
        r->tokens_wake += d->tokens;
    return wake_publish_economics(r, now, sink);
}
