/* wk_test.h - test driver for the wake-evaluator core: a recording sink
 * (publishes, jobs, timers, room-set changes), an injected clock, and
 * helpers to put personas in a room. Header-only so each test links the
 * core alone. Every step can round-trip the room through its JSON record,
 * as the service does between inputs. */
#ifndef WK_TEST_H
#define WK_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "wake.h"

#define T0 1700000000000LL
#define MIN 60000LL

typedef struct wk_pub {
    char topic[160];
    char *payload;
    bool retain;
} wk_pub;

typedef struct wk {
    wake_room *r;
    wake_config c;
    int64_t now;
    wake_sink sink;
    wk_pub pubs[512];
    int n_pubs;
    char *jobs[512];
    int n_jobs;
    char timer_name[32];
    int64_t timer_due; /* last timer set, 0 none */
    int members_added, members_removed;
    int seq;
    int limits;              /* refusals told through sink->limit */
    char last_limit[256];    /* ... the last one's detail */
} wk;

static inline int wk_publish(void *ctx, const char *topic, const char *payload, bool retain)
{
    wk *t = ctx;
    assert_true(t->n_pubs < 512);
    wk_pub *p = &t->pubs[t->n_pubs++];
    snprintf(p->topic, sizeof p->topic, "%s", topic);
    p->payload = strdup(payload);
    p->retain = retain;
    return 0;
}

static inline int wk_enqueue(void *ctx, const char *job)
{
    wk *t = ctx;
    assert_true(t->n_jobs < 512);
    t->jobs[t->n_jobs++] = strdup(job);
    return 0;
}

static inline int wk_timer(void *ctx, const char *name, int64_t due)
{
    wk *t = ctx;
    snprintf(t->timer_name, sizeof t->timer_name, "%s", name);
    t->timer_due = due;
    return 0;
}

static inline void wk_limit(void *ctx, const char *limit, const char *detail)
{
    wk *t = ctx;
    (void)limit;
    t->limits++;
    snprintf(t->last_limit, sizeof t->last_limit, "%s", detail);
}

static inline int wk_member(void *ctx, const char *persona, bool add)
{
    wk *t = ctx;
    (void)persona;
    if (add)
        t->members_added++;
    else
        t->members_removed++;
    return 0;
}

static inline wk *wk_new(void)
{
    wk *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->r = wake_room_new("general");
    wake_config_init(&t->c);
    t->c.llm_enabled = true;
    t->now = T0;
    t->sink = (wake_sink){t, wk_publish, wk_enqueue, wk_timer, wk_member, NULL, NULL, wk_limit};
    return t;
}

static inline void wk_clear(wk *t)
{
    for (int i = 0; i < t->n_pubs; i++)
        free(t->pubs[i].payload);
    for (int i = 0; i < t->n_jobs; i++)
        free(t->jobs[i]);
    t->n_pubs = t->n_jobs = 0;
    t->timer_due = 0;
    t->timer_name[0] = '\0';
}

static inline void wk_free(wk *t)
{
    wk_clear(t);
    wake_room_free(t->r);
    free(t);
}

/* Round-trips the room through its record, as between two commits. */
static inline void wk_roundtrip(wk *t)
{
    char *json = wake_room_to_json(t->r);
    assert_non_null(json);
    bool corrupt = true;
    wake_room *r = wake_room_from_json(t->r->id, json, &corrupt);
    assert_false(corrupt);
    char *again = wake_room_to_json(r);
    assert_string_equal(json, again);
    free(json);
    free(again);
    wake_room_free(t->r);
    t->r = r;
}

/* A persona with meta in the room: tier ("smart"...) or parameters. */
static inline void wk_persona(wk *t, const char *id, const char *tier, int64_t params,
                              const char *domain, double conf)
{
    const char *doms[1] = {domain};
    double cv[1] = {conf};
    wake_meta m = {.persona = id, .name = id, .role = "operations", .tier = tier,
                   .parameters = params, .availability = 0.5,
                   .domains = domain ? doms : NULL, .n_domains = domain ? 1 : 0,
                   .conf_domains = domain ? doms : NULL, .conf_values = domain ? cv : NULL,
                   .n_conf = domain ? 1 : 0, .auto_wake = -1, .llm_wake = -1, .wake_conf = -1};
    assert_int_equal(wake_on_meta(t->r, &t->c, &m, true, t->now, &t->sink), 0);
}

static inline void wk_level(wk *t, const char *id, wake_level level, const char *trigger)
{
    assert_int_equal(wake_on_level(t->r, &t->c, id, true, level, t->now, trigger, t->now, &t->sink),
                     0);
}

/* Sends a message; mentions may be NULL. Returns the sink status. */
static inline int wk_msg(wk *t, const char *sender, wake_sender type, const char *text)
{
    char id[32];
    snprintf(id, sizeof id, "m%d", ++t->seq);
    wake_message m = {id, sender, type, text, NULL, 0};
    int rc = wake_on_message(t->r, &t->c, &m, t->now, &t->sink);
    wk_roundtrip(t);
    return rc;
}

/* Publications on a topic suffix ("/wake", "/economics"); count and last. */
static inline int wk_count(const wk *t, const char *suffix, const wk_pub **last)
{
    int n = 0;
    size_t sl = strlen(suffix);
    for (int i = 0; i < t->n_pubs; i++) {
        size_t tl = strlen(t->pubs[i].topic);
        if (tl >= sl && strcmp(t->pubs[i].topic + tl - sl, suffix) == 0) {
            n++;
            if (last)
                *last = &t->pubs[i];
        }
    }
    return n;
}

static inline json_object *wk_json(const char *s)
{
    json_object *o = json_tokener_parse(s);
    assert_non_null(o);
    return o;
}

static inline const char *wk_str(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static inline char *wk_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

#endif
