/* sink_fx.c - the core's sink for one room, writing into the effects of
 * one commit: publishes go to the outbox, jobs to the durable stream, the
 * room's timers and its entry in each persona's room set change in the
 * same atomic commit as the room record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"
#include "room_cache.h"

static int fx_publish(void *ctx, const char *topic, const char *payload, bool retain)
{
    wake_fx_ctx *c = ctx;
    return vigil_fx_publish(c->fx, topic, payload, retain);
}

static int fx_enqueue(void *ctx, const char *job)
{
    wake_fx_ctx *c = ctx;
    vigil_counter_add("vigil_wake_jobs_enqueued_total",
                      "Jobs put on the durable job stream (counted per decision attempt)", NULL, 1);
    return vigil_fx_stream_add(c->fx, WAKE_STREAM, job, c->svc->jobs_maxlen, 0);
}

static int fx_timer(void *ctx, const char *name, int64_t due)
{
    wake_fx_ctx *c = ctx;
    return due == INT64_MIN ? vigil_fx_timer_cancel(c->fx, name)
                            : vigil_fx_timer_set(c->fx, name, due);
}

static int fx_member(void *ctx, const char *persona, bool add)
{
    wake_fx_ctx *c = ctx;
    char set[VIGIL_KEY_MAX + 32];
    snprintf(set, sizeof set, WAKE_MEMBER_SET "%s", persona);
    return add ? vigil_fx_set_add(c->fx, set, c->room) : vigil_fx_set_remove(c->fx, set, c->room);
}

static void fx_decided(void *ctx, const wake_decision *d)
{
    (void)ctx;
    char labels[96];
    snprintf(labels, sizeof labels, "tier=\"%s\",via=\"%s\",wake=\"%s\"", wake_tier_name(d->tier),
             wake_via_name(d->via), d->should_wake ? "true" : "false");
    vigil_counter_add("vigil_wake_decisions_total", "Wake decisions published", labels, 1);
}

void wake_sink_fx(wake_sink *sink, wake_fx_ctx *ctx, bool intake)
{
    *sink = (wake_sink){
        .ctx = ctx,
        .publish = fx_publish,
        .enqueue = fx_enqueue,
        .timer = fx_timer,
        .member = fx_member,
        .decided = intake ? fx_decided : NULL,
    };
}

int wake_with_room(const wake_service *svc, const char *key, const char *state_json,
                   int64_t now, vigil_effects *fx, bool intake, wake_room_fn fn, void *arg)
{
    bool corrupt = false;
    wake_room *r = wake_room_cache_get(key, state_json, &corrupt);
    if (!r)
        return -1;
    if (corrupt)
        vigil_log_kv(VIGIL_LOG_WARN, "room record unreadable: starting it afresh", "room", key,
                     NULL);
    wake_fx_ctx c = {svc, fx, key};
    wake_sink sink;
    wake_sink_fx(&sink, &c, intake);
    int rc = fn(r, &sink, now, arg);
    char *s = rc == 0 ? wake_room_to_json(r) : NULL;
    if (rc == 0)
        rc = s ? vigil_fx_set_state(fx, s) : -1;
    if (rc == 0) {
        wake_room_cache_put(key, s, r); /* the next commit likely starts here */
    } else {
        free(s);
        wake_room_free(r);
    }
    return rc;
}
