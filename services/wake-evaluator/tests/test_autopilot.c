/* test_autopilot.c - the specified guards applied to the autopilot's
 * proposals whatever the model said, the published run, and the timer
 * (interval, idle rooms, early runs when velocity or the AI-to-human
 * ratio jumps). */
#include "wk_test.h"

static wake_ap_list *proposals(int n, ...)
{
    wake_ap_list *l = calloc(1, sizeof *l);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        snprintf(l->v[i].persona, sizeof l->v[i].persona, "%s", va_arg(ap, const char *));
        l->v[i].action = (wake_ap_action)va_arg(ap, int);
        snprintf(l->v[i].reason, sizeof l->v[i].reason, "model says so");
    }
    va_end(ap);
    l->n = n;
    return l;
}

static int action_of(const wake_ap_list *l, const char *p)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].persona, p) == 0)
            return (int)l->v[i].action;
    return -1;
}

static const char *reason_of(const wake_ap_list *l, const char *p)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].persona, p) == 0)
            return l->v[i].reason;
    return "";
}

static void only_expert_on_a_discussed_domain_is_not_slept(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "ts", "smart", -1, "typescript", 0.85);
    wk_persona(t, "arch", "smart", -1, "architecture", 0.9);
    wk_level(t, "ts", WAKE_LEVEL_ACTIVE, "manual");
    wk_level(t, "arch", WAKE_LEVEL_ACTIVE, "manual");
    wk_msg(t, "arch", WAKE_SENDER_AI, "the TypeScript types look wrong");
    wake_ap_list *l = proposals(2, "ts", WAKE_AP_AUTO_SLEEP, "arch", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "ts"), WAKE_AP_KEEP);
    assert_non_null(strstr(reason_of(l, "ts"), "only confident expert on 'typescript'"));
    assert_int_equal(action_of(l, "arch"), WAKE_AP_AUTO_SLEEP); /* architecture not discussed */
    free(l);

    /* the specified guard drops every dormancy proposal for the expert: a
     * suggestion to step back (it defaults to yes) too */
    l = proposals(2, "ts", WAKE_AP_SUGGEST_MENTION_ONLY, "arch", WAKE_AP_SUGGEST_MENTION_ONLY);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "ts"), WAKE_AP_KEEP);
    assert_non_null(strstr(reason_of(l, "ts"), "only confident expert on 'typescript'"));
    assert_non_null(strstr(reason_of(l, "ts"), "not asked to step back"));
    assert_int_equal(action_of(l, "arch"), WAKE_AP_SUGGEST_MENTION_ONLY);
    free(l);

    /* a second confident expert: not the only one */
    wk_persona(t, "ts2", "smart", -1, "typescript", 0.81);
    l = proposals(1, "ts", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "ts"), WAKE_AP_AUTO_SLEEP);
    free(l);

    /* ... and the discussion must be recent (10 minutes) */
    wake_room_find(t->r, "ts2")->conf[0] = 0.5;
    t->now += 11 * MIN;
    l = proposals(1, "ts", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "ts"), WAKE_AP_AUTO_SLEEP);
    free(l);
    wk_free(t);
}

static void experts_in_the_humans_domain_stay_awake(void **state)
{
    (void)state;
    wk *t = wk_new();
    /* two experts above 0.8: guard A (the only expert) is not what keeps them */
    wk_persona(t, "arch", "smart", -1, "architecture", 0.85);
    wk_persona(t, "arch2", "smart", -1, "architecture", 0.9);
    wk_persona(t, "edge", "smart", -1, "architecture", 0.7); /* not above 0.7 */
    wk_persona(t, "other", "smart", -1, "cooking", 0.9);
    wk_level(t, "arch", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "arch2", WAKE_LEVEL_ACTIVE, "manual");
    wk_level(t, "edge", WAKE_LEVEL_ACTIVE, "manual");
    wk_level(t, "other", WAKE_LEVEL_ACTIVE, "manual");
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "an Architecture question: monolith or services?");
    wk_clear(t);
    wake_ap_list *l = proposals(3, "arch2", WAKE_AP_SUGGEST_MENTION_ONLY, "edge",
                                WAKE_AP_AUTO_SLEEP, "other", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "arch"), WAKE_AP_WAKE);
    assert_int_equal(action_of(l, "arch2"), WAKE_AP_KEEP);
    assert_non_null(strstr(reason_of(l, "arch2"), "domain of the last human message"));
    assert_int_equal(action_of(l, "edge"), WAKE_AP_AUTO_SLEEP);
    assert_int_equal(action_of(l, "other"), WAKE_AP_AUTO_SLEEP);
    free(l);

    /* the human left (no message for longer than human_present_ms) */
    t->now += t->c.human_present_ms + 1;
    l = proposals(1, "arch2", WAKE_AP_SUGGEST_MENTION_ONLY);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "arch2"), WAKE_AP_SUGGEST_MENTION_ONLY);
    assert_int_equal(action_of(l, "arch"), -1);
    free(l);
    wk_free(t);
}

