/* Every skip rule, with its reason, in order, with an injected clock (the
 * live exchange also when the model's answer comes back); and the run's
 * life: one run at a time, a lost run given up after the guard, a late or
 * repeated answer changing nothing (never a second send); and its end: a
 * heartbeat switched off, or deleted by clearing its retained config (a
 * cleared persona state forgets the levels as {"rooms":{}} does). */
#include "hb_test.h"

typedef struct fx {
    hb_config c;
    hb_state s;
    hb_out out;
    int64_t t0;
} fx;

static void setup_with(fx *f, const char *extra)
{
    test_config(&f->c);
    hb_out_init(&f->out);
    f->t0 = utc_ms(2026, 7, 1, 14, 0); /* peak, in UTC */
    configured(&f->s, &f->c, extra, f->t0);
}

static void teardown_fx(fx *f)
{
    hb_out_clear(&f->out);
    hb_state_free(&f->s);
}

static void expect_skip(fx *f, int64_t t, const char *reason)
{
    json_object *ev = fire(&f->s, &f->c, t, &f->out);
    if (!ev)
        fail_msg("expected a skip (%s), got a run", reason);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), reason);
    assert_non_null(jstr(ev, "detail"));
    assert_int_equal(jint(ev, "tokens"), 0);
    assert_null(f->out.job); /* no model call */
    json_object_put(ev);
}

static void expect_run(fx *f, int64_t t)
{
    json_object *ev = fire(&f->s, &f->c, t, &f->out);
    assert_null(ev);
    assert_non_null(f->out.job);
    assert_true(f->s.running[0] != '\0');
}

/* A fresh record whose first run (two minutes in) is in flight; its run
 * id copied into run (the record's own changes with the run). */
static void first_run(fx *f, char run[128])
{
    setup_with(f, NULL);
    expect_run(f, f->t0 + 2 * MIN_MS);
    snprintf(run, 128, "%s", f->s.running);
}

static void user_says(fx *f, const char *text, int64_t t)
{
    hb_message m = {"m", "general", "joel", text, true, false, t};
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_message(&f->s, &f->c, &m, t, &f->out), HB_OK);
}

static void live_exchange(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    user_says(&f, "talking to Ann about lunch", f.t0 + 5 * MIN_MS);
    expect_skip(&f, f.t0 + 5 * MIN_MS + 119 * 1000, "live-exchange");
    expect_run(&f, f.t0 + 5 * MIN_MS + 120 * 1000);
    teardown_fx(&f);
}

/* A slow model: the run started in silence, the user spoke while the model
 * thought, the answer comes back under live_ms after the user's words. The
 * message is not sent right after them: skipped, live-exchange, as at a
 * run's start; the next run comes on the active interval. */
