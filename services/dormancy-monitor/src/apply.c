/* apply.c - runs the core on one room record and turns its actions into
 * effects: the new state, events (each with a deterministic id from the
 * input id, the room and its rank, so a redelivered input yields the same
 * ids; a cleared meta, which has no id, gets one in route.c), timers, and
 * the retained persona/{p}/state and room/{r}/state. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/limits.h>
#include <vigil/record_cache.h>
#include <vigil/str.h>
#include <vigil/log.h>
#include <vigil/unique.h>
#include "adapter.h"

/* An input's actions start on the stack (dormancy_actions_init_in): the
 * usual input makes four or five (an event, timers, the snapshots). */
#define ACTIONS_INLINE 8

typedef struct id_ctx {
    const char *input_id;
    const char *room;
} id_ctx;

/* An event id of the contract's length (eventId: at most 128 characters),
 * however long the input id and room: vigil_event_id hashes the excess. */
static void make_id(void *ctx, int n, char *out, size_t outlen)
{
    const id_ctx *c = ctx;
    vigil_event_id(out, outlen < VIGIL_EVENT_ID_MAX + 1 ? outlen : VIGIL_EVENT_ID_MAX + 1,
                   c->input_id, c->room, n);
}

static void *room_clone(const void *r) { return dormancy_room_clone(r); }
static void room_free(void *r) { dormancy_room_free(r); }

/* The parsed room records of this process: a commit usually starts from
 * the record the previous commit of the room wrote, and parsing a record
 * of 1,000 personas cost more than the decision. A decision takes the
 * cached record itself and puts the one it derives back (no copies); a
 * record whose commit then fails is keyed by a text Redis never held, so
 * it is never found. */
static vigil_record_cache *_Atomic cache;

static vigil_record_cache *rooms(void)
{
    static const vigil_record_ops ops = {room_clone, room_free};
    return vigil_record_cache_shared(&cache, &ops, DORMANCY_RECORD_CACHE,
                                     DORMANCY_RECORD_CACHE_BYTES);
}

/* A record that cannot be read is replaced by a fresh one (and logged):
 * refusing every later input of the room forever would be worse. The head
 * of a record in parts whose room this process no longer holds sets
 * *whole: the runtime then hands over the whole record. */
static dormancy_room *load_room(const char *key, const char *state_json, bool *whole)
{
    *whole = false;
    if (!state_json)
        return dormancy_room_new(key);
    dormancy_room *hit = vigil_record_cache_take(rooms(), key, state_json);
    if (hit)
        return hit;
    char err[200];
    dormancy_room *r = dormancy_room_read(state_json, key, whole, err, sizeof err);
    if (!r && *whole)
        return NULL;
    if (!r) {
        vigil_log_kv(VIGIL_LOG_ERROR, "unreadable room record replaced", "room", key, "error", err,
                     NULL);
        r = dormancy_room_new(key);
        if (r)
            r->n_stored = -1; /* whatever parts the store holds go */
    }
    return r;
}

/* The record as a commit writes it: the head, the personas that changed
 * and the ones that left (record_parts.c), all the personas after a read
 * that could not say which parts the store holds. Sets *head to the head
 * written (malloc'd), or leaves it NULL when nothing changed. */
static int write_record(vigil_effects *fx, dormancy_room *r, const char *state_json, char **head)
{
    *head = NULL;
    dormancy_parts_diff d;
    if (dormancy_parts_diff_make(r, &d) != 0)
        return -1;
    char *now = dormancy_room_head_json(r);
    int rc = now ? 0 : -1;
    bool changed = d.whole || d.n_set > 0 || d.n_removed > 0 || !state_json ||
                   (now && strcmp(now, state_json) != 0);
    if (rc == 0 && changed) {
        /* a new token: this head names the record with these parts only */
        r->token = vigil_unique_u64();
        if (!dormancy_room_head_retoken(now, r->token)) {
            free(now);
            now = dormancy_room_head_json(r);
        }
        rc = now ? vigil_fx_set_state(fx, now) : -1;
        if (d.whole)
            vigil_fx_state_parts_reset(fx);
        for (int i = 0; i < d.n_set && rc == 0; i++)
            rc = vigil_fx_state_part(fx, r->personas[d.set[i]].id, d.text[i]);
        for (int i = 0; i < d.n_removed && rc == 0; i++)
            rc = vigil_fx_state_part(fx, d.removed[i], NULL);
        if (rc == 0) {
            dormancy_parts_written(r);
            *head = now;
            now = NULL;
        }
    }
    free(now);
    dormancy_parts_diff_free(&d);
    return rc;
}

