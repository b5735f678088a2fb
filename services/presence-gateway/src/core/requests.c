/* requests.c - the bodies of POST requests turned into what the gateway
 * publishes: a presence beat, a human room message, an answer to a
 * council question. Every field is checked; anything wrong is a 400 with
 * a detail naming the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/json.h>
#include <vigil/msg_persona.h>
#include <vigil/names.h>
#include <vigil/text.h>
#include "gateway.h"

/* A string field: 0 ok, 1 absent, -1 wrong (not a string, or holding a
 * NUL, refused rather than cut: vigil_json_str_check's rule, every field
 * being used as a C string afterwards). */
static int str_field(json_object *b, const char *k, const char **out, char *err, size_t errlen)
{
    json_object *v = NULL;
    json_object_object_get_ex(b, k, &v);
    switch (vigil_json_str_check(v, out)) {
    case VIGIL_JSON_STR_OK:
        return 0;
    case VIGIL_JSON_STR_ABSENT:
        return 1;
    case VIGIL_JSON_STR_HAS_NUL:
        snprintf(err, errlen, "field '%s': contains a NUL character (\\u0000)", k);
        return -1;
    case VIGIL_JSON_STR_NOT_STRING:
    default:
        snprintf(err, errlen, "field '%s': expected a string", k);
        return -1;
    }
}

static int id_field(json_object *b, const char *k, bool required, const char **out, char *err,
                    size_t errlen)
{
    int rc = str_field(b, k, out, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        if (!required)
            return 1;
        snprintf(err, errlen, "field '%s' is required", k);
        return -1;
    }
    if (!gw_id_valid(*out)) {
        snprintf(err, errlen, "field '%s': 1-64 characters of A-Z a-z 0-9 . _ -", k);
        return -1;
    }
    return 0;
}

/* An event id given by the client (so a retried POST is one message):
 * 1..VIGIL_EVENT_ID_MAX (128) printable ASCII without '/', '+', '#' (what
 * Vigil's ids are made of, so it may come back as an input id). 0 ok,
 * 1 absent, -1 wrong. */
static int event_id_field(json_object *b, const char *k, const char **out, char *err, size_t errlen)
{
    int rc = str_field(b, k, out, err, errlen);
    if (rc != 0)
        return rc;
    size_t n = strlen(*out);
    bool ok = n >= 1 && n <= VIGIL_EVENT_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (*out)[i] >= ' ' && (*out)[i] <= '~' && !strchr("/+#", (*out)[i]);
    if (!ok) {
        snprintf(err, errlen, "field '%s': 1-%d printable characters without / + #", k,
                 VIGIL_EVENT_ID_MAX);
        return -1;
    }
    return 0;
}

static int text_field(json_object *b, const char *k, size_t max, const char **out,
                      const char **limit, char *err, size_t errlen)
{
    int rc = str_field(b, k, out, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1 || !**out) {
        snprintf(err, errlen, "field '%s' is required and not empty", k);
        return -1;
    }
    if (strlen(*out) > max) {
        *limit = "text_bytes";
        snprintf(err, errlen, "field '%s': longer than %zu bytes", k, max);
        return -1;
    }
    /* libshared's one UTF-8 rule, the one every service's intake applies:
     * a text the gateway took must not be refused by chat-router or
     * dormancy-monitor after the client got its 2xx. */
    size_t n = strlen(*out), good = vigil_utf8_cut(*out, n);
    if (good != n) {
        snprintf(err, errlen,
                 "field '%s': invalid UTF-8 at byte %zu (a broken sequence, an overlong form, a "
                 "UTF-16 surrogate or past U+10FFFF)",
                 k, good);
        return -1;
    }
    return 0;
}

/* When the person last did something: `idle_ms` (how long ago, by the
 * client's own clock, so a browser whose clock is off still counts as
 * active) becomes now - idle_ms at this gateway; `last_activity` (ms since
 * the epoch) is taken as it is, against the gateway's clock; neither is
 * now. Both at once is refused: they could disagree. 0 ok, -1 with err. */
static int activity_field(json_object *body, int64_t now, int64_t *out, char *err, size_t errlen)
{
    json_object *la = NULL, *idle = NULL;
    if (json_object_object_get_ex(body, "last_activity", &la) &&
        json_object_is_type(la, json_type_null))
        la = NULL;
    if (json_object_object_get_ex(body, "idle_ms", &idle) &&
        json_object_is_type(idle, json_type_null))
        idle = NULL;
    *out = now;
    if (la && idle) {
        snprintf(err, errlen, "fields 'idle_ms' and 'last_activity': give one, not both");
        return -1;
    }
    if (idle) {
        if (!json_object_is_type(idle, json_type_int) || json_object_get_int64(idle) < 0) {
            snprintf(err, errlen, "field 'idle_ms': milliseconds since the last activity (>= 0)");
            return -1;
        }
        int64_t ms = json_object_get_int64(idle);
        *out = ms >= now ? 0 : now - ms;
    } else if (la) {
        if (!json_object_is_type(la, json_type_int) || json_object_get_int64(la) < 0) {
            snprintf(err, errlen, "field 'last_activity': milliseconds since the epoch");
            return -1;
        }
        *out = json_object_get_int64(la);
    }
    return 0;
}

