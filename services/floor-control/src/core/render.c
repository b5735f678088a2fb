/* render.c - the floor decision as published: the room's room/{r}/floor
 * event and each persona's own persona/{p}/floor copy (so a simple agent
 * listens to one topic only). */
#include "floor.h"

/* The ids of the granted picks: the decision lists them first (floor.h),
 * so the scan stops at the first held one. Every persona/{p}/floor event
 * carries this list; scanning the whole decision for it made rendering a
 * room's events quadratic in its personas. */
static json_object *granted_array(const floor_room *r, const floor_decision *d)
{
    json_object *a = json_object_new_array();
    for (int i = 0; a && i < d->n && d->v[i].granted; i++)
        json_object_array_add(a, json_object_new_string(d->v[i].id));
    return a;
}

static json_object *held_array(const floor_room *r, const floor_decision *d)
{
    json_object *a = json_object_new_array();
    for (int i = 0; a && i < d->n; i++)
        if (!d->v[i].granted)
            json_object_array_add(a, json_object_new_string(d->v[i].id));
    return a;
}

json_object *floor_room_event_json(const floor_room *r, const floor_config *c,
                                   const floor_decision *d, const char *event_id,
                                   const char *message_id, int64_t now)
{
    json_object *o = json_object_new_object();
    json_object *reasons = json_object_new_object();
    if (!o || !reasons) {
        json_object_put(o);
        json_object_put(reasons);
        return NULL;
    }
    json_object_object_add(o, "id", json_object_new_string(event_id));
    json_object_object_add(o, "room", json_object_new_string(r->room));
    json_object_object_add(o, "message_id", json_object_new_string(message_id));
    json_object_object_add(o, "k", json_object_new_int(c->k));
    json_object_object_add(o, "granted", granted_array(r, d));
    json_object_object_add(o, "held", held_array(r, d));
    for (int i = 0; i < d->n; i++)
        json_object_object_add(reasons, d->v[i].id,
                               json_object_new_string(d->v[i].reason));
    json_object_object_add(o, "reasons", reasons);
    json_object_object_add(o, "source", json_object_new_string(d->source ? d->source : "rules"));
    if (d->fallback)
        json_object_object_add(o, "fallback", json_object_new_string(d->fallback));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}

json_object *floor_persona_event_json(const floor_room *r, const floor_config *c,
                                      const floor_decision *d, int i, const char *event_id,
                                      const char *message_id, int64_t now)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const floor_pick *pk = &d->v[i];
    json_object_object_add(o, "id", json_object_new_string(event_id));
    json_object_object_add(o, "persona", json_object_new_string(pk->id));
    json_object_object_add(o, "room", json_object_new_string(r->room));
    json_object_object_add(o, "message_id", json_object_new_string(message_id));
    json_object_object_add(o, "has_floor", json_object_new_boolean(pk->granted));
    json_object_object_add(o, "reason", json_object_new_string(pk->reason));
    json_object_object_add(o, "granted", granted_array(r, d));
    json_object_object_add(o, "k", json_object_new_int(c->k));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}
