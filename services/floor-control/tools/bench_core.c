/* bench_core.c - what the room view's bound costs: the CPU of one human
 * message as floor_apply handles it, in the core alone (the record parsed,
 * the decision, room/{r}/floor and every persona/{p}/floor rendered, the
 * record written), at several room sizes; the record load on its own; and
 * what 64 messages waiting for the LLM add to the record. No Redis, no
 * broker: the README's "Limits" figures. Not part of the build; the
 * README's "Limits" section has the command that builds and runs it (the
 * core's sources and libshared/pure, -O2, json-c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "floor.h"

#define ROUNDS 5 /* best of */
#define T0 1700000000000LL

static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static char *dump(json_object *o)
{
    char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

/* The stored record of a room of n personas, each with a name, a role and
 * three expertise domains with confidences, as a meta would leave it. */
static char *record(int n, floor_config *c)
{
    floor_room *r = floor_room_new("general");
    c->max_personas = n;
    for (int i = 0; i < n; i++) {
        char id[32], d[32];
        snprintf(id, sizeof id, "persona-%05d", i);
        snprintf(d, sizeof d, "topic%d", i);
        const char *rooms[] = {"general"};
        const char *ds[] = {"cooking", "poetry", d};
        const double cv[] = {0.9, 0.4, 0.7};
        floor_meta m = {.persona = id, .name = id, .role = "general-help", .rooms = rooms,
                        .n_rooms = 1, .domains = ds, .n_domains = 3, .conf_domains = ds,
                        .conf_values = cv, .n_conf = 3};
        floor_learn_meta(r, c, &m, T0 + i, NULL, NULL);
    }
    char *s = dump(floor_room_to_json(r));
    floor_room_free(r);
    return s;
}

/* Renders event o and frees it; returns its length (so nothing is optimised away). */
static size_t rendered(json_object *o)
{
    size_t n = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return n;
}

/* One human message on the stored record: returns the bytes produced. */
static size_t one_message(const char *text, const floor_config *c)
{
    char err[200];
    floor_room *r = floor_room_from_json(text, "general", err, sizeof err);
    floor_learn_message(r, T0 + 100000000);
    floor_message m = {.id = "m1", .sender = "joel", .sender_type = FLOOR_SENDER_HUMAN,
                       .text = "Why does my Kubernetes pod restart? @persona-00003"};
    floor_decision d;
    floor_choose(r, c, &m, &d);
    size_t n = rendered(floor_room_event_json(r, c, &d, "m1:general:0", "m1", T0));
    for (int i = 0; i < d.n; i++)
        n += rendered(floor_persona_event_json(r, c, &d, i, "m1:general:1", "m1", T0));
    n += rendered(floor_room_to_json(r));
    floor_decision_free(&d);
    floor_room_free(r);
    return n;
}

static size_t load_only(const char *text, const floor_config *c)
{
    (void)c;
    char err[200];
    floor_room *r = floor_room_from_json(text, "general", err, sizeof err);
    size_t n = (size_t)r->n;
    floor_room_free(r);
    return n;
}

/* Best per-call CPU time of fn over ROUNDS rounds of iters calls. */
static double best_us(size_t (*fn)(const char *, const floor_config *), const char *text,
                      const floor_config *c, int iters)
{
    double best = 1e18;
    volatile size_t sink = 0;
    for (int round = 0; round < ROUNDS; round++) {
        double t = cpu_us();
        for (int i = 0; i < iters; i++)
            sink += fn(text, c);
        t = (cpu_us() - t) / iters;
        if (t < best)
            best = t;
    }
    (void)sink;
    return best;
}

/* What FLOOR_MAX_PENDING waiting messages of FLOOR_TEXT_MAX bytes add. */
static size_t waiting_bytes(void)
{
    floor_room *r = floor_room_new("general");
    char *empty = dump(floor_room_to_json(r));
    char *big = calloc(FLOOR_TEXT_MAX + 1, 1);
    memset(big, 'a', FLOOR_TEXT_MAX);
    for (int i = 0; i < FLOOR_MAX_PENDING; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%d", i);
        floor_message m = {.id = id, .sender = "joel", .text = big};
        floor_pending_add(r, &m, T0, NULL);
    }
    char *full = dump(floor_room_to_json(r));
    size_t n = strlen(full) - strlen(empty);
    free(empty);
    free(full);
    free(big);
    floor_room_free(r);
    return n;
}

int main(void)
{
    const int sizes[] = {10, 256, 1000, 10000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        floor_config c;
        floor_config_init(&c);
        char *text = record(sizes[s], &c);
        int iters = sizes[s] >= 10000 ? 20 : sizes[s] >= 1000 ? 200 : 2000;
        printf("%5d personas: record %8zu bytes; one human message %10.1f us CPU, "
               "of which the record's load %10.1f us (best of %d x %d)\n",
               sizes[s], strlen(text), best_us(one_message, text, &c, iters),
               best_us(load_only, text, &c, iters), ROUNDS, iters);
        free(text);
    }
    printf("%d waiting messages of %d bytes add %zu bytes to the record\n", FLOOR_MAX_PENDING,
           FLOOR_TEXT_MAX, waiting_bytes());
    return 0;
}
