/* apply.c - runs the core on one room record and turns its actions into
 * libshared effects, committed atomically with the input id: the new
 * record, the log entry (a Redis stream trimmed by count and age), the
 * queue pushes and flushes, the auxiliary keys and sets, and the published
 * messages (notifications, the stop message) through the outbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include "adapter.h"

static int to_effect(const chat_service *svc, const chat_action *a, vigil_effects *fx)
{
    switch (a->kind) {
    case CHAT_ACT_LOG_APPEND:
        return vigil_fx_stream_add(fx, a->name, a->value, svc->cfg.log_maxlen,
                                   svc->cfg.log_max_age_ms);
    case CHAT_ACT_PUBLISH:
        return vigil_fx_publish(fx, a->topic, a->value, false);
    case CHAT_ACT_QUEUE_PUSH:
        return vigil_fx_queue_push(fx, a->name, a->topic, a->value, false);
    case CHAT_ACT_QUEUE_FLUSH:
        return vigil_fx_queue_flush(fx, a->name);
    case CHAT_ACT_KEY_SET:
        return vigil_fx_key_set(fx, a->name, a->value);
    case CHAT_ACT_KEY_DELETE:
        return vigil_fx_key_delete(fx, a->name);
    case CHAT_ACT_SET_ADD:
        return vigil_fx_set_add(fx, a->name, a->value);
    case CHAT_ACT_SET_REMOVE:
        return vigil_fx_set_remove(fx, a->name, a->value);
    }
    return -1;
}

/* Counted when decided: a commit retried after a version conflict counts
 * again (rare: one writer per room in the steady state). */
static void count(const chat_result *r)
{
    if (r->logged)
        vigil_counter_add("vigil_chat_messages_logged_total", "Room messages appended to a log",
                          NULL, 1);
    if (r->notified)
        vigil_counter_add("vigil_chat_notifications_total", "persona/{p}/notify decided",
                          "mode=\"live\"", r->notified);
    if (r->queued)
        vigil_counter_add("vigil_chat_notifications_total", "persona/{p}/notify decided",
                          "mode=\"queued\"", r->queued);
    if (r->flushed)
        vigil_counter_add("vigil_chat_queue_flushes_total", "Room queues delivered on resume",
                          NULL, r->flushed);
    if (r->stopped)
        vigil_counter_add("vigil_chat_chains_stopped_total",
                          "Messages not forwarded because of VIGIL_CHAT_MAX_DEPTH", NULL, 1);
}

int chat_apply_fx(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const chat_service *svc = ctx;
    const chat_parsed *pp = parsed;
    chat_result r;
    chat_result_init(&r);
    char why[200] = "";
    int rc = chat_apply(&svc->cfg, key, state_json, &pp->in, now_ms, &r, why, sizeof why);
    if (rc < 0) {
        chat_result_free(&r);
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s", why);
    }
    if (rc == 1)
        vigil_log_kv(VIGIL_LOG_ERROR, "unreadable room record replaced", "room", key, "error", why,
                     NULL);
    int bad = 0;
    if (r.new_state)
        bad |= vigil_fx_set_state(fx, r.new_state);
    for (size_t i = 0; i < r.n && bad == 0; i++)
        bad |= to_effect(svc, &r.v[i], fx);
    if (bad == 0)
        count(&r);
    if (r.stopped)
        vigil_log_kv(VIGIL_LOG_INFO, "chain stopped at the depth limit", "room", key,
                     "message_id", pp->in.msg.id, NULL);
    if (bad == 0 && r.mentions_capped) {
        char id[VIGIL_EVENT_ID_MAX + 1], detail[300];
        vigil_event_id(id, sizeof id, in->id, "limit", 0);
        snprintf(detail, sizeof detail,
                 "message '%.128s' in room '%s' mentions more than %d personas, the most "
                 "VIGIL_CHAT_MAX_MENTIONS notifies: the others are not notified",
                 pp->in.msg.id, key, svc->cfg.max_mentions);
        bad |= vigil_fx_limit_refusal(fx, CHAT_SERVICE, id, in, "mentions_per_message", detail,
                                      now_ms);
    }
    chat_result_free(&r);
    if (bad != 0)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "out of memory building effects");
    return 0;
}
