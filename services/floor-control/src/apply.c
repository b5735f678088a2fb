/* apply.c - runs the core on one room record and turns its result into
 * effects: the new room view, the member set of a persona that joined or
 * left, and for a decided message the room's room/{r}/floor event plus
 * each persona's persona/{p}/floor copy. Event ids are deterministic
 * (<message id>:<room>:<n>) so a redelivered message, and the LLM path and
 * its deadline alike, yield the same ids.
 *
 * With LLM relevance on, a human message with more able personas than K
 * waits in the room record: a job goes to the durable stream (the worker
 * asks the model) and a timer to its deadline; whichever comes first
 * decides, and removes the waiting message.
 *
 * What a bound refused of the input (the core's notes on the room) goes
 * out as error events with the input's other effects (vigil/limits.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include "adapter.h"

floor_room *floor_load_room(const char *key, const char *state_json)
{
    if (!state_json)
        return floor_room_new(key);
    char err[200];
    floor_room *r = floor_room_from_json(state_json, key, err, sizeof err);
    if (!r) {
        /* refusing every later input of the room forever would be worse */
        vigil_log_kv(VIGIL_LOG_ERROR, "unreadable room record replaced", "room", key, "error", err, NULL);
        r = floor_room_new(key);
    }
    return r;
}

int floor_save_room(const floor_room *r, vigil_effects *fx)
{
    json_object *o = floor_room_to_json(r);
    char *s = o ? vigil_json_dump(o) : NULL;
    int rc = s ? vigil_fx_set_state(fx, s) : -1;
    free(s);
    json_object_put(o);
    return rc;
}

static int publish_obj(vigil_effects *fx, const char *topic, json_object *o)
{
    if (!o)
        return -1;
    int rc = vigil_fx_publish_json(fx, topic, o, false);
    json_object_put(o);
    return rc;
}

static int membership(vigil_effects *fx, const char *persona, const char *room, bool joined, bool left)
{
    char name[VIGIL_KEY_MAX];
    snprintf(name, sizeof name, FLOOR_MEMBER_SET "%s", persona);
    if (joined)
        return vigil_fx_set_add(fx, name, room);
    if (left)
        return vigil_fx_set_remove(fx, name, room);
    return 0;
}

int floor_publish_decision(const floor_service *svc, const floor_room *r, const floor_message *m,
                           const char *source, const char *fallback, int64_t now, vigil_effects *fx)
{
    floor_decision d;
    floor_result res = floor_choose(r, &svc->cfg, m, &d);
    if (res == FLOOR_NO_DECISION)
        return 0;
    if (res != FLOOR_DECIDED)
        return -1;
    d.source = source;
    d.fallback = fallback;
    char id[VIGIL_EVENT_ID_MAX + 1], topic[VIGIL_TOPIC_MAX];
    vigil_event_id(id, sizeof id, m->id, r->room, 0);
    snprintf(topic, sizeof topic, "room/%s/floor", r->room);
    int rc = publish_obj(fx, topic, floor_room_event_json(r, &svc->cfg, &d, id, m->id, now));
    for (int i = 0; rc == 0 && i < d.n; i++) {
        const char *p = d.v[i].id;
        vigil_event_id(id, sizeof id, m->id, r->room, i + 1);
        snprintf(topic, sizeof topic, "persona/%s/floor", p);
        rc = publish_obj(fx, topic, floor_persona_event_json(r, &svc->cfg, &d, i, id, m->id, now));
    }
    floor_decision_free(&d);
    return rc;
}

/* The job for the worker: {room, message_id, prompt, due}. */
static int enqueue(const floor_room *r, const floor_service *svc, const floor_message *m, int64_t due,
                   vigil_effects *fx)
{
    char *prompt = floor_llm_prompt(r, &svc->cfg, m);
    json_object *o = json_object_new_object();
    int rc = -1;
    if (prompt && o) {
        json_object_object_add(o, "room", json_object_new_string(r->room));
        json_object_object_add(o, "message_id", json_object_new_string(m->id));
        json_object_object_add(o, "prompt", json_object_new_string(prompt));
        json_object_object_add(o, "due", json_object_new_int64(due));
        char *s = vigil_json_dump(o);
        rc = s ? vigil_fx_job_add(fx, FLOOR_JOBS, FLOOR_JOBS, s, svc->jobs_maxlen) : -1;
        free(s);
    }
    free(prompt);
    json_object_put(o);
    return rc;
}

/* A human message: decided now by the rules, or kept waiting for the LLM
 * (*changed: the room record holds it). */
static int on_message(const floor_service *svc, floor_room *r, const floor_message *m, int64_t now,
                      vigil_effects *fx, bool *changed)
{
    floor_message probe = *m;
    int rankable = svc->llm_on && m->sender_type == FLOOR_SENDER_HUMAN
                       ? floor_rankable(r, &svc->cfg, &probe, NULL)
                       : 0;
    if (rankable < 0)
        return -1;
    bool ask = rankable > svc->cfg.k;
    if (!ask)
        return floor_publish_decision(svc, r, m, "rules", NULL, now, fx);
    int64_t due = now + svc->cfg.llm_budget_ms;
    if (floor_pending_find(r, m->id))
        return 0; /* already waiting (a redelivery) */
    const char *refused = NULL;
    int rc = floor_pending_add(r, m, due, &refused);
    if (rc < 0)
        return -1;
    if (rc > 0) /* a bound: the rules decide now, and the fallback says why */
        return floor_publish_decision(svc, r, m, "rules", refused, now, fx);
    char timer[FLOOR_TIMER_NAME_MAX];
    floor_timer_name(m->id, timer, sizeof timer);
    *changed = true;
    if (vigil_fx_timer_set(fx, timer, due) != 0 || enqueue(r, svc, m, due, fx) != 0)
        return -1;
    return 0;
}

