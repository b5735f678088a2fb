/* job.c - the job a started run leaves on the durable queue: everything the
 * worker needs to call the model (the prompt was built when the run
 * started, against the state it was decided on), and nothing it must look
 * up again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "internal.h"

char *hb_job_make(const hb_state *s, const hb_config *c, const char *run, const char *prompt)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "run", json_object_new_string(run));
    json_object_object_add(o, "persona", json_object_new_string(s->persona));
    json_object_object_add(o, "model", json_object_new_string(s->cfg.model));
    json_object_object_add(o, "max_tokens", json_object_new_int(c->max_tokens));
    json_object_object_add(o, "prompt", json_object_new_string(prompt));
    const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    char *r = t ? strdup(t) : NULL;
    json_object_put(o);
    return r;
}

void hb_job_clear(hb_job *j)
{
    free(j->prompt);
    memset(j, 0, sizeof *j);
}

int hb_job_parse(const char *json, size_t len, hb_job *j, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_object *o = json_tokener_parse_ex(tok, json, (int)len);
    bool ok = json_tokener_get_error(tok) == json_tokener_success && o &&
              json_object_is_type(o, json_type_object);
    json_tokener_free(tok);
    json_object *run, *p, *m, *mt, *pr;
    if (!ok || !json_object_object_get_ex(o, "run", &run) ||
        !json_object_object_get_ex(o, "persona", &p) ||
        !json_object_object_get_ex(o, "prompt", &pr) ||
        !json_object_is_type(pr, json_type_string)) {
        snprintf(err, errlen, "job is not a heartbeat run");
        json_object_put(o);
        return -1;
    }
    snprintf(j->run, sizeof j->run, "%s", json_object_get_string(run));
    snprintf(j->persona, sizeof j->persona, "%s", json_object_get_string(p));
    if (json_object_object_get_ex(o, "model", &m))
        snprintf(j->model, sizeof j->model, "%s", json_object_get_string(m));
    j->max_tokens = json_object_object_get_ex(o, "max_tokens", &mt) ? json_object_get_int(mt) : 0;
    j->prompt = strdup(json_object_get_string(pr));
    json_object_put(o);
    if (!j->prompt) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
