/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the room
 * keys it touches:
 *   room/{r}/message          -> r (system messages: none, unless
 *                                VIGIL_WAKE_ON_SYSTEM)
 *   persona/{p}/meta          -> meta.rooms plus every room holding p
 *   persona/{p}/state         -> its rooms map plus every room holding p
 *   persona/{p}/dormancy      -> its `room`
 * "Every room holding p" is the Redis set P S ":persona-rooms:<p>", which
 * the room commits keep up to date, so a room that p left hears of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/log.h>
#include "adapter.h"

#define MAX_MENTIONS 256
#define MAX_DOMAINS 64

static const char *const SENDER_TYPES[] = {"human", "ai", "system", NULL};
static const char *const LEVELS[] = {"active", "mention-only", "human-only", "sleep", NULL};
static const char *const TIERS[] = {"smart", "mid", "basic", NULL};

static int probability(json_object *o, const char *field, double *out, vigil_error *err)
{
    int rc = vigil_json_double(o, field, false, out, err);
    if (rc == 0 && !(*out >= 0.0 && *out <= 1.0))
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field '%s': expected 0..1", field);
    return rc;
}

static int parse_message(const vigil_input *in, wake_parsed *pp, vigil_error *err)
{
    int type, n = 0;
    wake_message *m = &pp->msg;
    pp->kind = WAKE_IN_MESSAGE;
    if (vigil_json_id(in->body, "sender", true, &m->sender, err) < 0 ||
        vigil_json_enum(in->body, "sender_type", true, SENDER_TYPES, &type, err) < 0 ||
        vigil_json_string(in->body, "text", true, &m->text, err) < 0 ||
        vigil_json_string_array(in->body, "mentions", false, true, MAX_MENTIONS, &pp->strings, &n, err) < 0)
        return -1;
    m->id = in->id;
    m->type = (wake_sender)type;
    m->mentions = pp->strings;
    m->n_mentions = n;
    return 0;
}

static int parse_overrides(json_object *b, wake_meta *m, vigil_error *err)
{
    json_object *d = NULL;
    bool v;
    m->auto_wake = m->llm_wake = -1;
    m->wake_conf = -1;
    if (vigil_json_object(b, "dormancy", false, &d, err) < 0)
        return -1;
    if (!d)
        return 0;
    int rc = vigil_json_bool(d, "enableAutoWake", false, &v, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        m->auto_wake = v;
    rc = vigil_json_bool(d, "enableLLMWakeDecisions", false, &v, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        m->llm_wake = v;
    double c;
    rc = probability(d, "wakeConfidenceThreshold", &c, err);
    if (rc < 0)
        return -1;
    if (rc == 0)
        m->wake_conf = c;
    return 0;
}

static int parse_confidence(json_object *b, wake_parsed *pp, vigil_error *err)
{
    json_object *cl = NULL;
    wake_meta *m = &pp->meta;
    if (vigil_json_object(b, "confidence_levels", false, &cl, err) < 0)
        return -1;
    if (!cl)
        return 0;
    int n = json_object_object_length(cl);
    if (n > MAX_DOMAINS)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'confidence_levels': more than %d entries", MAX_DOMAINS);
    const char **keys = calloc((size_t)n + 1, sizeof *keys);
    pp->conf_values = calloc((size_t)n + 1, sizeof *pp->conf_values);
    if (!keys || !pp->conf_values) {
        free(keys);
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    }
    int i = 0;
    json_object_object_foreach(cl, k, v) {
        if (!v || !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))) {
            free(keys);
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'confidence_levels.%.60s': expected number", k);
        }
        double x = json_object_get_double(v);
        if (!(x >= 0.0 && x <= 1.0)) {
            free(keys);
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'confidence_levels.%.60s': expected 0..1", k);
        }
        keys[i] = k;
        pp->conf_values[i++] = x;
    }
    m->conf_domains = keys;
    m->conf_values = pp->conf_values;
    m->n_conf = i;
    return 0;
}

