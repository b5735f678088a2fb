/* route.c - validates every input this service reads (a bad field is a
 * reject with a precise reason, never a crash, never a state change) and
 * names the room keys it touches:
 *   room/{r}/message      -> r (human: the decision; AI: who spoke when;
 *                              system messages and, with K=0, everything
 *                              is acknowledged and ignored)
 *   room/{r}/control      -> r for `delete` (forget the room's personas);
 *                              the other actions are not ours: ignored
 *   persona/{p}/meta      -> meta.rooms plus every room p is in
 *   persona/{p}/state     -> the rooms of its `rooms` map
 * "Every room p is in" is this service's own member set of p. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "adapter.h"

#define MAX_MENTIONS 256
#define MAX_DOMAINS 64

static const char *const SENDER_TYPES[] = {"human", "ai", "system", NULL};
static const char *const LEVELS[] = {"active", "mention-only", "human-only", "sleep", NULL};
static const char *const CONTROL_ACTIONS[] = {"pause", "resume", "delete", "wake", NULL};
enum { ACTION_DELETE = 2 };

/* room/{r}/message. Fields the choice does not use (reply_to, depth,
 * proactive) are still type-checked: a wrong type is a producer bug. */
static int parse_message(const vigil_input *in, floor_parsed *pp, vigil_error *err)
{
    json_object *b = in->body;
    int type, n = 0;
    const char *reply_to;
    int64_t depth;
    bool proactive;
    pp->kind = FLOOR_IN_MESSAGE;
    if (vigil_json_id(b, "sender", true, &pp->msg.sender, err) < 0 ||
        vigil_json_enum(b, "sender_type", true, SENDER_TYPES, &type, err) < 0 ||
        vigil_json_string(b, "text", true, &pp->msg.text, err) < 0 ||
        vigil_json_string_bounded(b, "reply_to", false, VIGIL_EVENT_ID_MAX, &reply_to, err) < 0 ||
        vigil_json_string_array(b, "mentions", false, true, MAX_MENTIONS, &pp->mentions, &n, err) < 0 ||
        vigil_json_int64(b, "depth", false, &depth, err) < 0 ||
        vigil_json_bool(b, "proactive", false, &proactive, err) < 0)
        return -1;
    pp->msg.id = in->id;
    pp->msg.sender_type = (floor_sender_type)type;
    pp->msg.mentions = pp->mentions;
    pp->msg.n_mentions = n;
    return 0;
}

/* room/{r}/control: every field type-checked; only `delete` concerns us.
 * Returns 1 for a delete, 0 for an action that is not ours, -1 to reject. */
static int parse_control(const vigil_input *in, floor_parsed *pp, vigil_error *err)
{
    json_object *b = in->body;
    int action;
    bool all = false;
    const char *by, *persona;
    int64_t since = 0;
    if (vigil_json_enum(b, "action", true, CONTROL_ACTIONS, &action, err) < 0 ||
        vigil_json_bool(b, "all", false, &all, err) < 0 ||
        vigil_json_id(b, "by", false, &by, err) < 0 ||
        vigil_json_id(b, "persona", false, &persona, err) < 0 ||
        vigil_json_int64(b, "if_inactive_since", false, &since, err) < 0)
        return -1;
    if (since < 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'if_inactive_since': must be >= 0");
    pp->kind = FLOOR_IN_DELETE;
    pp->if_inactive_since = since;
    return action == ACTION_DELETE;
}

/* confidence_levels: {domain: number in 0..1}. */
static int check_confidence(json_object *conf, vigil_error *err)
{
    json_object_object_foreach(conf, domain, v) {
        if (!v || (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)))
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'confidence_levels.%.64s': expected number", domain);
        double d = json_object_get_double(v);
        if (!(d >= 0.0 && d <= 1.0))
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'confidence_levels.%.64s': expected 0..1", domain);
    }
    return 0;
}

/* persona/{p}/meta: only what the choice uses (name, rooms, role,
 * expertise_domains, confidence_levels); the rest belongs to others. */
static int parse_meta(const vigil_input *in, const char *persona, floor_parsed *pp, vigil_error *err)
{
    json_object *b = in->body, *conf = NULL;
    floor_meta *m = &pp->meta;
    pp->kind = FLOOR_IN_META;
    pp->persona = persona;
    m->persona = persona;
    if (vigil_json_string(b, "name", false, &m->name, err) < 0 ||
        vigil_json_string(b, "role", false, &m->role, err) < 0 ||
        vigil_json_string_array(b, "rooms", false, true, VIGIL_ROUTE_MAX_KEYS, &pp->rooms, &m->n_rooms, err) < 0 ||
        vigil_json_string_array(b, "expertise_domains", false, false, MAX_DOMAINS, &pp->domains,
                                &m->n_domains, err) < 0 ||
        vigil_json_object(b, "confidence_levels", false, &conf, err) < 0)
        return -1;
    for (int i = 0; i < m->n_domains; i++) {
        size_t len = strlen(pp->domains[i]);
        if (len == 0 || len > FLOOR_WORD_MAX)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'expertise_domains[%d]': expected 1..%d bytes", i, FLOOR_WORD_MAX);
    }
    if (conf && check_confidence(conf, err) < 0)
        return -1;
    m->rooms = pp->rooms;
    m->domains = pp->domains;
    m->confidence = conf;
    return 0;
}

