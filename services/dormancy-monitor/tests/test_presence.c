/* Rule 6: an active human (presence heartbeats) blocks dormancy
 * suggestions and auto-sleep; idle, away and expired sessions do not. */
#include "dm_test.h"

static void presence(dm_fx *f, const char *user, const char *session,
                     dormancy_presence_status st, int64_t last_activity)
{
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_PRESENCE;
    ev.presence.user = user;
    ev.presence.session = session;
    ev.presence.status = st;
    ev.presence.last_activity = last_activity;
    dm_send(f, &ev);
}

static dm_fx *quiet_room(void)
{
    dm_fx *f = dm_new();
    f->cfg.presence = true;
    dm_personas(f, 1, "ann");
    dm_ai(f, "ann", "talk");
    return f;
}

static void presence_active_blocks_suggestion_and_auto_sleep(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    for (int i = 0; i < 40; i++) { /* heartbeat every 30 s for 20 min */
        presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
        dm_advance(f, 30000);
    }
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    json_object *o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "humans_present")),
                        "[ \"joel\" ]");
    json_object_put(o);
    dm_free(f);
}

static void presence_idle_does_not_block(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_IDLE, f->now);
    json_object *o = dormancy_room_state_json(f->room, &f->cfg, f->now);
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "humans_present")), "[ ]");
    json_object_put(o);
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_free(f);
}

static void presence_away_does_not_block(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_AWAY, f->now);
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    assert_int_equal(f->room->n_sessions, 0);
    dm_free(f);
}

/* The last heartbeat said active at 4 min; at 6 min its activity is 2 min
 * old: idle, so the suggestion due since 5 min happens then, by the
 * presence deadline alone. */
static void presence_expired_session_stops_blocking(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    dm_advance(f, 4 * MIN_MS);
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, 2 * MIN_MS - 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_advance(f, 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    /* idle until 5 min after its activity, then away and forgotten */
    dm_advance(f, 3 * MIN_MS);
    assert_int_equal(f->room->n_sessions, 0);
    dm_free(f);
}

static void session_status_bands(void **state)
{
    (void)state;
    dormancy_config c;
    dormancy_config_init(&c);
    dormancy_session s = {.status = DORMANCY_PRESENCE_ACTIVE, .last_activity = T0, .heard = T0};
    assert_int_equal(dormancy_session_status(&s, &c, T0 + 119999), DORMANCY_PRESENCE_ACTIVE);
    assert_int_equal(dormancy_session_status(&s, &c, T0 + 120000), DORMANCY_PRESENCE_IDLE);
    assert_int_equal(dormancy_session_status(&s, &c, T0 + 299999), DORMANCY_PRESENCE_IDLE);
    assert_int_equal(dormancy_session_status(&s, &c, T0 + 300000), DORMANCY_PRESENCE_AWAY);
    s.status = DORMANCY_PRESENCE_IDLE;
    assert_int_equal(dormancy_session_status(&s, &c, T0), DORMANCY_PRESENCE_IDLE);
}

static void future_activity_is_clamped(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now + 3600000);
    assert_int_equal(f->room->sessions[0].last_activity, f->now);
    dm_free(f);
}

static void presence_off_does_not_block(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    f->cfg.presence = false;
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_free(f);
}

static void per_persona_presence_override(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_PRESENCE;
    ov.presence = true;
    dm_meta(f, "careful", &ov);
    dm_meta(f, "plain", NULL);
    dm_ai(f, "plain", "x");
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, MIN_MS);
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, MIN_MS);
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, MIN_MS);
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, MIN_MS);
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    dm_advance(f, MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "plain"), 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "careful"), 0);
    dm_free(f);
}

/* A suggestion pending when a human becomes active is withdrawn, not
 * defaulted to yes under their eyes; once they stop reading, the room is
 * still quiet and the persona is asked again (and may then default). */
static void pending_suggestion_is_withdrawn_while_a_human_is_present(void **state)
{
    (void)state;
    dm_fx *f = quiet_room();
    dm_advance(f, 5 * MIN_MS);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_advance(f, 10000);
    dm_clear(f);
    presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    assert_int_equal(dm_p(f, "ann")->sugg.kind, DORMANCY_SUGGEST_NONE);
    const dormancy_action *st = dm_last(f, DORMANCY_OUT_PERSONA_STATE, "ann");
    assert_non_null(st); /* persona/{p}/state shows it gone */
    assert_int_equal(st->suggest, DORMANCY_SUGGEST_NONE);
    for (int i = 0; i < 4; i++) { /* well past the 30 s default */
        dm_advance(f, 30000);
        presence(f, "joel", "tab1", DORMANCY_PRESENCE_ACTIVE, f->now);
    }
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, "ann"), 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 0);
    dm_advance(f, 2 * MIN_MS); /* the reader's session lapses: asked again */
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_advance(f, 30000);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->trigger,
                     DORMANCY_TRIGGER_SUGGESTION_DEFAULT);
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(presence_active_blocks_suggestion_and_auto_sleep),
        cmocka_unit_test(presence_idle_does_not_block),
        cmocka_unit_test(presence_away_does_not_block),
        cmocka_unit_test(presence_expired_session_stops_blocking),
        cmocka_unit_test(session_status_bands),
        cmocka_unit_test(future_activity_is_clamped),
        cmocka_unit_test(presence_off_does_not_block),
        cmocka_unit_test(per_persona_presence_override),
        cmocka_unit_test(pending_suggestion_is_withdrawn_while_a_human_is_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