static int parse_meta(const vigil_input *in, const char *persona, wake_parsed *pp,
                      vigil_error *err)
{
    json_object *b = in->body;
    wake_meta *m = &pp->meta;
    int tier = -1, nd = 0;
    pp->kind = WAKE_IN_META;
    m->persona = persona;
    m->parameters = -1;
    m->availability = -1;
    if (vigil_json_string(b, "name", false, &m->name, err) < 0 ||
        vigil_json_string(b, "role", false, &m->role, err) < 0 ||
        vigil_json_string(b, "model", false, &m->model, err) < 0 ||
        vigil_json_string(b, "mood", false, &m->mood, err) < 0 ||
        vigil_json_enum(b, "tier", false, TIERS, &tier, err) < 0 ||
        vigil_json_int64(b, "parameters", false, &m->parameters, err) < 0 ||
        probability(b, "availability", &m->availability, err) < 0 ||
        vigil_json_string_array(b, "rooms", false, true, VIGIL_ROUTE_MAX_KEYS, &pp->rooms, &pp->n_rooms, err) < 0 ||
        vigil_json_string_array(b, "expertise_domains", false, false, MAX_DOMAINS, &pp->strings, &nd, err) < 0 ||
        parse_confidence(b, pp, err) < 0 || parse_overrides(b, m, err) < 0)
        return -1;
    if (m->parameters < -1)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'parameters': negative");
    m->tier = tier >= 0 ? TIERS[tier] : NULL;
    m->domains = pp->strings;
    m->n_domains = nd;
    return 0;
}

/* persona/{p}/state: {persona, rooms: {room: {level, since, trigger}}, ts} */
static int parse_state(const vigil_input *in, const char *persona, wake_parsed *pp,
                       vigil_error *err)
{
    json_object *rooms;
    pp->kind = WAKE_IN_STATE;
    pp->persona = persona;
    pp->state_ts = in->ts;
    if (vigil_json_object(in->body, "rooms", true, &rooms, err) < 0)
        return -1;
    json_object_object_foreach(rooms, room, entry) {
        int level;
        int64_t since;
        const char *trigger;
        if (!vigil_id_valid(room, strlen(room)))
            return vigil_error_set(err, VIGIL_REJECT_BAD_ID, "field 'rooms': key '%.64s' is not an id",
                                   room);
        if (!entry || !json_object_is_type(entry, json_type_object))
            return vigil_error_set(err, VIGIL_REJECT_WRONG_TYPE,
                                   "field 'rooms.%s': expected object", room);
        if (vigil_json_enum(entry, "level", true, LEVELS, &level, err) < 0 ||
            vigil_json_int64(entry, "since", false, &since, err) < 0 ||
            vigil_json_string(entry, "trigger", false, &trigger, err) < 0)
            return -1;
    }
    pp->room_map = rooms;
    return 0;
}

/* persona/{p}/dormancy: {id, persona, room, level, previous, trigger, ..., ts} */
static int parse_dormancy(const vigil_input *in, const char *persona, wake_parsed *pp,
                          const char **room, vigil_error *err)
{
    int level;
    pp->kind = WAKE_IN_DORMANCY;
    pp->persona = persona;
    if (vigil_json_id(in->body, "room", true, room, err) < 0 ||
        vigil_json_enum(in->body, "level", true, LEVELS, &level, err) < 0 ||
        vigil_json_string(in->body, "trigger", false, &pp->trigger, err) < 0)
        return -1;
    wake_level_parse(LEVELS[level], &pp->level);
    pp->since = in->ts;
    return 0;
}

/* Appends the rooms holding persona p (its member set). */
static int persona_rooms(vigil_runtime *rt, const char *persona, char keys[][VIGIL_KEY_MAX],
                         int n, int max, vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX];
    snprintf(suffix, sizeof suffix, WAKE_MEMBER_SET "%s", persona);
    return vigil_runtime_route_members(rt, "SMEMBERS", suffix, keys, n, max, NULL, err);
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
        json_object_object_foreach(pp->room_map, r, v) {
            (void)v;
            n = vigil_route_add_key(keys, n, max_keys, r);
        }
        return persona_rooms(rt, persona, keys, n, max_keys, err);
    }
    if (strcmp(kind, "dormancy") == 0) {
        if (parse_dormancy(in, persona, pp, &room, err) < 0)
            return -1;
        return vigil_route_add_key(keys, 0, max_keys, room);
    }
    return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
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
    free(pp->strings);
    free(pp->conf_values);
    free(pp->rooms);
    free((void *)pp->meta.conf_domains);
    free(pp);
}
