/* route.c - validates every input this service reads (a bad field is a
 * reject with a precise reason, never a crash, never a state change) and
 * names the room keys it touches:
 *   room/{r}/message      -> r (human: the decision; AI: who spoke when;
 *                              system messages and, with K=0, everything
 *                              is acknowledged and ignored)
 *   room/{r}/control      -> r for `delete` (forget the room's personas);
 *                              the other actions are not ours: ignored
 *   persona/{p}/meta      -> meta.rooms plus every room p is in
 *   persona/{p}/state     -> the rooms of its `rooms` map plus every room
 *                              p is in (a room it no longer lists forgets
 *                              p's level)
 * "Every room p is in" is this service's own member set of p. An empty
 * (cleared) retained meta or state is the one that says nothing: the meta
 * {} and the state {"rooms":{}}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/limits.h>
#include "adapter.h"

/* room/{r}/message through libshared's reader (every field checked, the
 * same reasons as every other consumer). */
static int parse_message(const vigil_input *in, floor_parsed *pp, vigil_error *err)
{
    pp->kind = FLOOR_IN_MESSAGE;
    if (vigil_room_message_read(in->body, &pp->room_msg, err) < 0)
        return -1;
    pp->msg.id = in->id;
    pp->msg.sender = pp->room_msg.sender;
    pp->msg.sender_type = (floor_sender_type)pp->room_msg.sender_type;
    pp->msg.text = pp->room_msg.text;
    pp->msg.mentions = pp->room_msg.mentions;
    pp->msg.n_mentions = pp->room_msg.n_mentions;
    return 0;
}

/* room/{r}/control: checked whole by libshared's reader; only `delete`
 * concerns us. Returns 1 for a delete, 0 for an action that is not ours,
 * -1 to reject. */
static int parse_control(const vigil_input *in, floor_parsed *pp, vigil_error *err)
{
    vigil_room_control c;
    if (vigil_room_control_read(in->body, &c, err) < 0)
        return -1;
    pp->kind = FLOOR_IN_DELETE;
    pp->if_inactive_since = c.if_inactive_since;
    return c.action == VIGIL_CONTROL_DELETE;
}

/* persona/{p}/meta through libshared's reader (a cleared one is the meta
 * that says nothing), plus this service's own bound: a domain (an
 * expertise_domains entry or a confidence_levels key, which names a domain
 * too) longer than FLOOR_WORD_MAX could not be matched. */
static int parse_meta(const vigil_input *in, const char *persona, floor_parsed *pp, vigil_error *err)
{
    vigil_persona_meta *pm = &pp->pmeta;
    floor_meta *m = &pp->meta;
    pp->kind = FLOOR_IN_META;
    pp->persona = persona;
    if (in->cleared)
        vigil_persona_meta_init(pm);
    else if (vigil_persona_meta_read(in->body, VIGIL_ROUTE_MAX_KEYS, pm, err) < 0)
        return -1;
    for (int i = 0; i < pm->n_domains; i++) {
        size_t len = strlen(pm->domains[i]);
        if (len == 0 || len > FLOOR_WORD_MAX)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'expertise_domains[%d]': expected 1..%d bytes", i, FLOOR_WORD_MAX);
    }
    for (int i = 0; i < pm->n_conf; i++) {
        size_t len = strlen(pm->conf_domains[i]);
        if (len == 0 || len > FLOOR_WORD_MAX)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "field 'confidence_levels': a key of %zu bytes, expected "
                                   "1..%d", len, FLOOR_WORD_MAX);
    }
    *m = (floor_meta){.persona = persona, .name = pm->name, .role = pm->role,
                      .rooms = pm->rooms, .n_rooms = pm->n_rooms,
                      .domains = pm->domains, .n_domains = pm->n_domains,
                      .conf_domains = pm->conf_domains, .conf_values = pm->conf_values,
                      .n_conf = pm->n_conf,
                      .has_auto_wake = (pm->dormancy.has & VIGIL_OV_AUTO_WAKE) != 0,
                      .auto_wake = pm->dormancy.auto_wake};
    return 0;
}

/* persona/{p}/state (dormancy-monitor's retained snapshot) through
 * libshared's reader: the rooms of its map are the first keys. A cleared
 * one is the state of no room (pp->state stays zeroed). */
static int parse_state(const vigil_input *in, const char *persona, floor_parsed *pp,
                       char keys[][VIGIL_KEY_MAX], int max_keys, vigil_error *err)
{
    pp->kind = FLOOR_IN_STATE;
    pp->persona = persona;
    if (!in->cleared && vigil_persona_state_read(in->body, max_keys, &pp->state, err) < 0)
        return -1;
    int n = 0;
    for (int i = 0; i < pp->state.n_rooms; i++)
        n = vigil_route_add_key(keys, n, max_keys, pp->state.rooms[i].room);
    return n;
}

/* The rooms p is in, after the meta's own: more than max in all refuses the
 * meta whole (too_many_keys), noted as limit rooms_per_input. */
static int persona_rooms(vigil_runtime *rt, const char *persona, char keys[][VIGIL_KEY_MAX], int n,
                         int max, vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX], what[VIGIL_ID_MAX + 24];
    snprintf(suffix, sizeof suffix, FLOOR_MEMBER_SET "%s", persona);
    snprintf(what, sizeof what, "persona '%s' is in", persona);
    return vigil_route_members_noted(rt, "SMEMBERS", suffix, VIGIL_LIMIT_ROOMS_PER_INPUT, what,
                                     "rooms", keys, n, max, err);
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
    if (strcmp(kind, "state") == 0) {
        int n = parse_state(in, id, pp, keys, max_keys, err);
        return n < 0 ? n : persona_rooms(rt, id, keys, n, max_keys, err);
    }
    return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
}

/* An empty retained persona/{p}/meta or persona/{p}/state clears it (see
 * route_input); every other empty payload stays a bad input (not_json). */
bool floor_clear_topic(const char *topic)
{
    return vigil_topic_is_kind(topic, "persona", "meta") ||
           vigil_topic_is_kind(topic, "persona", "state");
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
    vigil_room_message_release(&pp->room_msg);
    vigil_persona_meta_release(&pp->pmeta);
    vigil_persona_state_release(&pp->state);
    free(pp);
}