static void the_user_speaking_while_the_model_thinks_holds_the_message(void **st)
{
    (void)st;
    const char *msg = "{\"message\":\"Stand-up now\",\"priority\":\"urgent\","
                      "\"category\":\"reminder\"}";
    fx f;
    setup_with(&f, NULL);
    expect_run(&f, f.t0 + 2 * MIN_MS);
    user_says(&f, "back from lunch", f.t0 + 2 * MIN_MS + 10 * 1000);
    int64_t t = f.t0 + 2 * MIN_MS + 40 * 1000;
    json_object *ev = answer(&f.s, &f.c, msg, t, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "live-exchange");
    assert_non_null(strstr(jstr(ev, "detail"), "joel wrote 30 s ago"));
    assert_non_null(strstr(jstr(ev, "detail"), "not sent"));
    assert_null(out_json(&f.out, "/message"));
    assert_int_equal(f.s.last_proactive, 0); /* nothing waits for an answer */
    assert_int_equal(jint(ev, "next_in_ms"), 2 * MIN_MS);
    assert_string_equal(f.out.run.reason, "live-exchange");
    json_object_put(ev);
    /* HEARTBEAT_OK in the same moment interrupts nobody: an ok run */
    expect_run(&f, t + 2 * MIN_MS + 1000);
    user_says(&f, "still here", t + 2 * MIN_MS + 2000);
    ev = answer(&f.s, &f.c, "HEARTBEAT_OK", t + 2 * MIN_MS + 3000, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "ok");
    json_object_put(ev);
    /* the same answer once the user has been quiet for live_ms: sent */
    int64_t t2 = t + 2 * MIN_MS + 3000 + 3 * MIN_MS;
    expect_run(&f, t2);
    ev = answer(&f.s, &f.c, msg, t2 + 1000, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object_put(ev);
    teardown_fx(&f);
}

static void others_talking_is_no_live_exchange_and_no_activity(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    int64_t before = f.s.last_activity;
    hb_message m = {"m", "general", "ann", "hi all", true, false, f.t0 + MIN_MS};
    hb_out_clear(&f.out);
    hb_on_message(&f.s, &f.c, &m, f.t0 + MIN_MS, &f.out);
    assert_int_equal(f.out.timer, HB_TIMER_KEEP);
    hb_message ai = {"m2", "general", "joel", "an AI named like the user", false, false, f.t0 + MIN_MS};
    hb_on_message(&f.s, &f.c, &ai, f.t0 + MIN_MS, &f.out);
    assert_int_equal(f.s.last_activity, before);
    expect_run(&f, f.t0 + 2 * MIN_MS);
    teardown_fx(&f);
}

static void asleep_or_mention_only_but_not_human_only(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    hb_room_level lv[2] = {{"general", HB_LEVEL_SLEEP}, {"other", HB_LEVEL_ACTIVE}};
    hb_on_levels(&f.s, lv, 2, f.t0, &f.out);
    expect_skip(&f, f.t0 + 2 * MIN_MS, "persona-asleep");
    lv[0].level = HB_LEVEL_MENTION_ONLY;
    hb_on_levels(&f.s, lv, 2, f.t0, &f.out);
    expect_skip(&f, f.t0 + 4 * MIN_MS, "persona-mention-only");
    lv[0].level = HB_LEVEL_HUMAN_ONLY;
    hb_on_levels(&f.s, lv, 2, f.t0, &f.out);
    expect_run(&f, f.t0 + 6 * MIN_MS);
    teardown_fx(&f);
}

static void unanswered_proactive_message(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    expect_run(&f, f.t0 + 2 * MIN_MS);
    json_object *ev = answer(&f.s, &f.c,
                             "{\"message\":\"Stand-up now\",\"priority\":\"urgent\",\"category\":\"reminder\"}",
                             f.t0 + 2 * MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object_put(ev);
    int64_t sent = f.t0 + 2 * MIN_MS;
    /* its own message comes back from the room: context, not an answer */
    hb_message own = {"hb:helper:1:msg", "general", "helper", "Stand-up now", false, true, sent};
    hb_out_clear(&f.out);
    hb_on_message(&f.s, &f.c, &own, sent + 100, &f.out);
    expect_skip(&f, sent + 2 * MIN_MS, "unanswered");
    expect_skip(&f, sent + 2 * HOUR_MS - 1, "unanswered");
    expect_run(&f, sent + 2 * HOUR_MS); /* two hours later it may try again */
    teardown_fx(&f);
}

/* Windows shrunk under a minute (VIGIL_HEARTBEAT_UNANSWERED_MS) read in
 * seconds in the detail, never "0 min ago". */
static void a_shrunk_unanswered_window_reads_in_seconds(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    f.c.unanswered_ms = 5000;
    expect_run(&f, f.t0 + 2 * MIN_MS);
    json_object *ev = answer(&f.s, &f.c, "{\"message\":\"Stand-up now\",\"priority\":\"urgent\","
                                         "\"category\":\"reminder\"}",
                             f.t0 + 2 * MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object_put(ev);
    int64_t sent = f.t0 + 2 * MIN_MS;
    ev = fire(&f.s, &f.c, sent + 2500, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "reason"), "unanswered");
    assert_string_equal(jstr(ev, "detail"),
                        "the proactive message of 2.5 s ago is still unanswered");
    json_object_put(ev);
    expect_run(&f, sent + 5000);
    teardown_fx(&f);
}

static void an_answer_clears_unanswered(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    expect_run(&f, f.t0 + 2 * MIN_MS);
    json_object *ev = answer(&f.s, &f.c, "{\"message\":\"x\",\"priority\":\"urgent\",\"category\":\"alert\"}",
                             f.t0 + 2 * MIN_MS, &f.out);
    json_object_put(ev);
    user_says(&f, "thanks", f.t0 + 10 * MIN_MS);
    expect_run(&f, f.t0 + 13 * MIN_MS);
    teardown_fx(&f);
}

static void empty_checklist_and_no_llm(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, "\"checklist\":\"  \\n\\t\",");
    expect_skip(&f, f.t0 + 2 * MIN_MS, "empty-checklist");
    teardown_fx(&f);
    setup_with(&f, NULL);
    f.c.llm_enabled = false;
    expect_skip(&f, f.t0 + 2 * MIN_MS, "no-llm");
    teardown_fx(&f);
}

static void the_order_of_the_rules(void **st)
{
    (void)st;
    /* quiet hours come before the live exchange, both before no-llm */
    fx f;
    setup_with(&f, "\"quiet_hours\":\"13:00-15:00\",\"checklist\":\"\",");
    f.c.llm_enabled = false;
    user_says(&f, "hi", f.t0 + MIN_MS);
    expect_skip(&f, f.t0 + 2 * MIN_MS, "quiet-hours");
    teardown_fx(&f);
    setup_with(&f, "\"checklist\":\"\",");
    f.c.llm_enabled = false;
    user_says(&f, "hi", f.t0 + MIN_MS);
    expect_skip(&f, f.t0 + 2 * MIN_MS, "live-exchange");
    expect_skip(&f, f.t0 + 4 * MIN_MS, "empty-checklist");
    teardown_fx(&f);
}

static void switched_off_no_runs(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    char err[100];
    hb_persona_cfg cfg;
    parse_cfg(&c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":false}", &cfg);
    hb_state_load(&s, "helper", NULL, err, sizeof err);
    hb_on_config(&s, &c, &cfg, 1000, &out);
    assert_int_equal(out.timer, HB_TIMER_CANCEL);
    assert_int_equal(s.next_run, 0);
    assert_null(fire(&s, &c, 5 * MIN_MS, &out));
    assert_null(out.job);
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* Switched off while the model thinks: the answer sends nothing, the run
 * ends `skipped` (disabled) and no next run is scheduled. */
static void switched_off_during_a_run(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    expect_run(&f, f.t0 + 2 * MIN_MS);
    hb_persona_cfg cfg;
    parse_cfg(&f.c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":false}", &cfg);
    hb_out_clear(&f.out);
    hb_on_config(&f.s, &f.c, &cfg, f.t0 + 2 * MIN_MS + 10, &f.out);
    assert_int_equal(f.out.timer, HB_TIMER_KEEP); /* the run in flight decides */
    json_object *ev = answer(&f.s, &f.c, "{\"message\":\"x\",\"priority\":\"urgent\",\"category\":\"alert\"}",
                             f.t0 + 3 * MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "disabled");
    assert_null(out_json(&f.out, "/message"));
    assert_int_equal(f.out.timer, HB_TIMER_CANCEL);
    json_object_put(ev);
    teardown_fx(&f);
}

/* A config (JSON) applied at t. */
static void reconfigure(fx *f, const char *json, int64_t t)
{
    hb_persona_cfg cfg;
    parse_cfg(&f->c, json, &cfg);
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_config(&f->s, &f->c, &cfg, t, &f->out), HB_OK);
    hb_persona_cfg_clear(&cfg);
}

#define CFG_ON "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":true}"
#define CFG_OFF "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":false}"
#define SPEAK "{\"message\":\"Stand-up\",\"priority\":\"urgent\",\"category\":\"reminder\"}"

/* The user switched the heartbeat off and on again, or moved it to another
 * room, while the model thought: the run was asked under a config that is
 * no longer the one in force, so its answer is not sent (one proactive
 * message per run, for the heartbeat as the user left it). The run ends
 * `skipped`, `reconfigured`, and the next run is scheduled under the new
 * config; the record keeps the generation through its JSON form. A config
 * republished as it was is no change and the answer is sent. */
static void configured_anew_during_a_run(void **st)
{
    (void)st;
    fx f;
    char run[128];
    first_run(&f, run);
    int64_t t = f.t0 + 2 * MIN_MS;
    reconfigure(&f, CFG_OFF, t + 10);
    reconfigure(&f, CFG_ON, t + 20);
    assert_int_equal(f.out.timer, HB_TIMER_KEEP); /* the run in flight decides */
    assert_false(hb_run_wanted(&f.s, run)); /* not worth a model call either */
    char *json = hb_state_dump(&f.s), err[100];
    assert_non_null(json);
    hb_state_free(&f.s);
    assert_int_equal(hb_state_load(&f.s, "helper", json, err, sizeof err), 0);
    free(json);
    assert_false(hb_run_wanted(&f.s, run));
    json_object *ev = answer(&f.s, &f.c, SPEAK, t + MIN_MS, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "reconfigured");
    assert_non_null(strstr(jstr(ev, "detail"), "cancelled, nothing sent"));
    assert_null(out_json(&f.out, "/message"));
    assert_int_equal(f.s.last_proactive, 0);
    assert_string_equal(f.s.running, "");
    assert_true(f.out.timer > t + MIN_MS); /* on again: the next run comes */
    assert_int_equal(jint(ev, "next_run_ts"), f.out.timer);
    json_object_put(ev);
    /* the next run, under the config in force, speaks */
    expect_run(&f, f.out.timer);
    snprintf(run, sizeof run, "%s", f.s.running);
    assert_true(hb_run_wanted(&f.s, run));
    ev = answer(&f.s, &f.c, SPEAK, f.s.run_started + 10, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object_put(ev);
    teardown_fx(&f);

    /* moved to another room while the model thought: nothing in either */
    first_run(&f, run);
    reconfigure(&f, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"kitchen\",\"enabled\":true}",
                t + 10);
    ev = answer(&f.s, &f.c, SPEAK, t + MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "reason"), "reconfigured");
    assert_null(out_json(&f.out, "/message"));
    json_object_put(ev);
    teardown_fx(&f);

    /* the same config published again changes nothing: the answer is sent */
    first_run(&f, run);
    reconfigure(&f, CFG_ON, t + 10);
    assert_true(hb_run_wanted(&f.s, run));
    ev = answer(&f.s, &f.c, SPEAK, t + MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object *msg = out_json(&f.out, "/message");
    assert_non_null(msg);
    json_object_put(msg);
    json_object_put(ev);
    teardown_fx(&f);
}

static void one_run_at_a_time_and_a_lost_run_is_given_up(void **st)
{
    (void)st;
    fx f;
    char first[128];
    first_run(&f, first);
    assert_int_equal(f.out.timer, f.t0 + 2 * MIN_MS + f.c.run_guard_ms);
    /* the timer comes again (a claim that lapsed): no second run */
    assert_null(fire(&f.s, &f.c, f.t0 + 3 * MIN_MS, &f.out));
    assert_null(f.out.job);
    assert_string_equal(f.s.running, first);
    /* a user message meanwhile: activity, but the run in flight schedules */
    user_says(&f, "hi", f.t0 + 3 * MIN_MS);
    assert_int_equal(f.out.timer, HB_TIMER_KEEP);
    /* past the guard: given up with an error, the schedule goes on */
    json_object *ev = fire(&f.s, &f.c, f.t0 + 2 * MIN_MS + f.c.run_guard_ms, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "error");
    assert_string_equal(jstr(ev, "reason"), "run-lost");
    assert_true(jint(ev, "next_in_ms") > 0);
    json_object_put(ev);
    assert_string_equal(f.s.running, "");
    /* the lost run's answer arrives late: nothing happens, nothing is sent */
    hb_run_result late = {first, true, "{\"message\":\"late\",\"priority\":\"urgent\",\"category\":\"alert\"}",
                          60, NULL, 50};
    late.len = strlen(late.content);
    hb_out_clear(&f.out);
    assert_int_equal(hb_on_result(&f.s, &f.c, &late, f.t0 + 20 * MIN_MS, &f.out), HB_OK);
    assert_int_equal(f.out.n_msg, 0);
    assert_false(f.out.changed);
    teardown_fx(&f);
}

/* A first run whose guard, due at the end of the run guard, fires
 * times x guard_late_ms + extra ms late; returns when it fired (f->out
 * holds what it did). */
static int64_t guard_fires_late(fx *f, int64_t times, int64_t extra)
{
    char first[128];
    first_run(f, first);
    int64_t due = f->t0 + 2 * MIN_MS + f->c.run_guard_ms;
    int64_t late_by = times * f->c.guard_late_ms + extra;
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_timer(&f->s, &f->c, due, due + late_by, &f->out), HB_OK);
    return due + late_by;
}

/* A guard that fires late by more than guard_late_ms (Redis away: the
 * timer and the run's commit both waited) does not give the run up: it
 * waits one more guard from when it could act, and the answer that
 * arrives meanwhile is sent. Late by guard_late_ms or less, and once more
 * on time past the new guard, the run is given up as before. */
static void a_late_guard_waits_once_more_for_the_answer(void **st)
{
    (void)st;
    fx f;
    int64_t back = guard_fires_late(&f, 1, 1);
    assert_int_equal(f.out.n_msg, 0);
    assert_int_equal(f.out.timer, back + f.c.run_guard_ms);
    assert_true(f.s.running[0] != '\0');
    json_object *ev = answer(&f.s, &f.c, "{\"message\":\"still here\",\"priority\":\"urgent\","
                                         "\"category\":\"alert\"}", back + 10, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object_put(ev);
    teardown_fx(&f);

    /* late by exactly guard_late_ms: on time enough, given up */
    guard_fires_late(&f, 1, 0);
    ev = out_json(&f.out, "/run");
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "reason"), "run-lost");
    json_object_put(ev);
    teardown_fx(&f);

    /* the re-armed guard, on time, gives the run up */
    back = guard_fires_late(&f, 10, 0);
    assert_int_equal(f.out.n_msg, 0);
    ev = fire(&f.s, &f.c, back + f.c.run_guard_ms, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "outcome"), "error");
    assert_string_equal(jstr(ev, "reason"), "run-lost");
    json_object_put(ev);
    assert_string_equal(f.s.running, "");
    teardown_fx(&f);
}

