/* test_store_parts.c - a state record kept in parts (vigil_fx_state_part):
 * a commit writes the head and only the parts it names, a load hands back
 * the whole record, a conflict on such a record returns no text, and the
 * script refuses malformed parts before writing anything. Against a real
 * redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fixture_redis.h"
#include "vigil/effects.h"
#include "vigil/store.h"

#define NOW 1700000000123LL

typedef vt_store_fixture fixture;

static int setup(void **state)
{
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 0 };
    return vt_store_fixture_setup(state, &cfg);
}

static vigil_commit_result commit(fixture *f, int64_t expected, const char *id,
                                  const vigil_effects *fx, int64_t *nv, char **cur)
{
    vigil_commit c = { .key = "r", .expected_version = expected, .input_id = id, .fx = fx,
                       .now_ms = NOW };
    return vigil_store_commit(f->s, &c, nv, cur);
}

/* The loaded record, parsed; the test owns it. */
static json_object *load(fixture *f, int64_t *v)
{
    char *st = NULL;
    assert_int_equal(vigil_store_load(f->s, "r", NULL, NULL, v, &st), 0);
    assert_non_null(st);
    json_object *o = json_tokener_parse(st);
    assert_non_null(o);
    free(st);
    return o;
}

static const char *part_level(json_object *rec, const char *name)
{
    json_object *parts, *p, *l;
    if (!json_object_object_get_ex(rec, "parts", &parts) ||
        !json_object_object_get_ex(parts, name, &p) || !json_object_object_get_ex(p, "l", &l))
        return NULL;
    return json_object_get_string(l);
}

static int n_parts(json_object *rec)
{
    json_object *parts;
    return json_object_object_get_ex(rec, "parts", &parts) ? json_object_object_length(parts) : 0;
}

static long long hlen(fixture *f)
{
    return vt_redis_int(f->r, "HLEN %s", "vigil:svc:state:r");
}

/* Version 1 of record r, {"c":1} with part ann (and bo): fx is left
 * initialised for the caller's next commit. */
static void write_first(fixture *f, vigil_effects *fx, bool with_bo)
{
    vigil_effects_init(fx);
    vigil_fx_set_state(fx, "{\"c\":1}");
    vigil_fx_state_part(fx, "ann", "{\"l\":\"a\"}");
    if (with_bo)
        vigil_fx_state_part(fx, "bo", "{\"l\":\"b\"}");
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, 0, "m1", fx, &nv, &cur), VIGIL_COMMIT_OK);
}

static void test_parts_written_by_name_and_loaded_whole(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_set_state(&fx, "{\"room\":\"r\",\"c\":1}"), 0);
    assert_int_equal(vigil_fx_state_part(&fx, "ann", "{\"l\":\"active\"}"), 0);
    assert_int_equal(vigil_fx_state_part(&fx, "bo", "{\"l\":\"sleep\"}"), 0);
    assert_int_equal(vigil_fx_state_part(&fx, "cy", "{\"l\":\"active\"}"), 0);
    int64_t nv = 0;
    char *cur = NULL;
    assert_int_equal(commit(f, 0, "m1", &fx, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 1);
    assert_int_equal(hlen(f), 5); /* v, s and three parts */

    /* the next commit names one part changed and one deleted: the third
     * stays as it was */
    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"room\":\"r\",\"c\":2}");
    vigil_fx_state_part(&fx, "bo", "{\"l\":\"active\"}");
    vigil_fx_state_part(&fx, "cy", NULL);
    assert_int_equal(commit(f, 1, "m2", &fx, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 2);

    int64_t v = 0;
    json_object *rec = load(f, &v);
    assert_int_equal(v, 2);
    json_object *c;
    assert_true(json_object_object_get_ex(rec, "c", &c));
    assert_int_equal(json_object_get_int(c), 2);
    assert_int_equal(n_parts(rec), 2);
    assert_string_equal(part_level(rec, "ann"), "active");
    assert_string_equal(part_level(rec, "bo"), "active");
    assert_null(part_level(rec, "cy"));
    json_object_put(rec);
    vigil_effects_free(&fx);
}

static void test_record_without_parts_loads_as_written(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{\"n\":1}");
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, 0, "m1", &fx, &nv, &cur), VIGIL_COMMIT_OK);
    char *st = NULL;
    int64_t v;
    assert_int_equal(vigil_store_load(f->s, "r", NULL, NULL, &v, &st), 0);
    assert_string_equal(st, "{\"n\":1}");
    free(st);

    /* an empty head gets its parts without a leading comma */
    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{}");
    vigil_fx_state_part(&fx, "a\"b", "{}");
    assert_int_equal(commit(f, 1, "m2", &fx, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_store_load(f->s, "r", NULL, NULL, &v, &st), 0);
    assert_string_equal(st, "{\"parts\":{\"a\\\"b\":{}}}");
    free(st);
    vigil_effects_free(&fx);
}

