/* api_post.c - the POST endpoints: presence heartbeats, human room
 * messages, answers to council questions and to dormancy suggestions. Each commits through the
 * runtime (atomic state + outbox), so a 2xx means it will be published. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/json.h>
#include "adapter.h"

/* The body as a JSON object, or a 400 answered. */
static json_object *body_object(gateway *g, vigil_http_req *req)
{
    size_t len;
    const char *b = vigil_http_req_body(req, &len);
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(b, len, (size_t)g->cfg.max_body, &err);
    if (!o) {
        char detail[260];
        snprintf(detail, sizeof detail, "body: %s (%s)", vigil_reject_name(err.reason), err.detail);
        gateway_error(req, 400, detail);
    }
    return o;
}

static void answer_decide(vigil_http_req *req, int rc, const vigil_error *err)
{
    if (rc == VIGIL_DECIDE_REJECTED)
        gateway_error(req, 400, err->detail);
    else if (rc == 1)
        gateway_error(req, 503, "starting");
    else
        gateway_error(req, 503, "Redis unreachable: try again");
}

typedef struct publish_arg {
    const char *topic;
    const char *payload;
} publish_arg;

static int publish_fn(void *arg, const char *key, const char *state_json, int64_t now_ms,
                      vigil_effects *fx, vigil_error *err)
{
    (void)key;
    (void)state_json;
    (void)now_ms;
    publish_arg *a = arg;
    if (vigil_fx_publish(fx, a->topic, a->payload, false) != 0)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    return 0;
}

int gateway_publish(gateway *g, const char *key, const char *input_id, const char *topic,
                    json_object *payload, vigil_error *err)
{
    vigil_runtime *rt = atomic_load(&g->rt);
    if (!rt)
        return 1;
    char *text = vigil_json_dump(payload);
    if (!text)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory"), VIGIL_DECIDE_REJECTED;
    vigil_runtime_conn *conn = gw_pool_take(g);
    int rc = VIGIL_DECIDE_GAVE_UP;
    if (conn) {
        publish_arg a = {topic, text};
        rc = vigil_runtime_decide(rt, conn, key, input_id, vigil_now_ms(), publish_fn, &a, err);
        gw_pool_put(g, conn);
    }
    free(text);
    return rc;
}

/* 202 {id, topic, duplicate}, and the payload itself as `published` when
 * echo is set (a command the caller cannot read back from a log). */
static void accepted(vigil_http_req *req, json_object *payload, const char *topic, int rc,
                     bool echo)
{
    json_object *o = json_object_new_object();
    json_object *id;
    if (json_object_object_get_ex(payload, "id", &id))
        json_object_object_add(o, "id", json_object_get(id));
    json_object_object_add(o, "topic", json_object_new_string(topic));
    json_object_object_add(o, "duplicate", json_object_new_boolean(rc == VIGIL_DECIDE_DUPLICATE));
    if (echo)
        json_object_object_add(o, "published", json_object_get(payload));
    vigil_http_respond_json(req, 202, o);
    json_object_put(o);
}

/* What the body of one POST becomes (gw_req_message or gw_req_answer). */
typedef gw_req_result (*build_fn)(json_object *body, const void *arg, const char *fresh_id,
                                  int64_t now, size_t max_text, json_object **payload,
                                  const char **limit, char *err, size_t errlen);

/* Body -> payload -> published on topic (deduped by the payload's id on
 * key) -> 202 (with the payload when echo), or the error that stopped it. */
static void publish_request(gateway *g, vigil_http_req *req, build_fn build, const void *arg,
                            const char *topic, const char *key, bool echo)
{
    json_object *body = body_object(g, req);
    if (!body)
        return;
    char fresh[64], err[200];
    gateway_fresh_id(fresh, sizeof fresh);
    json_object *payload;
    const char *limit;
    gw_req_result r = build(body, arg, fresh, vigil_now_ms(), (size_t)g->cfg.max_text, &payload,
                            &limit, err, sizeof err);
    if (r == GW_REQ_OK &&
        gw_req_fits(payload, (size_t)g->cfg.max_payload, &limit, err, sizeof err) != GW_REQ_OK) {
        json_object_put(payload);
        r = GW_REQ_BAD;
    }
    if (r != GW_REQ_OK) {
        gateway_refuse(req, r == GW_REQ_FORBIDDEN ? 403 : 400, limit, err);
        json_object_put(body);
        return;
    }
    vigil_error verr = {0};
    const char *id = json_object_get_string(json_object_object_get(payload, "id"));
    int rc = gateway_publish(g, key, id, topic, payload, &verr);
    if (rc == VIGIL_DECIDE_DONE || rc == VIGIL_DECIDE_DUPLICATE)
        accepted(req, payload, topic, rc, echo);
    else
        answer_decide(req, rc, &verr);
    json_object_put(payload);
    json_object_put(body);
}

typedef struct msg_arg {
    const char *room, *user;
} msg_arg;

static gw_req_result build_message(json_object *body, const void *arg, const char *fresh_id,
                                   int64_t now, size_t max_text, json_object **payload,
                                   const char **limit, char *err, size_t errlen)
{
    const msg_arg *a = arg;
    return gw_req_message(body, a->room, a->user, fresh_id, now, max_text, payload, limit, err,
                          errlen);
}

static gw_req_result build_answer(json_object *body, const void *arg, const char *fresh_id,
                                  int64_t now, size_t max_text, json_object **payload,
                                  const char **limit, char *err, size_t errlen)
{
    return gw_req_answer(body, arg, fresh_id, now, max_text, payload, limit, err, errlen);
}