/* The run in flight is wanted while its heartbeat is on; switched off,
 * deleted, or another run: not (the worker then spares the model call). */
static void a_run_is_wanted_only_while_its_heartbeat_is_on(void **st)
{
    (void)st;
    fx f;
    char run[128];
    first_run(&f, run);
    assert_true(hb_run_wanted(&f.s, run));
    assert_false(hb_run_wanted(&f.s, "hb:someone-else:1"));
    f.s.cfg.enabled = false;
    assert_false(hb_run_wanted(&f.s, run));
    f.s.cfg.enabled = true;
    hb_out_clear(&f.out);
    assert_int_equal(hb_on_config_cleared(&f.s, &f.out), HB_OK);
    assert_false(hb_run_wanted(&f.s, run));
    teardown_fx(&f);
}

static void a_repeated_answer_sends_once(void **st)
{
    (void)st;
    fx f;
    char run[128];
    first_run(&f, run);
    const char *txt = "{\"message\":\"Stand-up\",\"priority\":\"urgent\",\"category\":\"reminder\"}";
    hb_run_result r = {run, true, txt, strlen(txt), NULL, 42};
    hb_out_clear(&f.out);
    hb_on_result(&f.s, &f.c, &r, f.t0 + 2 * MIN_MS, &f.out);
    assert_int_equal(f.out.n_msg, 2); /* the room message and the run event */
    hb_out_clear(&f.out);
    hb_on_result(&f.s, &f.c, &r, f.t0 + 2 * MIN_MS + 10, &f.out);
    assert_int_equal(f.out.n_msg, 0);
    teardown_fx(&f);
}

