/* Rule 5, directed part: @mention wake, wake decisions, the autopilot. */
#include "dm_test.h"

static void mention_wakes_sleeping_persona(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_sleep(f, "ann");
    dm_human(f, "@ann what do you think?");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_MENTION);
    assert_string_equal(c->message_id, f->last_msg_id);
    dm_free(f);
}

static void mention_only_persona_stays_mention_only(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_command(f, "ann", DORMANCY_CMD_DORMANT, DORMANCY_MENTION_ONLY, 0, "ann");
    dm_clear(f);
    dm_human(f, "@ann ping");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_count(f, DORMANCY_OUT_CHANGE, NULL), 0);
    dm_free(f);
}

static void mentions_field_and_display_name_count(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_sleep(f, "ann");
    dm_sleep(f, "bob");
    dormancy_event ev = {0};
    static const char *const mentions[] = {"ann"};
    ev.kind = DORMANCY_EV_MESSAGE;
    ev.msg.sender = "cara";
    ev.msg.sender_type = DORMANCY_SENDER_AI;
    ev.msg.text = "no at-sign here";
    ev.msg.mentions = mentions;
    ev.msg.n_mentions = 1;
    dm_send(f, &ev);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    /* meta name */
    static const char *const rooms[] = {"general"};
    dormancy_event meta = {0};
    meta.kind = DORMANCY_EV_META;
    meta.meta.persona = "bob";
    meta.meta.name = "Bobby";
    meta.meta.rooms = rooms;
    meta.meta.n_rooms = 1;
    dm_send(f, &meta);
    dm_ai(f, "cara", "what says @bobby?");
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void self_mention_is_not_a_wake(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    dm_sleep(f, "ann");
    dm_ai(f, "ann", "note to @ann");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    dm_free(f);
}

static void send_wake(dm_fx *f, const char *persona, bool should, double conf, dormancy_via via)
{
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_WAKE;
    ev.wake.persona = persona;
    ev.wake.message_id = "m42";
    ev.wake.should_wake = should;
    ev.wake.confidence = conf;
    ev.wake.reason = "production is down";
    ev.wake.via = via;
    dm_send(f, &ev);
}

static void positive_wake_decision_wakes(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 1, "ann");
    dm_sleep(f, "ann");
    send_wake(f, "ann", false, 0.95, DORMANCY_VIA_LLM);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    send_wake(f, "ann", true, 0.7, DORMANCY_VIA_LLM); /* not above 0.7 */
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    send_wake(f, "ann", true, 0.85, DORMANCY_VIA_LLM);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, "ann");
    assert_int_equal(c->trigger, DORMANCY_TRIGGER_WAKE_DECISION);
    assert_string_equal(c->message_id, "m42");
    send_wake(f, "nobody", true, 0.99, DORMANCY_VIA_LLM); /* not a member: ignored */
    assert_null(dormancy_persona_find(f->room, "nobody"));
    dm_free(f);
}

static void llm_wake_switch_and_confidence_override(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.llm_wake = false;
    dm_personas(f, 1, "ann");
    dm_sleep(f, "ann");
    send_wake(f, "ann", true, 0.99, DORMANCY_VIA_LLM);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_SLEEP);
    send_wake(f, "ann", true, 0.99, DORMANCY_VIA_RULES);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);

    dm_fx *g = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_WAKE_CONFIDENCE;
    ov.wake_confidence = 0.9;
    dm_meta(g, "ann", &ov);
    dm_sleep(g, "ann");
    send_wake(g, "ann", true, 0.85, DORMANCY_VIA_LLM);
    assert_int_equal(dm_level(g, "ann"), DORMANCY_SLEEP);
    send_wake(g, "ann", true, 0.95, DORMANCY_VIA_LLM);
    assert_int_equal(dm_level(g, "ann"), DORMANCY_ACTIVE);
    dm_free(f);
    dm_free(g);
}

static void send_autopilot(dm_fx *f, const char *persona, dormancy_autopilot_action action)
{
    dormancy_ap_decision d = {persona, action, "dominating the room"};
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_AUTOPILOT;
    ev.autopilot.decisions = &d;
    ev.autopilot.n = 1;
    ev.autopilot.source = "llm";
    dm_send(f, &ev);
}

