/* fuzz_llm_parse.c - what a model answers is text from outside: the
 * readers look for the JSON object (or array) it meant in prose, fences
 * and stray braces, then coerce its fields. Input: the model's reply as
 * it came. Whatever it holds, they return a value or NULL with a reason,
 * in linear time. */
#include <stdint.h>
#include <stdlib.h>
#include "vigil/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_fields(json_object *o)
{
    bool b;
    double d;
    const char *s;
    (void)vigil_llm_read_bool(o, "should_wake", false, &b);
    (void)vigil_llm_read_confidence(o, "confidence", 0.5, &d);
    (void)vigil_llm_read_string(o, "reason", "", &s);
    (void)vigil_llm_field_get(o, "Should-Wake");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    vigil_llm_parse_error err;
    json_object *o = vigil_llm_extract_object(t, size, &err);
    if (o) {
        if (!json_object_is_type(o, json_type_object))
            abort();
        read_fields(o);
        json_object_put(o);
    } else if (!vigil_llm_parse_status_name(err.status)) {
        abort();
    }
    static const char *const wrap[] = { "actions", "decisions", NULL };
    json_object *a = vigil_llm_extract_array(t, size, wrap, &err);
    if (a) {
        if (!json_object_is_type(a, json_type_array))
            abort();
        json_object_put(a);
    }
    a = vigil_llm_extract_array(t, size, NULL, &err);
    if (a)
        json_object_put(a);
    return 0;
}
