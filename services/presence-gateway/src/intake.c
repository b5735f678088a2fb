/* intake.c - what the gateway takes from the broker: every topic the
 * Theater shows is appended, once (the runtime dedupes redeliveries by
 * input id), to the gateway's log stream, whose entry ids are the SSE
 * positions; state topics also replace their kept latest entry (for
 * ?snapshot=1; a snapshot cleared, an empty retained message, leaves it),
 * and council questions and presence change the records kept beside them
 * (kept.c); and the timers of those and of the presence records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/effects.h>
#include "adapter.h"

/* An empty payload on a snapshot topic the gateway keeps only as its
 * latest entry (not a kept record's): the retained snapshot was cleared
 * (e.g. stall-resumer's agent/{a}/assessment when the agent retires). */
bool gateway_clear_topic(const char *topic)
{
    char kept[VIGIL_KEY_MAX];
    return gw_topic_is_snapshot(topic) && !gw_kept_key(topic, NULL, kept, sizeof kept);
}

/* Every level between the first and the last must be an id: they are the
 * room, persona, session or service names the page shows; and a payload
 * field named like that topic parameter must say the same (else the
 * message would be shown where its topic does not put it:
 * topic_mismatch). Council questions and presence also touch their kept
 * record (kept.c). */
int gateway_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                  int max_keys, void **parsed, vigil_error *err)
{
    (void)ctx;
    (void)rt;
    (void)parsed;
    bool logged = false;
    for (int i = 0; GATEWAY_SUBSCRIPTIONS[i]; i++)
        if (gw_topic_match(GATEWAY_SUBSCRIPTIONS[i], in->topic))
            logged = true;
    if (!logged)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic %s is not one the gateway logs",
                               in->topic);
    for (int i = 1; i < in->nparts - 1; i++) {
        const char *idp;
        if (vigil_input_topic_id(in, i, gw_topic_param_field(in->topic, i), &idp, err) != 0)
            return -1;
    }
    int n = vigil_route_add_key(keys, 0, max_keys, GATEWAY_LOG_KEY);
    char kept[VIGIL_KEY_MAX];
    if (!in->cleared && gw_kept_key(in->topic, in->body, kept, sizeof kept))
        n = vigil_route_add_key(keys, n, max_keys, kept);
    return n;
}

/* A kept record's outcome into effects: its state, its kept entry for
 * ?snapshot=1 (or none left), its timer at the first expiry. */
static int kept_fx(gateway *g, const char *key, const char *state_json, const char *topic,
                   json_object *payload, int64_t now_ms, vigil_effects *fx)
{
    gw_kept_out ko;
    if (gw_kept_apply(&g->cfg.presence, key, state_json, topic, payload, now_ms, &ko) != 0)
        return -1;
    int rc = 0;
    if (ko.changed) {
        char name[VIGIL_TOPIC_MAX + 16];
        snprintf(name, sizeof name, "%s%s", GATEWAY_SNAP_PREFIX, ko.topic);
        rc = vigil_fx_set_state(fx, ko.new_state);
        if (rc == 0 && ko.entry)
            rc = vigil_fx_key_set(fx, name, ko.entry) != 0 ||
                         vigil_fx_set_add(fx, GATEWAY_SNAP_SET, ko.topic) != 0
                     ? -1
                     : 0;
        else if (rc == 0)
            rc = vigil_fx_key_delete(fx, name) != 0 ||
                         vigil_fx_set_remove(fx, GATEWAY_SNAP_SET, ko.topic) != 0
                     ? -1
                     : 0;
    }
    if (rc == 0)
        rc = ko.next_due > 0 ? vigil_fx_timer_set(fx, GATEWAY_KEPT_TIMER, ko.next_due)
                             : vigil_fx_timer_cancel(fx, GATEWAY_KEPT_TIMER);
    gw_kept_out_free(&ko);
    return rc;
}

int gateway_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    gateway *g = ctx;
    (void)parsed;
    if (strcmp(key, GATEWAY_LOG_KEY) != 0) {
        if (kept_fx(g, key, state_json, in->topic, in->body, now_ms, fx) != 0)
            return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "cannot keep %s", key);
        return 0;
    }
    if (in->cleared) { /* gateway_clear_topic: ?snapshot=1 no longer shows it; nothing logged */
        char name[VIGIL_TOPIC_MAX + 16];
        snprintf(name, sizeof name, "%s%s", GATEWAY_SNAP_PREFIX, in->topic);
        if (vigil_fx_key_delete(fx, name) != 0 ||
            vigil_fx_set_remove(fx, GATEWAY_SNAP_SET, in->topic) != 0)
            return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "cannot clear %s", in->topic);
        return 0;
    }
    char *entry = gw_log_entry(in->topic, in->body);
    if (!entry)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "cannot serialize the payload");
    int rc = vigil_fx_stream_add(fx, GATEWAY_LOG_NAME, entry, g->cfg.log_maxlen, 0);
    if (rc == 0 && gw_topic_is_snapshot(in->topic)) {
        /* the latest state of this topic, for ?snapshot=1 (same commit) */
        char name[VIGIL_TOPIC_MAX + 16];
        snprintf(name, sizeof name, "%s%s", GATEWAY_SNAP_PREFIX, in->topic);
        rc = vigil_fx_key_set(fx, name, entry);
        if (rc == 0)
            rc = vigil_fx_set_add(fx, GATEWAY_SNAP_SET, in->topic);
    }
    free(entry);
    if (rc != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "cannot log the payload");
    return 0;
}

/* A presence record's deadline: statuses are derived again at now; a
 * kept record's: what expired goes. */
int gateway_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                     int64_t due_ms, int64_t now_ms, vigil_effects *fx)
{
    gateway *g = ctx;
    if (strcmp(timer_name, GATEWAY_KEPT_TIMER) == 0)
        return kept_fx(g, key, state_json, NULL, NULL, now_ms, fx);
    if (strncmp(key, "user:", 5) != 0 || strcmp(timer_name, GATEWAY_PRESENCE_TIMER) != 0)
        return 0;
    gw_presence_out po;
    if (gw_presence_tick(&g->cfg.presence, key + 5, state_json, now_ms, &po) != GW_PRESENCE_OK)
        return -1;
    char base[96];
    snprintf(base, sizeof base, "tick-%lld", (long long)due_ms);
    int rc = gateway_presence_fx(key + 5, &po, base, now_ms, fx);
    gw_presence_out_free(&po);
    return rc;
}