static void dominating_persona_gets_mention_only(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "chatty", "smart", -1, NULL, 0);
    wk_persona(t, "ten", "smart", -1, NULL, 0);
    wk_persona(t, "quiet", "smart", -1, NULL, 0);
    wk_level(t, "chatty", WAKE_LEVEL_ACTIVE, "manual");
    wk_level(t, "ten", WAKE_LEVEL_ACTIVE, "manual");
    for (int i = 0; i < 11; i++) {
        t->now += MIN;
        wk_msg(t, "chatty", WAKE_SENDER_AI, "more");
        if (i < 10)
            wk_msg(t, "ten", WAKE_SENDER_AI, "also");
    }
    assert_int_equal(wake_messages_last_hour(wake_room_find(t->r, "chatty"), t->now), 11);
    wake_ap_list *l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "chatty"), WAKE_AP_SUGGEST_MENTION_ONLY);
    assert_string_equal(reason_of(l, "chatty"),
                        "High participation rate (10+ messages/hour), letting others contribute");
    assert_int_equal(action_of(l, "ten"), -1); /* exactly 10 is not "more than 10" */
    assert_int_equal(action_of(l, "quiet"), -1);
    free(l);

    /* an hour later the messages no longer count */
    t->now += 60 * MIN;
    l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "chatty"), -1);
    free(l);

    /* already mention-only: nothing to suggest */
    t->now -= 60 * MIN;
    wk_level(t, "chatty", WAKE_LEVEL_MENTION_ONLY, "redundant");
    l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "chatty"), -1);
    free(l);
    wk_free(t);
}

static void a_present_human_never_meets_an_all_asleep_room(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, "cooking", 0.9);
    wk_persona(t, "b", "smart", -1, "servers", 0.6);
    wk_persona(t, "c", "smart", -1, NULL, 0);
    wk_level(t, "a", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "b", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "c", WAKE_LEVEL_ACTIVE, "manual");
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "are the servers ok?");
    /* the model puts the only awake persona to sleep */
    wake_ap_list *l = proposals(1, "c", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    /* b knows the human's domain best (0.6 in servers): woken */
    assert_int_equal(action_of(l, "b"), WAKE_AP_WAKE);
    assert_string_equal(reason_of(l, "b"), "guard: a human is present and every persona would be asleep");
    assert_int_equal(action_of(l, "c"), WAKE_AP_AUTO_SLEEP);
    free(l);

    /* nobody present: the room may sleep */
    t->now += t->c.human_present_ms;
    l = proposals(1, "c", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "b"), -1);
    free(l);

    /* everyone asleep but c, whose sleep is vetoed into keep */
    t->now -= t->c.human_present_ms;
    wk_level(t, "b", WAKE_LEVEL_SLEEP, "manual");
    wake_room_find(t->r, "b")->n_conf = 0; /* no domain match anywhere */
    wake_room_find(t->r, "c")->availability = 0.9;
    l = proposals(1, "c", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "c"), WAKE_AP_KEEP); /* most available */
    free(l);
    wk_free(t);
}

/* Guard 4 is about a human who would meet nobody; personas the AI-only
 * hard stop (or an accepted no-human suggestion) put to sleep wake at the
 * human's next message by rule, so they are not a dead room: the guard
 * leaves the forced sleep alone (with shrunk thresholds, or a persona's own
 * shorter aiOnlyDiscussionThreshold, the human who wrote before the
 * AI-only stretch is still "present" when it ends). */
