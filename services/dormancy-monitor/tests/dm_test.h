/* dm_test.h - test driver for the dormancy core: an injected clock, a fake
 * timer store fed by the core's timer actions, and helpers to send inputs
 * and look at outputs. Header-only so each test links the core alone.
 *
 * Every step round-trips the room through its JSON record, as the service
 * does between inputs, so serialization is exercised by every test. */
#ifndef DM_TEST_H
#define DM_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "dormancy.h"

#define MIN_MS 60000LL
#define T0 1700000000000LL /* a fixed epoch for every test */
/* The no-human notification byte for byte, threshold d, the default snooze
 * (5 min): the specified "💤 No human activity for 5min. Switch to
 * mention-only? [Yes] [No] [Snooze 5min]" at the default threshold. */
#define DM_NO_HUMAN_TEXT(d) \
    "\xF0\x9F\x92\xA4 No human activity for " d ". Switch to mention-only? " \
    "[Yes] [No] [Snooze 5min]"

typedef struct dm_fx {
    dormancy_room *room;
    dormancy_config cfg;
    int64_t now;
    dormancy_actions log;  /* every action since the last dm_clear */
    dormancy_timer store[512]; /* fake timer store */
    int n_store;
    int seq; /* input ids */
    char last_msg_id[64];
} dm_fx;

static inline void dm_make_id(void *ctx, int n, char *out, size_t outlen)
{
    dm_fx *f = ctx;
    snprintf(out, outlen, "ev%d.%d", f->seq, n);
}

static inline dm_fx *dm_new(void)
{
    dm_fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->room = dormancy_room_new("general");
    dormancy_config_init(&f->cfg);
    dormancy_actions_init(&f->log);
    f->now = T0;
    return f;
}

static inline void dm_free(dm_fx *f)
{
    dormancy_room_free(f->room);
    dormancy_actions_free(&f->log);
    free(f);
}

static inline void dm_clear(dm_fx *f)
{
    f->log.n = 0;
}

static inline void dm_store_apply(dm_fx *f, const dormancy_actions *a)
{
    for (size_t i = 0; i < a->n; i++) {
        const dormancy_action *x = &a->v[i];
        if (x->kind != DORMANCY_OUT_TIMER_SET && x->kind != DORMANCY_OUT_TIMER_CANCEL)
            continue;
        int j;
        for (j = 0; j < f->n_store; j++)
            if (strcmp(f->store[j].name, x->timer) == 0)
                break;
        if (x->kind == DORMANCY_OUT_TIMER_CANCEL) {
            if (j < f->n_store)
                f->store[j] = f->store[--f->n_store];
            continue;
        }
        if (j == f->n_store) {
            assert_true(f->n_store < 512);
            f->n_store++;
        }
        snprintf(f->store[j].name, sizeof f->store[j].name, "%s", x->timer);
        f->store[j].due = x->due;
    }
}

/* Appends a step's actions to the log, updates the fake store, and
 * replaces the room by its JSON round trip. */
static inline void dm_after(dm_fx *f, dormancy_actions *a)
{
    for (size_t i = 0; i < a->n; i++) {
        if (f->log.n == f->log.cap) {
            f->log.cap = f->log.cap ? f->log.cap * 2 : 64;
            f->log.v = realloc(f->log.v, f->log.cap * sizeof *f->log.v);
            assert_non_null(f->log.v);
        }
        f->log.v[f->log.n++] = a->v[i];
    }
    dm_store_apply(f, a);
    dormancy_actions_free(a);
    char *json = dormancy_room_to_json(f->room);
    assert_non_null(json);
    char err[200];
    dormancy_room *r = dormancy_room_from_json(json, f->room->room, err, sizeof err);
    assert_non_null(r);
    char *again = dormancy_room_to_json(r);
    assert_string_equal(json, again);
    free(json);
    free(again);
    dormancy_room_free(f->room);
    f->room = r;
    /* the store holds exactly what the record believes is set */
    assert_int_equal(f->n_store, f->room->n_timers);
    for (int i = 0; i < f->room->n_timers; i++) {
        int found = 0;
        for (int j = 0; j < f->n_store; j++)
            if (strcmp(f->store[j].name, f->room->timers[i].name) == 0 &&
                f->store[j].due == f->room->timers[i].due)
                found = 1;
        assert_true(found);
    }
}

static inline void dm_send(dm_fx *f, dormancy_event *ev)
{
    char id[64];
    f->seq++;
    if (!ev->id) {
        snprintf(id, sizeof id, "in%d", f->seq);
        ev->id = id;
    }
    ev->ts = f->now;
    dormancy_ids ids = {dm_make_id, f};
    dormancy_actions a;
    dormancy_actions_init(&a);
    assert_int_equal(dormancy_room_apply(f->room, ev, &f->cfg, f->now, &ids, &a), 0);
    dm_after(f, &a);
}

/* Moves the clock to now + ms, firing every due timer at its due time in
 * order (as the timer store would, with no lateness). */