static void errors_of_the_model_call(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    expect_run(&f, f.t0 + 2 * MIN_MS);
    hb_run_result r = {f.s.running, false, NULL, 0, "LLM timeout: no answer", 0};
    char run[128];
    snprintf(run, sizeof run, "%s", f.s.running);
    r.run = run;
    hb_out_clear(&f.out);
    hb_on_result(&f.s, &f.c, &r, f.t0 + 3 * MIN_MS, &f.out);
    json_object *ev = out_json(&f.out, "/run");
    assert_string_equal(jstr(ev, "outcome"), "error");
    assert_string_equal(jstr(ev, "reason"), "llm-error");
    assert_non_null(strstr(jstr(ev, "detail"), "timeout"));
    assert_int_equal(f.s.consecutive_ok, 0);
    json_object_put(ev);
    expect_run(&f, f.t0 + 6 * MIN_MS);
    ev = answer(&f.s, &f.c, "{\"nothing\": true}", f.t0 + 6 * MIN_MS, &f.out);
    assert_string_equal(jstr(ev, "reason"), "unusable-answer");
    json_object_put(ev);
    teardown_fx(&f);
}

static void config_again_changes_nothing_and_a_new_room_moves_the_index(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    hb_persona_cfg cfg;
    parse_cfg(&f.c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":true,\"ts\":5}", &cfg);
    hb_out_clear(&f.out);
    hb_on_config(&f.s, &f.c, &cfg, f.t0 + MIN_MS, &f.out);
    assert_false(f.out.changed);
    assert_int_equal(f.out.timer, HB_TIMER_KEEP);
    user_says(&f, "context", f.t0 + MIN_MS);
    assert_int_equal(f.s.n_recent, 1);
    parse_cfg(&f.c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"lab\",\"enabled\":true}", &cfg);
    hb_out_clear(&f.out);
    hb_on_config(&f.s, &f.c, &cfg, f.t0 + 2 * MIN_MS, &f.out);
    assert_string_equal(f.out.index_remove, "general");
    assert_string_equal(f.out.index_add, "lab");
    assert_int_equal(f.s.n_recent, 0);
    assert_int_equal(f.out.timer, f.t0 + 4 * MIN_MS); /* configuring is activity */
    teardown_fx(&f);
}