static void guard_4_leaves_the_ai_only_hard_stop_alone(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, NULL, 0);
    wk_persona(t, "b", "smart", -1, NULL, 0);
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "go ahead without me");
    wk_level(t, "a", WAKE_LEVEL_SLEEP, "ai-only");
    wk_level(t, "b", WAKE_LEVEL_SLEEP, "ai-only");
    wake_ap_list *l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(l->n, 0);
    free(l);

    /* one of them would not wake for a human (auto-wake off): the other
     * still does, so the room is not dead either */
    wake_room_find(t->r, "a")->auto_wake_ov = 0;
    l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(l->n, 0);
    free(l);

    /* neither wakes for a human: the guard wakes one as before */
    wake_room_find(t->r, "b")->auto_wake_ov = 0;
    l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(l->n, 1);
    assert_int_equal(l->v[0].action, WAKE_AP_WAKE);
    free(l);

    /* the model puts the only awake persona to sleep (a chosen sleep): b,
     * asleep for lack of humans, still answers the human's next message,
     * so nobody is woken against the model (dormancy-monitor leaves an
     * autopilot auto-sleep of a persona already asleep as it is) */
    wake_room_find(t->r, "b")->auto_wake_ov = -1;
    wk_level(t, "a", WAKE_LEVEL_ACTIVE, "human-reentry");
    l = proposals(2, "a", WAKE_AP_AUTO_SLEEP, "b", WAKE_AP_AUTO_SLEEP);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "a"), WAKE_AP_AUTO_SLEEP);
    assert_int_equal(action_of(l, "b"), WAKE_AP_AUTO_SLEEP);
    free(l);
    wk_free(t);
}

static void a_run_is_published_with_source_and_economics(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, NULL, 0);
    wk_level(t, "a", WAKE_LEVEL_ACTIVE, "manual");
    wk_clear(t);
    wake_ap_list *l = proposals(2, "a", WAKE_AP_KEEP, "gone", WAKE_AP_WAKE);
    wake_ap_result res = {"general:autopilot:1", true, l, NULL, 120};
    assert_int_equal(wake_on_autopilot(t->r, &t->c, &res, t->now, &t->sink), 0);
    free(l);
    const wk_pub *p = NULL;
    assert_int_equal(wk_count(t, "/autopilot", &p), 1);
    assert_string_equal(p->topic, "room/general/autopilot");
    assert_false(p->retain);
    json_object *o = wk_json(p->payload);
    assert_string_equal(wk_str(o, "source"), "llm");
    assert_string_equal(wk_str(o, "id"), "general:autopilot:1");
    json_object *ds;
    assert_true(json_object_object_get_ex(o, "decisions", &ds));
    assert_int_equal(json_object_array_length(ds), 1); /* "gone" is not in the room */
    json_object_put(o);
    assert_int_equal(wk_count(t, "/economics", &p), 1);
    assert_true(p->retain);
    o = wk_json(p->payload);
    json_object *v;
    json_object_object_get_ex(o, "tokens_spent", &v);
    assert_int_equal(json_object_get_int64(v), 120);
    json_object_object_get_ex(o, "autopilot_runs", &v);
    assert_int_equal(json_object_get_int64(v), 1);
    json_object_put(o);

    /* a failed LLM call: source rules, and why */
    wk_clear(t);
    wake_ap_result fb = {"general:autopilot:2", false, NULL, "LLM timeout: slow", -1};
    assert_int_equal(wake_on_autopilot(t->r, &t->c, &fb, t->now, &t->sink), 0);
    assert_int_equal(wk_count(t, "/autopilot", &p), 1);
    o = wk_json(p->payload);
    assert_string_equal(wk_str(o, "source"), "rules");
    assert_string_equal(wk_str(o, "fallback"), "LLM timeout: slow");
    json_object_put(o);
    wk_free(t);
}

static void timer_interval_idle_and_no_llm(void **state)
{
    (void)state;
    wk *t = wk_new();
    t->c.llm_enabled = false;
    wk_persona(t, "a", "smart", -1, NULL, 0);
    wk_level(t, "a", WAKE_LEVEL_ACTIVE, "manual");
    wk_msg(t, "a", WAKE_SENDER_AI, "hello");
    assert_string_equal(t->timer_name, WAKE_TIMER_AUTOPILOT);
    assert_true(t->timer_due == T0 + t->c.autopilot_interval_ms);
    /* further messages keep the deadline */
    wk_clear(t);
    wk_msg(t, "a", WAKE_SENDER_AI, "again");
    assert_true(t->timer_due == 0);
    /* it fires: rules run published at once, re-armed */
    t->now = T0 + t->c.autopilot_interval_ms;
    assert_int_equal(wake_on_timer(t->r, &t->c, WAKE_TIMER_AUTOPILOT, t->now, t->now, &t->sink), 0);
    assert_int_equal(wk_count(t, "/autopilot", NULL), 1);
    assert_int_equal(t->n_jobs, 0);
    assert_true(t->timer_due == t->now + t->c.autopilot_interval_ms);
    /* nothing said since: idle, not re-armed (economics refreshed) */
    wk_clear(t);
    t->now += t->c.autopilot_interval_ms;
    assert_int_equal(wake_on_timer(t->r, &t->c, WAKE_TIMER_AUTOPILOT, t->now, t->now, &t->sink), 0);
    assert_int_equal(wk_count(t, "/autopilot", NULL), 0);
    assert_int_equal(wk_count(t, "/economics", NULL), 1);
    assert_true(t->timer_due == 0);
    /* the next message arms it again */
    wk_msg(t, "a", WAKE_SENDER_AI, "back");
    assert_true(t->timer_due == t->now + t->c.autopilot_interval_ms);
    wk_free(t);
}