/* Publishes and releases o (NULL = allocation failure upstream). */
static int publish_obj(vigil_effects *fx, const char *topic, json_object *o, bool retain)
{
    if (!o)
        return -1;
    int rc = vigil_fx_publish_json(fx, topic, o, retain);
    json_object_put(o);
    return rc;
}

/* Publishes and frees text (NULL = allocation failure upstream). */
static int publish_text(vigil_effects *fx, const char *topic, char *text, bool retain)
{
    if (!text)
        return -1;
    int rc = vigil_fx_publish(fx, topic, text, retain);
    free(text);
    return rc;
}

/* The room's entry in persona/{p}/state (value NULL removes it); the
 * runtime republishes the whole hash, so the retained state gathers every
 * room, whichever shard owns it. */
static int persona_snapshot(vigil_effects *fx, const dormancy_action *a, const char *room,
                            bool remove)
{
    char hash[VIGIL_KEY_MAX], topic[VIGIL_TOPIC_MAX], env[VIGIL_KEY_MAX];
    const char *p = a->persona; /* an id: needs no escaping */
    vigil_concat(hash, sizeof hash, "persona:", p, (const char *)NULL);
    vigil_concat(topic, sizeof topic, "persona/", p, "/state", (const char *)NULL);
    vigil_concat(env, sizeof env, "{\"persona\":\"", p, "\"}", (const char *)NULL);
    char *value = NULL;
    if (!remove) {
        value = dormancy_persona_entry_text(a);
        if (!value)
            return -1;
    }
    int rc = vigil_fx_snapshot_rendered(fx, hash, room, value, topic, env, "rooms");
    free(value);
    return rc;
}

/* Actions in the order the core made them, so a change event precedes the
 * snapshot that reflects it. Any effect that cannot be recorded fails the
 * whole decision (nothing half-committed). */