static void context_is_bounded_cut_and_token_free(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, NULL);
    char text[400];
    for (int i = 0; i < 12; i++) {
        snprintf(text, sizeof text, "message %d", i);
        hb_message m = {"m", "general", "ann", text, true, false, f.t0};
        hb_on_message(&f.s, &f.c, &m, f.t0, &f.out);
    }
    assert_int_equal(f.s.n_recent, HB_RECENT_MAX);
    assert_string_equal(f.s.recent[0].text, "message 2");
    /* 150 two-byte characters are cut to 100 characters (200 bytes) */
    text[0] = '\0';
    for (int i = 0; i < 150; i++)
        strcat(text, "é");
    hb_message m = {"m", "general", "ann", text, true, false, f.t0};
    hb_on_message(&f.s, &f.c, &m, f.t0, &f.out);
    assert_int_equal(strlen(f.s.recent[HB_RECENT_MAX - 1].text), 200);
    hb_message t = {"m", "general", "ann", "ok HEARTBEAT_OK fine", true, false, f.t0};
    hb_on_message(&f.s, &f.c, &t, f.t0, &f.out);
    assert_null(strstr(f.s.recent[HB_RECENT_MAX - 1].text, "HEARTBEAT_OK"));
    /* a message of another room is not this persona's context */
    hb_message other = {"m", "lab", "joel", "elsewhere", true, false, f.t0};
    int n = f.s.n_recent;
    hb_on_message(&f.s, &f.c, &other, f.t0, &f.out);
    assert_string_not_equal(f.s.recent[n - 1].text, "elsewhere");
    teardown_fx(&f);
}

static void the_record_round_trips(void **st)
{
    (void)st;
    fx f;
    setup_with(&f, "\"quiet_hours\":{\"start\":\"22:00\",\"end\":\"07:00\",\"timezone\":\"Asia/Jakarta\"},"
                   "\"allow_proactive\":[\"alert\"],\"model\":\"tiny\",\"identity\":\"I am Helper.\",");
    user_says(&f, "hello", f.t0 + MIN_MS);
    hb_room_level lv[1] = {{"general", HB_LEVEL_HUMAN_ONLY}};
    hb_on_levels(&f.s, lv, 1, f.t0, &f.out);
    char *json = hb_state_dump(&f.s), err[100];
    hb_state back;
    assert_int_equal(hb_state_load(&back, "helper", json, err, sizeof err), 0);
    char *again = hb_state_dump(&back);
    assert_string_equal(json, again);
    assert_string_equal(back.cfg.tz, "Asia/Jakarta");
    assert_int_equal(back.cfg.quiet.start_min, 22 * 60);
    assert_int_equal(hb_state_level(&back, "general"), HB_LEVEL_HUMAN_ONLY);
    free(json);
    free(again);
    hb_state_free(&back);
    assert_int_equal(hb_state_load(&back, "helper", "[1]", err, sizeof err), -1);
    hb_state_free(&back);
    teardown_fx(&f);
}

/* The prompt of the job of the run just started (malloc'd). */
static char *job_prompt(const hb_out *out)
{
    hb_job j;
    char err[100];
    assert_non_null(out->job);
    assert_int_equal(hb_job_parse(out->job, strlen(out->job), &j, err, sizeof err), 0);
    char *p = strdup(j.prompt);
    hb_job_clear(&j);
    return p;
}

/* A checklist kept in a file is the user's HEARTBEAT.md: the text the shell
 * reads before each run is the one the run reasons with (an edit takes
 * effect at the next run, no config needed); a file that cannot be read
 * skips the run without a model call, and the last text stays. */