void gateway_api_messages_post(gateway *g, vigil_http_req *req, const char *room, const char *user)
{
    char topic[VIGIL_TOPIC_MAX], key[VIGIL_KEY_MAX];
    snprintf(topic, sizeof topic, "room/%s/message", room);
    snprintf(key, sizeof key, "room:%s", room);
    msg_arg a = {room, user};
    publish_request(g, req, build_message, &a, topic, key, false);
}

void gateway_api_answer(gateway *g, vigil_http_req *req, const char *session, const char *user)
{
    char topic[VIGIL_TOPIC_MAX], key[VIGIL_KEY_MAX];
    snprintf(topic, sizeof topic, "council/%s/answer", session);
    snprintf(key, sizeof key, "council:%s", session);
    publish_request(g, req, build_answer, user, topic, key, false);
}

static gw_req_result build_suggestion(json_object *body, const void *arg, const char *fresh_id,
                                      int64_t now, size_t max_text, json_object **payload,
                                      const char **limit, char *err, size_t errlen)
{
    (void)max_text;
    *limit = NULL;
    return gw_req_suggestion(body, arg, fresh_id, now, payload, err, errlen);
}

void gateway_api_suggestion(gateway *g, vigil_http_req *req, const char *persona,
                            const char *user)
{
    char topic[VIGIL_TOPIC_MAX], key[VIGIL_KEY_MAX];
    snprintf(topic, sizeof topic, "persona/%s/command", persona);
    snprintf(key, sizeof key, "persona:%s", persona);
    publish_request(g, req, build_suggestion, user, topic, key, true);
}

typedef struct beat_arg {
    gateway *g;
    const gw_beat *beat;
    char id_base[64];
    gw_status status; /* out: the beating session's own status */
    int changes;      /* out */
    json_object *forgotten; /* out: sessions this beat pushed out (GW_MAX_SESSIONS) */
} beat_arg;

/* The sessions a beat's decision forgot, as the answer's array (the
 * decision may run again after a version conflict: the last run's). */
static int keep_forgotten(beat_arg *a, const gw_presence_out *po)
{
    json_object_put(a->forgotten);
    a->forgotten = json_object_new_array();
    if (!a->forgotten)
        return -1;
    for (int i = 0; i < po->nforgotten; i++)
        json_object_array_add(a->forgotten, json_object_new_string(po->forgotten[i]));
    return 0;
}

static int beat_fn(void *arg, const char *key, const char *state_json, int64_t now_ms,
                   vigil_effects *fx, vigil_error *err)
{
    (void)key;
    beat_arg *a = arg;
    gw_presence_out po;
    if (gw_presence_beat(&a->g->cfg.presence, state_json, a->beat, now_ms, &po) != GW_PRESENCE_OK)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    a->status = gw_presence_derive(&a->g->cfg.presence, a->beat->last_activity > now_ms ? now_ms : a->beat->last_activity,
                                   now_ms, a->beat->claimed, now_ms);
    a->changes = po.nchanges;
    int rc = keep_forgotten(a, &po);
    if (rc == 0)
        rc = gateway_presence_fx(a->beat->user, &po, a->id_base, now_ms, fx);
    gw_presence_out_free(&po);
    return rc == 0 ? 0 : vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
}

/* 200 {user, session, status, changes, forgotten}: forgotten lists the
 * user's other sessions this beat pushed out at GW_MAX_SESSIONS (each
 * counted as limit sessions_per_user), so the limit is never silent. */
static void beat_answer(vigil_http_req *req, const char *user, const gw_beat *beat, beat_arg *a)
{
    int nforgotten = a->forgotten ? (int)json_object_array_length(a->forgotten) : 0;
    for (int i = 0; i < nforgotten; i++)
        gateway_limit_count("sessions_per_user");
    json_object *o = json_object_new_object();
    json_object_object_add(o, "user", json_object_new_string(user));
    json_object_object_add(o, "session", json_object_new_string(beat->session));
    json_object_object_add(o, "status", json_object_new_string(gw_status_name(a->status)));
    json_object_object_add(o, "changes", json_object_new_int(a->changes));
    json_object_object_add(o, "forgotten", a->forgotten ? json_object_get(a->forgotten)
                                                        : json_object_new_array());
    vigil_http_respond_json(req, 200, o);
    json_object_put(o);
}

void gateway_api_presence(gateway *g, vigil_http_req *req, const char *user)
{
    json_object *body = body_object(g, req);
    if (!body)
        return;
    const char *rooms[GW_MAX_ROOMS];
    gw_beat beat;
    char err[200];
    const char *limit;
    gw_req_result r = gw_req_presence(body, user, &g->cfg.presence, vigil_now_ms(), &beat, rooms,
                                      GW_MAX_ROOMS, &limit, err, sizeof err);
    if (r != GW_REQ_OK) {
        gateway_refuse(req, r == GW_REQ_FORBIDDEN ? 403 : 400, limit, err);
        json_object_put(body);
        return;
    }
    beat_arg a = {.g = g, .beat = &beat};
    gateway_fresh_id(a.id_base, sizeof a.id_base);
    char key[VIGIL_KEY_MAX];
    snprintf(key, sizeof key, "user:%s", user);
    vigil_runtime *rt = atomic_load(&g->rt);
    vigil_runtime_conn *conn = gw_pool_take(g);
    vigil_error verr = {0};
    int rc = VIGIL_DECIDE_GAVE_UP;
    if (rt && conn)
        rc = vigil_runtime_decide(rt, conn, key, NULL, vigil_now_ms(), beat_fn, &a, &verr);
    gw_pool_put(g, conn);
    if (rc == VIGIL_DECIDE_DONE)
        beat_answer(req, user, &beat, &a);
    else
        answer_decide(req, rc, &verr);
    json_object_put(a.forgotten);
    json_object_put(body);
}