gw_req_result gw_req_presence(json_object *body, const char *user, const gw_presence_cfg *c,
                              int64_t now, gw_beat *b, const char **rooms, int maxrooms,
                              const char **limit, char *err, size_t errlen)
{
    *limit = NULL;
    memset(b, 0, sizeof *b);
    const char *u = NULL, *session = NULL, *status = NULL;
    int rc = id_field(body, "user", false, &u, err, errlen);
    if (rc < 0)
        return GW_REQ_BAD;
    if (rc == 0 && strcmp(u, user) != 0) {
        snprintf(err, errlen, "this token belongs to '%s', not '%s'", user, u);
        return GW_REQ_FORBIDDEN;
    }
    if (id_field(body, "session", true, &session, err, errlen) < 0)
        return GW_REQ_BAD;
    json_object *arr;
    if (!json_object_object_get_ex(body, "rooms", &arr) || !json_object_is_type(arr, json_type_array)) {
        snprintf(err, errlen, "field 'rooms': expected an array of room ids");
        return GW_REQ_BAD;
    }
    int n = (int)json_object_array_length(arr);
    if (n > maxrooms || n > c->max_rooms) {
        *limit = "rooms_per_session";
        snprintf(err, errlen, "field 'rooms': at most %d rooms a session (%d given)",
                 maxrooms < c->max_rooms ? maxrooms : c->max_rooms, n);
        return GW_REQ_BAD;
    }
    for (int i = 0; i < n; i++) {
        if (vigil_json_str_check(json_object_array_get_idx(arr, (size_t)i), &rooms[i]) !=
                VIGIL_JSON_STR_OK ||
            !gw_id_valid(rooms[i])) {
            snprintf(err, errlen, "field 'rooms[%d]': a room id (1-64 of A-Z a-z 0-9 . _ -)", i);
            return GW_REQ_BAD;
        }
    }
    b->claimed = GW_ACTIVE;
    rc = str_field(body, "status", &status, err, errlen);
    if (rc < 0)
        return GW_REQ_BAD;
    if (rc == 0) {
        int s = gw_status_parse(status);
        if (s < 0) {
            snprintf(err, errlen, "field 'status': one of active, idle, away");
            return GW_REQ_BAD;
        }
        b->claimed = (gw_status)s;
    }
    if (activity_field(body, now, &b->last_activity, err, errlen) < 0)
        return GW_REQ_BAD;
    b->user = user;
    b->session = session;
    b->rooms = rooms;
    b->nrooms = n;
    return GW_REQ_OK;
}

/* mentions: null or absent (NULL), else an array of at most
 * GW_MAX_MENTIONS persona ids. 0 ok, -1 with err (and *limit when there
 * are too many). */
static int mentions_field(json_object *body, json_object **out, const char **limit, char *err,
                          size_t errlen)
{
    json_object *m;
    *out = NULL;
    if (!json_object_object_get_ex(body, "mentions", &m) || json_object_is_type(m, json_type_null))
        return 0;
    bool ok = json_object_is_type(m, json_type_array);
    for (size_t i = 0; ok && i < json_object_array_length(m); i++) {
        const char *p = NULL;
        ok = vigil_json_str_check(json_object_array_get_idx(m, i), &p) == VIGIL_JSON_STR_OK &&
             gw_id_valid(p);
    }
    if (!ok) {
        snprintf(err, errlen, "field 'mentions': an array of persona ids");
        return -1;
    }
    size_t n = json_object_array_length(m);
    if (n > GW_MAX_MENTIONS) {
        *limit = "mentions_per_message";
        snprintf(err, errlen, "field 'mentions': at most %d persona ids (%zu given)",
                 GW_MAX_MENTIONS, n);
        return -1;
    }
    *out = m;
    return 0;
}

/* A request's payload, starting with its id: the client's, else fresh_id.
 * NULL (err says so) when out of memory. */
static json_object *new_payload(const char *id, const char *fresh_id, char *err, size_t errlen)
{
    json_object *o = json_object_new_object();
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_object_object_add(o, "id", json_object_new_string(id ? id : fresh_id));
    return o;
}

