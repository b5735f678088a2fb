/* apply.c - runs the core on one room record and turns its result into
 * effects: the new room view, the member set of a persona that joined or
 * left, and for a decided message the room's room/{r}/floor event plus
 * each persona's persona/{p}/floor copy. Event ids are deterministic
 * (<input id>:<room>:<n>) so a redelivered message yields the same ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include "adapter.h"

/* A record that cannot be read is replaced by a fresh one (and logged):
 * refusing every later input of the room forever would be worse. */
static floor_room *load_room(const char *key, const char *state_json)
{
    if (!state_json)
        return floor_room_new(key);
    char err[200];
    floor_room *r = floor_room_from_json(state_json, key, err, sizeof err);
    if (!r) {
        vigil_log_kv(VIGIL_LOG_ERROR, "unreadable room record replaced", "room", key, "error", err, NULL);
        r = floor_room_new(key);
    }
    return r;
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

/* The decision for message m: the room event first, then one event per
 * persona (granted first), all in the same commit. */
static int decide(const floor_service *svc, const floor_room *r, const vigil_input *in,
                  const floor_message *m, int64_t now, vigil_effects *fx)
{
    floor_decision d;
    floor_result res = floor_choose(r, &svc->cfg, m, &d);
    if (res == FLOOR_NO_DECISION)
        return 0;
    if (res != FLOOR_DECIDED)
        return -1;
    char id[VIGIL_EVENT_ID_MAX + 1], topic[VIGIL_TOPIC_MAX];
    vigil_event_id(id, sizeof id, in->id, r->room, 0);
    snprintf(topic, sizeof topic, "room/%s/floor", r->room);
    int rc = publish_obj(fx, topic, floor_room_event_json(r, &svc->cfg, &d, id, in->id, now));
    for (int i = 0; rc == 0 && i < d.n; i++) {
        const char *p = r->personas[d.v[i].index].id;
        vigil_event_id(id, sizeof id, in->id, r->room, i + 1);
        snprintf(topic, sizeof topic, "persona/%s/floor", p);
        rc = publish_obj(fx, topic, floor_persona_event_json(r, &svc->cfg, &d, i, id, in->id, now));
    }
    floor_decision_free(&d);
    if (rc == 0)
        vigil_log_kv(VIGIL_LOG_DEBUG, "floor decided", "room", r->room, "message_id", in->id, NULL);
    return rc;
}

/* persona/{p}/state's entry for this room (route() checked its shape). */
static bool learn_state(const floor_service *svc, floor_room *r, const floor_parsed *pp,
                        int64_t now, bool *joined)
{
    json_object *entry, *v;
    if (!json_object_object_get_ex(pp->room_map, r->room, &entry))
        return false;
    int level = json_object_object_get_ex(entry, "level", &v) ? floor_level_parse(json_object_get_string(v)) : -1;
    const char *trigger = json_object_object_get_ex(entry, "trigger", &v) && json_object_is_type(v, json_type_string)
                              ? json_object_get_string(v)
                              : "";
    if (level < 0)
        return false;
    return floor_learn_level(r, &svc->cfg, pp->persona, (floor_level)level, trigger, now, joined);
}

int floor_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const floor_service *svc = ctx;
    const floor_parsed *pp = parsed;
    floor_room *r = load_room(key, state_json);
    if (!r)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory");
    bool changed = false, joined = false, left = false;
    const char *who = pp->persona;
    int rc = 0;
    switch (pp->kind) {
    case FLOOR_IN_MESSAGE:
        rc = decide(svc, r, in, &pp->msg, now_ms, fx);
        if (rc == 0 && pp->msg.sender_type == FLOOR_SENDER_AI) {
            changed = floor_learn_spoke(r, &svc->cfg, pp->msg.sender, now_ms, &joined);
            who = pp->msg.sender;
        }
        break;
    case FLOOR_IN_META:
        changed = floor_learn_meta(r, &svc->cfg, &pp->meta, now_ms, &joined, &left);
        break;
    case FLOOR_IN_STATE:
        changed = learn_state(svc, r, pp, now_ms, &joined);
        break;
    }
    if (rc == 0 && (joined || left))
        rc = membership(fx, who, r->room, joined, left);
    if (rc == 0 && changed) {
        json_object *o = floor_room_to_json(r);
        char *s = o ? vigil_json_dump(o) : NULL;
        rc = s ? vigil_fx_set_state(fx, s) : -1;
        free(s);
        json_object_put(o);
    }
    floor_room_free(r);
    if (rc != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory");
    return 0;
}
