/* msg_test.h - helpers of the message reader tests: the schema's example
 * from topics/examples, and payloads parsed as the envelope would. */
#ifndef MSG_TEST_H
#define MSG_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <vigil/json.h>

/* topics/examples/<name>.json, parsed strictly; the test fails when absent. */
static inline json_object *example(const char *name)
{
    char path[1200], dir[1024];
    const char *src = getenv("VIGIL_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, sizeof path, "%s/topics/examples/%s.json", src, name);
    } else { /* __FILE__ is absolute under CMake: <src>/tests/unit/x.c */
        snprintf(dir, sizeof dir, "%s", __FILE__);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        snprintf(path, sizeof path, "%s/../../topics/examples/%s.json", dir, name);
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(buf, n, sizeof buf, &err);
    if (!o)
        fail_msg("%s: %s", path, err.detail);
    return o;
}

static inline json_object *payload(const char *text)
{
    vigil_error err = {0};
    json_object *o = vigil_json_parse_object(text, strlen(text), 65536, &err);
    if (!o)
        fail_msg("test payload is not JSON: %s", err.detail);
    return o;
}

/* Asserts that rc is a reject with reason r and a detail containing what. */
#define assert_reject(rc, err, r, what)                                                    \
    do {                                                                                   \
        assert_int_equal((rc), -1);                                                        \
        assert_string_equal(vigil_reject_name((err).reason), vigil_reject_name(r));        \
        if (!strstr((err).detail, (what)))                                                 \
            fail_msg("detail '%s' does not name '%s'", (err).detail, (what));              \
    } while (0)

/* One counter-example: the payload, the reason and a word of the detail. */
typedef struct reject_case {
    const char *json;
    vigil_reject_reason reason;
    const char *names;
} reject_case;

/* Reads a payload with the reader under test (releasing what it read);
 * returns the reader's result. */
typedef int (*reader_fn)(json_object *o, vigil_error *err);

/* Every case must be rejected with its reason and a detail naming it. */
static inline void assert_rejects_all(const reject_case *cases, size_t n, reader_fn read)
{
    for (size_t i = 0; i < n; i++) {
        json_object *o = payload(cases[i].json);
        vigil_error err = {0};
        int rc = read(o, &err);
        if (rc != -1)
            fail_msg("accepted %s", cases[i].json);
        assert_reject(rc, err, cases[i].reason, cases[i].names);
        json_object_put(o);
    }
}

#endif
