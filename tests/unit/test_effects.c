/* test_effects.c - the effect list builders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/effects.h"

static void test_init_and_free_empty(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_null(fx.new_state);
    assert_int_equal(fx.n_out, 0);
    assert_int_equal(fx.n_timers, 0);
    assert_int_equal(fx.n_snaps, 0);
    vigil_effects_free(&fx);
    vigil_effects_free(&fx); /* idempotent: free re-initialises */
    assert_null(fx.out);
}

static void test_set_state_copies_and_replaces(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    char buf[32];
    snprintf(buf, sizeof buf, "{\"a\":1}");
    assert_int_equal(vigil_fx_set_state(&fx, buf), 0);
    buf[0] = 'X';
    assert_string_equal(fx.new_state, "{\"a\":1}");
    assert_int_equal(vigil_fx_set_state(&fx, "{\"a\":2}"), 0);
    assert_string_equal(fx.new_state, "{\"a\":2}");
    vigil_effects_free(&fx);
}

static void test_publish_copies_and_grows(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    for (int i = 0; i < 100; i++) {
        char topic[32], payload[32];
        snprintf(topic, sizeof topic, "room/r%d/message", i);
        snprintf(payload, sizeof payload, "{\"n\":%d}", i);
        assert_int_equal(vigil_fx_publish(&fx, topic, payload, i % 2 == 0), 0);
        memset(topic, 0, sizeof topic); /* the effect list keeps its own copy */
    }
    assert_int_equal(fx.n_out, 100);
    assert_true(fx.cap_out >= 100);
    assert_string_equal(fx.out[0].topic, "room/r0/message");
    assert_string_equal(fx.out[99].topic, "room/r99/message");
    assert_string_equal(fx.out[42].payload, "{\"n\":42}");
    assert_true(fx.out[42].retain);
    assert_false(fx.out[43].retain);
    vigil_effects_free(&fx);
}

/* The copies live in blocks the effects own: strings of every size, some
 * larger than a block, some filling one to the byte, interleaved with
 * other ops, all keep their bytes, and each op points at its own copy. */
static void test_copies_of_every_size_across_blocks(void **state)
{
    (void)state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    enum { N = 120 };
    static char payload[20000];
    size_t sizes[N];
    for (int i = 0; i < N; i++) {
        /* 0..5 KB in odd steps, a few over the first block, two of 17 KB */
        sizes[i] = i == 50 || i == 51 ? 17000 : (size_t)(i * 4099) % 5200;
        for (size_t k = 0; k < sizes[i]; k++)
            payload[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
        payload[sizes[i]] = '\0';
        char topic[32], timer[16];
        snprintf(topic, sizeof topic, "room/r%d/state", i);
        snprintf(timer, sizeof timer, "t%d", i);
        assert_int_equal(vigil_fx_publish(&fx, topic, payload, false), 0);
        assert_int_equal(vigil_fx_timer_set(&fx, timer, i), 0);
        assert_int_equal(vigil_fx_key_set(&fx, topic, timer), 0);
    }
    memset(payload, 'X', sizeof payload - 1);
    for (int i = 0; i < N; i++) {
        char topic[32], timer[16];
        snprintf(topic, sizeof topic, "room/r%d/state", i);
        snprintf(timer, sizeof timer, "t%d", i);
        assert_string_equal(fx.out[i].topic, topic);
        assert_int_equal(strlen(fx.out[i].payload), sizes[i]);
        for (size_t k = 0; k < sizes[i]; k++)
            assert_int_equal(fx.out[i].payload[k], (char)('a' + (k * 7 + (size_t)i) % 26));
        assert_string_equal(fx.timers[i].name, timer);
        assert_string_equal(fx.aux[i].name, topic);
        assert_string_equal(fx.aux[i].value, timer);
    }
    vigil_effects_free(&fx);
    assert_null(fx.blocks);
}

static void test_publish_rejects_bad_topic(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_publish(&fx, "a\nb", "{}", false), -1);
    assert_int_equal(vigil_fx_publish(&fx, "", "{}", false), -1);
    assert_int_equal(vigil_fx_publish(&fx, NULL, "{}", false), -1);
    assert_int_equal(fx.n_out, 0);
    /* a payload may contain newlines */
    assert_int_equal(vigil_fx_publish(&fx, "t", "line1\nline2", false), 0);
    assert_string_equal(fx.out[0].payload, "line1\nline2");
    vigil_effects_free(&fx);
}