static int emit(vigil_effects *fx, const dormancy_room *r, const dormancy_config *cfg,
                const dormancy_actions *acts, const vigil_input *in, int64_t now)
{
    char topic[VIGIL_TOPIC_MAX];
    for (size_t i = 0; i < acts->n; i++) {
        const dormancy_action *a = &acts->v[i];
        int rc = 0;
        switch (a->kind) {
        case DORMANCY_OUT_CHANGE:
            vigil_concat(topic, sizeof topic, "persona/", a->persona, "/dormancy",
                         (const char *)NULL);
            rc = publish_text(fx, topic, dormancy_change_text(a, r->room, now), false);
            break;
        case DORMANCY_OUT_SUGGESTION:
            vigil_concat(topic, sizeof topic, "persona/", a->persona, "/suggestion",
                         (const char *)NULL);
            rc = publish_obj(fx, topic, dormancy_suggestion_json(a, r->room, now), false);
            break;
        case DORMANCY_OUT_SYSTEM_MESSAGE:
            vigil_concat(topic, sizeof topic, "room/", r->room, "/message", (const char *)NULL);
            rc = publish_obj(fx, topic,
                             dormancy_system_message_json(a, r->room, DORMANCY_SERVICE, now), false);
            break;
        case DORMANCY_OUT_TIMER_SET:
            rc = vigil_fx_timer_set(fx, a->timer, a->due);
            break;
        case DORMANCY_OUT_TIMER_CANCEL:
            rc = vigil_fx_timer_cancel(fx, a->timer);
            break;
        case DORMANCY_OUT_PERSONA_STATE:
            rc = persona_snapshot(fx, a, r->room, false);
            break;
        case DORMANCY_OUT_PERSONA_REMOVED:
            rc = persona_snapshot(fx, a, r->room, true);
            break;
        case DORMANCY_OUT_ROOM_STATE:
            vigil_concat(topic, sizeof topic, "room/", r->room, "/state", (const char *)NULL);
            rc = publish_text(fx, topic,
                              dormancy_room_state_text_m(r, cfg, now,
                                                         a->has_metrics && a->metrics_at == now
                                                             ? &a->metrics
                                                             : NULL),
                              true);
            break;
        case DORMANCY_OUT_ROOM_CLEARED:
            vigil_concat(topic, sizeof topic, "room/", r->room, "/state", (const char *)NULL);
            rc = vigil_fx_publish(fx, topic, "", true); /* empty retained = cleared */
            break;
        case DORMANCY_OUT_LIMIT:
            rc = vigil_fx_limit_refusal(fx, DORMANCY_SERVICE, a->id, in, "personas_per_room",
                                        a->reason, now);
            vigil_log_kv(VIGIL_LOG_WARN, "limit refused a persona", "room", r->room, "persona",
                         a->persona, "detail", a->reason, NULL);
            break;
        case DORMANCY_OUT_REJECTED:
            break; /* never among a committed decision's actions (dormancy_apply) */
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* The effects of a decision and the new record (if it changed); puts r
 * itself in the record cache and sets *kept when the cache took it. */
static int finish_effects(vigil_effects *fx, dormancy_room *r, const char *state_json,
                          const dormancy_config *cfg, const dormancy_actions *acts,
                          const vigil_input *in, int64_t now, bool *kept)
{
    /* An input about a room never seen that left nothing behind (a wake
     * decision or autopilot for unknown personas, an answer with nothing
     * pending) creates no record and no retained room/{r}/state. */
    if (!state_json && dormancy_room_blank(r))
        return 0;
    if (emit(fx, r, cfg, acts, in, now) != 0)
        return -1;
    char *head = NULL;
    if (write_record(fx, r, state_json, &head) != 0)
        return -1;
    /* the next commit of the room likely starts from this record: the
     * runtime hands over the head just written, or the text it had when
     * nothing changed */
    char *text = head ? head : (state_json ? strdup(state_json) : NULL);
    if (text &&
        vigil_record_cache_put_sized(rooms(), r->room, text, r, dormancy_room_bytes(r)) == 0)
        *kept = true;
    else
        free(text);
    return 0;
}
/* Shared tail of apply and on_timer: commit the new record only if it
 * differs from the one read. Takes r (into the record cache, or freed). */
static int finish(vigil_effects *fx, dormancy_room *r, const char *state_json,
                  const dormancy_config *cfg, const dormancy_actions *acts, const vigil_input *in,
                  int64_t now)
{
    bool kept = false;
    int rc = finish_effects(fx, r, state_json, cfg, acts, in, now, &kept);
    if (!kept)
        dormancy_room_free(r);
    return rc;
}

/* The core's refusal of the input, if it made one. */
static const dormancy_action *rejection(const dormancy_actions *acts)
{
    for (size_t i = 0; i < acts->n; i++)
        if (acts->v[i].kind == DORMANCY_OUT_REJECTED)
            return &acts->v[i];
    return NULL;
}

int dormancy_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                   const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const dormancy_service *svc = ctx;
    const dormancy_parsed *pp = parsed;
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "nothing to apply");
    bool whole;
    dormancy_room *r = load_room(key, state_json, &whole);
    if (!r && whole)
        return VIGIL_NEED_WHOLE;
    if (!r)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    id_ctx ic = {pp->ev.id, key}; /* in->id, or a cleared meta's own (route.c) */
    dormancy_ids ids = {make_id, &ic};
    dormancy_action first[ACTIONS_INLINE];
    dormancy_actions acts;
    dormancy_actions_init_in(&acts, first, ACTIONS_INLINE);
    int rc = dormancy_room_apply(r, &pp->ev, &svc->cfg, now_ms, &ids, &acts);
    const dormancy_action *refused = rc == 0 ? rejection(&acts) : NULL;
    if (refused) { /* the core changed nothing: commit nothing, report it */
        dormancy_room_free(r);
        vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s", refused->reason);
        dormancy_actions_free(&acts);
        return -1;
    }
    if (rc == 0)
        rc = finish(fx, r, state_json, &svc->cfg, &acts, in, now_ms);
    else
        dormancy_room_free(r);
    if (rc != 0)
        vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory applying to room '%s'", key);
    dormancy_actions_free(&acts);
    return rc;
}

int dormancy_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                      int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    const dormancy_service *svc = ctx;
    bool whole;
    dormancy_room *r = load_room(key, state_json, &whole);
    if (!r)
        return whole ? VIGIL_NEED_WHOLE : -1;
    /* One firing of one deadline has one identity: a firing retried after
     * a lease ends yields the same event ids. */
    char input_id[VIGIL_EVENT_ID_MAX + 1];
    snprintf(input_id, sizeof input_id, "timer.%s.%" PRId64, timer_name, due_ms);
    id_ctx ic = {input_id, key};
    dormancy_ids ids = {make_id, &ic};
    dormancy_action first[ACTIONS_INLINE];
    dormancy_actions acts;
    dormancy_actions_init_in(&acts, first, ACTIONS_INLINE);
    int rc = dormancy_room_timer(r, timer_name, due_ms, &svc->cfg, now_ms, &ids, &acts);
    if (rc == 0)
        rc = finish(fx, r, state_json, &svc->cfg, &acts, NULL, now_ms);
    else
        dormancy_room_free(r);
    dormancy_actions_free(&acts);
    return rc;
}
