/* test_human_wake.c - dormancy rule 3 as libshared runs it for
 * dormancy-monitor and floor-control (vigil/human_wake.h), the
 * persona/{p}/state fields it is fed from, and who a message mentions
 * (vigil_mentions_collect, as chat-router notifies them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "vigil/human_wake.h"
#include "vigil/msg_persona.h"
#include "vigil/text.h"

typedef struct room {
    vigil_wake_view v[8];
    int n;
    int order[8]; /* woken, in the order of the wakes */
    vigil_wake_why why[8];
    int n_woken;
} room;

static void view(void *ctx, int i, vigil_wake_view *out)
{
    *out = ((room *)ctx)->v[i];
}

static void wake(void *ctx, int i, vigil_wake_why why)
{
    room *r = ctx;
    r->v[i].level = VIGIL_LEVEL_ACTIVE;
    r->order[r->n_woken] = i;
    r->why[r->n_woken++] = why;
}

static int apply(room *r, vigil_human_wake_config *c)
{
    vigil_wake_room w = {.n = r->n, .view = view, .wake = wake, .ctx = r};
    return vigil_human_wake_apply(&w, c);
}

static vigil_wake_view sleeper(vigil_cause cause, int64_t answered)
{
    return (vigil_wake_view){.level = VIGIL_LEVEL_SLEEP, .cause = cause, .auto_wake = true,
                             .answered_human = answered};
}

/* Absence wakes (auto-wake on only), choice stays; then min awake picks
 * the latest answerer, ties to the first in room order. */
static void test_absence_then_min_awake(void **state)
{
    (void)state;
    vigil_human_wake_config c;
    vigil_human_wake_config_init(&c);
    assert_true(c.auto_wake);
    assert_false(c.human_wakes_all);
    assert_int_equal(c.min_awake, 2);
    room r = {.n = 5};
    r.v[0] = sleeper(VIGIL_CAUSE_ABSENCE, 0);
    r.v[1] = sleeper(VIGIL_CAUSE_ABSENCE, 999);
    r.v[1].auto_wake = false;
    r.v[2] = sleeper(VIGIL_CAUSE_CHOICE, 10);
    r.v[3] = sleeper(VIGIL_CAUSE_CHOICE, 30);
    r.v[4] = sleeper(VIGIL_CAUSE_CHOICE, 30);
    assert_int_equal(apply(&r, &c), 2);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.why[0], VIGIL_WAKE_ABSENCE);
    assert_int_equal(r.order[1], 3); /* 30, before 4 (same, later in the room) */
    assert_int_equal(r.why[1], VIGIL_WAKE_MIN_AWAKE);
    assert_int_equal(r.v[1].level, VIGIL_LEVEL_SLEEP); /* auto-wake off */
    assert_int_equal(r.v[2].level, VIGIL_LEVEL_SLEEP);
}

/* Mentioned mention-only and sleeping personas count as able; human-only
 * is able; "all" undoes every dormancy. */
static void test_able_and_all(void **state)
{
    (void)state;
    vigil_human_wake_config c;
    vigil_human_wake_config_init(&c);
    room r = {.n = 3};
    r.v[0] = sleeper(VIGIL_CAUSE_CHOICE, 0);
    r.v[0].mentioned = true;
    r.v[1] = (vigil_wake_view){.level = VIGIL_LEVEL_HUMAN_ONLY, .cause = VIGIL_CAUSE_CHOICE,
                               .auto_wake = true};
    r.v[2] = sleeper(VIGIL_CAUSE_CHOICE, 5);
    assert_int_equal(apply(&r, &c), 0);
    c.human_wakes_all = true;
    assert_int_equal(apply(&r, &c), 3);
    c.human_wakes_all = false;
    c.min_awake = 0;
    room q = {.n = 1};
    q.v[0] = sleeper(VIGIL_CAUSE_CHOICE, 5);
    assert_int_equal(apply(&q, &c), 0);
    assert_int_equal(vigil_cause_parse("absence"), VIGIL_CAUSE_ABSENCE);
    assert_int_equal(vigil_cause_parse("choice"), VIGIL_CAUSE_CHOICE);
    assert_int_equal(vigil_cause_parse(""), -1);
    assert_int_equal(vigil_cause_parse(NULL), -1);
}

/* persona/{p}/state's cause, answered_human and order: read when given;
 * without order the producer is older (has_order false); bad ones refused. */
static void test_state_fields(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse(
        "{\"persona\":\"ann\",\"rooms\":{\"r\":{\"level\":\"sleep\",\"since\":1,"
        "\"trigger\":\"manual\",\"cause\":\"choice\",\"answered_human\":7,\"order\":3},"
        "\"s\":{\"level\":\"active\",\"since\":1,\"trigger\":\"manual\"}},\"ts\":1}");
    vigil_persona_state s;
    vigil_error err;
    assert_int_equal(vigil_persona_state_read(o, 10, &s, &err), 0);
    const vigil_persona_room_state *r = vigil_persona_state_room(&s, "r");
    assert_int_equal(r->cause, VIGIL_CAUSE_CHOICE);
    assert_int_equal(r->answered_human, 7);
    assert_true(r->has_order);
    assert_int_equal(r->order, 3);
    r = vigil_persona_state_room(&s, "s");
    assert_int_equal(r->cause, VIGIL_CAUSE_NONE);
    assert_false(r->has_order);
    vigil_persona_state_release(&s);
    json_object_put(o);
    o = json_tokener_parse("{\"rooms\":{\"r\":{\"level\":\"sleep\",\"cause\":\"whim\"}}}");
    assert_int_equal(vigil_persona_state_read(o, 10, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    json_object_put(o);
    o = json_tokener_parse("{\"rooms\":{\"r\":{\"level\":\"sleep\",\"order\":-1}}}");
    assert_int_equal(vigil_persona_state_read(o, 10, &s, &err), -1);
    assert_int_equal(err.reason, VIGIL_REJECT_BAD_VALUE);
    json_object_put(o);
}

/* Text mentions, then the array's ids not among them, lower-cased, once;
 * never the excluded sender, "self" or a non-id. */
static void test_mentions_collect(void **state)
{
    (void)state;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    const char *ids[] = {"Zed", "ann", "self", "a/b", "Bot"};
    int n = vigil_mentions_collect("@ann and @Yan, @bot", ids, 5, "bot", out, 8);
    assert_int_equal(n, 3);
    assert_string_equal(out[0], "ann");
    assert_string_equal(out[1], "yan");
    assert_string_equal(out[2], "zed");
    assert_int_equal(vigil_mentions_collect(NULL, ids, 5, NULL, out, 2), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absence_then_min_awake),
        cmocka_unit_test(test_able_and_all),
        cmocka_unit_test(test_state_fields),
        cmocka_unit_test(test_mentions_collect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
