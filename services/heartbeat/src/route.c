/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the
 * persona keys it touches:
 *   heartbeat/{p}/config  -> p
 *   persona/{p}/state     -> p (its levels per room)
 *   room/{r}/message      -> every persona whose heartbeat serves r (the
 *                            set P S ":room-personas:<r>", kept by the
 *                            config commits) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/log.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>
#include "adapter.h"

#define CHECKLIST_FILE_MAX (HB_CHECKLIST_MAX + 1)

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
    char suffix[VIGIL_KEY_MAX + 32];
    snprintf(suffix, sizeof suffix, "%s%s", HB_ROOM_INDEX, room);
    int n = vigil_runtime_route_members(rt, "SMEMBERS", suffix, keys, 0, max_keys, NULL, err);
    if (n <= 0)
        return n; /* no heartbeat serves this room, or retry, or reject */
    hb_parsed *p = new_parsed(HB_IN_MESSAGE);
    if (!p)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    p->msg = m;
    *out = p;
    return n;
}

/* checklist_file: a plain name below VIGIL_HEARTBEAT_CHECKLIST_DIR, read
 * now (re-publish the config to reload it). */
static int read_checklist(const hb_service *svc, const char *name, char **text, vigil_error *err)
{
    if (!svc->checklist_dir[0])
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'checklist_file': file checklists are off "
                               "(VIGIL_HEARTBEAT_CHECKLIST_DIR is empty)");
    if (!name[0] || name[0] == '/' || strstr(name, "..") || strlen(name) > 200)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'checklist_file': a relative name without '..'");
    char path[HB_PATH_MAX + 208];
    snprintf(path, sizeof path, "%s/%s", svc->checklist_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'checklist_file': cannot read '%.100s'",
                               name);
    char *buf = malloc(CHECKLIST_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, CHECKLIST_FILE_MAX, f) : 0;
    fclose(f);
    if (!buf)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    if (n >= CHECKLIST_FILE_MAX || !vigil_utf8_valid(buf, n)) {
        free(buf);
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                               "field 'checklist_file': larger than %d bytes or not UTF-8 text",
                               HB_CHECKLIST_MAX);
    }
    buf[n] = '\0';
    *text = buf;
    return 0;
}

static int route_config(hb_service *svc, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                        hb_parsed **out, vigil_error *err)
{
    static const vigil_reject_reason REASONS[] = {
        [HB_CFG_OK] = VIGIL_REJECT_NONE, [HB_CFG_MISSING] = VIGIL_REJECT_MISSING_FIELD,
        [HB_CFG_WRONG_TYPE] = VIGIL_REJECT_WRONG_TYPE, [HB_CFG_BAD_VALUE] = VIGIL_REJECT_BAD_VALUE,
        [HB_CFG_BAD_ID] = VIGIL_REJECT_BAD_ID, [HB_CFG_NOMEM] = VIGIL_REJECT_BAD_VALUE};
    const char *persona, *file = NULL;
    char *text = NULL;
    if (vigil_input_topic_id(in, 1, "persona", &persona, err) < 0 ||
        vigil_json_string(in->body, "checklist_file", false, &file, err) < 0)
        return -1;
    if (file && read_checklist(svc, file, &text, err) < 0)
        return -1;
    hb_parsed *p = new_parsed(HB_IN_CONFIG);
    if (!p) {
        free(text);
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    }
    char why[200];
    hb_cfg_status st = hb_config_payload(in->body, &svc->core, text, &p->cfg, why, sizeof why);
    free(text);
    if (st != HB_CFG_OK) {
        hb_free_parsed(svc, p);
        return vigil_error_set(err, REASONS[st], "%s", why);
    }
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", persona);
    *out = p;
    return 1;
}

/* persona/{p}/state (dormancy-monitor's retained snapshot), read by
 * libshared's one reader of that topic: the level per room. */
static int route_levels(const vigil_input *in, char keys[][VIGIL_KEY_MAX], hb_parsed **out,
                        vigil_error *err)
{
    const char *persona;
    vigil_persona_state ps;
    if (vigil_input_topic_id(in, 1, "persona", &persona, err) < 0 ||
        vigil_persona_state_read(in->body, HB_LEVELS_MAX, &ps, err) < 0)
        return -1;
    hb_parsed *p = new_parsed(HB_IN_LEVELS);
    if (!p || !(p->levels = calloc(HB_LEVELS_MAX, sizeof *p->levels))) {
        hb_free_parsed(NULL, p);
        vigil_persona_state_release(&ps);
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < ps.n_rooms && p->n_levels < HB_LEVELS_MAX; i++) {
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

int hb_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
             int max_keys, void **parsed, vigil_error *err)
{
    hb_service *svc = ctx;
    hb_parsed *p = NULL;
    int n;
    if (in->nparts == 3 && strcmp(in->parts[0], "room") == 0 && strcmp(in->parts[2], "message") == 0)
        n = route_message(rt, in, keys, max_keys, &p, err);
    else if (in->nparts == 3 && strcmp(in->parts[0], "heartbeat") == 0 &&
             strcmp(in->parts[2], "config") == 0)
        n = route_config(svc, in, keys, &p, err);
    else if (in->nparts == 3 && strcmp(in->parts[0], "persona") == 0 &&
             strcmp(in->parts[2], "state") == 0)
        n = route_levels(in, keys, &p, err);
    else
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "not a heartbeat input: %.100s", in->topic);
    *parsed = p;
    return n;
}
