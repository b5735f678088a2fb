/* llm_reader.c - the core's wake_reader seam filled with libshared's
 * tolerant model-output readers (llm_parse.c). */
#include <stdio.h>
#include <vigil/llm.h>
#include "llm_reader.h"

static json_object *extract_object(const char *text, size_t len, char *why, size_t whylen)
{
    vigil_llm_parse_error e = {0};
    json_object *o = vigil_llm_extract_object(text, len, &e);
    if (!o)
        snprintf(why, whylen, "%s: %s", vigil_llm_parse_status_name(e.status), e.detail);
    return o;
}

/* JSON mode makes some endpoints wrap the array in an object: accept the
 * object's only array, whatever its key. */
static json_object *extract_array(const char *text, size_t len, char *why, size_t whylen)
{
    vigil_llm_parse_error e = {0};
    json_object *a = vigil_llm_extract_array(text, len, NULL, &e);
    if (!a)
        snprintf(why, whylen, "%s: %s", vigil_llm_parse_status_name(e.status), e.detail);
    return a;
}

static int field_rc(vigil_llm_field f)
{
    switch (f) {
    case VIGIL_LLM_FIELD_OK:
        return 0;
    case VIGIL_LLM_FIELD_ABSENT:
        return 1;
    case VIGIL_LLM_FIELD_RANGE:
        return -2;
    case VIGIL_LLM_FIELD_BAD:
    default:
        return -1;
    }
}

static int read_bool(json_object *o, const char *name, bool *out)
{
    return field_rc(vigil_llm_read_bool(o, name, false, out));
}

static int read_confidence(json_object *o, const char *name, double *out)
{
    return field_rc(vigil_llm_read_confidence(o, name, 0.0, out));
}

static int read_string(json_object *o, const char *name, const char **out)
{
    return field_rc(vigil_llm_read_string(o, name, NULL, out));
}

const wake_reader WAKE_LLM_READER = {extract_object, extract_array, read_bool, read_confidence,
                                     read_string};
