/* council_reader.c - council's durable records, read back (see
 * council_reader.h). Council writes them in its commits: the index stream
 * P "council:sessions" (one entry per started session), the record
 * P "council:rec:<session>" and the stream P "council:delib:<session>". */
#include "council_reader.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/reads.h>

#define SERVICE "council:"

int council_reader_session(vigil_redis *r, const char *prefix, const char *session, char **json)
{
    char key[512];
    snprintf(key, sizeof key, "%s" SERVICE "rec:%s", prefix, session);
    vigil_read_result rc = vigil_read_string(r, key, json, NULL, NULL, 0);
    return rc != VIGIL_READ_OK ? -1 : *json ? 1 : 0;
}

typedef struct index_ctx {
    vigil_redis *r;
    const char *prefix;
    council_reader_fn fn;
    void *ctx;
    int n, error;
} index_ctx;

/* One index entry ({session, user, started_at}): hand over its record. */
static int on_index(void *arg, const char *id, const char *value, size_t len)
{
    (void)id;
    index_ctx *c = arg;
    json_object *o = json_tokener_parse(value);
    json_object *s = NULL;
    int stop = 0;
    (void)len;
    if (o && json_object_object_get_ex(o, "session", &s) && json_object_is_type(s, json_type_string)) {
        char *rec = NULL;
        int rc = council_reader_session(c->r, c->prefix, json_object_get_string(s), &rec);
        if (rc < 0) {
            c->error = 1;
            stop = 1;
        } else if (rc == 1) {
            c->n++;
            stop = c->fn(c->ctx, rec, strlen(rec));
        }
        free(rec);
    }
    json_object_put(o);
    return stop;
}

int council_reader_sessions(vigil_redis *r, const char *prefix, int limit, council_reader_fn fn,
                            void *ctx)
{
    char key[512];
    snprintf(key, sizeof key, "%s" SERVICE "sessions", prefix);
    index_ctx c = {r, prefix, fn, ctx, 0, 0};
    if (vigil_read_stream(r, key, true, limit > 0 ? limit : 20, on_index, &c) < 0 || c.error)
        return -1;
    return c.n;
}

typedef struct pass_ctx {
    council_reader_fn fn;
    void *ctx;
} pass_ctx;

static int pass(void *arg, const char *id, const char *value, size_t len)
{
    (void)id;
    pass_ctx *p = arg;
    return p->fn(p->ctx, value, len);
}

int council_reader_deliberations(vigil_redis *r, const char *prefix, const char *session,
                                 int limit, council_reader_fn fn, void *ctx)
{
    char key[512];
    snprintf(key, sizeof key, "%s" SERVICE "delib:%s", prefix, session);
    pass_ctx p = {fn, ctx};
    return vigil_read_stream(r, key, false, limit > 0 ? limit : 1000, pass, &p);
}
