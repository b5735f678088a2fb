/* emit.c - the core's outputs: events with deterministic ids, the
 * retained state, the durable session record, and the timers, re-derived
 * from the record after every decision so they can never drift from it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/event_id.h>
#include <vigil/json.h>
#include "internal.h"

void council_emit_init(council_emit *e, const council_sink *sink, const char *input)
{
    e->sink = sink;
    e->n = 0;
    if (strlen(input) <= 100)
        snprintf(e->input, sizeof e->input, "%s", input);
    else
        snprintf(e->input, sizeof e->input, "h-%016" PRIx64, vigil_hash64(input, strlen(input)));
}

void council_emit_id(council_emit *e, const council_user *u, char *out, size_t cap)
{
    vigil_event_id(out, cap, e->input, u->user, e->n++);
}

json_object *council_event(council_emit *e, const council_user *u, const char *type, int64_t now)
{
    char id[COUNCIL_EVID_MAX + 1];
    council_emit_id(e, u, id, sizeof id);
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "session", json_object_new_string(u->s.id));
    json_object_object_add(o, "user", json_object_new_string(u->user));
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_add(o, "loop", json_object_new_int(u->s.loop));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}

int council_event_send(council_emit *e, const council_user *u, json_object *ev)
{
    if (!ev)
        return -1;
    char topic[160];
    snprintf(topic, sizeof topic, "council/%s/event", u->s.id);
    int rc = e->sink->publish(e->sink->ctx, topic, ev, false);
    json_object_put(ev);
    return rc;
}

int council_event_phase(council_emit *e, const council_user *u, const char *phase,
                        const char *text, json_object *extra, int64_t now)
{
    json_object *ev = council_event(e, u, "phase", now);
    if (!ev) {
        json_object_put(extra);
        return -1;
    }
    json_object_object_add(ev, "phase", json_object_new_string(phase));
    json_object_object_add(ev, "text", json_object_new_string(text));
    if (extra)
        json_object_object_add(ev, "context", extra);
    return council_event_send(e, u, ev);
}

int council_event_reason(council_emit *e, const council_user *u, const char *type,
                         const char *reason, int64_t now)
{
    json_object *ev = council_event(e, u, type, now);
    if (!ev)
        return -1;
    json_object_object_add(ev, "reason", json_object_new_string(reason));
    return council_event_send(e, u, ev);
}

int64_t council_idle_due(const council_user *u, const council_config *c)
{
    const council_session *s = &u->s;
    if (s->status == COUNCIL_PAUSED)
        return s->paused_at + c->idle_timeout_ms;
    int64_t base = s->last_progress;
    if (s->phase == COUNCIL_PHASE_IDLE && s->next_loop_at > base)
        base = s->next_loop_at;
    return base + c->idle_timeout_ms;
}

static int timer(council_emit *e, const char *name, int64_t due)
{
    return e->sink->timer(e->sink->ctx, name, due > 0 ? due : COUNCIL_TIMER_CANCEL);
}

int council_sync_timers(council_emit *e, const council_user *u, const council_config *c)
{
    int rc = 0;
    rc |= timer(e, COUNCIL_TIMER_AUTO,
                c->enabled && c->auto_start && u->enrolled ? u->last_start + c->interval_ms
                                                           : 0);
    if (!u->has_session)
        return rc;
    const council_session *s = &u->s;
    bool live = s->status == COUNCIL_ACTIVE || s->status == COUNCIL_PAUSED;
    bool waiting = s->status == COUNCIL_ACTIVE && s->phase == COUNCIL_PHASE_IDLE;
    rc |= timer(e, COUNCIL_TIMER_LOOP, waiting ? s->next_loop_at : 0);
    rc |= timer(e, COUNCIL_TIMER_IDLE, live ? council_idle_due(u, c) : 0);
    rc |= timer(e, COUNCIL_TIMER_QEXP, live ? council_questions_next_expiry(&s->questions) : 0);
    return rc;
}

int council_sync(council_emit *e, council_user *u, const council_config *c, int64_t now)
{
    int rc = council_sync_timers(e, u, c);
    if (!u->has_session)
        return rc;
    char topic[160], name[96];
    snprintf(topic, sizeof topic, "council/%s/state", u->s.id);
    json_object *st = council_state_payload(u, now);
    rc |= st ? e->sink->publish(e->sink->ctx, topic, st, true) : -1;
    json_object_put(st);
    snprintf(name, sizeof name, "rec:%s", u->s.id);
    json_object *rec = council_session_record(u);
    rc |= rec ? e->sink->record(e->sink->ctx, name, rec) : -1;
    json_object_put(rec);
    return rc;
}
