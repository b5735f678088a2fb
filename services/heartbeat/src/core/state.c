/* state.c - the persona record as stored by the shell (JSON), and the
 * persona's levels. Every field is bounded: the record holds the config,
 * the schedule, the last HB_RECENT_MAX messages of the room (cut to
 * HB_RECENT_CHARS characters) and the levels of at most HB_LEVELS_MAX
 * rooms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/names.h>
#include "heartbeat.h"

/* The contract's levels, one above: HB_LEVEL_UNKNOWN comes first. */
_Static_assert(HB_LEVEL_ACTIVE == VIGIL_LEVEL_ACTIVE + 1 && HB_LEVEL_SLEEP == VIGIL_LEVEL_SLEEP + 1,
               "hb_level is vigil_level shifted by one");

const char *hb_level_name(hb_level l)
{
    return l > HB_LEVEL_UNKNOWN && l <= HB_LEVEL_SLEEP ? vigil_level_names[l - 1] : "unknown";
}

int hb_level_parse(const char *s)
{
    int i = vigil_name_index(vigil_level_names, s);
    return i < 0 ? -1 : i + 1;
}

hb_level hb_state_level(const hb_state *s, const char *room)
{
    for (int i = 0; i < s->n_levels; i++)
        if (strcmp(s->levels[i].room, room) == 0)
            return s->levels[i].level;
    return HB_LEVEL_UNKNOWN;
}

void hb_persona_cfg_clear(hb_persona_cfg *cfg)
{
    free(cfg->checklist);
    free(cfg->identity);
    memset(cfg, 0, sizeof *cfg);
}

void hb_state_free(hb_state *s)
{
    hb_persona_cfg_clear(&s->cfg);
}

static int64_t get_i64(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static const char *get_str(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

static bool get_bool(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static int load_cfg(json_object *o, hb_persona_cfg *cfg)
{
    cfg->set = true;
    copy(cfg->persona, sizeof cfg->persona, get_str(o, "persona"));
    copy(cfg->user, sizeof cfg->user, get_str(o, "user"));
    copy(cfg->room, sizeof cfg->room, get_str(o, "room"));
    copy(cfg->tz, sizeof cfg->tz, get_str(o, "tz"));
    copy(cfg->model, sizeof cfg->model, get_str(o, "model"));
    copy(cfg->checklist_file, sizeof cfg->checklist_file, get_str(o, "checklist_file"));
    cfg->enabled = get_bool(o, "enabled");
    cfg->allow = (unsigned)get_i64(o, "allow");
    const char *cl = get_str(o, "checklist"), *id = get_str(o, "identity");
    cfg->checklist = strdup(cl ? cl : "");
    cfg->identity = id ? strdup(id) : NULL;
    json_object *q;
    if (json_object_object_get_ex(o, "quiet", &q)) {
        cfg->quiet.set = true;
        cfg->quiet.start_min = (int)get_i64(q, "start");
        cfg->quiet.end_min = (int)get_i64(q, "end");
    }
    return cfg->checklist && (!id || cfg->identity) ? 0 : -1;
}

int hb_state_load(hb_state *s, const char *persona, const char *json, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    copy(s->persona, sizeof s->persona, persona);
    s->answered = true;
    if (!json)
        return 0;
    json_object *o = json_tokener_parse(json);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        snprintf(err, errlen, "stored record is not a JSON object");
        return -1;
    }
    int rc = 0;
    json_object *v;
    if (json_object_object_get_ex(o, "cfg", &v) && load_cfg(v, &s->cfg) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    s->last_activity = get_i64(o, "last_activity");
    s->last_user_msg = get_i64(o, "last_user_msg");
    s->last_proactive = get_i64(o, "last_proactive");
    s->answered = !json_object_object_get_ex(o, "answered", &v) || json_object_get_boolean(v);
    s->consecutive_ok = (int)get_i64(o, "consecutive_ok");
    s->runs = get_i64(o, "runs");
    s->cfg_gen = get_i64(o, "cfg_gen"); /* absent in older records: 0, as run_gen */
    s->run_gen = get_i64(o, "run_gen");
    copy(s->running, sizeof s->running, get_str(o, "running"));
    s->run_started = get_i64(o, "run_started");
    s->next_run = get_i64(o, "next_run");
    if (json_object_object_get_ex(o, "recent", &v) && json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n && s->n_recent < HB_RECENT_MAX; i++) {
            json_object *e = json_object_array_get_idx(v, i);
            hb_recent *r = &s->recent[s->n_recent++];
            copy(r->sender, sizeof r->sender, get_str(e, "s"));
            copy(r->text, sizeof r->text, get_str(e, "t"));
            r->human = get_bool(e, "h");
        }
    }
    if (json_object_object_get_ex(o, "levels", &v) && json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, room, lv) {
            if (s->n_levels >= HB_LEVELS_MAX)
                break;
            int l = hb_level_parse(json_object_get_string(lv));
            copy(s->levels[s->n_levels].room, sizeof s->levels[0].room, room);
            s->levels[s->n_levels++].level = l < 0 ? HB_LEVEL_UNKNOWN : (hb_level)l;
        }
    }
    json_object_put(o);
    return rc;
}

static json_object *dump_cfg(const hb_persona_cfg *c)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "persona", json_object_new_string(c->persona));
    json_object_object_add(o, "user", json_object_new_string(c->user));
    json_object_object_add(o, "room", json_object_new_string(c->room));
    json_object_object_add(o, "checklist", json_object_new_string(c->checklist ? c->checklist : ""));
    if (c->checklist_file[0])
        json_object_object_add(o, "checklist_file", json_object_new_string(c->checklist_file));
    if (c->identity)
        json_object_object_add(o, "identity", json_object_new_string(c->identity));
    if (c->quiet.set) {
        json_object *q = json_object_new_object();
        json_object_object_add(q, "start", json_object_new_int(c->quiet.start_min));
        json_object_object_add(q, "end", json_object_new_int(c->quiet.end_min));
        json_object_object_add(o, "quiet", q);
    }
    json_object_object_add(o, "tz", json_object_new_string(c->tz));
    json_object_object_add(o, "enabled", json_object_new_boolean(c->enabled));
    json_object_object_add(o, "allow", json_object_new_int64((int64_t)c->allow));
    json_object_object_add(o, "model", json_object_new_string(c->model));
    return o;
}