static void test_publish_json(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string("a/b"));
    json_object_object_add(o, "n", json_object_new_int(3));
    assert_int_equal(vigil_fx_publish_json(&fx, "x/y", o, true), 0);
    json_object_put(o); /* still ours */
    assert_int_equal(fx.n_out, 1);
    json_object *back = json_tokener_parse(fx.out[0].payload);
    assert_non_null(back);
    json_object *v;
    assert_true(json_object_object_get_ex(back, "path", &v));
    assert_string_equal(json_object_get_string(v), "a/b");
    assert_true(json_object_object_get_ex(back, "n", &v));
    assert_int_equal(json_object_get_int(v), 3);
    json_object_put(back);
    assert_true(fx.out[0].retain);
    vigil_effects_free(&fx);
}

static void test_timers_set_and_cancel(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_timer_set(&fx, "nohuman", 1700000000123LL), 0);
    assert_int_equal(vigil_fx_timer_cancel(&fx, "sugg:1"), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(vigil_fx_timer_set(&fx, "t", i), 0);
    assert_int_equal(fx.n_timers, 22);
    assert_string_equal(fx.timers[0].name, "nohuman");
    assert_true(fx.timers[0].due_ms == 1700000000123LL);
    assert_string_equal(fx.timers[1].name, "sugg:1");
    assert_true(fx.timers[1].due_ms == VIGIL_TIMER_CANCEL);
    vigil_effects_free(&fx);
}

static void test_timer_bad_names(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    char longname[80];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(vigil_fx_timer_set(&fx, "a|b", 1), -1); /* '|' splits members */
    assert_int_equal(vigil_fx_timer_set(&fx, "", 1), -1);
    assert_int_equal(vigil_fx_timer_set(&fx, NULL, 1), -1);
    assert_int_equal(vigil_fx_timer_set(&fx, longname, 1), -1);
    assert_int_equal(vigil_fx_timer_set(&fx, "x", VIGIL_TIMER_CANCEL), -1);
    assert_int_equal(vigil_fx_timer_cancel(&fx, "a|b"), -1);
    assert_int_equal(fx.n_timers, 0);
    vigil_effects_free(&fx);
}

static void test_snapshot_ops(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:ann", "r1", "{\"level\":\"sleep\"}",
                                       "persona/ann/state", "{\"persona\":\"ann\"}", "rooms"),
                     0);
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:ann", "r2", NULL, "persona/ann/state",
                                       "{\"persona\":\"ann\"}", "rooms"),
                     0);
    assert_int_equal(fx.n_snaps, 2);
    assert_string_equal(fx.snaps[0].hash, "persona:ann");
    assert_string_equal(fx.snaps[0].field, "r1");
    assert_string_equal(fx.snaps[0].value_json, "{\"level\":\"sleep\"}");
    assert_string_equal(fx.snaps[0].topic, "persona/ann/state");
    assert_string_equal(fx.snaps[0].envelope_json, "{\"persona\":\"ann\"}");
    assert_string_equal(fx.snaps[0].map_name, "rooms");
    assert_null(fx.snaps[1].value_json); /* delete */
    vigil_effects_free(&fx);
}

static void test_snapshot_rejects_bad_json(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    /* values are spliced into retained payloads: they must be valid JSON */
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "{bad", "t", "{}", "m"), -1);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "{} x", "t", "{}", "m"), -1);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "1", "t", "[1]", "m"), -1);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "1", "t\n", "{}", "m"), -1);
    assert_int_equal(vigil_fx_snapshot(&fx, "", "f", "1", "t", "{}", "m"), -1);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "1", "t", "{}", ""), -1);
    assert_int_equal(fx.n_snaps, 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "[]", "t", "{}", "m"), 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "\"s\"", "t", "{}", "m"), 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "1", "t", "{}", "m"), 0); /* bare number */
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "-2.5e3", "t", "{}", "m"), 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "f", "12a", "t", "{}", "m"), -1);
    assert_int_equal(fx.n_snaps, 4);
    vigil_effects_free(&fx);
}

/* The rendered variant skips the check only where NDEBUG is set: the
 * debug builds the tests run still refuse what a renderer got wrong. */
static void test_snapshot_rendered_checked_in_debug(void **state)
{
    (void)state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_snapshot_rendered(&fx, "h", "f", "{\"a\":1}", "t", "{}", "m"), 0);
    assert_int_equal(vigil_fx_snapshot_rendered(&fx, "h", "f", "1", "t\n", "{}", "m"), -1);
#ifndef NDEBUG
    assert_int_equal(vigil_fx_snapshot_rendered(&fx, "h", "f", "{bad", "t", "{}", "m"), -1);
    assert_int_equal(vigil_fx_snapshot_rendered(&fx, "h", "f", "1", "t", "[1]", "m"), -1);