static void test_reset_deletes_every_part_first(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    int64_t nv;
    char *cur = NULL;
    write_first(f, &fx, true);

    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"c\":2}");
    vigil_fx_state_parts_reset(&fx);
    vigil_fx_state_part(&fx, "cy", "{\"l\":\"c\"}");
    vigil_fx_state_part(&fx, "ann", "{\"l\":\"n\"}"); /* a stored part written again */
    assert_int_equal(commit(f, 1, "m2", &fx, &nv, &cur), VIGIL_COMMIT_OK);
    int64_t v;
    json_object *rec = load(f, &v);
    assert_int_equal(n_parts(rec), 2);
    assert_string_equal(part_level(rec, "cy"), "c");
    assert_string_equal(part_level(rec, "ann"), "n");
    assert_null(part_level(rec, "bo"));
    json_object_put(rec);
    assert_int_equal(hlen(f), 4);
    vigil_effects_free(&fx);
}

/* A commit that names a part twice keeps the last: written then deleted
 * is gone, deleted then written is there (the effects keep every change
 * in order; the commit keeps the last of each). */
static void test_part_named_twice_keeps_the_last(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    int64_t nv;
    char *cur = NULL;
    write_first(f, &fx, true);

    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"c\":2}");
    vigil_fx_state_part(&fx, "ann", "{\"l\":\"x\"}");
    vigil_fx_state_part(&fx, "ann", NULL);
    vigil_fx_state_part(&fx, "bo", NULL);
    vigil_fx_state_part(&fx, "bo", "{\"l\":\"y\"}");
    vigil_fx_state_part(&fx, "cy", "{\"l\":\"1\"}");
    vigil_fx_state_part(&fx, "cy", "{\"l\":\"2\"}");
    assert_int_equal(commit(f, 1, "m2", &fx, &nv, &cur), VIGIL_COMMIT_OK);
    int64_t v;
    json_object *rec = load(f, &v);
    assert_int_equal(v, 2);
    assert_int_equal(n_parts(rec), 2);
    assert_null(part_level(rec, "ann"));
    assert_string_equal(part_level(rec, "bo"), "y");
    assert_string_equal(part_level(rec, "cy"), "2");
    json_object_put(rec);
    assert_int_equal(hlen(f), 4);
    vigil_effects_free(&fx);
}

/* A conflict on a record in parts returns the record whole, as
 * vigil_store_load hands it over (head plus "parts"), with its version:
 * the caller decides again on it without loading. */
static void test_conflict_on_a_record_in_parts_returns_it_whole(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    int64_t nv;
    char *cur = NULL;
    write_first(f, &fx, false);
    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"c\":9}");
    vigil_fx_state_part(&fx, "ann", "{\"l\":\"z\"}");
    int64_t lv = 0;
    char *loaded = NULL;
    assert_int_equal(vigil_store_load(f->s, "r", NULL, NULL, &lv, &loaded), 0);
    assert_non_null(loaded);
    assert_non_null(strstr(loaded, "\"parts\""));
    assert_int_equal(commit(f, 0, "m2", &fx, &nv, &cur), VIGIL_COMMIT_CONFLICT);
    assert_int_equal(nv, 1);
    assert_non_null(cur);
    assert_string_equal(cur, loaded);
    free(cur);
    cur = NULL;
    vigil_commit c = { .key = "r", .expected_version = 0, .input_id = "m2", .fx = &fx,
                       .now_ms = NOW };
    assert_int_equal(vigil_store_check(f->s, &c, &nv, &cur), VIGIL_COMMIT_CONFLICT);
    assert_int_equal(nv, 1);
    assert_non_null(cur);
    assert_string_equal(cur, loaded);
    free(cur);
    free(loaded);
    int64_t v;
    json_object *rec = load(f, &v);
    assert_string_equal(part_level(rec, "ann"), "a"); /* nothing written */
    json_object_put(rec);
    vigil_effects_free(&fx);
}

/* Parts without a new head, or a part that is not an object, are refused
 * before the first write; names too long or empty never reach Redis. */
static void test_malformed_parts_refused(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_state_part(&fx, "", "{}"), -1);
    assert_int_equal(vigil_fx_state_part(&fx, "x", "[1]"), -1);
    char longname[80];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(vigil_fx_state_part(&fx, longname, "{}"), -1);
    assert_int_equal(fx.n_parts, 0);

    assert_int_equal(vigil_fx_state_part(&fx, "ann", "{\"l\":\"a\"}"), 0);
    int64_t nv;
    char *cur = NULL;
    /* a part with no new state text: the script refuses it whole */
    assert_int_equal(commit(f, 0, "m1", &fx, &nv, &cur), VIGIL_COMMIT_BAD_DATA);
    assert_int_equal(vt_redis_int(f->r, "EXISTS %s", "vigil:svc:state:r"), 0);
    assert_int_equal(vt_redis_int(f->r, "EXISTS %s", "vigil:svc:ids:r"), 0);
    vigil_effects_free(&fx);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, vt_store_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_parts_written_by_name_and_loaded_whole),
        T(test_record_without_parts_loads_as_written),
        T(test_reset_deletes_every_part_first),
        T(test_part_named_twice_keeps_the_last),
        T(test_conflict_on_a_record_in_parts_returns_it_whole),
        T(test_malformed_parts_refused),
    };
#undef T
    return cmocka_run_group_tests_name("store_parts", tests, vt_redis_group_setup,
                                       vt_redis_group_teardown);
}
