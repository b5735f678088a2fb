/* decision.c - a wake decision as published on persona/{p}/wake, and its
 * commit into the room (evaluation and token counters, economics). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"

char *wake_decision_json(const wake_decision *d, int64_t now)
{
    double conf = d->confidence;
    if (!(conf >= 0))
        conf = 0;
    if (conf > 1)
        conf = 1;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(d->id));
    json_object_object_add(o, "persona", json_object_new_string(d->persona));
    json_object_object_add(o, "room", json_object_new_string(d->room));
    json_object_object_add(o, "message_id", json_object_new_string(d->message_id));
    json_object_object_add(o, "should_wake", json_object_new_boolean(d->should_wake));
    json_object_object_add(o, "confidence", wake_json_number(conf, 3));
    json_object_object_add(o, "reason", json_object_new_string(d->reason));
    json_object_object_add(o, "tier", json_object_new_string(wake_tier_name(d->tier)));
    json_object_object_add(o, "via", json_object_new_string(wake_via_name(d->via)));
    if (d->alternative[0])
        json_object_object_add(o, "alternative", json_object_new_string(d->alternative));
    json_object_object_add(o, "latency_ms",
                           json_object_new_int64(d->latency_ms > 0 ? d->latency_ms : 0));
    if (d->tokens >= 0)
        json_object_object_add(o, "tokens", json_object_new_int64(d->tokens));
    if (d->llm_status[0])
        json_object_object_add(o, "llm_status", json_object_new_string(d->llm_status));
    if (d->llm_latency_ms >= 0)
        json_object_object_add(o, "llm_latency_ms", json_object_new_int64(d->llm_latency_ms));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return wake_json_take(o);
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