static void velocity_or_ratio_jump_runs_early(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, NULL, 0);
    wk_level(t, "a", WAKE_LEVEL_ACTIVE, "manual");
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "hi");
    int64_t armed = t->timer_due;
    assert_true(armed > t->now);
    /* 3 AI messages to 1 human: ratio 3, not above 3 */
    for (int i = 0; i < 3; i++) {
        wk_clear(t);
        t->now += 1000;
        wk_msg(t, "a", WAKE_SENDER_AI, "x");
        assert_true(t->timer_due == 0);
    }
    /* the 4th: ratio 4 > 3 and >= 2 x 0 at the (never run) last run: now */
    wk_clear(t);
    t->now += 1000;
    wk_msg(t, "a", WAKE_SENDER_AI, "x");
    assert_true(t->timer_due == t->now);
    /* it runs; the ratio is remembered; more of the same is no jump */
    assert_int_equal(wake_on_timer(t->r, &t->c, WAKE_TIMER_AUTOPILOT, t->now, t->now, &t->sink), 0);
    assert_true(t->r->ap_ratio == 4.0);
    for (int i = 0; i < 3; i++) {
        wk_clear(t);
        t->now += 1000;
        wk_msg(t, "a", WAKE_SENDER_AI, "x");
        assert_true(t->timer_due == 0);
    }
    /* ratio 8 = 2 x 4 but within the minimum gap: no early run ... */
    wk_clear(t);
    t->now += 1000;
    wk_msg(t, "a", WAKE_SENDER_AI, "x");
    assert_true(t->timer_due == 0);
    /* ... after the gap, yes */
    wk_clear(t);
    t->now += t->c.autopilot_min_gap_ms;
    wk_msg(t, "a", WAKE_SENDER_AI, "x");
    assert_true(t->timer_due == t->now);
    wk_free(t);
}

static void unmanaged_rooms_and_tired_personas(void **state)
{
    (void)state;
    /* AIs talking in a room nobody described (no meta, no levels): no
     * autopilot, so no LLM calls for it */
    wk *t = wk_new();
    wk_msg(t, "bot1", WAKE_SENDER_AI, "hi");
    wk_msg(t, "bot2", WAKE_SENDER_AI, "hello");
    assert_int_equal(t->r->n_personas, 2);
    assert_true(t->timer_due == 0);
    assert_int_equal(wake_on_timer(t->r, &t->c, WAKE_TIMER_AUTOPILOT, t->now, t->now, &t->sink), 0);
    assert_int_equal(t->n_jobs, 0);
    wk_free(t);

    /* guard 4 prefers a persona that is not tired */
    t = wk_new();
    wk_persona(t, "tired", "smart", -1, NULL, 0);
    wk_persona(t, "fresh", "smart", -1, NULL, 0);
    snprintf(wake_room_find(t->r, "tired")->mood, WAKE_SHORT_MAX, "Tired");
    wake_room_find(t->r, "tired")->availability = 0.9;
    wk_level(t, "tired", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "fresh", WAKE_LEVEL_SLEEP, "manual");
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "hello?");
    wake_ap_list *l = proposals(0);
    wake_autopilot_guard(t->r, &t->c, t->now, l);
    assert_int_equal(action_of(l, "fresh"), WAKE_AP_WAKE);
    assert_int_equal(action_of(l, "tired"), -1);
    free(l);
    wk_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_expert_on_a_discussed_domain_is_not_slept),
        cmocka_unit_test(experts_in_the_humans_domain_stay_awake),
        cmocka_unit_test(dominating_persona_gets_mention_only),
        cmocka_unit_test(a_present_human_never_meets_an_all_asleep_room),
        cmocka_unit_test(guard_4_leaves_the_ai_only_hard_stop_alone),
        cmocka_unit_test(a_run_is_published_with_source_and_economics),
        cmocka_unit_test(timer_interval_idle_and_no_llm),
        cmocka_unit_test(velocity_or_ratio_jump_runs_early),
        cmocka_unit_test(unmanaged_rooms_and_tired_personas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
