/* sim.h - an in-memory stand-in for what the runtime does with the core's
 * actions (the commit order of libshared effects.h: state, then the
 * auxiliary operations in the order added - a queue flush moves the queue
 * to the outbox there - then the published messages appended to the
 * outbox). Lets the tests follow a room over many inputs. Header-only:
 * each test file includes it once. */
#ifndef CHAT_TEST_SIM_H
#define CHAT_TEST_SIM_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "chat.h"

#define SIM_MAX 4096

typedef struct sim_msg {
    char topic[128];
    char *payload;
} sim_msg;

typedef struct sim {
    chat_config cfg;
    char room[CHAT_ID_MAX + 1];
    char *state;
    bool paused_all;
    sim_msg outbox[SIM_MAX];
    int n_out;
    sim_msg queue[SIM_MAX];
    int n_queue;
    char *log[SIM_MAX];
    int n_log;
    char sets[64][CHAT_ID_MAX * 2 + 2]; /* "set|member" */
    int n_sets;
    int n_inputs;
    chat_room *kept;  /* the room state holds, as the service keeps it */
    char *kept_text;  /* the record text kept was derived with */
} sim;

static inline void sim_init(sim *s, const char *room)
{
    memset(s, 0, sizeof *s);
    chat_config_init(&s->cfg);
    snprintf(s->room, sizeof s->room, "%s", room);
}

static inline void sim_forget(sim *s)
{
    chat_room_free(s->kept);
    free(s->kept_text);
    s->kept = NULL;
    s->kept_text = NULL;
}

static inline void sim_free(sim *s)
{
    sim_forget(s);
    free(s->state);
    for (int i = 0; i < s->n_out; i++)
        free(s->outbox[i].payload);
    for (int i = 0; i < s->n_queue; i++)
        free(s->queue[i].payload);
    for (int i = 0; i < s->n_log; i++)
        free(s->log[i]);
}

static inline bool sim_in_set(const sim *s, const char *set, const char *member)
{
    char k[sizeof s->sets[0]];
    snprintf(k, sizeof k, "%s|%s", set, member);
    for (int i = 0; i < s->n_sets; i++)
        if (strcmp(s->sets[i], k) == 0)
            return true;
    return false;
}

static inline void sim_set(sim *s, const char *set, const char *member, bool add)
{
    char k[sizeof s->sets[0]];
    snprintf(k, sizeof k, "%s|%s", set, member);
    for (int i = 0; i < s->n_sets; i++) {
        if (strcmp(s->sets[i], k) == 0) {
            if (!add) {
                memmove(s->sets[i], s->sets[s->n_sets - 1], sizeof s->sets[0]);
                s->n_sets--;
            }
            return;
        }
    }
    if (add)
        snprintf(s->sets[s->n_sets++], sizeof s->sets[0], "%s", k);
}

/* Runs one input through the core and commits its actions. */
static inline void sim_commit(sim *s, const chat_result *r)
{
    if (r->new_state) {
        free(s->state);
        s->state = strdup(r->new_state);
    }
    for (size_t i = 0; i < r->n; i++) {
        const chat_action *a = &r->v[i];
        switch (a->kind) {
        case CHAT_ACT_LOG_APPEND:
            assert_true(s->n_log < SIM_MAX);
            s->log[s->n_log++] = strdup(a->value);
            break;
        case CHAT_ACT_QUEUE_PUSH:
            assert_true(s->n_queue < SIM_MAX);
            snprintf(s->queue[s->n_queue].topic, sizeof s->queue[0].topic, "%s", a->topic);
            s->queue[s->n_queue++].payload = strdup(a->value);
            break;
        case CHAT_ACT_QUEUE_FLUSH:
            for (int q = 0; q < s->n_queue; q++) {
                assert_true(s->n_out < SIM_MAX);
                s->outbox[s->n_out++] = s->queue[q];
            }
            s->n_queue = 0;
            break;
        case CHAT_ACT_KEY_SET:
            if (strcmp(a->name, CHAT_KEY_PAUSED_ALL) == 0)
                s->paused_all = true;
            break;
        case CHAT_ACT_KEY_DELETE:
            if (strcmp(a->name, CHAT_KEY_PAUSED_ALL) == 0)
                s->paused_all = false;
            if (strncmp(a->name, CHAT_QUEUE_PREFIX, strlen(CHAT_QUEUE_PREFIX)) == 0) {
                for (int q = 0; q < s->n_queue; q++)
                    free(s->queue[q].payload);
                s->n_queue = 0;
            }
            if (strncmp(a->name, CHAT_LOG_PREFIX, strlen(CHAT_LOG_PREFIX)) == 0) {
                for (int q = 0; q < s->n_log; q++)
                    free(s->log[q]);
                s->n_log = 0;
            }
            break;
        case CHAT_ACT_SET_ADD:
        case CHAT_ACT_SET_REMOVE:
            sim_set(s, a->name, a->value, a->kind == CHAT_ACT_SET_ADD);
            break;
        case CHAT_ACT_PUBLISH:
            break;
        }
    }
    for (size_t i = 0; i < r->n; i++) {
        const chat_action *a = &r->v[i];
        if (a->kind != CHAT_ACT_PUBLISH)
            continue;
        assert_true(s->n_out < SIM_MAX);
        snprintf(s->outbox[s->n_out].topic, sizeof s->outbox[0].topic, "%s", a->topic);
        s->outbox[s->n_out++].payload = strdup(a->value);
    }
}