#endif
    assert_int_equal(fx.n_snaps, 1);
    assert_string_equal(fx.snaps[0].value_json, "{\"a\":1}");
    vigil_effects_free(&fx);
}

/* Blocks kept between effects (effects.c) come back empty of old text:
 * many effects alive at once, freed out of order, each keeps its own
 * strings (ASan sees any block handed out twice). */
static void test_blocks_reused_across_effects(void **state)
{
    (void)state;
    enum { N = 80 };
    static vigil_effects fx[N];
    char topic[32], payload[32];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            vigil_effects_init(&fx[i]);
            snprintf(topic, sizeof topic, "t/%d/%d", round, i);
            snprintf(payload, sizeof payload, "p%d", i);
            assert_int_equal(vigil_fx_publish(&fx[i], topic, payload, false), 0);
        }
        for (int i = 0; i < N; i++) {
            snprintf(topic, sizeof topic, "t/%d/%d", round, i);
            snprintf(payload, sizeof payload, "p%d", i);
            assert_string_equal(fx[i].out[0].topic, topic);
            assert_string_equal(fx[i].out[0].payload, payload);
        }
        for (int i = 0; i < N; i += 2)
            vigil_effects_free(&fx[i]);
        for (int i = 1; i < N; i += 2)
            vigil_effects_free(&fx[i]);
    }
}

/* Each ops array starts in the effects' blocks and moves to its own
 * allocation when it outgrows that room: every element survives the move
 * and the strings beside it (ASan sees an array freed that was not
 * malloc'd). */
static void test_arrays_outgrow_their_block_room(void **state)
{
    (void)state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    char name[32];
    for (int i = 0; i < 11; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(vigil_fx_publish(&fx, name, name, i % 2), 0);
        assert_int_equal(vigil_fx_timer_set(&fx, name, 1000 + i), 0);
        assert_int_equal(vigil_fx_snapshot(&fx, "h", name, "1", name, "{}", "m"), 0);
        assert_int_equal(vigil_fx_key_set(&fx, name, name), 0);
        assert_int_equal(vigil_fx_state_part(&fx, name, "{}"), 0);
    }
    for (int i = 0; i < 11; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_string_equal(fx.out[i].topic, name);
        assert_int_equal(fx.out[i].retain, i % 2);
        assert_string_equal(fx.timers[i].name, name);
        assert_int_equal(fx.timers[i].due_ms, 1000 + i);
        assert_string_equal(fx.snaps[i].field, name);
        assert_string_equal(fx.aux[i].value, name);
        assert_string_equal(fx.parts[i].name, name);
        assert_int_equal((uintptr_t)fx.timers % 8, 0);
    }
    vigil_effects_reset(&fx);
    assert_int_equal(vigil_fx_publish(&fx, "a", "b", false), 0); /* one in block room */
    assert_int_equal((uintptr_t)fx.out % 8, 0);
    vigil_effects_free(&fx);
}

static void test_reset_allows_reuse(void **state)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_set_state(&fx, "{}"), 0);
    assert_int_equal(vigil_fx_publish(&fx, "t", "p", false), 0);
    assert_int_equal(vigil_fx_timer_set(&fx, "n", 5), 0);
    vigil_effects_reset(&fx);
    assert_null(fx.new_state);
    assert_int_equal(fx.n_out + fx.n_timers + fx.n_snaps, 0);
    assert_int_equal(vigil_fx_publish(&fx, "t2", "p2", true), 0);
    assert_int_equal(fx.n_out, 1);
    assert_string_equal(fx.out[0].topic, "t2");
    vigil_effects_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_and_free_empty),
        cmocka_unit_test(test_set_state_copies_and_replaces),
        cmocka_unit_test(test_publish_copies_and_grows),
        cmocka_unit_test(test_copies_of_every_size_across_blocks),
        cmocka_unit_test(test_publish_rejects_bad_topic),
        cmocka_unit_test(test_publish_json),
        cmocka_unit_test(test_timers_set_and_cancel),
        cmocka_unit_test(test_timer_bad_names),
        cmocka_unit_test(test_snapshot_ops),
        cmocka_unit_test(test_snapshot_rejects_bad_json),
        cmocka_unit_test(test_reset_allows_reuse),
        cmocka_unit_test(test_snapshot_rendered_checked_in_debug),
        cmocka_unit_test(test_blocks_reused_across_effects),
        cmocka_unit_test(test_arrays_outgrow_their_block_room),
    };
    return cmocka_run_group_tests_name("effects", tests, NULL, NULL);
}