/* room/{r}/control delete: the personas leave the room (and their member
 * sets), unless the room had a message since if_inactive_since. */
static int forget(floor_room *r, int64_t if_inactive_since, vigil_effects *fx, bool *changed)
{
    if (!floor_may_forget(r, if_inactive_since))
        return 0;
    for (int i = 0; i < r->n; i++)
        if (membership(fx, r->personas[i].id, r->room, false, true) != 0)
            return -1;
    floor_forget(r);
    *changed = true;
    return 0;
}

/* Says what the bounds refused of this input in room r: an error event
 * per note (ids "<input id>:limit:<room>:<n>", apart from the decision's
 * "<input id>:<room>:<n>") counted in vigil_limit_refusals_total; and the
 * personas the room's bound dropped leave their member sets. */
static int speak(const floor_room *r, const vigil_input *in, int64_t now, vigil_effects *fx)
{
    char key[FLOOR_ID_MAX + 8], id[VIGIL_EVENT_ID_MAX + 1];
    for (int i = 0; i < r->n_dropped; i++)
        if (membership(fx, r->dropped[i], r->room, false, true) != 0)
            return -1;
    snprintf(key, sizeof key, "limit:%s", r->room);
    for (int i = 0; i < r->n_notes; i++) {
        vigil_event_id(id, sizeof id, in->id, key, i);
        if (vigil_fx_limit_refusal(fx, FLOOR_SERVICE, id, in, r->notes[i].limit,
                                   r->notes[i].detail, now) != 0)
            return -1;
    }
    return 0;
}

/* persona/{p}/state's entry for this room (route() read it); without one
 * (a room p is in that the state does not list, or a cleared state) the
 * room forgets p's level. */
static bool learn_state(const floor_service *svc, floor_room *r, const floor_parsed *pp,
                        int64_t now, bool *joined, bool *left)
{
    const vigil_persona_room_state *e = vigil_persona_state_room(&pp->state, r->room);
    if (!e)
        return floor_forget_level(r, pp->persona, left);
    /* an entry without `order` comes from a dormancy-monitor older than
     * cause and order: its cause is unknown (the trigger list decides) */
    floor_state_entry st = {.level = (floor_level)e->level, .trigger = e->trigger ? e->trigger : "",
                            .cause = e->has_order ? e->cause : FLOOR_UNKNOWN,
                            .answered_human = e->answered_human,
                            .order = e->has_order ? e->order : FLOOR_UNKNOWN};
    return floor_learn_level(r, &svc->cfg, pp->persona, &st, now, joined);
}

int floor_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const floor_service *svc = ctx;
    const floor_parsed *pp = parsed;
    floor_room *r = floor_load_room(key, state_json);
    if (!r)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    bool changed = false, joined = false, left = false;
    const char *who = pp->persona;
    int rc = 0;
    switch (pp->kind) {
    case FLOOR_IN_MESSAGE:
        floor_learn_message(r, now_ms);
        changed = true; /* last_message */
        rc = on_message(svc, r, &pp->msg, now_ms, fx, &changed);
        if (rc == 0 && pp->msg.sender_type == FLOOR_SENDER_AI) {
            changed |= floor_learn_spoke(r, &svc->cfg, pp->msg.sender, now_ms, &joined);
            who = pp->msg.sender;
        }
        break;
    case FLOOR_IN_META:
        changed = floor_learn_meta(r, &svc->cfg, &pp->meta, now_ms, &joined, &left);
        break;
    case FLOOR_IN_STATE:
        changed = learn_state(svc, r, pp, now_ms, &joined, &left);
        break;
    case FLOOR_IN_DELETE:
        rc = forget(r, pp->if_inactive_since, fx, &changed);
        break;
    }
    if (rc == 0 && (joined || left))
        rc = membership(fx, who, r->room, joined, left);
    if (rc == 0)
        rc = speak(r, in, now_ms, fx);
    if (rc == 0 && changed)
        rc = floor_save_room(r, fx);
    floor_room_free(r);
    if (rc != 0)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    return 0;
}

/* A waiting message's deadline: no LLM answer was committed by then (the
 * model slow or failing, Redis away, the job trimmed or its worker
 * stopped), the rules decide. The fallback says only that, which is true
 * whichever it was: the model may never have been asked. */
int floor_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                   int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    const floor_service *svc = ctx;
    floor_room *r = floor_load_room(key, state_json);
    if (!r)
        return -1;
    floor_pending *p = floor_pending_by_timer(r, timer_name);
    int rc = 0;
    if (p) {
        const char *ptrs[FLOOR_MAX_MENTIONS];
        floor_message m;
        char note[120], id[FLOOR_MSG_ID_MAX + 1];
        floor_pending_message(p, ptrs, &m);
        snprintf(note, sizeof note,
                 "the decision deadline (%" PRId64 " ms) passed before an LLM answer was committed",
                 svc->cfg.llm_budget_ms);
        rc = floor_publish_decision(svc, r, &m, "rules", note, now_ms, fx);
        snprintf(id, sizeof id, "%s", p->id);
        floor_pending_remove(r, id);
        if (rc == 0)
            rc = floor_save_room(r, fx);
    }
    floor_room_free(r);
    return rc;
}
