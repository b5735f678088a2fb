/* apply.c - runs the core on one room record and turns its actions into
 * libshared effects, committed atomically with the input id: the new
 * record, the log entry (a Redis stream trimmed by count and age), the
 * queue pushes and flushes, the auxiliary keys and sets, and the published
 * messages (notifications, the stop message) through the outbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/metrics.h>
#include <vigil/record_cache.h>
#include "adapter.h"

static void *room_clone(const void *r) { return chat_room_clone(r); }
static void room_free(void *r) { chat_room_free(r); }

/* The parsed room records of this process: a commit usually starts from
 * the record the previous commit of the room wrote, and parsing it with
 * json-c was the largest part of deciding. A decision takes the cached
 * room itself and puts the one it derives back (no copies); a record whose
 * commit then fails is keyed by a text Redis never held, so it is never
 * found. */
static vigil_record_cache *_Atomic cache;

static vigil_record_cache *rooms(void)
{
    static const vigil_record_ops ops = {room_clone, room_free};
    return vigil_record_cache_shared(&cache, &ops, CHAT_RECORD_CACHE, CHAT_RECORD_CACHE_BYTES);
}

/* The room whose record is state_json: the cached one, else parsed. An
 * unreadable record gives a fresh room (*replaced, why says what was
 * wrong): refusing every later input of the room forever would be worse.
 * NULL when out of memory. */
static chat_room *load_room(const char *key, const char *state_json, bool *replaced, char *why,
                            size_t whylen)
{
    *replaced = false;
    chat_room *r = vigil_record_cache_take(rooms(), key, state_json);
    if (r)
        return r;
    r = chat_room_from_json(key, state_json, why, whylen);
    if (!r && (r = chat_room_new(key)) != NULL)
        *replaced = true;
    return r;
}

/* Keeps r, the room the record text holds, for the room's next decision
 * (takes both), or frees them. */
static void keep_room(const char *key, chat_room *r, char *text)
{
    if (!text || !r->exists ||
        vigil_record_cache_put_sized(rooms(), key, text, r, chat_room_bytes(r)) != 0) {
        free(text);
        chat_room_free(r);
    }
}

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

void chat_count_room_deleted(int n)
{
    char labels[64];
    snprintf(labels, sizeof labels, "reason=\"%s\"", CHAT_REASON_ROOM_DELETED);
    vigil_counter_add("vigil_rejected_total", "Inputs rejected, by reason", labels, n);
}

/* A message the core refused because its room was deleted (an AI answer
 * or a stop message of the chain the delete ended): acknowledged with the
 * commit like any input, so it must not vanish without a word: an event
 * on sys/chat-router/error, reason room_deleted, counted as a rejection. */
static int refuse_deleted(const vigil_input *in, const chat_message *m, const char *room,
                          int64_t now, vigil_effects *fx)
{
    char topic[VIGIL_TOPIC_MAX], sample[1024], in_topic[VIGIL_TOPIC_MAX * 2];
    char id[VIGIL_EVENT_ID_MAX + 1], detail[400];
    chat_count_room_deleted(1);
    vigil_log_kv(VIGIL_LOG_INFO, "message to a deleted room refused", "room", room, "message_id",
                 m->id, NULL);
    snprintf(topic, sizeof topic, "sys/%s/error", CHAT_SERVICE);
    vigil_json_sample(in->topic, strlen(in->topic), in_topic, sizeof in_topic);
    vigil_json_sample(in->raw ? in->raw : "", in->raw ? in->raw_len : 0, sample, sizeof sample);
    snprintf(detail, sizeof detail,
             "room '%s' was deleted: %s message '%.128s' from '%.64s' is not logged or "
             "forwarded and does not create the room again (a human message does)",
             room, m->sender_type == CHAT_SENDER_AI ? "AI" : "system", m->id,
             m->sender ? m->sender : "");
    /* "<message id>:<room>:room_deleted": deterministic per input, and a
     * message id is unique only within its room */
    vigil_event_id_in(id, sizeof id, in->id, room, CHAT_REASON_ROOM_DELETED);
    json_object *o = vigil_error_event_new(id, CHAT_SERVICE, in_topic, CHAT_REASON_ROOM_DELETED,
                                           detail, sample);
    if (!o)
        return -1;
    json_object_object_add(o, "room", json_object_new_string(room));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    int rc = vigil_fx_publish_json(fx, topic, o, false);
    json_object_put(o);
    return rc;
}

int chat_apply_fx(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err)
{
    const chat_service *svc = ctx;
    const chat_parsed *pp = parsed;
    chat_result r;
    chat_result_init(&r);
    char why[200] = "";
    bool replaced, deleted = false;
    chat_room *room = load_room(key, state_json, &replaced, why, sizeof why);
    if (!room)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory reading room '%s'",
                               key);
    if (chat_decide(&svc->cfg, room, &pp->in, now_ms, &r, &deleted, why, sizeof why) != 0) {
        chat_room_free(room);
        chat_result_free(&r);
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "%s", why);
    }
    if (replaced)
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
        vigil_event_id_in(id, sizeof id, in->id, key, "limit"); /* key: the room */
        /* past the depth limit nobody is notified at all: say so, rather
         * than that the first max_mentions were */
        snprintf(detail, sizeof detail,
                 "message '%.128s' in room '%s' mentions more than %d personas, the most "
                 "VIGIL_CHAT_MAX_MENTIONS notifies: %s",
                 pp->in.msg.id, key, svc->cfg.max_mentions,
                 r.stopped ? "none is notified anyway, the chain stopped at the depth limit"
                           : "the others are not notified");
        bad |= vigil_fx_limit_refusal(fx, CHAT_SERVICE, id, in, "mentions_per_message", detail,
                                      now_ms);
    }
    if (bad == 0 && r.room_deleted)
        bad |= refuse_deleted(in, &pp->in.msg, key, now_ms, fx);
    if (bad == 0 && !deleted) {
        keep_room(key, room, r.new_state);
        r.new_state = NULL; /* now the cache's (or freed) */
    } else {
        chat_room_free(room);
    }
    chat_result_free(&r);
    if (bad != 0)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory building effects");
    return 0;
}
