/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the room
 * keys it touches:
 *   room/{r}/message          -> r (system messages: none, unless
 *                                VIGIL_WAKE_ON_SYSTEM)
 *   persona/{p}/meta          -> meta.rooms plus every room holding p
 *   persona/{p}/state         -> its rooms map plus every room holding p
 *   persona/{p}/dormancy      -> its `room`
 * "Every room holding p" is the Redis set P S ":persona-rooms:<p>", which
 * the room commits keep up to date, so a room that p left hears of it. An
 * empty (cleared) retained meta or state is the one that says nothing: the
 * meta {} and the state {"rooms":{}}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include "adapter.h"

/* room/{r}/message through libshared's one reader (same accepts and
 * rejects as every other consumer, depth included). */
static int parse_message(const vigil_input *in, wake_parsed *pp, vigil_error *err)
{
    wake_message *m = &pp->msg;
    pp->kind = WAKE_IN_MESSAGE;
    if (vigil_room_message_read(in->body, &pp->room_msg, err) < 0)
        return -1;
    m->id = in->id;
    m->sender = pp->room_msg.sender;
    m->type = (wake_sender)pp->room_msg.sender_type;
    m->text = pp->room_msg.text;
    m->mentions = pp->room_msg.mentions;
    m->n_mentions = pp->room_msg.n_mentions;
    return 0;
}

/* persona/{p}/meta through libshared's one reader, its `dormancy`
 * overrides included (a cleared one is the meta that says nothing); the
 * core sees the fields it uses. */
static int parse_meta(const vigil_input *in, const char *persona, wake_parsed *pp,
                      vigil_error *err)
{
    wake_meta *m = &pp->meta;
    const vigil_persona_meta *v = &pp->persona_meta;
    const vigil_dormancy_overrides *ov = &v->dormancy;
    pp->kind = WAKE_IN_META;
    if (in->cleared)
        vigil_persona_meta_init(&pp->persona_meta);
    else if (vigil_persona_meta_read(in->body, VIGIL_ROUTE_MAX_KEYS, &pp->persona_meta, err) < 0)
        return -1;
    m->persona = persona;
    m->name = v->name;
    m->role = v->role;
    m->model = v->model;
    m->mood = v->mood;
    m->tier = v->has_tier ? vigil_tier_names[v->tier] : NULL;
    m->parameters = v->parameters;
    m->availability = v->availability;
    m->domains = v->domains;
    m->n_domains = v->n_domains;
    m->conf_domains = v->conf_domains;
    m->conf_values = v->conf_values;
    m->n_conf = v->n_conf;
    m->auto_wake = ov->has & VIGIL_OV_AUTO_WAKE ? ov->auto_wake : -1;
    m->llm_wake = ov->has & VIGIL_OV_LLM_WAKE ? ov->llm_wake : -1;
    m->wake_conf = ov->has & VIGIL_OV_WAKE_CONFIDENCE ? ov->wake_confidence : -1;
    pp->rooms = v->rooms;
    pp->n_rooms = v->n_rooms;
    return 0;
}

/* persona/{p}/state: {persona, rooms: {room: {level, since, trigger}}, ts};
 * a cleared one is the state of no room (pp->state stays zeroed). */
static int parse_state(const vigil_input *in, const char *persona, wake_parsed *pp,
                       vigil_error *err)
{
    pp->kind = WAKE_IN_STATE;
    pp->persona = persona;
    pp->state_ts = in->ts;
    if (in->cleared)
        return 0;
    return vigil_persona_state_read(in->body, VIGIL_ROUTE_MAX_KEYS, &pp->state, err);
}

/* persona/{p}/dormancy: {id, persona, room, level, previous, trigger, ..., ts} */
static int parse_dormancy(const vigil_input *in, const char *persona, wake_parsed *pp,
                          const char **room, vigil_error *err)
{
    int level;
    pp->kind = WAKE_IN_DORMANCY;
    pp->persona = persona;
    if (vigil_json_id(in->body, "room", true, room, err) < 0 ||
        vigil_json_enum(in->body, "level", true, vigil_level_names, &level, err) < 0 ||
        vigil_json_string(in->body, "trigger", false, &pp->trigger, err) < 0)
        return -1;
    pp->level = wake_level_from((vigil_level)level);
    pp->since = in->ts;
    return 0;
}

