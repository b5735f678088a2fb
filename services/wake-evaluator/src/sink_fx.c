/* sink_fx.c - the core's sink for one room, writing into the effects of
 * one commit: publishes go to the outbox, jobs to the durable stream, the
 * room's timers and its entry in each persona's room set change in the
 * same atomic commit as the room record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/event_id.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"
#include <vigil/record_cache.h>
#include <vigil/str.h>

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
    return vigil_fx_job_add(c->fx, WAKE_STREAM, WAKE_STREAM, job, c->svc->jobs_maxlen);
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
    vigil_concat(set, sizeof set, WAKE_MEMBER_SET, persona, (const char *)NULL);
    return add ? vigil_fx_set_add(c->fx, set, c->room) : vigil_fx_set_remove(c->fx, set, c->room);
}

static void fx_decided(void *ctx, const wake_decision *d)
{
    (void)ctx;
    char labels[96];
    vigil_concat(labels, sizeof labels, "tier=\"", wake_tier_name(d->tier), "\",via=\"",
                 wake_via_name(d->via), "\",wake=\"", d->should_wake ? "true" : "false", "\"",
                 (const char *)NULL);
    vigil_counter_add("vigil_wake_decisions_total", "Wake decisions published", labels, 1);
}

/* A refusal while deciding on an input goes out as an error event with the
 * commit; without an input (a timer, a job) it is logged and counted. */
static void fx_limit(void *ctx, const char *limit, const char *detail)
{
    wake_fx_ctx *c = ctx;
    if (!c->in) {
        vigil_limit_note(limit, detail);
        return;
    }
    /* "<input id>:limit:<room>:<n>": the room is the input's scope */
    char key[WAKE_ID_MAX + 8], id[WAKE_EVID_MAX + 1];
    vigil_concat(key, sizeof key, "limit:", c->room, (const char *)NULL);
    vigil_event_id(id, sizeof id, c->in->id, key, c->n_limits++);
    if (vigil_fx_limit_refusal(c->fx, WAKE_SERVICE, id, c->in, limit, detail, c->now) != 0)
        vigil_limit_note(limit, detail); /* out of memory: at least the log */
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
        .limit = fx_limit,
    };
}

static void *room_clone(const void *r) { return wake_room_clone(r); }
static void room_free(void *r) { wake_room_free(r); }

/* The parsed room records of this process (intake and workers share it): a
 * commit usually starts from the record the previous one wrote, and parsing
 * a record (tens of kilobytes parsed, hundreds of json-c objects) cost more
 * than the decision. A decision takes the cached record itself and puts the
 * one it derives back (no copies); a record whose commit then fails is
 * keyed by a text Redis never held, so it is never found. */
static vigil_record_cache *_Atomic cache;

static vigil_record_cache *rooms(void)
{
    static const vigil_record_ops ops = {room_clone, room_free};
    return vigil_record_cache_shared(&cache, &ops, WAKE_RECORD_CACHE, WAKE_RECORD_CACHE_BYTES);
}

int wake_with_room(const wake_service *svc, const char *key, const char *state_json,
                   const vigil_input *in, int64_t now, vigil_effects *fx, bool intake,
                   wake_room_fn fn, void *arg)
{
    bool corrupt = false;
    wake_room *r = vigil_record_cache_take(rooms(), key, state_json);
    if (!r)
        r = wake_room_from_json(key, state_json, &corrupt);
    if (!r)
        return -1;
    if (corrupt)
        vigil_log_kv(VIGIL_LOG_WARN, "room record unreadable: starting it afresh", "room", key,
                     NULL);
    wake_fx_ctx c = {svc, fx, key, in, now, 0};
    wake_sink sink;
    wake_sink_fx(&sink, &c, intake);
    int rc = fn(r, &sink, now, arg);
    char *s = rc == 0 ? wake_room_to_json(r) : NULL;
    if (rc == 0)
        rc = s ? vigil_fx_set_state(fx, s) : -1;
    if (rc != 0 || vigil_record_cache_put_sized(rooms(), key, s, r, wake_room_bytes(r)) != 0) {
        free(s); /* not kept: a failed decision, or no cache */
        wake_room_free(r);
    }
    return rc;
}
