/* Rule 5, manual part: @self commands, persona/{p}/command, timed
 * dormancy, status answers, room control. */
#include "dm_test.h"

static void self_dormant_in_own_message(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_ai(f, "ann", "I'll step back. @self dormant mention-only");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_MANUAL);
    assert_int_equal(c->previous, DORMANCY_ACTIVE);
    assert_string_equal(c->message_id, "in1");
    assert_int_equal(dm_p(f, "ann")->cause, DORMANCY_CAUSE_CHOICE);
    assert_true(dm_p(f, "ann")->joined);
    dm_free(f);
}

static void self_in_human_message_is_not_a_command(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_human(f, "@self dormant sleep");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void timed_dormancy_ends_by_itself(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_ai(f, "ann", "@self dormant sleep for 1h");
    assert_int_equal(dm_p(f, "ann")->until, T0 + 3600000);
    f->cfg.auto_sleep = false;
    dm_human(f, "keep the room alive");
    dm_sleep(f, "ann"); /* re-issued without an end: no timed end any more */
    assert_int_equal(dm_p(f, "ann")->until, 0);
    dm_ai(f, "ann", "@self dormant human-only for 30m");
    dm_advance(f, 30 * MIN_MS - 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_HUMAN_ONLY);
    dm_advance(f, 1);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_TIMED_END);
    assert_int_equal(dm_p(f, "ann")->until, 0);
    dm_free(f);
}

/* An end added to a dormancy that had none is announced like a change of
 * end (a dormancy event with the new reason), not only stored. */
static void an_end_added_at_the_same_level_is_announced(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_SLEEP, 0, "joel");
    dm_clear(f);
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_SLEEP, T0 + 3600000, "joel");
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_non_null(c);
    assert_int_equal(c->level, DORMANCY_SLEEP);
    assert_int_equal(c->previous, DORMANCY_SLEEP);
    assert_non_null(strstr(c->reason, " until "));
    assert_int_equal(dm_p(f, "ann")->until, T0 + 3600000);
    /* the same command again: nothing new to say */
    dm_clear(f);
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_SLEEP, T0 + 3600000, "joel");
    assert_null(dm_last(f, DORMANCY_OUT_CHANGE, "ann"));
    dm_free(f);
}

static void timed_dormancy_via_command(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_SLEEP, T0 + 10000, "joel");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    assert_int_equal(f->store[0].due, T0 + 10000);
    dm_advance(f, 10000);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(f->n_store, 0);
    dm_free(f);
}

static void self_awake_and_status(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_ai(f, "ann", "@self dormant sleep");
    dm_clear(f);
    dm_ai(f, "ann", "@self status");
    const dormancy_action *m = dm_last(f, DORMANCY_OUT_SYSTEM_MESSAGE, NULL);
    assert_non_null(m);
    assert_non_null(strstr(m->text, "ann is at level sleep in general since"));
    assert_non_null(strstr(m->text, "trigger: manual"));
    assert_string_equal(m->message_id, "in2");
    json_object *o = dormancy_system_message_json(m, "general", "dormancy-monitor", f->now);
    assert_string_equal(json_object_get_string(json_object_object_get(o, "sender_type")), "system");
    assert_string_equal(json_object_get_string(json_object_object_get(o, "reply_to")), "in2");
    assert_null(strchr(json_object_get_string(json_object_object_get(o, "id")), '/'));
    json_object_put(o);
    dm_ai(f, "ann", "@self awake");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->trigger, DORMANCY_TRIGGER_MANUAL);
    dm_free(f);
}

static void bad_self_command_gets_usage(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_ai(f, "ann", "@self dormant forever");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    const dormancy_action *m = dm_last(f, DORMANCY_OUT_SYSTEM_MESSAGE, NULL);
    assert_non_null(m);
    assert_non_null(strstr(m->text, "Unrecognised @self command"));
    dm_free(f);
}

static void human_wakes_one_persona_by_command(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_sleep(f, "ann");
    dm_sleep(f, "bob");
    dm_command(f, "ann", DORMANCY_CMD_AWAKE, DORMANCY_ACTIVE, 0, "joel");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_non_null(strstr(c->reason, "joel"));
    assert_non_null(strstr(c->text, "joel"));
    dm_free(f);
}

static void command_status_answers_in_room(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_command(f, "ann", DORMANCY_CMD_STATUS, DORMANCY_ACTIVE, 0, NULL);
    const dormancy_action *m = dm_last(f, DORMANCY_OUT_SYSTEM_MESSAGE, NULL);
    assert_non_null(m);
    assert_non_null(strstr(m->text, "ann is at level active in general"));
    dm_free(f);
}

static void command_without_room_skips_non_members(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_COMMAND;
    ev.command.persona = "stranger";
    ev.command.cmd = DORMANCY_CMD_DORMANT;
    ev.command.has_level = true;
    ev.command.level = DORMANCY_SLEEP;
    dm_send(f, &ev);
    assert_null(dormancy_persona_find(f->room, "stranger"));
    dm_free(f);
}

static void room_control_wake_all_and_one(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_sleep(f, "ann");
    dm_command(f, "bob", DORMANCY_CMD_DORMANT, DORMANCY_MENTION_ONLY, 0, "bob");
    dm_sleep(f, "cara");
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_CONTROL;
    ev.control.action = DORMANCY_CTL_WAKE;
    ev.control.persona = "cara";
    ev.control.by = "joel";
    dm_send(f, &ev);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dormancy_event all = {0};
    all.kind = DORMANCY_EV_CONTROL;
    all.control.action = DORMANCY_CTL_WAKE;
    all.control.all = true;
    all.control.by = "joel";
    dm_send(f, &all);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "bob")->trigger, DORMANCY_TRIGGER_MANUAL);
    dm_free(f);
}