static inline void dm_advance(dm_fx *f, int64_t ms)
{
    int64_t target = f->now + ms;
    for (;;) {
        int best = -1;
        for (int j = 0; j < f->n_store; j++)
            if (f->store[j].due <= target && (best < 0 || f->store[j].due < f->store[best].due))
                best = j;
        if (best < 0)
            break;
        dormancy_timer t = f->store[best];
        f->store[best] = f->store[--f->n_store]; /* the store removes the fired timer */
        if (t.due > f->now)
            f->now = t.due;
        f->seq++;
        dormancy_ids ids = {dm_make_id, f};
        dormancy_actions a;
        dormancy_actions_init(&a);
        assert_int_equal(dormancy_room_timer(f->room, t.name, t.due, &f->cfg, f->now, &ids, &a), 0);
        dm_after(f, &a);
    }
    f->now = target;
}

/* Fires one timer late (at `at`), for lateness tests. */
static inline void dm_fire(dm_fx *f, const char *name, int64_t at)
{
    int j;
    for (j = 0; j < f->n_store; j++)
        if (strcmp(f->store[j].name, name) == 0)
            break;
    assert_true(j < f->n_store);
    dormancy_timer t = f->store[j];
    f->store[j] = f->store[--f->n_store];
    f->now = at;
    f->seq++;
    dormancy_ids ids = {dm_make_id, f};
    dormancy_actions a;
    dormancy_actions_init(&a);
    assert_int_equal(dormancy_room_timer(f->room, t.name, t.due, &f->cfg, f->now, &ids, &a), 0);
    dm_after(f, &a);
}

static inline void dm_msg(dm_fx *f, dormancy_sender_type type, const char *sender,
                          const char *text, const char *reply_to, const char *id)
{
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_MESSAGE;
    ev.id = id;
    ev.msg.sender = sender;
    ev.msg.sender_type = type;
    ev.msg.text = text;
    ev.msg.reply_to = reply_to;
    dm_send(f, &ev);
}

static inline void dm_human(dm_fx *f, const char *text)
{
    snprintf(f->last_msg_id, sizeof f->last_msg_id, "h%d", f->seq + 1);
    dm_msg(f, DORMANCY_SENDER_HUMAN, "joel", text, NULL, f->last_msg_id);
}

static inline void dm_ai(dm_fx *f, const char *persona, const char *text)
{
    dm_msg(f, DORMANCY_SENDER_AI, persona, text, NULL, NULL);
}

static inline void dm_command(dm_fx *f, const char *persona, dormancy_cmd cmd,
                              dormancy_level level, int64_t until, const char *by)
{
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_COMMAND;
    ev.command.persona = persona;
    ev.command.cmd = cmd;
    ev.command.has_level = true;
    ev.command.level = level;
    ev.command.until = until;
    ev.command.room = "general";
    ev.command.by = by;
    dm_send(f, &ev);
}

/* An answer with its input id (NULL: one is made up) and room (NULL: to
 * every room of the persona). */
static inline void dm_answer_in(dm_fx *f, const char *id, const char *persona, const char *room,
                                const char *suggestion_id, dormancy_answer answer)
{
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_COMMAND;
    ev.id = id;
    ev.command.persona = persona;
    ev.command.cmd = DORMANCY_CMD_ANSWER;
    ev.command.room = room;
    ev.command.answer = answer;
    ev.command.suggestion_id = suggestion_id;
    dm_send(f, &ev);
}

static inline void dm_answer(dm_fx *f, const char *persona, dormancy_answer answer,
                             const char *suggestion_id)
{
    dm_answer_in(f, NULL, persona, NULL, suggestion_id, answer);
}

static inline void dm_meta(dm_fx *f, const char *persona, const dormancy_overrides *ov)
{
    static const char *const rooms[] = {"general"};
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_META;
    ev.meta.persona = persona;
    ev.meta.rooms = rooms;
    ev.meta.n_rooms = 1;
    if (ov)
        ev.meta.ov = *ov;
    dm_send(f, &ev);
}

/* Personas join by meta, in order. */
static inline void dm_personas(dm_fx *f, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        dm_meta(f, va_arg(ap, const char *), NULL);
    va_end(ap);
}

static inline dormancy_persona *dm_p(dm_fx *f, const char *persona)
{
    dormancy_persona *p = dormancy_persona_find(f->room, persona);
    assert_non_null(p);
    return p;
}

static inline dormancy_level dm_level(dm_fx *f, const char *persona)
{
    return dm_p(f, persona)->level;
}

static inline int dm_count(dm_fx *f, dormancy_action_kind kind, const char *persona)
{
    int n = 0;
    for (size_t i = 0; i < f->log.n; i++)
        if (f->log.v[i].kind == kind && (!persona || strcmp(f->log.v[i].persona, persona) == 0))
            n++;
    return n;
}

static inline const dormancy_action *dm_last(dm_fx *f, dormancy_action_kind kind,
                                             const char *persona)
{
    for (size_t i = f->log.n; i-- > 0;)
        if (f->log.v[i].kind == kind && (!persona || strcmp(f->log.v[i].persona, persona) == 0))
            return &f->log.v[i];
    return NULL;
}

/* Puts a persona to sleep by its own choice via the command topic. */
static inline void dm_sleep(dm_fx *f, const char *persona)
{
    dm_command(f, persona, DORMANCY_CMD_DORMANT, DORMANCY_SLEEP, 0, persona);
}

#endif
