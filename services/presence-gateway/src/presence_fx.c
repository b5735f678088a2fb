/* presence_fx.c - a presence outcome of the core into effects: the new
 * record, one room/{room}/presence event per change, and the record's
 * timer at the next moment a status can change. */
#include <stdio.h>
#include <vigil/effects.h>
#include <vigil/json.h>
#include "adapter.h"

int gateway_presence_fx(const char *user, const gw_presence_out *po, const char *id_base,
                        int64_t now, vigil_effects *fx)
{
    if (vigil_fx_set_state(fx, po->new_state) != 0)
        return -1;
    char key[VIGIL_KEY_MAX];
    snprintf(key, sizeof key, "user:%s", user);
    for (int i = 0; i < po->nchanges; i++) {
        json_object *o = gw_presence_payload(user, &po->changes[i], now);
        if (!o)
            return -1;
        char id[VIGIL_EVENT_ID_MAX + 1];
        vigil_event_id(id, sizeof id, id_base, key, i);
        json_object_object_add(o, "id", json_object_new_string(id));
        char topic[VIGIL_TOPIC_MAX];
        snprintf(topic, sizeof topic, "room/%s/presence", po->changes[i].room);
        int rc = vigil_fx_publish_json(fx, topic, o, false);
        json_object_put(o);
        if (rc != 0)
            return -1;
    }
    if (po->next_due > 0)
        return vigil_fx_timer_set(fx, GATEWAY_PRESENCE_TIMER, po->next_due);
    return vigil_fx_timer_cancel(fx, GATEWAY_PRESENCE_TIMER);
}
