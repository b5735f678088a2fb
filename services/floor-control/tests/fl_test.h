/* fl_test.h - test driver for the floor core: an injected clock, a room
 * built through the same learning calls the service makes, and each
 * decision taken after a round trip of the room through its JSON record
 * (as the service stores it between inputs). Header-only: each test links
 * the core alone. */
#ifndef FL_TEST_H
#define FL_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "floor.h"

#define T0 1700000000000LL

typedef struct fl_fx {
    floor_room *room;
    floor_config cfg;
    int64_t now;
    floor_decision d;
} fl_fx;

static inline fl_fx *fl_new(void)
{
    fl_fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->room = floor_room_new("general");
    assert_non_null(f->room);
    floor_config_init(&f->cfg);
    f->now = T0;
    return f;
}

static inline void fl_free(fl_fx *f)
{
    floor_decision_free(&f->d);
    floor_room_free(f->room);
    free(f);
}

static inline void fl_tick(fl_fx *f, int64_t ms)
{
    f->now += ms;
}

/* meta: domains as "a,b,c"; confidences as "0.9,0.4" (may be NULL). */
static inline void fl_meta_full(fl_fx *f, const char *id, const char *name, const char *role,
                                const char *domains, const char *conf)
{
    const char *ds[FLOOR_MAX_DOMAINS];
    char buf[FLOOR_MAX_DOMAINS][FLOOR_WORD_MAX + 1];
    int n = 0;
    const char *cds[FLOOR_MAX_DOMAINS];
    double cvs[FLOOR_MAX_DOMAINS];
    int nc = 0;
    const char *s = domains ? domains : "";
    const char *cs = conf;
    while (*s && n < FLOOR_MAX_DOMAINS) {
        size_t len = strcspn(s, ",");
        snprintf(buf[n], sizeof buf[n], "%.*s", (int)len, s);
        ds[n] = buf[n];
        if (cs && *cs) {
            double v = strtod(cs, NULL);
            cds[nc] = buf[n];
            cvs[nc++] = v;
            cs += strcspn(cs, ",");
            if (*cs == ',')
                cs++;
        }
        n++;
        s += len;
        if (*s == ',')
            s++;
    }
    const char *rooms[] = {"general"};
    floor_meta m = {.persona = id, .name = name, .role = role, .rooms = rooms, .n_rooms = 1,
                    .domains = ds, .n_domains = n, .conf_domains = cds,
                    .conf_values = cvs, .n_conf = nc};
    floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, NULL);
}

static inline void fl_meta(fl_fx *f, const char *id, const char *domains, const char *conf)
{
    fl_meta_full(f, id, NULL, NULL, domains, conf);
}

/* A persona state from a dormancy-monitor older than `cause` and `order`:
 * the trigger list decides the cause. */
static inline void fl_level(fl_fx *f, const char *id, floor_level l, const char *trigger)
{
    floor_state_entry e = {.level = l, .trigger = trigger, .cause = FLOOR_UNKNOWN,
                           .order = FLOOR_UNKNOWN};
    assert_true(floor_learn_level(f->room, &f->cfg, id, &e, f->now, NULL));
}

/* A persona state as dormancy-monitor publishes it now: with its cause,
 * arrival order and last answer to a human. */
static inline void fl_state(fl_fx *f, const char *id, floor_level l, const char *trigger,
                            vigil_cause cause, int64_t order, int64_t answered_human)
{
    floor_state_entry e = {.level = l, .trigger = trigger, .cause = (int)cause,
                           .order = order, .answered_human = answered_human};
    assert_true(floor_learn_level(f->room, &f->cfg, id, &e, f->now, NULL));
}

static inline void fl_spoke(fl_fx *f, const char *id)
{
    assert_true(floor_learn_spoke(f->room, &f->cfg, id, f->now, NULL));
}

static inline void fl_roundtrip(fl_fx *f)
{
    json_object *o = floor_room_to_json(f->room);
    assert_non_null(o);
    char err[200];
    floor_room *r = floor_room_from_json(json_object_to_json_string(o), "general", err, sizeof err);
    json_object_put(o);
    assert_non_null(r);
    floor_room_free(f->room);
    f->room = r;
}

/* Decides message text from sender (type); returns the result. */
static inline floor_result fl_decide_full(fl_fx *f, const char *sender, floor_sender_type t,
                                          const char *text, const char *const *mentions, int nm)
{
    fl_roundtrip(f);
    floor_decision_free(&f->d);
    floor_message m = {.id = "m1", .sender = sender, .sender_type = t, .text = text,
                       .mentions = mentions, .n_mentions = nm};
    return floor_choose(f->room, &f->cfg, &m, &f->d);
}

static inline void fl_human(fl_fx *f, const char *text)
{
    assert_int_equal(fl_decide_full(f, "joel", FLOOR_SENDER_HUMAN, text, NULL, 0), FLOOR_DECIDED);
}

/* The granted personas in choice order, comma-separated. */
static inline const char *fl_granted(fl_fx *f)
{
    static char out[4096];
    out[0] = '\0';
    for (int i = 0; i < f->d.n; i++)
        if (f->d.v[i].granted) {
            if (out[0])
                strcat(out, ",");
            strcat(out, f->d.v[i].id);
        }
    return out;
}

static inline const floor_pick *fl_pick(fl_fx *f, const char *id)
{
    for (int i = 0; i < f->d.n; i++)
        if (strcmp(f->d.v[i].id, id) == 0)
            return &f->d.v[i];
    return NULL;
}

#endif
