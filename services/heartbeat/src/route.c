/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the
 * persona keys it touches:
 *   heartbeat/{p}/config  -> p (an empty one: the heartbeat deleted)
 *   persona/{p}/state     -> p (its levels per room; an empty one: none)
 *   room/{r}/message      -> every persona whose heartbeat serves r (the
 *                            set P S ":room-personas:<r>", kept by the
 *                            config commits)
 * One input touches at most VIGIL_ROUTE_MAX_KEYS records, so a room has at
 * most that many heartbeats: a config joining a full room is refused
 * (apply.c), and a room message past it (two configs joining at once) is
 * refused whole; both say so (hb_room_limit, vigil_route_members_noted). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/json.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include "adapter.h"

/* The core's ids (config fields, context senders) are libshared's. */
_Static_assert(HB_ID_MAX == VIGIL_ID_MAX, "heartbeat ids are vigil ids");

static hb_parsed *new_parsed(hb_in_kind kind)
{
    hb_parsed *p = calloc(1, sizeof *p);
    if (p)
        p->kind = kind;
    return p;
}

void hb_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    hb_parsed *p = parsed;
    if (!p)
        return;
    hb_persona_cfg_clear(&p->cfg);
    free(p->levels);
    free(p);
}

/* The name of a room's index of heartbeats (P S ":room-personas:<room>"). */
static void room_index(char *out, size_t len, const char *room)
{
    snprintf(out, len, "%s%s", HB_ROOM_INDEX, room);
}

int hb_room_limit(const char *room, vigil_error *err)
{
    char detail[sizeof err->detail];
    snprintf(detail, sizeof detail, "room '%s' already has the %d %s: the config is refused", room,
             VIGIL_ROUTE_MAX_KEYS, HB_LIMIT_ROOM_MEMBERS);
    vigil_limit_note(HB_LIMIT_ROOM, detail);
    return vigil_error_set(err, VIGIL_REJECT_LIMIT, "%s", detail);
}

/* room/{r}/message, read by libshared's one reader of that topic. */
static int route_message(vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                         int max_keys, hb_parsed **out, vigil_error *err)
{
    const char *room;
    vigil_room_message rm;
    if (vigil_input_topic_id(in, 1, "room", &room, err) < 0 ||
        vigil_room_message_read(in->body, &rm, err) < 0)
        return -1;
    hb_message m = {in->id, room, rm.sender, rm.text, rm.sender_type == VIGIL_SENDER_HUMAN,
                    rm.proactive, in->ts};
    vigil_room_message_release(&rm); /* the strings point into the body, not into rm */
    char suffix[VIGIL_KEY_MAX + 32], what[VIGIL_ID_MAX + 16];
    room_index(suffix, sizeof suffix, room);
    snprintf(what, sizeof what, "room '%s' has", room);
    int n = vigil_route_members_noted(rt, "SMEMBERS", suffix, HB_LIMIT_ROOM, what,
                                      HB_LIMIT_ROOM_MEMBERS, keys, 0, max_keys, err);
    if (n <= 0)
        return n; /* no heartbeat serves this room, or retry, or reject */
    hb_parsed *p = new_parsed(HB_IN_MESSAGE);
    if (!p)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    p->msg = m;
    *out = p;
    return n;
}

/* How many heartbeats the room's index holds (max + 1 when more), for the
 * config's room limit (hb_config_joins_full_room, decided in apply on the
 * persona's record). keys is only scratch here. Or VIGIL_ROUTE_RETRY / -1
 * as vigil_runtime_route_members. */
static int room_members(vigil_runtime *rt, const char *room, char keys[][VIGIL_KEY_MAX], int max,
                        vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX + 32];
    room_index(suffix, sizeof suffix, room);
    int n = vigil_runtime_route_members(rt, "SMEMBERS", suffix, keys, 0, max, NULL, err);
    if (n == -1 && err->reason == VIGIL_REJECT_TOO_MANY_KEYS) {
        memset(err, 0, sizeof *err);
        return max + 1;
    }
    return n;
}

