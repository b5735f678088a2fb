/* job.c - reading a loop job back from the durable queue (the worker
 * side; the job is written by loop.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "council.h"

void council_job_clear(council_job *j)
{
    for (int p = 0; p < COUNCIL_PERSONAS; p++)
        free(j->prompts[p]);
    memset(j, 0, sizeof *j);
}

static int field(json_object *o, const char *k, char *out, size_t max, char *why, size_t whylen)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string) ||
        json_object_get_string_len(v) == 0 || (size_t)json_object_get_string_len(v) > max) {
        snprintf(why, whylen, "job field '%s' missing or not a string", k);
        return -1;
    }
    snprintf(out, max + 1, "%s", json_object_get_string(v));
    return 0;
}

int council_job_parse(const char *json, size_t len, council_job *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    json_tokener *tok = json_tokener_new();
    json_object *o = tok ? json_tokener_parse_ex(tok, json, (int)len) : NULL;
    bool bad = !tok || json_tokener_get_error(tok) != json_tokener_success;
    if (tok)
        json_tokener_free(tok);
    int rc = -1;
    if (bad || !o || !json_object_is_type(o, json_type_object)) {
        snprintf(why, whylen, "job is not a JSON object");
        goto done;
    }
    if (field(o, "job", out->job, COUNCIL_JOB_MAX, why, whylen) ||
        field(o, "user", out->user, COUNCIL_ID_MAX, why, whylen) ||
        field(o, "session", out->session, COUNCIL_ID_MAX, why, whylen))
        goto done;
    json_object *v = NULL, *prompts = NULL;
    if (!json_object_object_get_ex(o, "loop", &v) || !json_object_is_type(v, json_type_int)) {
        snprintf(why, whylen, "job field 'loop' missing");
        goto done;
    }
    out->loop = json_object_get_int(v);
    if (!json_object_object_get_ex(o, "prompts", &prompts) ||
        !json_object_is_type(prompts, json_type_object)) {
        snprintf(why, whylen, "job field 'prompts' missing");
        goto done;
    }
    for (int p = 0; p < COUNCIL_PERSONAS; p++) {
        if (!json_object_object_get_ex(prompts, COUNCIL_PERSONA_DEFS[p].key, &v) ||
            !json_object_is_type(v, json_type_string)) {
            snprintf(why, whylen, "job has no prompt for %s", COUNCIL_PERSONA_DEFS[p].name);
            goto done;
        }
        out->prompts[p] = strdup(json_object_get_string(v));
        if (!out->prompts[p]) {
            snprintf(why, whylen, "out of memory");
            goto done;
        }
    }
    /* the user's availability Sol weighs (a job of an older version has
     * none: its Sol prompt carries the SENSE line only) */
    out->available = -1;
    if (json_object_object_get_ex(o, "user_available", &v) &&
        json_object_is_type(v, json_type_boolean))
        out->available = json_object_get_boolean(v) ? 1 : 0;
    if (json_object_object_get_ex(o, "presence", &v) && json_object_is_type(v, json_type_string))
        snprintf(out->presence, sizeof out->presence, "%s", json_object_get_string(v));
    rc = 0;
done:
    if (rc != 0)
        council_job_clear(out);
    json_object_put(o);
    return rc;
}