/* persona/{p}/state (dormancy-monitor's retained snapshot):
 * {persona, rooms: {room: {level, since?, trigger?}}, ts}. */
static int parse_state(const vigil_input *in, const char *persona, floor_parsed *pp,
                       char keys[][VIGIL_KEY_MAX], int max_keys, vigil_error *err)
{
    json_object *map;
    pp->kind = FLOOR_IN_STATE;
    pp->persona = persona;
    if (vigil_json_object(in->body, "rooms", true, &map, err) < 0)
        return -1;
    int n = 0;
    json_object_object_foreach(map, room, entry) {
        int level;
        const char *trigger;
        int64_t since;
        if (!vigil_id_valid(room, strlen(room)))
            return vigil_error_set(err, VIGIL_REJECT_BAD_ID, "field 'rooms': key '%.64s' is not an id", room);
        if (!entry || !json_object_is_type(entry, json_type_object))
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE, "field 'rooms.%s': expected object", room);
        if (vigil_json_enum(entry, "level", true, LEVELS, &level, err) < 0 ||
            vigil_json_string(entry, "trigger", false, &trigger, err) < 0 ||
            vigil_json_int64(entry, "since", false, &since, err) < 0)
            return -1;
        n = vigil_route_add_key(keys, n, max_keys, room);
    }
    pp->room_map = map;
    return n;
}

static int persona_rooms(vigil_runtime *rt, const char *persona, char keys[][VIGIL_KEY_MAX], int n,
                         int max, vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX];
    snprintf(suffix, sizeof suffix, FLOOR_MEMBER_SET "%s", persona);
    return vigil_runtime_route_members(rt, "SMEMBERS", suffix, keys, n, max, NULL, err);
}

static int route_input(const floor_service *svc, vigil_runtime *rt, const vigil_input *in,
                       floor_parsed *pp, char keys[][VIGIL_KEY_MAX], int max_keys, vigil_error *err)
{
    const char *id;
    const char *kind = in->parts[2];
    if (strcmp(in->parts[0], "room") == 0 && strcmp(kind, "message") == 0) {
        if (vigil_input_topic_id(in, 1, "room", &id, err) < 0 || parse_message(in, pp, err) < 0)
            return -1;
        if (svc->cfg.k == 0 || pp->msg.sender_type == FLOOR_SENDER_SYSTEM)
            return 0; /* off, or a system message: nothing to learn or decide */
        return vigil_route_add_key(keys, 0, max_keys, id);
    }
    if (strcmp(in->parts[0], "room") == 0 && strcmp(kind, "control") == 0) {
        if (vigil_input_topic_id(in, 1, "room", &id, err) < 0)
            return -1;
        int rc = parse_control(in, pp, err);
        return rc <= 0 ? rc : vigil_route_add_key(keys, 0, max_keys, id);
    }
    if (strcmp(in->parts[0], "persona") != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    if (vigil_input_topic_id(in, 1, "persona", &id, err) < 0)
        return -1;
    if (strcmp(kind, "meta") == 0) {
        if (parse_meta(in, id, pp, err) < 0)
            return -1;
        int n = 0;
        for (int i = 0; i < pp->meta.n_rooms; i++)
            n = vigil_route_add_key(keys, n, max_keys, pp->meta.rooms[i]);
        return persona_rooms(rt, id, keys, n, max_keys, err);
    }
    if (strcmp(kind, "state") == 0)
        return parse_state(in, id, pp, keys, max_keys, err);
    return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
}

int floor_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                int max_keys, void **parsed, vigil_error *err)
{
    *parsed = NULL;
    if (in->nparts != 3)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    floor_parsed *pp = calloc(1, sizeof *pp);
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    int n = route_input(ctx, rt, in, pp, keys, max_keys, err);
    if (n <= 0) { /* nothing to do, reject, or VIGIL_ROUTE_RETRY */
        floor_free_parsed(ctx, pp);
        return n;
    }
    *parsed = pp;
    return n;
}

void floor_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    floor_parsed *pp = parsed;
    if (!pp)
        return;
    free(pp->mentions);
    free(pp->rooms);
    free(pp->domains);
    free(pp);
}