static int route_config(hb_service *svc, vigil_runtime *rt, const vigil_input *in,
                        char keys[][VIGIL_KEY_MAX], int max_keys, hb_parsed **out,
                        vigil_error *err)
{
    static const vigil_reject_reason REASONS[] = {
        [HB_CFG_OK] = VIGIL_REJECT_NONE, [HB_CFG_MISSING] = VIGIL_REJECT_MISSING_FIELD,
        [HB_CFG_WRONG_TYPE] = VIGIL_REJECT_WRONG_TYPE, [HB_CFG_BAD_VALUE] = VIGIL_REJECT_BAD_VALUE,
        [HB_CFG_BAD_ID] = VIGIL_REJECT_BAD_ID,
        [HB_CFG_NOMEM] = VIGIL_REJECT_NO_MEMORY}; /* retried by the runtime, never acknowledged */
    const char *persona, *file = NULL;
    char *text = NULL;
    if (vigil_input_topic_id(in, 1, "persona", &persona, err) < 0 ||
        vigil_json_string(in->body, "checklist_file", false, &file, err) < 0)
        return -1;
    char why[200];
    vigil_reject_reason bad = file ? hb_checklist_read(svc, file, &text, why, sizeof why)
                                   : VIGIL_REJECT_NONE;
    if (bad != VIGIL_REJECT_NONE)
        return vigil_error_set(err, bad, "field 'checklist_file': %s", why);
    hb_parsed *p = new_parsed(HB_IN_CONFIG);
    if (!p) {
        free(text);
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    }
    hb_cfg_status st = hb_config_payload(in->body, &svc->core, text, &p->cfg, why, sizeof why);
    free(text);
    if (st != HB_CFG_OK) {
        hb_free_parsed(svc, p);
        return vigil_error_set(err, REASONS[st], "%s", why);
    }
    p->room_members = room_members(rt, p->cfg.room, keys, max_keys, err);
    if (p->room_members < 0) {
        int rc = p->room_members;
        hb_free_parsed(svc, p);
        return rc;
    }
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", persona);
    *out = p;
    return 1;
}

/* heartbeat/{p}/config cleared: the persona's heartbeat is deleted
 * (hb_on_config_cleared); no room index to read, nothing else to check. */
static int route_config_cleared(const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                                hb_parsed **out, vigil_error *err)
{
    const char *persona;
    if (vigil_input_topic_id(in, 1, NULL, &persona, err) < 0)
        return -1;
    hb_parsed *p = new_parsed(HB_IN_CONFIG_CLEARED);
    if (!p)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", persona);
    *out = p;
    return 1;
}

/* persona/{p}/state (dormancy-monitor's retained snapshot), read by
 * libshared's one reader of that topic: the level per room. Cleared, it
 * is what {"rooms":{}} reads as: no levels (the core forgets them). */
static int route_levels(const vigil_input *in, char keys[][VIGIL_KEY_MAX], hb_parsed **out,
                        vigil_error *err)
{
    const char *persona;
    vigil_persona_state ps;
    memset(&ps, 0, sizeof ps);
    /* every room is read (VIGIL_MAX_PAYLOAD bounds them): the core keeps
     * the configured room's level first and says what it does not keep */
    if (vigil_input_topic_id(in, 1, "persona", &persona, err) < 0 ||
        (!in->cleared && vigil_persona_state_read(in->body, INT_MAX, &ps, err) < 0))
        return -1;
    hb_parsed *p = new_parsed(HB_IN_LEVELS);
    if (!p || (ps.n_rooms > 0 && !(p->levels = calloc((size_t)ps.n_rooms, sizeof *p->levels)))) {
        hb_free_parsed(NULL, p);
        vigil_persona_state_release(&ps);
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < ps.n_rooms; i++) {
        hb_room_level *l = &p->levels[p->n_levels++];
        snprintf(l->room, sizeof l->room, "%s", ps.rooms[i].room);
        /* vigil_level is active=0 .. sleep=3; the core's has unknown=0 first */
        l->level = (hb_level)(ps.rooms[i].level + 1);
    }
    vigil_persona_state_release(&ps);
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", persona);
    *out = p;
    return 1;
}

/* An empty payload on the retained inputs is their clear (the MQTT idiom
 * that deletes a retained message): the heartbeat's config deleted, the
 * persona's state gone. On room/{r}/message it stays not_json. */
bool hb_clear_topic(const char *topic)
{
    return vigil_topic_is_kind(topic, "heartbeat", "config") ||
           vigil_topic_is_kind(topic, "persona", "state");
}

int hb_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
             int max_keys, void **parsed, vigil_error *err)
{
    hb_service *svc = ctx;
    hb_parsed *p = NULL;
    int n;
    bool config = in->nparts == 3 && strcmp(in->parts[0], "heartbeat") == 0 &&
                  strcmp(in->parts[2], "config") == 0;
    if (in->nparts == 3 && strcmp(in->parts[0], "room") == 0 && strcmp(in->parts[2], "message") == 0)
        n = route_message(rt, in, keys, max_keys, &p, err);
    else if (config && in->cleared)
        n = route_config_cleared(in, keys, &p, err);
    else if (config)
        n = route_config(svc, rt, in, keys, max_keys, &p, err);
    else if (in->nparts == 3 && strcmp(in->parts[0], "persona") == 0 &&
             strcmp(in->parts[2], "state") == 0)
        n = route_levels(in, keys, &p, err);
    else
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "not a heartbeat input: %.*s",
                               (int)vigil_utf8_cut_max(in->topic, 100), in->topic);
    *parsed = p;
    return n;
}
