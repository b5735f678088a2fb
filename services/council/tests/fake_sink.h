/* fake_sink.h - a council_sink that records what the core asked for, for
 * the unit tests (header-only: each test includes it once). */
#ifndef COUNCIL_FAKE_SINK_H
#define COUNCIL_FAKE_SINK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "council.h"

#define FAKE_MAX 256

typedef struct fake_sink {
    char *topics[FAKE_MAX];
    char *payloads[FAKE_MAX];
    bool retain[FAKE_MAX];
    int n;
    char *jobs[FAKE_MAX];
    int n_jobs;
    char timer_names[FAKE_MAX][16];
    int64_t timer_dues[FAKE_MAX];
    int n_timers;
    char *appends[FAKE_MAX];
    int n_appends;
    int records;
} fake_sink;

static char *fake_dup(json_object *o)
{
    return strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

static int fake_publish(void *ctx, const char *topic, json_object *p, bool retain)
{
    fake_sink *f = ctx;
    if (f->n == FAKE_MAX)
        return -1;
    f->topics[f->n] = strdup(topic);
    f->payloads[f->n] = fake_dup(p);
    f->retain[f->n++] = retain;
    return 0;
}

static int fake_timer(void *ctx, const char *name, int64_t due)
{
    fake_sink *f = ctx;
    if (f->n_timers == FAKE_MAX)
        return -1;
    snprintf(f->timer_names[f->n_timers], 16, "%s", name);
    f->timer_dues[f->n_timers++] = due;
    return 0;
}

static int fake_job(void *ctx, json_object *job)
{
    fake_sink *f = ctx;
    f->jobs[f->n_jobs++] = fake_dup(job);
    return 0;
}

static int fake_record(void *ctx, const char *name, json_object *v)
{
    (void)name;
    (void)v;
    ((fake_sink *)ctx)->records++;
    return 0;
}

static int fake_append(void *ctx, const char *name, json_object *v, int64_t maxlen)
{
    (void)maxlen;
    fake_sink *f = ctx;
    char *s = fake_dup(v);
    size_t len = strlen(name) + strlen(s) + 2;
    f->appends[f->n_appends] = malloc(len);
    snprintf(f->appends[f->n_appends++], len, "%s %s", name, s);
    free(s);
    return 0;
}

static void fake_reset(fake_sink *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->topics[i]);
        free(f->payloads[i]);
    }
    for (int i = 0; i < f->n_jobs; i++)
        free(f->jobs[i]);
    for (int i = 0; i < f->n_appends; i++)
        free(f->appends[i]);
    memset(f, 0, sizeof *f);
}

static council_sink fake_sink_of(fake_sink *f)
{
    council_sink s = {f, fake_publish, fake_timer, fake_job, fake_record, fake_append};
    return s;
}

/* The latest due of timer `name` (0 none, INT64_MIN cancelled). */
static int64_t fake_timer_due(const fake_sink *f, const char *name)
{
    int64_t due = 0;
    for (int i = 0; i < f->n_timers; i++)
        if (strcmp(f->timer_names[i], name) == 0)
            due = f->timer_dues[i];
    return due;
}

/* Index of the k-th event of `type` (any topic ending /event), or -1. */
static int fake_event(const fake_sink *f, const char *type, int k)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
    for (int i = 0; i < f->n; i++)
        if (strstr(f->topics[i], "/event") && strstr(f->payloads[i], needle) && k-- == 0)
            return i;
    return -1;
}

/* The event types in order, comma-separated, phases as phase:<name>. */
static void fake_sequence(const fake_sink *f, char *out, size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < f->n; i++) {
        if (!strstr(f->topics[i], "/event"))
            continue;
        json_object *o = json_tokener_parse(f->payloads[i]), *t = NULL, *p = NULL;
        json_object_object_get_ex(o, "type", &t);
        char item[64];
        if (strcmp(json_object_get_string(t), "phase") == 0 &&
            json_object_object_get_ex(o, "phase", &p))
            snprintf(item, sizeof item, "phase:%s", json_object_get_string(p));
        else
            snprintf(item, sizeof item, "%s", json_object_get_string(t));
        size_t have = strlen(out);
        snprintf(out + have, cap - have, "%s%s", have ? "," : "", item);
        json_object_put(o);
    }
}

#endif