static void a_checklist_file_is_read_again_before_each_run(void **st)
{
    (void)st;
    fx f;
    test_config(&f.c);
    hb_out_init(&f.out);
    f.t0 = utc_ms(2026, 7, 1, 14, 0);
    json_object *o = json_tokener_parse("{\"persona\":\"helper\",\"user\":\"joel\","
                                        "\"room\":\"general\",\"enabled\":true,"
                                        "\"checklist_file\":\"ops.md\"}");
    hb_persona_cfg cfg;
    char err[200];
    assert_int_equal(hb_config_payload(o, &f.c, "- Check the backup", &cfg, err, sizeof err),
                     HB_CFG_OK);
    json_object_put(o);
    assert_string_equal(cfg.checklist_file, "ops.md");
    assert_int_equal(hb_state_load(&f.s, "helper", NULL, err, sizeof err), 0);
    assert_int_equal(hb_on_config(&f.s, &f.c, &cfg, f.t0, &f.out), HB_OK);
    /* the name is kept in the record */
    char *json = hb_state_dump(&f.s);
    hb_state back;
    assert_int_equal(hb_state_load(&back, "helper", json, err, sizeof err), 0);
    assert_string_equal(back.cfg.checklist_file, "ops.md");
    hb_state_free(&back);
    free(json);

    /* edited: the next run reasons with the new text */
    const char *edited = "- If more than 2 minutes have passed, remind the user to take a break.";
    hb_out_clear(&f.out);
    assert_int_equal(hb_checklist_file_read(&f.s, edited, NULL, &f.out), HB_OK);
    assert_true(f.out.changed);
    assert_null(fire(&f.s, &f.c, f.t0 + 2 * MIN_MS, &f.out));
    char *prompt = job_prompt(&f.out);
    assert_non_null(strstr(prompt, edited));
    assert_null(strstr(prompt, "Check the backup"));
    free(prompt);
    json_object_put(answer(&f.s, &f.c, "HEARTBEAT_OK", f.t0 + 2 * MIN_MS + 1000, &f.out));

    /* gone: skipped before the model, with the reason; the text stays */
    int64_t t = f.s.next_run;
    hb_out_clear(&f.out);
    assert_int_equal(hb_checklist_file_read(&f.s, NULL, "cannot read 'ops.md'", &f.out), HB_OK);
    json_object *ev = fire(&f.s, &f.c, t, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "checklist-unreadable");
    assert_string_equal(jstr(ev, "detail"),
                        "checklist_file: cannot read 'ops.md': nothing to check");
    assert_null(f.out.job);
    assert_string_equal(f.s.cfg.checklist, edited);
    json_object_put(ev);

    /* back: runs again */
    t = f.s.next_run;
    hb_out_clear(&f.out);
    assert_int_equal(hb_checklist_file_read(&f.s, "- Check the backup", NULL, &f.out), HB_OK);
    assert_null(fire(&f.s, &f.c, t, &f.out));
    assert_non_null(f.out.job);
    teardown_fx(&f);

    /* an inline checklist is not touched */
    setup_with(&f, "\"checklist\":\"inline\",");
    assert_int_equal(hb_checklist_file_read(&f.s, NULL, "x", &f.out), HB_OK);
    assert_string_equal(f.s.checklist_error, "");
    assert_string_equal(f.s.cfg.checklist, "inline");
    teardown_fx(&f);
}

static void clear_config(fx *f)
{
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_config_cleared(&f->s, &f->out), HB_OK);
}

/* A clear of the config (or of the persona's state, as no levels) on s
 * changes nothing: no effect, the same record. */
static void a_clear_changes_nothing(hb_state *s, bool config)
{
    char *before = hb_state_dump(s);
    hb_out out;
    hb_out_init(&out);
    assert_int_equal(config ? hb_on_config_cleared(s, &out) : hb_on_levels(s, NULL, 0, 0, &out),
                     HB_OK);
    assert_false(out.changed);
    assert_int_equal(out.timer, HB_TIMER_KEEP);
    assert_int_equal(out.n_msg, 0);
    assert_null(out.job);
    assert_string_equal(out.index_add, "");
    assert_string_equal(out.index_remove, "");
    char *after = hb_state_dump(s);
    assert_string_equal(before, after);
    free(before);
    free(after);
    hb_out_clear(&out);
}

/* A heartbeat with levels, the user's words as context, a proactive
 * message sent and two runs behind it. */