/* Appends the rooms holding persona p (its member set). */
static int persona_rooms(vigil_runtime *rt, const char *persona, char keys[][VIGIL_KEY_MAX],
                         int n, int max, vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX];
    snprintf(suffix, sizeof suffix, WAKE_MEMBER_SET "%s", persona);
    char what[VIGIL_KEY_MAX];
    snprintf(what, sizeof what, "persona '%s' is in", persona);
    return vigil_route_members_noted(rt, "SMEMBERS", suffix, VIGIL_LIMIT_ROOMS_PER_INPUT, what,
                                     "rooms", keys, n, max, err);
}

static int route_persona(vigil_runtime *rt, const vigil_input *in, wake_parsed *pp,
                         char keys[][VIGIL_KEY_MAX], int max_keys, vigil_error *err)
{
    const char *persona, *room = NULL;
    const char *kind = in->parts[2];
    int n = 0;
    if (vigil_input_topic_id(in, 1, "persona", &persona, err) < 0)
        return -1;
    if (strcmp(kind, "meta") == 0) {
        if (parse_meta(in, persona, pp, err) < 0)
            return -1;
        for (int i = 0; i < pp->n_rooms; i++)
            n = vigil_route_add_key(keys, n, max_keys, pp->rooms[i]);
        return persona_rooms(rt, persona, keys, n, max_keys, err);
    }
    if (strcmp(kind, "state") == 0) {
        if (parse_state(in, persona, pp, err) < 0)
            return -1;
        for (int i = 0; i < pp->state.n_rooms; i++)
            n = vigil_route_add_key(keys, n, max_keys, pp->state.rooms[i].room);
        return persona_rooms(rt, persona, keys, n, max_keys, err);
    }
    if (strcmp(kind, "dormancy") == 0) {
        if (parse_dormancy(in, persona, pp, &room, err) < 0)
            return -1;
        return vigil_route_add_key(keys, 0, max_keys, room);
    }
    return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
}

/* An empty retained persona/{p}/meta or persona/{p}/state clears it (see
 * parse_meta, parse_state); every other empty payload stays a bad input
 * (not_json). */
bool wake_clear_topic(const char *topic)
{
    return vigil_topic_is_kind(topic, "persona", "meta") ||
           vigil_topic_is_kind(topic, "persona", "state");
}

int wake_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
               int max_keys, void **parsed, vigil_error *err)
{
    const wake_service *svc = ctx;
    *parsed = NULL;
    bool room = in->nparts == 3 && strcmp(in->parts[0], "room") == 0 &&
                strcmp(in->parts[2], "message") == 0;
    if (!room && (in->nparts != 3 || strcmp(in->parts[0], "persona") != 0))
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    wake_parsed *pp = calloc(1, sizeof *pp);
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    int n;
    if (room) {
        const char *r;
        n = vigil_input_topic_id(in, 1, "room", &r, err) < 0 || parse_message(in, pp, err) < 0
                ? -1
                : 1;
        if (n == 1) {
            if (pp->msg.type == WAKE_SENDER_SYSTEM && !svc->core.evaluate_system)
                n = 0; /* Vigil's own notices feed no rule */
            else
                snprintf(keys[0], VIGIL_KEY_MAX, "%s", r);
        }
    } else {
        n = route_persona(rt, in, pp, keys, max_keys, err);
    }
    if (n <= 0) { /* nothing to do, reject, or VIGIL_ROUTE_RETRY */
        wake_free_parsed(ctx, pp);
        return n;
    }
    *parsed = pp;
    return n;
}

void wake_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    wake_parsed *pp = parsed;
    if (!pp)
        return;
    vigil_room_message_release(&pp->room_msg);
    vigil_persona_meta_release(&pp->persona_meta);
    vigil_persona_state_release(&pp->state);
    free(pp);
}
