/* room_json.c - the room view as stored between inputs:
 * {"room": r, "personas": [{"id", "name", "role", "domains": [..],
 *  "confidence": [.. or null], "level", "trigger", "spoke", "seen",
 *  "meta", "cause"?, "answered"?, "order"?, "auto_wake"?}]}. Reading is
 * tolerant of missing fields (a field added later reads as its default:
 * a record of a version before cause, order and auto-wake reads them as
 * unknown, as a persona state without them would) but refuses a record of
 * the wrong shape. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/id_index.h>
#include <vigil/json.h>
#include "floor.h"

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

/* k: v, left out when v is FLOOR_UNKNOWN (read back as unknown). */
static void add_known(json_object *o, const char *k, int64_t v)
{
    if (v != FLOOR_UNKNOWN)
        json_object_object_add(o, k, json_object_new_int64(v));
}

/* "pending": [{"id", "sender", "type", "text", "mentions", "due"}] */
static int add_pending(json_object *o, const floor_room *r)
{
    json_object *arr = json_object_new_array();
    if (!arr)
        return -1;
    json_object_object_add(o, "pending", arr);
    for (int i = 0; i < r->n_pending; i++) {
        const floor_pending *p = &r->pending[i];
        json_object *e = json_object_new_object();
        json_object *ms = json_object_new_array();
        if (!e || !ms) {
            json_object_put(e);
            json_object_put(ms);
            return -1;
        }
        add_str(e, "id", p->id);
        add_str(e, "sender", p->sender);
        json_object_object_add(e, "type", json_object_new_int(p->sender_type));
        add_str(e, "text", p->text);
        for (int k = 0; k < p->n_mentions; k++)
            json_object_array_add(ms, json_object_new_string(p->mentions[k]));
        json_object_object_add(e, "mentions", ms);
        json_object_object_add(e, "due", json_object_new_int64(p->due));
        json_object_array_add(arr, e);
    }
    return 0;
}