static void lived_in(fx *f)
{
    hb_room_level lv[2] = {{"general", HB_LEVEL_HUMAN_ONLY}, {"lab", HB_LEVEL_SLEEP}};
    assert_int_equal(hb_on_levels(&f->s, lv, 2, f->t0, &f->out), HB_OK);
    user_says(f, "report due Friday", f->t0 + MIN_MS);
    expect_run(f, f->t0 + 5 * MIN_MS);
    json_object *ev = answer(&f->s, &f->c, "{\"message\":\"Block 9-11 for the report?\","
                             "\"priority\":\"urgent\",\"category\":\"deadline\"}",
                             f->t0 + 6 * MIN_MS, &f->out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    json_object_put(ev);
    expect_skip(f, f->t0 + 9 * MIN_MS, "unanswered");
    assert_int_equal(f->s.runs, 2);
    assert_true(f->s.n_recent > 0 && f->s.next_run > 0);
}

/* The fixture of the clear tests: a configured heartbeat (setup_with). */
static int configured_fx(void **st)
{
    fx *f = malloc(sizeof *f);
    if (!f)
        return -1;
    setup_with(f, NULL);
    *st = f;
    return 0;
}

static int free_fx(void **st)
{
    teardown_fx(*st);
    free(*st);
    return 0;
}
#define CLEAR_TEST(t) cmocka_unit_test_setup_teardown(t, configured_fx, free_fx)

/* Cleared: what a persona never configured has, but for the levels
 * (persona/{p}/state's) and the run numbers; the timer cancelled and the
 * room's index left in the same decision. */
static void a_cleared_config_deletes_the_heartbeat(void **st)
{
    fx *f = *st;
    lived_in(f);
    clear_config(f);
    assert_true(f->out.changed);
    assert_int_equal(f->out.timer, HB_TIMER_CANCEL);
    assert_string_equal(f->out.index_remove, "general"); /* its place in the room freed */
    assert_string_equal(f->out.index_add, "");
    assert_int_equal(f->out.n_msg, 0);
    assert_false(f->s.cfg.set);
    assert_int_equal(f->s.n_recent, 0);
    assert_int_equal(f->s.last_activity + f->s.last_user_msg + f->s.last_proactive, 0);
    assert_true(f->s.answered);
    assert_int_equal(f->s.next_run, 0);
    assert_int_equal(f->s.runs, 2);
    assert_int_equal(hb_state_level(&f->s, "lab"), HB_LEVEL_SLEEP);
    char *dump = hb_state_dump(&f->s), err[100];
    hb_state back;
    assert_int_equal(hb_state_load(&back, "helper", dump, err, sizeof err), 0);
    assert_false(back.cfg.set);
    assert_int_equal(back.runs, 2);
    assert_int_equal(back.n_levels, 2);
    hb_state_free(&back);
    free(dump);
    /* a timer the clear's commit came too late to cancel starts nothing */
    assert_null(fire(&f->s, &f->c, f->t0 + 30 * MIN_MS, &f->out));
    assert_null(f->out.job);
    assert_int_equal(f->out.timer, HB_TIMER_CANCEL);
    assert_int_equal(f->s.runs, 2);
    /* clearing again changes nothing (a redelivery) */
    a_clear_changes_nothing(&f->s, true);
    /* nor does clearing a persona never configured, or known by its levels */
    hb_state s;
    char e[100];
    assert_int_equal(hb_state_load(&s, "ghost", NULL, e, sizeof e), 0);
    a_clear_changes_nothing(&s, true);
    hb_room_level lv[1] = {{"general", HB_LEVEL_SLEEP}};
    hb_out out;
    hb_out_init(&out);
    assert_int_equal(hb_on_levels(&s, lv, 1, 0, &out), HB_OK);
    hb_out_clear(&out);
    a_clear_changes_nothing(&s, true);
    hb_state_free(&s);
}

/* Switched off, a heartbeat keeps its place in the room; deleted, it
 * frees it and joins a full room again like any newcomer. */
static void switched_off_keeps_the_room_a_clear_frees_it(void **st)
{
    fx *f = *st;
    reconfigure(f, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\","
                "\"enabled\":false}", f->t0 + MIN_MS);
    assert_int_equal(f->out.timer, HB_TIMER_CANCEL);
    assert_string_equal(f->out.index_remove, "");
    hb_persona_cfg on;
    parse_cfg(&f->c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\","
              "\"enabled\":true}", &on);
    assert_false(hb_config_joins_full_room(&f->s, &on, 64, 64)); /* it still serves it */
    clear_config(f);
    assert_string_equal(f->out.index_remove, "general");
    assert_true(hb_config_joins_full_room(&f->s, &on, 64, 64));
    assert_false(hb_config_joins_full_room(&f->s, &on, 63, 64));
    hb_persona_cfg_clear(&on);
}

/* Cleared while the model answers: the run guard goes with the timer, the
 * worker's commit of the answer finds no run waiting (its job skipped) and
 * nothing is sent. A config after the clear is a new heartbeat: in the
 * room's index again, its first run an active interval later, not held
 * back by the old unanswered message, numbered after the old runs. */
static void a_clear_during_a_run_and_a_later_config(void **st)
{
    fx *f = *st;
    lived_in(f);
    user_says(f, "thanks, blocked", f->t0 + 10 * MIN_MS); /* answered: runs again */
    expect_run(f, f->t0 + 13 * MIN_MS);
    char run[sizeof f->s.running];
    snprintf(run, sizeof run, "%s", f->s.running);
    clear_config(f);
    /* the run stays marked, its guard armed, until its answer */
    assert_int_equal(f->out.timer, HB_TIMER_KEEP);
    assert_string_equal(f->s.running, run);
    assert_false(hb_run_wanted(&f->s, run));
    const char *text = "{\"message\":\"Stand-up in 5\",\"priority\":\"urgent\","
                       "\"category\":\"reminder\"}";
    hb_run_result r = {run, true, text, strlen(text), NULL, 80};
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_result(&f->s, &f->c, &r, f->t0 + 14 * MIN_MS, &f->out), HB_OK);
    assert_true(f->out.changed); /* the mark goes, nothing is sent or reported */
    assert_int_equal(f->out.n_msg, 0);
    assert_int_equal(f->out.timer, HB_TIMER_CANCEL);
    assert_string_equal(f->s.running, "");

    int64_t t = f->t0 + 60 * MIN_MS;
    reconfigure(f, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\","
                "\"enabled\":true}", t);
    assert_string_equal(f->out.index_add, "general");
    assert_int_equal(f->out.timer, t + f->c.active_interval_ms);
    assert_int_equal(f->s.last_activity, t);
    expect_run(f, t + f->c.active_interval_ms);
    assert_string_equal(f->s.running, "hb:helper:4");
    /* the old run's answer, late, still changes nothing */
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_result(&f->s, &f->c, &r, t + 3 * MIN_MS, &f->out), HB_OK);
    assert_false(f->out.changed);
}

