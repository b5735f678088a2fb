/* kept.c - what ?snapshot=1 gives beside the retained state topics,
 * because no retained state carries it: the pending questions of each
 * council session, and the latest presence of each user in each room.
 *
 * Each is a small record (the runtime's state of key questions:{s} or
 * humans:{r}: {"items": {id: {"exp": ms, "p": payload}}}) that the inputs
 * naming it change, pruned of what expired, and written out whole as one
 * kept entry on a topic of its own (council/{s}/questions,
 * room/{r}/humans) which a new stream gets with the other states. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/text.h>
#include "gateway.h"

typedef enum { KEPT_QUESTIONS, KEPT_HUMANS } kept_kind;

static const char *str_of(json_object *o, const char *k)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static bool int_of(json_object *o, const char *k, int64_t *out)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

/* The level `i` of topic (0 = the first) into out; false when it has none. */
static bool topic_level(const char *topic, int i, char *out, size_t outlen)
{
    const char *p = topic;
    for (; i > 0 && p; i--) {
        p = strchr(p, '/');
        if (p)
            p++;
    }
    if (!p)
        return false;
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= outlen)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

static bool topic_last_is(const char *topic, const char *last)
{
    const char *s = strrchr(topic, '/');
    return s && strcmp(s + 1, last) == 0;
}

bool gw_kept_key(const char *topic, json_object *payload, char *key, size_t keylen)
{
    char first[16], id[GW_ID_MAX + 1];
    if (!topic_level(topic, 0, first, sizeof first) || !topic_level(topic, 1, id, sizeof id) ||
        !gw_id_valid(id))
        return false;
    if (strcmp(first, "room") == 0 && topic_last_is(topic, "presence"))
        return snprintf(key, keylen, "humans:%s", id) < (int)keylen;
    if (strcmp(first, "council") != 0)
        return false;
    if (topic_last_is(topic, "event")) {
        const char *type = str_of(payload, "type");
        if (!type || (strcmp(type, "question") != 0 && strcmp(type, "session_ended") != 0))
            return false;
    } else if (!topic_last_is(topic, "answer") && !topic_last_is(topic, "state")) {
        return false;
    }
    return snprintf(key, keylen, "questions:%s", id) < (int)keylen;
}

void gw_kept_out_free(gw_kept_out *o)
{
    free(o->new_state);
    free(o->entry);
    o->new_state = o->entry = NULL;
}

/* Keeps (a copy of) payload, with its topic, as item id expiring at exp
 * (0 = never). */
static int keep(json_object *items, const char *id, const char *topic, json_object *payload,
                int64_t exp)
{
    json_object *copy = NULL, *it = json_object_new_object();
    if (!it || json_object_deep_copy(payload, &copy, NULL) != 0 || !copy) {
        json_object_put(it);
        return -1;
    }
    json_object_object_add(copy, "topic", json_object_new_string(topic));
    json_object_object_add(it, "exp", json_object_new_int64(exp));
    json_object_object_add(it, "p", copy);
    json_object_object_add(items, id, it);
    return 0;
}

static int64_t item_exp(json_object *it)
{
    int64_t e = 0;
    return int_of(it, "exp", &e) ? e : 0;
}

/* Drops what expired at now; true when something went. */
static bool prune(json_object *items, int64_t now)
{
    bool changed = false;
    bool again = true;
    while (again) { /* json-c forbids deleting while iterating */
        again = false;
        json_object_object_foreach(items, k, v)
        {
            int64_t e = item_exp(v);
            if (e > 0 && e <= now) {
                json_object_object_del(items, k);
                changed = again = true;
                break;
            }
        }
    }
    return changed;
}

/* A kept question's priority: 1..10, higher more urgent; 5 when absent. */
static int64_t question_priority(json_object *p)
{
    int64_t prio = GW_QUESTION_PRIORITY_DEFAULT;
    int_of(p, "priority", &prio);
    return prio;
}