gw_req_result gw_req_message(json_object *body, const char *room, const char *user,
                             const char *fresh_id, int64_t now, size_t max_text,
                             json_object **payload, const char **limit, char *err, size_t errlen)
{
    *limit = NULL;
    *payload = NULL;
    const char *text = NULL, *id = NULL, *reply_to = NULL, *sender = NULL;
    if (id_field(body, "sender", false, &sender, err, errlen) < 0)
        return GW_REQ_BAD;
    if (sender && strcmp(sender, user) != 0) {
        snprintf(err, errlen, "this token belongs to '%s', not '%s'", user, sender);
        return GW_REQ_FORBIDDEN;
    }
    json_object *mentions;
    if (text_field(body, "text", max_text, &text, limit, err, errlen) < 0 ||
        event_id_field(body, "id", &id, err, errlen) < 0 ||
        event_id_field(body, "reply_to", &reply_to, err, errlen) < 0 ||
        mentions_field(body, &mentions, limit, err, errlen) < 0)
        return GW_REQ_BAD;
    json_object *o = new_payload(id, fresh_id, err, errlen);
    if (!o)
        return GW_REQ_BAD;
    json_object_object_add(o, "room", json_object_new_string(room));
    json_object_object_add(o, "sender", json_object_new_string(user));
    json_object_object_add(o, "sender_type", json_object_new_string("human"));
    json_object_object_add(o, "text", json_object_new_string(text));
    if (reply_to)
        json_object_object_add(o, "reply_to", json_object_new_string(reply_to));
    if (mentions)
        json_object_object_add(o, "mentions", json_object_get(mentions));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    *payload = o;
    return GW_REQ_OK;
}

gw_req_result gw_req_answer(json_object *body, const char *user, const char *fresh_id,
                            int64_t now, size_t max_text, json_object **payload,
                            const char **limit, char *err, size_t errlen)
{
    *limit = NULL;
    *payload = NULL;
    const char *qid = NULL, *answer = NULL, *id = NULL;
    int rc = event_id_field(body, "question_id", &qid, err, errlen);
    if (rc < 0)
        return GW_REQ_BAD;
    if (rc == 1) {
        snprintf(err, errlen, "field 'question_id' is required");
        return GW_REQ_BAD;
    }
    if (text_field(body, "answer", max_text, &answer, limit, err, errlen) < 0 ||
        event_id_field(body, "id", &id, err, errlen) < 0)
        return GW_REQ_BAD;
    /* council refuses an answer of spaces (the question stays open for a
     * real one): no 202 for what it would refuse */
    if (vigil_text_blank(answer)) {
        snprintf(err, errlen, "field 'answer': blank (spaces only): the question waits for an "
                              "answer that says something");
        return GW_REQ_BAD;
    }
    json_object *o = new_payload(id, fresh_id, err, errlen);
    if (!o)
        return GW_REQ_BAD;
    json_object_object_add(o, "question_id", json_object_new_string(qid));
    json_object_object_add(o, "answer", json_object_new_string(answer));
    json_object_object_add(o, "by", json_object_new_string(user));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    *payload = o;
    return GW_REQ_OK;
}

gw_req_result gw_req_fits(json_object *payload, size_t max_payload, const char **limit, char *err,
                          size_t errlen)
{
    *limit = NULL;
    char *text = vigil_json_dump(payload);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return GW_REQ_BAD;
    }
    size_t n = strlen(text);
    free(text);
    if (n <= max_payload)
        return GW_REQ_OK;
    *limit = "payload_bytes";
    snprintf(err, errlen,
             "the event would be %zu bytes as published, more than %zu (VIGIL_MAX_PAYLOAD): its "
             "text escapes to more in JSON (newlines, quotes); send a shorter one",
             n, max_payload);
    return GW_REQ_BAD;
}

gw_req_result gw_req_suggestion(json_object *body, const char *user, const char *fresh_id,
                                int64_t now, json_object **payload, char *err, size_t errlen)
{
    *payload = NULL;
    const char *room = NULL, *sid = NULL, *answer = NULL, *id = NULL;
    if (id_field(body, "room", true, &room, err, errlen) < 0 ||
        event_id_field(body, "suggestion_id", &sid, err, errlen) < 0 ||
        event_id_field(body, "id", &id, err, errlen) < 0)
        return GW_REQ_BAD;
    int rc = str_field(body, "answer", &answer, err, errlen);
    if (rc < 0)
        return GW_REQ_BAD;
    int which = rc == 1 ? -1 : vigil_answer_index(answer);
    if (which < 0) {
        snprintf(err, errlen, "field 'answer': one of yes, no, snooze (any case; or the "
                              "snooze button's label, e.g. \"Snooze 5min\")");
        return GW_REQ_BAD;
    }
    json_object *o = new_payload(id, fresh_id, err, errlen);
    if (!o)
        return GW_REQ_BAD;
    json_object_object_add(o, "cmd", json_object_new_string("answer"));
    json_object_object_add(o, "room", json_object_new_string(room));
    if (sid)
        json_object_object_add(o, "suggestion_id", json_object_new_string(sid));
    json_object_object_add(o, "answer", json_object_new_string(vigil_answer_names[which]));
    json_object_object_add(o, "by", json_object_new_string(user));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    *payload = o;
    return GW_REQ_OK;
}