char *hb_state_dump(const hb_state *s)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "persona", json_object_new_string(s->persona));
    if (s->cfg.set)
        json_object_object_add(o, "cfg", dump_cfg(&s->cfg));
    json_object_object_add(o, "last_activity", json_object_new_int64(s->last_activity));
    json_object_object_add(o, "last_user_msg", json_object_new_int64(s->last_user_msg));
    json_object_object_add(o, "last_proactive", json_object_new_int64(s->last_proactive));
    json_object_object_add(o, "answered", json_object_new_boolean(s->answered));
    json_object_object_add(o, "consecutive_ok", json_object_new_int(s->consecutive_ok));
    json_object_object_add(o, "runs", json_object_new_int64(s->runs));
    json_object_object_add(o, "running", json_object_new_string(s->running));
    json_object_object_add(o, "run_started", json_object_new_int64(s->run_started));
    json_object_object_add(o, "cfg_gen", json_object_new_int64(s->cfg_gen));
    json_object_object_add(o, "run_gen", json_object_new_int64(s->run_gen));
    json_object_object_add(o, "next_run", json_object_new_int64(s->next_run));
    json_object *rec = json_object_new_array();
    for (int i = 0; rec && i < s->n_recent; i++) {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "s", json_object_new_string(s->recent[i].sender));
        json_object_object_add(e, "t", json_object_new_string(s->recent[i].text));
        json_object_object_add(e, "h", json_object_new_boolean(s->recent[i].human));
        json_object_array_add(rec, e);
    }
    json_object_object_add(o, "recent", rec);
    json_object *lv = json_object_new_object();
    for (int i = 0; lv && i < s->n_levels; i++)
        json_object_object_add(lv, s->levels[i].room,
                               json_object_new_string(hb_level_name(s->levels[i].level)));
    json_object_object_add(o, "levels", lv);
    const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
    char *r = txt ? strdup(txt) : NULL;
    json_object_put(o);
    return r;
}