/* A kept item's payload's priority, for questions (see question_priority). */
static int64_t item_priority(json_object *it)
{
    json_object *p = NULL;
    json_object_object_get_ex(it, "p", &p);
    return question_priority(p);
}

/* Over max items, drops the least worth keeping: for questions the least
 * urgent (lowest priority, the first to surface last), then among equals,
 * as for presence, the one that would expire first (never-expiring ones
 * last): the oldest activity, the most urgent to lose anyway. */
static bool bound(json_object *items, int max, bool by_prio)
{
    bool changed = false;
    while (json_object_object_length(items) > max) {
        const char *victim = NULL;
        int64_t best = INT64_MAX, best_prio = INT64_MAX;
        json_object_object_foreach(items, k, v)
        {
            int64_t e = item_exp(v);
            int64_t prio = by_prio ? item_priority(v) : 0;
            if (e <= 0)
                e = INT64_MAX; /* never expires: dropped last */
            if (!victim || prio < best_prio || (prio == best_prio && e < best)) {
                victim = k;
                best = e;
                best_prio = prio;
            }
        }
        json_object_object_del(items, victim);
        changed = true;
    }
    return changed;
}

static bool clear(json_object *items)
{
    bool changed = false;
    bool again = true;
    while (again) {
        again = false;
        json_object_object_foreach(items, k, v)
        {
            (void)v;
            json_object_object_del(items, k);
            changed = again = true;
            break;
        }
    }
    return changed;
}

/* A council input on the session's pending questions: a question is kept
 * until its expires_at, an answer to it, or the end of its session (a
 * session_ended event, or the state `completed`). A blank answer (one some
 * other client published: the gateway's own API refuses it) is no answer:
 * council refuses it and the question stays pending there. */
static int questions_input(json_object *items, const char *topic, json_object *p, int64_t now,
                           bool *changed)
{
    if (topic_last_is(topic, "answer")) {
        const char *qid = str_of(p, "question_id");
        if (qid && !vigil_text_blank(str_of(p, "answer")) &&
            json_object_object_get_ex(items, qid, NULL)) {
            json_object_object_del(items, qid);
            *changed = true;
        }
        return 0;
    }
    if (topic_last_is(topic, "state")) {
        const char *st = str_of(p, "status");
        if (st && strcmp(st, "completed") == 0 && clear(items))
            *changed = true;
        return 0;
    }
    const char *type = str_of(p, "type");
    if (type && strcmp(type, "session_ended") == 0) {
        if (clear(items))
            *changed = true;
        return 0;
    }
    const char *qid = str_of(p, "question_id");
    if (!qid)
        qid = str_of(p, "id");
    int64_t exp = 0;
    if (!type || strcmp(type, "question") != 0 || !qid)
        return 0;
    if (int_of(p, "expires_at", &exp) && exp <= now) {
        if (json_object_object_get_ex(items, qid, NULL)) {
            json_object_object_del(items, qid);
            *changed = true;
        }
        return 0;
    }
    *changed = true;
    return keep(items, qid, topic, p, exp > 0 ? exp : 0);
}

/* A presence on the user's latest status in the room: kept while active
 * or idle, until it would read away (last_activity + away_ms); dropped at
 * `away`. */
static int humans_input(const gw_presence_cfg *c, json_object *items, const char *topic,
                        json_object *p, int64_t now, bool *changed)
{
    const char *user = str_of(p, "user"), *status = str_of(p, "status");
    if (!user || !gw_id_valid(user))
        return 0;
    int64_t la = now;
    int_of(p, "last_activity", &la);
    int64_t exp = (la > now ? now : la) + c->away_ms;
    if (!status || strcmp(status, "away") == 0 || exp <= now) {
        if (json_object_object_get_ex(items, user, NULL)) {
            json_object_object_del(items, user);
            *changed = true;
        }
        return 0;
    }
    *changed = true;
    return keep(items, user, topic, p, exp);
}

typedef struct {
    json_object *p;
    int64_t prio;
    size_t order;
} ranked;