json_object *floor_room_to_json(const floor_room *r)
{
    json_object *o = json_object_new_object();
    json_object *arr = json_object_new_array();
    if (!o || !arr) {
        json_object_put(o);
        json_object_put(arr);
        return NULL;
    }
    add_str(o, "room", r->room);
    json_object_object_add(o, "last_message", json_object_new_int64(r->last_message));
    json_object_object_add(o, "personas", arr);
    for (int i = 0; i < r->n; i++) {
        const floor_persona *p = &r->personas[i];
        json_object *e = json_object_new_object();
        json_object *ds = json_object_new_array();
        json_object *cs = json_object_new_array();
        if (!e || !ds || !cs) {
            json_object_put(e);
            json_object_put(ds);
            json_object_put(cs);
            json_object_put(o);
            return NULL;
        }
        add_str(e, "id", p->id);
        add_str(e, "name", p->name);
        add_str(e, "role", p->role);
        for (int d = 0; d < p->n_domains; d++) {
            json_object_array_add(ds, json_object_new_string(p->domains[d]));
            json_object_array_add(cs, p->confidence[d] == FLOOR_CONFIDENCE_UNSET
                                          ? NULL
                                          : json_object_new_double(p->confidence[d]));
        }
        json_object_object_add(e, "domains", ds);
        json_object_object_add(e, "confidence", cs);
        add_str(e, "level", floor_level_name(p->level));
        add_str(e, "trigger", p->trigger);
        json_object_object_add(e, "spoke", json_object_new_int64(p->last_spoke));
        json_object_object_add(e, "seen", json_object_new_int64(p->seen));
        json_object_object_add(e, "meta", json_object_new_boolean(p->in_meta));
        add_known(e, "cause", p->cause);
        if (p->answered_human)
            json_object_object_add(e, "answered", json_object_new_int64(p->answered_human));
        add_known(e, "order", p->order);
        add_known(e, "auto_wake", p->auto_wake);
        json_object_array_add(arr, e);
    }
    if (r->n_pending > 0 && add_pending(o, r) != 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static const char *get_str(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
        return "";
    return json_object_get_string(v);
}

static int64_t get_i64(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
        return 0;
    return json_object_get_int64(v);
}

/* k as a number in min..max, or FLOOR_UNKNOWN when absent or not one. */
static int64_t get_known(json_object *o, const char *k, int64_t min, int64_t max)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
        return FLOOR_UNKNOWN;
    int64_t x = json_object_get_int64(v);
    return x >= min && x <= max ? x : FLOOR_UNKNOWN;
}

/* The entry an entry of id fills: a duplicate entry updates the one its
 * first occurrence made, in that place (its fields replace the earlier
 * ones, its domains follow theirs: the record was always read so); a new
 * id goes at the end. The stored view obeyed the bound when it was
 * written, so nothing is dropped here. NULL when memory runs out. */
static floor_persona *entry_for(floor_room *r, vigil_id_index *x, const char *id)
{
    int at = vigil_id_index_get(x, id); /* position + 1 in r->personas, which moves */
    if (at > 0)
        return &r->personas[at - 1];
    floor_persona *p = floor_room_append(r, id, 0);
    if (p && vigil_id_index_add(x, id, r->n) < 0)
        return NULL; /* cannot happen: sized for every entry */
    return p;
}

/* "domains" and "confidence" (parallel arrays) after the domains p has
 * already, the first FLOOR_MAX_DOMAINS in all; a confidence that is not
 * a number in 0..1 (what a meta may say) reads as unset: a damaged
 * record's 1e999 would read as infinity, which no JSON can carry, and
 * the view written next (and the floor events) would not be JSON. A
 * domain longer than a meta's may be (damage too) is skipped, not cut
 * (perhaps inside a character). */
static void read_domains(floor_persona *p, json_object *e)
{
    json_object *ds = NULL, *cs = NULL;
    json_object_object_get_ex(e, "domains", &ds);
    json_object_object_get_ex(e, "confidence", &cs);
    if (!ds || !json_object_is_type(ds, json_type_array))
        return;
    size_t n = json_object_array_length(ds);
    for (size_t d = 0; d < n && p->n_domains < FLOOR_MAX_DOMAINS; d++) {
        json_object *dv = json_object_array_get_idx(ds, d);
        if (!json_object_is_type(dv, json_type_string) ||
            strlen(json_object_get_string(dv)) > FLOOR_WORD_MAX)
            continue;
        snprintf(p->domains[p->n_domains], sizeof p->domains[0], "%s", json_object_get_string(dv));
        json_object *cv = cs && json_object_is_type(cs, json_type_array)
                              ? json_object_array_get_idx(cs, d)
                              : NULL;
        double c = cv && (json_object_is_type(cv, json_type_double) ||
                          json_object_is_type(cv, json_type_int))
                       ? json_object_get_double(cv)
                       : FLOOR_CONFIDENCE_UNSET;
        p->confidence[p->n_domains] = c >= 0.0 && c <= 1.0 ? c : FLOOR_CONFIDENCE_UNSET;
        p->n_domains++;
    }
}

static int read_persona(floor_room *r, vigil_id_index *x, json_object *e, char *err, size_t errlen)
{
    const char *id = get_str(e, "id");
    if (!id[0] || strlen(id) > FLOOR_ID_MAX) {
        snprintf(err, errlen, "persona entry without a valid id");
        return -1;
    }
    floor_persona *p = entry_for(r, x, id);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(p->name, sizeof p->name, "%s", get_str(e, "name"));
    snprintf(p->role, sizeof p->role, "%s", get_str(e, "role"));
    snprintf(p->trigger, sizeof p->trigger, "%s", get_str(e, "trigger"));
    int lvl = floor_level_parse(get_str(e, "level"));
    p->level = lvl < 0 ? FLOOR_ACTIVE : (floor_level)lvl;
    p->last_spoke = get_i64(e, "spoke");
    p->seen = get_i64(e, "seen");
    json_object *v;
    p->in_meta = json_object_object_get_ex(e, "meta", &v) && json_object_get_boolean(v);
    p->cause = (int)get_known(e, "cause", VIGIL_CAUSE_NONE, VIGIL_CAUSE_CHOICE);
    p->answered_human = get_i64(e, "answered");
    p->order = get_known(e, "order", 0, INT64_MAX);
    p->auto_wake = (int)get_known(e, "auto_wake", 0, 1);
    read_domains(p, e);
    return 0;
}

static int read_pending(floor_room *r, json_object *e)
{
    json_object *ms = NULL;
    const char *ptrs[FLOOR_MAX_MENTIONS];
    int n = 0;
    if (json_object_object_get_ex(e, "mentions", &ms) && json_object_is_type(ms, json_type_array))
        for (size_t k = 0; k < json_object_array_length(ms) && n < FLOOR_MAX_MENTIONS; k++) {
            json_object *v = json_object_array_get_idx(ms, k);
            if (json_object_is_type(v, json_type_string))
                ptrs[n++] = json_object_get_string(v);
        }
    int64_t type = get_i64(e, "type");
    floor_message m = {.id = get_str(e, "id"), .sender = get_str(e, "sender"),
                       .sender_type = type >= 0 && type <= FLOOR_SENDER_SYSTEM ? (floor_sender_type)type
                                                                              : FLOOR_SENDER_HUMAN,
                       .text = get_str(e, "text"), .mentions = ptrs, .n_mentions = n};
    if (!m.id[0])
        return 0; /* an entry without an id decides nothing: dropped */
    /* only what fitted was written: a refusal means a damaged record */
    return floor_pending_add(r, &m, get_i64(e, "due"), NULL);
}

/* The "personas" array into r, in order; -1 with err on an entry that is
 * not an object or has no valid id, or when memory runs out. */
static int read_personas(floor_room *r, json_object *arr, char *err, size_t errlen)
{
    size_t n = json_object_array_length(arr);
    vigil_id_index x; /* the ids read so far: a record loads in O(n) */
    if (vigil_id_index_init(&x, n) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(e, json_type_object)) {
            snprintf(err, errlen, "persona entry %zu is not an object", i);
            rc = -1;
        } else {
            rc = read_persona(r, &x, e, err, errlen);
        }
    }
    vigil_id_index_free(&x);
    return rc;
}

floor_room *floor_room_from_json(const char *json, const char *room, char *err, size_t errlen)
{
    json_object *o = json_tokener_parse(json);
    json_object *arr = NULL;
    floor_room *r = NULL;
    if (!o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, "personas", &arr) || !json_object_is_type(arr, json_type_array)) {
        snprintf(err, errlen, "not a room record");
        goto fail;
    }
    r = floor_room_new(room);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    r->last_message = get_i64(o, "last_message");
    if (read_personas(r, arr, err, errlen) != 0)
        goto fail;
    json_object *pend = NULL;
    if (json_object_object_get_ex(o, "pending", &pend) && json_object_is_type(pend, json_type_array))
        for (size_t i = 0; i < json_object_array_length(pend); i++) {
            json_object *e = json_object_array_get_idx(pend, i);
            if (json_object_is_type(e, json_type_object) && read_pending(r, e) != 0) {
                snprintf(err, errlen, "pending entry %zu unreadable", i);
                goto fail;
            }
        }
    json_object_put(o);
    return r;
fail:
    floor_room_free(r);
    json_object_put(o);
    return NULL;
}