static inline void sim_same_result(const chat_result *a, const chat_result *b)
{
    assert_true((a->new_state == NULL) == (b->new_state == NULL));
    if (a->new_state)
        assert_string_equal(a->new_state, b->new_state);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const chat_action *x = &a->v[i], *y = &b->v[i];
        assert_int_equal(x->kind, y->kind);
        const char *xs[] = {x->name, x->topic, x->value}, *ys[] = {y->name, y->topic, y->value};
        for (int k = 0; k < 3; k++) {
            assert_true((xs[k] == NULL) == (ys[k] == NULL));
            if (xs[k])
                assert_string_equal(xs[k], ys[k]);
        }
    }
    assert_true(a->depth == b->depth && a->notified == b->notified && a->queued == b->queued &&
                a->flushed == b->flushed && a->stopped == b->stopped &&
                a->mentions_capped == b->mentions_capped && a->logged == b->logged &&
                a->room_deleted == b->room_deleted);
}

/* The service keeps the room it decided on last (its record cache) and
 * decides the next input of the room on it, without parsing the record
 * again: each input is decided here both ways, and both must give the
 * same record and actions. */
static inline void sim_decide_kept(sim *s, const chat_input *in, int64_t now,
                                   const chat_result *want)
{
    if (s->kept && s->state && strcmp(s->kept_text, s->state) == 0) {
        chat_result k;
        chat_result_init(&k);
        bool deleted = false;
        char err[200] = "";
        assert_int_equal(chat_decide(&s->cfg, s->kept, in, now, &k, &deleted, err, sizeof err), 0);
        sim_same_result(want, &k);
        chat_result_free(&k);
        if (!deleted && s->kept->exists && want->new_state) {
            free(s->kept_text);
            s->kept_text = strdup(want->new_state);
            return;
        }
    }
    sim_forget(s);
    if (!want->new_state)
        return;
    char err[200] = "";
    s->kept = chat_room_from_json(s->room, want->new_state, err, sizeof err);
    s->kept_text = strdup(want->new_state);
    assert_non_null(s->kept);
}

static inline int sim_apply(sim *s, chat_input *in, int64_t now, chat_result *r)
{
    chat_result_init(r);
    in->paused_all = s->paused_all;
    char err[200] = "";
    int rc = chat_apply(&s->cfg, s->room, s->state, in, now, r, err, sizeof err);
    assert_int_equal(rc, 0);
    sim_decide_kept(s, in, now, r);
    sim_commit(s, r);
    s->n_inputs++;
    return rc;
}

/* A message input; fields not given are zero. */
static inline chat_input sim_msg_in(const char *id, const char *sender, chat_sender_type t,
                                    const char *text)
{
    chat_input in;
    memset(&in, 0, sizeof in);
    in.kind = CHAT_IN_MESSAGE;
    in.msg.id = id;
    in.msg.sender = sender;
    in.msg.sender_type = t;
    in.msg.text = text;
    in.msg.log_json = "{}";
    return in;
}

static inline void sim_send(sim *s, chat_input in, int64_t now)
{
    chat_result r;
    sim_apply(s, &in, now, &r);
    chat_result_free(&r);
}

static inline void sim_control(sim *s, const char *id, chat_control_action a, bool all,
                               int64_t now)
{
    chat_input in;
    memset(&in, 0, sizeof in);
    in.kind = CHAT_IN_CONTROL;
    in.ctl.id = id;
    in.ctl.action = a;
    in.ctl.all = all;
    in.ctl.by = "joel";
    in.ctl.topic_room = all ? s->room : NULL;
    chat_result r;
    sim_apply(s, &in, now, &r);
    chat_result_free(&r);
}

/* The value of integer field `field` in JSON text, or -1. */
static inline int64_t json_i64(const char *json, const char *field)
{
    json_object *o = json_tokener_parse(json), *v;
    int64_t out = -1;
    if (o && json_object_object_get_ex(o, field, &v))
        out = json_object_get_int64(v);
    json_object_put(o);
    return out;
}

/* Copies string field `field` of JSON text into out ("" if absent). */
static inline const char *json_s(const char *json, const char *field, char *out, size_t n)
{
    json_object *o = json_tokener_parse(json), *v;
    out[0] = '\0';
    if (o && json_object_object_get_ex(o, field, &v) && json_object_is_type(v, json_type_string))
        snprintf(out, n, "%s", json_object_get_string(v));
    json_object_put(o);
    return out;
}

static inline bool json_flag(const char *json, const char *field)
{
    json_object *o = json_tokener_parse(json), *v;
    bool out = o && json_object_object_get_ex(o, field, &v) && json_object_get_boolean(v);
    json_object_put(o);
    return out;
}

#endif