/* Higher priority first; equal ones in the order they were asked. */
static int by_priority(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The kept entry: {session, questions: [...]} (the most urgent first, as
 * a user should see them) or {room, humans: [...]}. */
static char *kept_entry(kept_kind kind, const char *name, const char *topic, json_object *items)
{
    json_object *o = json_object_new_object(), *arr = json_object_new_array();
    size_t n = (size_t)json_object_object_length(items);
    ranked *r = calloc(n ? n : 1, sizeof *r);
    if (!o || !arr || !r) {
        json_object_put(o);
        json_object_put(arr);
        free(r);
        return NULL;
    }
    size_t m = 0;
    json_object_object_foreach(items, k, v)
    {
        (void)k;
        json_object *p;
        if (m < n && json_object_object_get_ex(v, "p", &p)) {
            r[m] = (ranked){p, kind == KEPT_QUESTIONS ? question_priority(p) : 0, m};
            m++;
        }
    }
    if (kind == KEPT_QUESTIONS)
        qsort(r, m, sizeof *r, by_priority);
    for (size_t i = 0; i < m; i++)
        json_object_array_add(arr, json_object_get(r[i].p));
    free(r);
    json_object_object_add(o, kind == KEPT_QUESTIONS ? "session" : "room",
                           json_object_new_string(name));
    json_object_object_add(o, kind == KEPT_QUESTIONS ? "questions" : "humans", arr);
    char *e = gw_log_entry(topic, o);
    json_object_put(o);
    return e;
}

int gw_kept_apply(const gw_presence_cfg *c, const char *key, const char *state_json,
                  const char *topic, json_object *payload, int64_t now, gw_kept_out *out)
{
    memset(out, 0, sizeof *out);
    kept_kind kind;
    const char *name;
    if (strncmp(key, "questions:", 10) == 0) {
        kind = KEPT_QUESTIONS;
        name = key + 10;
    } else if (strncmp(key, "humans:", 7) == 0) {
        kind = KEPT_HUMANS;
        name = key + 7;
    } else {
        return -1;
    }
    if (!gw_id_valid(name))
        return -1;
    snprintf(out->topic, sizeof out->topic, "%s/%s/%s", kind == KEPT_QUESTIONS ? "council" : "room",
             name, kind == KEPT_QUESTIONS ? "questions" : "humans");
    json_object *st = state_json ? json_tokener_parse(state_json) : NULL;
    json_object *items = NULL;
    if (!st || !json_object_is_type(st, json_type_object) ||
        !json_object_object_get_ex(st, "items", &items) ||
        !json_object_is_type(items, json_type_object)) {
        json_object_put(st);
        st = json_object_new_object();
        items = json_object_new_object();
        if (!st || !items) {
            json_object_put(st);
            json_object_put(items);
            return -1;
        }
        json_object_object_add(st, "items", items);
    }
    bool changed = prune(items, now);
    int rc = 0;
    if (payload && json_object_is_type(payload, json_type_object))
        rc = kind == KEPT_QUESTIONS ? questions_input(items, topic, payload, now, &changed)
                                    : humans_input(c, items, topic, payload, now, &changed);
    if (bound(items, kind == KEPT_QUESTIONS ? GW_KEPT_QUESTIONS_MAX : GW_KEPT_HUMANS_MAX,
              kind == KEPT_QUESTIONS))
        changed = true;
    json_object_object_foreach(items, k, v)
    {
        (void)k;
        int64_t e = item_exp(v);
        if (e > 0 && (out->next_due == 0 || e < out->next_due))
            out->next_due = e;
    }
    if (rc == 0 && changed) {
        out->changed = true;
        const char *t = json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN);
        out->new_state = t ? strdup(t) : NULL;
        if (!out->new_state)
            rc = -1;
        if (rc == 0 && json_object_object_length(items) > 0 &&
            !(out->entry = kept_entry(kind, name, out->topic, items)))
            rc = -1;
    }
    json_object_put(st);
    if (rc != 0)
        gw_kept_out_free(out);
    return rc;
}
