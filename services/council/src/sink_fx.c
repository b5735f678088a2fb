/* sink_fx.c - the core's council_sink onto a vigil_effects: publishes go
 * to the outbox, timers to the timer set, loop jobs to the durable job
 * stream, records to council's own keys, all in the one atomic commit. */
#include <stdlib.h>
#include "adapter.h"

static int publish(void *ctx, const char *topic, json_object *payload, bool retain)
{
    council_fx_ctx *c = ctx;
    int rc = vigil_fx_publish_json(c->fx, topic, payload, retain);
    c->failed |= rc != 0;
    return rc;
}

static int timer(void *ctx, const char *name, int64_t due)
{
    council_fx_ctx *c = ctx;
    int rc = due == COUNCIL_TIMER_CANCEL ? vigil_fx_timer_cancel(c->fx, name)
                                         : vigil_fx_timer_set(c->fx, name, due);
    c->failed |= rc != 0;
    return rc;
}

/* One entry on a stream: a job stream when label is set (what its cap
 * trims is counted under label), else a log whose trims are its retention. */
static int add_stream(council_fx_ctx *c, const char *name, const char *label, json_object *v,
                      int64_t maxlen)
{
    char *s = vigil_json_dump(v);
    int rc = !s     ? -1
             : label ? vigil_fx_job_add(c->fx, name, label, s, maxlen)
                     : vigil_fx_stream_add(c->fx, name, s, maxlen, 0);
    free(s);
    c->failed |= rc != 0;
    return rc;
}

/* The stream holds only loops no worker finished (a worker deletes its
 * done jobs), so whatever the cap trims is a loop that never runs: libshared
 * counts it under "jobs" and warns. Its session stays in PLAN until the
 * idle timer ends it. */
static int job(void *ctx, json_object *j)
{
    council_fx_ctx *c = ctx;
    return add_stream(c, COUNCIL_STREAM, COUNCIL_STREAM, j, c->jobs_maxlen);
}

static int record(void *ctx, const char *name, json_object *v)
{
    council_fx_ctx *c = ctx;
    char *s = vigil_json_dump(v);
    int rc = s ? vigil_fx_key_set(c->fx, name, s) : -1;
    free(s);
    c->failed |= rc != 0;
    return rc;
}

static int append(void *ctx, const char *name, json_object *v, int64_t maxlen)
{
    return add_stream(ctx, name, NULL, v, maxlen);
}

council_sink council_sink_fx(council_fx_ctx *ctx)
{
    council_sink s = {ctx, publish, timer, job, record, append};
    return s;
}