static void autopilot_suggests_sleeps_and_wakes(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bob", "cara");
    send_autopilot(f, "ann", DORMANCY_AP_SUGGEST_MENTION_ONLY);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "ann");
    assert_non_null(s);
    assert_int_equal(s->suggest, DORMANCY_SUGGEST_AUTOPILOT);
    assert_string_equal(s->text, "\xF0\x9F\x92\xA4 The dormancy autopilot suggests stepping back. "
                                 "Switch to mention-only? [Yes] [No]");
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE); /* suggested, not forced */
    dm_answer(f, "ann", DORMANCY_ANSWER_YES, NULL);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "ann")->trigger, DORMANCY_TRIGGER_AUTOPILOT);
    assert_int_equal(dm_p(f, "ann")->cause, DORMANCY_CAUSE_CHOICE);

    send_autopilot(f, "bob", DORMANCY_AP_AUTO_SLEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "bob")->trigger, DORMANCY_TRIGGER_AUTOPILOT);
    send_autopilot(f, "bob", DORMANCY_AP_KEEP);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    send_autopilot(f, "bob", DORMANCY_AP_WAKE);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_ACTIVE);
    send_autopilot(f, "ghost", DORMANCY_AP_AUTO_SLEEP);
    assert_null(dormancy_persona_find(f->room, "ghost"));
    dm_free(f);
}

static void autopilot_sleep_becomes_suggestion_when_auto_sleep_off(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    f->cfg.auto_sleep = false;
    dm_personas(f, 1, "ann");
    send_autopilot(f, "ann", DORMANCY_AP_AUTO_SLEEP);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 1);
    dm_free(f);
}

/* A model's reason is free text of any length: the reason and text that
 * quote it are cut to their buffers at a character boundary, so the
 * change event stays valid UTF-8 (an event cut inside a character is
 * refused by every strict reader). Found with the fuzz target. */
static void long_non_ascii_reasons_are_cut_between_characters(void **state)
{
    (void)state;
    char reason[2 * 300 + 1];
    for (int i = 0; i < 300; i++)
        memcpy(reason + 2 * i, "\xC3\xA9", 2); /* "é" */
    reason[600] = '\0';
    dm_fx *f = dm_new();
    dm_personas(f, 2, "ann", "bob");
    dm_sleep(f, "ann");
    dormancy_event ev = {0};
    ev.kind = DORMANCY_EV_WAKE;
    ev.wake.persona = "ann";
    ev.wake.message_id = "m42";
    ev.wake.should_wake = true;
    ev.wake.confidence = 0.9;
    ev.wake.reason = reason;
    ev.wake.via = DORMANCY_VIA_LLM;
    dm_send(f, &ev);
    assert_int_equal(dm_level(f, "ann"), DORMANCY_ACTIVE);
    dormancy_ap_decision d = {"bob", DORMANCY_AP_AUTO_SLEEP, reason};
    dormancy_event ap = {0};
    ap.kind = DORMANCY_EV_AUTOPILOT;
    ap.autopilot.decisions = &d;
    ap.autopilot.n = 1;
    dm_send(f, &ap);
    assert_int_equal(dm_level(f, "bob"), DORMANCY_SLEEP);
    const char *who[] = {"ann", "bob"};
    for (int i = 0; i < 2; i++) {
        const dormancy_action *c = dm_last(f, DORMANCY_OUT_CHANGE, who[i]);
        assert_non_null(c);
        assert_true(strlen(c->reason) > 200); /* cut, not dropped */
        assert_true(vigil_utf8_valid(c->reason, strlen(c->reason)));
        assert_true(vigil_utf8_valid(c->text, strlen(c->text)));
        char *t = dormancy_change_text(c, "general", f->now);
        assert_non_null(t);
        assert_true(vigil_json_valid(t, strlen(t), true));
        free(t);
    }
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mention_wakes_sleeping_persona),
        cmocka_unit_test(mention_only_persona_stays_mention_only),
        cmocka_unit_test(mentions_field_and_display_name_count),
        cmocka_unit_test(self_mention_is_not_a_wake),
        cmocka_unit_test(positive_wake_decision_wakes),
        cmocka_unit_test(llm_wake_switch_and_confidence_override),
        cmocka_unit_test(autopilot_suggests_sleeps_and_wakes),
        cmocka_unit_test(autopilot_sleep_becomes_suggestion_when_auto_sleep_off),
        cmocka_unit_test(long_non_ascii_reasons_are_cut_between_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