static void room_control_pause_and_delete(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_ai(f, "ann", "x");
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_CONTROL;
    ev.control.action = DORMANCY_CTL_PAUSE;
    dm_send(f, &ev);
    assert_true(f->room->paused);
    json_object *o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    assert_true(json_object_get_boolean(json_object_object_get(o, "paused")));
    json_object_put(o);
    ev.control.action = DORMANCY_CTL_RESUME;
    dm_send(f, &ev);
    assert_false(f->room->paused);
    dm_clear(f);
    ev.control.action = DORMANCY_CTL_DELETE;
    dm_send(f, &ev);
    assert_int_equal(f->room->n_personas, 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_PERSONA_REMOVED, NULL), 2);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_CLEARED, NULL), 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_STATE, NULL), 0);
    assert_int_equal(f->n_store, 0); /* every deadline cancelled */
    dm_free(f);
}

/* chat-router's cleanup deletes with if_inactive_since: a room that got a
 * message at or after that time is kept (as chat-router keeps it). */
static void delete_if_inactive_keeps_a_room_that_spoke_since(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    int64_t spoke = f->now;
    dm_advance(f, 1000);
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_CONTROL;
    ev.control.action = DORMANCY_CTL_DELETE;
    ev.control.if_inactive_since = spoke; /* it spoke at exactly that time */
    dm_send(f, &ev);
    assert_int_equal(f->room->n_personas, 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_CLEARED, NULL), 0);
    ev.control.if_inactive_since = spoke + 1; /* silent since then: deleted */
    dm_send(f, &ev);
    assert_int_equal(f->room->n_personas, 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_ROOM_CLEARED, NULL), 1);
    dm_free(f);
}

/* The input was refused and nothing else happened: one REJECTED action,
 * the record as it was. */
static void assert_refused(dm_fx *f, const char *before, const char *persona)
{
    assert_int_equal(f->log.n, 1);
    assert_int_equal(f->log.v[0].kind, DORMANCY_OUT_REJECTED);
    assert_string_equal(f->log.v[0].persona, persona);
    assert_non_null(strstr(f->log.v[0].reason, "no pending suggestion"));
    char *after = dormancy_room_to_json(f->room);
    assert_string_equal(before, after);
    free(after);
}

/* An answer never makes a member, and one naming no pending suggestion
 * (unknown, stale) is refused visibly without a change; the redelivery
 * of an answer that was applied is not refused. */
static void answer_to_no_pending_suggestion_is_refused(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "x");
    char *before = dormancy_room_to_json(f->room);
    dm_clear(f);
    dm_answer_in(f, "c1", "zz", "general", "nope", DORMANCY_ANSWER_YES); /* not a member */
    assert_refused(f, before, "zz");
    assert_null(dormancy_persona_find(f->room, "zz"));
    assert_non_null(strstr(f->log.v[0].reason, "'nope'"));
    assert_non_null(strstr(f->log.v[0].reason, "room 'general'"));
    dm_clear(f);
    dm_answer_in(f, "c2", "ann", "general", NULL, DORMANCY_ANSWER_YES); /* nothing pending */
    assert_refused(f, before, "ann");
    free(before);

    dm_advance(f, 5 * MIN_MS);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    char id[DORMANCY_EVID_MAX + 1];
    snprintf(id, sizeof id, "%s", s->id);
    before = dormancy_room_to_json(f->room);
    dm_clear(f);
    dm_answer_in(f, "c3", "ann", NULL, "not-the-id", DORMANCY_ANSWER_YES); /* another one */
    assert_refused(f, before, "ann");
    free(before);
    assert_int_equal(dm_p(f, "ann")->sugg.kind, DORMANCY_SUGGEST_NO_HUMAN);

    dm_answer_in(f, "c4", "ann", "general", id, DORMANCY_ANSWER_NO); /* applied */
    assert_int_equal(dm_p(f, "ann")->sugg.kind, DORMANCY_SUGGEST_NONE);
    before = dormancy_room_to_json(f->room);
    dm_clear(f);
    dm_answer_in(f, "c4", "ann", "general", id, DORMANCY_ANSWER_NO); /* its redelivery */
    assert_int_equal(dm_count(f, DORMANCY_OUT_REJECTED, NULL), 0);
    char *after = dormancy_room_to_json(f->room);
    assert_string_equal(before, after);
    free(after);
    dm_answer_in(f, "c5", "ann", "general", id, DORMANCY_ANSWER_YES); /* answered already */
    assert_refused(f, before, "ann");
    free(before);
    dm_clear(f);
    dm_answer_in(f, "c6", "ann", NULL, NULL, DORMANCY_ANSWER_YES); /* to every room: none here */
    assert_int_equal(f->log.n, 0);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(self_dormant_in_own_message),
        cmocka_unit_test(self_in_human_message_is_not_a_command),
        cmocka_unit_test(timed_dormancy_ends_by_itself),
        cmocka_unit_test(timed_dormancy_via_command),
        cmocka_unit_test(an_end_added_at_the_same_level_is_announced),
        cmocka_unit_test(self_awake_and_status),
        cmocka_unit_test(bad_self_command_gets_usage),
        cmocka_unit_test(human_wakes_one_persona_by_command),
        cmocka_unit_test(command_status_answers_in_room),
        cmocka_unit_test(command_without_room_skips_non_members),
        cmocka_unit_test(room_control_wake_all_and_one),
        cmocka_unit_test(room_control_pause_and_delete),
        cmocka_unit_test(delete_if_inactive_keeps_a_room_that_spoke_since),
        cmocka_unit_test(answer_to_no_pending_suggestion_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