/* Cleared and configured again while the model still thinks: no second
 * run beside the one in flight (runs never overlap). Its answer ends it as
 * `reconfigured`, sending nothing, and schedules the next run; an answer
 * that never comes is given up by the guard, unreported when the config is
 * still cleared. */
static void a_config_after_a_clear_waits_for_the_run_in_flight(void **st)
{
    fx *f = *st;
    lived_in(f);
    user_says(f, "thanks, blocked", f->t0 + 10 * MIN_MS);
    expect_run(f, f->t0 + 13 * MIN_MS);
    char run[sizeof f->s.running];
    snprintf(run, sizeof run, "%s", f->s.running);
    int64_t started = f->s.run_started;
    clear_config(f);
    int64_t t = f->t0 + 13 * MIN_MS + 1000;
    reconfigure(f, CFG_ON, t);
    assert_int_equal(f->out.timer, HB_TIMER_KEEP); /* no run scheduled beside it */
    assert_null(f->out.job);
    /* the guard's timer before its time starts nothing either */
    assert_null(fire(&f->s, &f->c, t + 1000, &f->out));
    assert_null(f->out.job);
    assert_int_equal(f->out.timer, started + f->c.run_guard_ms);
    json_object *ev = answer(&f->s, &f->c, SPEAK, t + 2000, &f->out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "outcome"), "skipped");
    assert_string_equal(jstr(ev, "reason"), "reconfigured");
    json_object_put(ev);
    assert_int_equal(f->out.n_msg, 1); /* the run event only: nothing sent */
    assert_true(f->out.timer > t + 2000 && f->out.timer != HB_TIMER_KEEP);
    assert_string_equal(f->s.running, "");

    /* cleared during another run whose answer never comes: the guard ends
     * it without a report, and nothing runs until a config comes */
    expect_run(f, f->out.timer);
    clear_config(f);
    assert_null(fire(&f->s, &f->c, f->s.run_started + f->c.run_guard_ms, &f->out));
    assert_int_equal(f->out.n_msg, 0);
    assert_int_equal(f->out.timer, HB_TIMER_CANCEL);
    assert_string_equal(f->s.running, "");
}

/* persona/{p}/state cleared is {"rooms":{}}: no level, as if no state had
 * come, so an asleep persona runs again; cleared twice, nothing changes. */
static void a_cleared_persona_state_forgets_the_levels(void **st)
{
    fx *f = *st;
    hb_room_level lv[2] = {{"general", HB_LEVEL_SLEEP}, {"lab", HB_LEVEL_ACTIVE}};
    assert_int_equal(hb_on_levels(&f->s, lv, 2, f->t0, &f->out), HB_OK);
    expect_skip(f, f->t0 + 2 * MIN_MS, "persona-asleep");
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_levels(&f->s, NULL, 0, f->t0 + 3 * MIN_MS, &f->out), HB_OK);
    assert_true(f->out.changed);
    assert_null(f->out.limit);
    assert_int_equal(f->s.n_levels, 0);
    expect_run(f, f->t0 + 4 * MIN_MS);
    a_clear_changes_nothing(&f->s, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(live_exchange),
        cmocka_unit_test(the_user_speaking_while_the_model_thinks_holds_the_message),
        cmocka_unit_test(others_talking_is_no_live_exchange_and_no_activity),
        cmocka_unit_test(asleep_or_mention_only_but_not_human_only),
        cmocka_unit_test(unanswered_proactive_message),
        cmocka_unit_test(an_answer_clears_unanswered),
        cmocka_unit_test(a_shrunk_unanswered_window_reads_in_seconds),
        cmocka_unit_test(empty_checklist_and_no_llm),
        cmocka_unit_test(the_order_of_the_rules),
        cmocka_unit_test(switched_off_no_runs),
        cmocka_unit_test(switched_off_during_a_run),
        cmocka_unit_test(configured_anew_during_a_run),
        cmocka_unit_test(one_run_at_a_time_and_a_lost_run_is_given_up),
        cmocka_unit_test(a_late_guard_waits_once_more_for_the_answer),
        cmocka_unit_test(a_repeated_answer_sends_once),
        cmocka_unit_test(errors_of_the_model_call),
        cmocka_unit_test(config_again_changes_nothing_and_a_new_room_moves_the_index),
        cmocka_unit_test(context_is_bounded_cut_and_token_free),
        cmocka_unit_test(the_record_round_trips),
        cmocka_unit_test(a_run_is_wanted_only_while_its_heartbeat_is_on),
        cmocka_unit_test(a_checklist_file_is_read_again_before_each_run),
        CLEAR_TEST(a_cleared_config_deletes_the_heartbeat),
        CLEAR_TEST(switched_off_keeps_the_room_a_clear_frees_it),
        CLEAR_TEST(a_clear_during_a_run_and_a_later_config),
        CLEAR_TEST(a_config_after_a_clear_waits_for_the_run_in_flight),
        CLEAR_TEST(a_cleared_persona_state_forgets_the_levels),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
