/* test_session.c - the session lifecycle and the SENSE -> PLAN -> ACT
 * loop on an injected clock with a recording sink: the specified scenarios
 * (full loop in order, ask user then answer reaching the next SENSE, the
 * circuit breaker, no LLM, daily limit, idle timeout (also of a loop that
 * never comes back), loop limit, sleep,
 * research with and without A2A, prompts naming their persona), and the
 * audit's fixes: SENSE of a room-limited session, a session id used once,
 * questions closed at the end, answers after the end, A2A replies that
 * are not ours or not completed; an answer given during PLAN, a prefix with
 * nothing after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "fake_sink.h"

#define T0 1763800000000LL

typedef struct fx {
    council_config c;
    council_user *u;
    fake_sink f;
    council_sink sink;
    int dropped; /* the last outcome's questions_dropped, before the reload */
} fx;

static int setup(void **st)
{
    fx *x = calloc(1, sizeof *x);
    council_config_init(&x->c);
    x->c.llm_enabled = true;
    x->u = calloc(1, sizeof *x->u);
    council_user_init(x->u, "joel");
    x->sink = fake_sink_of(&x->f);
    *st = x;
    return 0;
}

static int teardown(void **st)
{
    fx *x = *st;
    fake_reset(&x->f);
    free(x->u);
    free(x);
    return 0;
}

/* Round-trips the record through JSON, as the shell does between inputs. */
static void reload(fx *x)
{
    char *json = council_user_dump(x->u);
    assert_non_null(json);
    char why[128];
    assert_int_equal(council_user_load(json, x->u, why, sizeof why), 0);
    free(json);
}

static council_rc control(fx *x, council_ctl a, const char *session, const char *room,
                          const char *id, int64_t now)
{
    council_control in = {a, session, room, false};
    char why[256] = "";
    council_rc rc = council_on_control(x->u, &x->c, &in, id, now, &x->sink, why, sizeof why);
    reload(x);
    return rc;
}

/* The outcome of the session's current job with Sol saying `sol`. */
static council_rc outcome(fx *x, const char *sol, const council_a2a_reply *a2a, int64_t now)
{
    council_outcome o = {0};
    char job[COUNCIL_JOB_MAX + 1];
    snprintf(job, sizeof job, "%s", x->u->s.job);
    o.job = job;
    o.session = x->u->s.id;
    o.loop = x->u->s.loop;
    o.answers[COUNCIL_POLARIS] = "Long term: keep the user's goals in view.";
    o.answers[COUNCIL_AURORA] = "The user seems calm.";
    o.answers[COUNCIL_VEGA] = "Evidence is thin.";
    o.answers[COUNCIL_SOL] = sol;
    o.errors[COUNCIL_SOL] = sol ? NULL : "timeout";
    o.a2a_tried = a2a != NULL;
    o.a2a = a2a;
    council_rc rc = council_on_outcome(x->u, &x->c, &o, now, &x->sink);
    x->dropped = x->u->questions_dropped;
    reload(x);
    return rc;
}

static void full_loop_in_order(void **st)
{
    fx *x = *st;
    council_on_message(x->u, &x->c, "general", "I need to finish the report by Friday", T0 - 5000);
    assert_int_equal(control(x, COUNCIL_CTL_START, "s1", "general", "c1", T0), COUNCIL_OK);
    assert_int_equal(x->u->s.status, COUNCIL_ACTIVE);
    assert_int_equal(x->u->s.loop, 1);
    assert_int_equal(x->u->s.phase, COUNCIL_PHASE_PLAN);
    assert_int_equal(x->f.n_jobs, 1);
    /* the four prompts name their persona and carry the user's message */
    council_job j;
    char why[128];
    assert_int_equal(council_job_parse(x->f.jobs[0], strlen(x->f.jobs[0]), &j, why, sizeof why), 0);
    assert_string_equal(j.session, "s1");
    assert_int_equal(j.loop, 1);
    assert_non_null(strstr(j.prompts[COUNCIL_POLARIS], "You are Polaris, the Navigator"));
    assert_non_null(strstr(j.prompts[COUNCIL_AURORA], "You are Aurora, the Empath"));
    assert_non_null(strstr(j.prompts[COUNCIL_VEGA], "You are Vega, the Analyst"));
    assert_non_null(strstr(j.prompts[COUNCIL_SOL], "You are Sol, the Executor"));
    assert_non_null(strstr(j.prompts[COUNCIL_SOL], "What specific action should we take now?"));
    assert_non_null(strstr(j.prompts[COUNCIL_AURORA], "How is the user feeling"));
    for (int p = 0; p < COUNCIL_PERSONAS; p++)
        assert_non_null(strstr(j.prompts[p], "finish the report by Friday"));
    council_job_clear(&j);

    assert_int_equal(outcome(x, "note: the report is due Friday", NULL, T0 + 1000), COUNCIL_OK);
    char seq[512];
    fake_sequence(&x->f, seq, sizeof seq);
    assert_string_equal(seq, "phase:sense,phase:plan,deliberation,phase:act,action");
    int d = fake_event(&x->f, "deliberation", 0);
    assert_non_null(strstr(x->f.payloads[d], "\"polaris\":\"Long term"));
    assert_non_null(strstr(x->f.payloads[d], "\"decision\":\"note: the report is due Friday\""));
    assert_non_null(strstr(x->f.payloads[d], "\"phase\":\"plan\""));
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "\"action\":\"note\""));
    assert_int_equal(x->u->s.n_notes, 1);
    assert_int_equal(x->u->s.phase, COUNCIL_PHASE_IDLE);
    assert_int_equal(x->u->s.next_loop_at, T0 + 1000 + x->c.loop_ms);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_LOOP), T0 + 1000 + x->c.loop_ms);
    /* the retained state says active, loop 1 */
    bool seen = false;
    for (int i = 0; i < x->f.n; i++)
        if (strcmp(x->f.topics[i], "council/s1/state") == 0) {
            assert_true(x->f.retain[i]);
            seen = strstr(x->f.payloads[i], "\"status\":\"active\"") &&
                   strstr(x->f.payloads[i], "\"loop_count\":1");
        }
    assert_true(seen);

    /* the loop timer starts loop 2 */
    fake_reset(&x->f);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 31000, T0 + 31000, &x->sink);
    assert_int_equal(x->u->s.loop, 2);
    assert_int_equal(x->f.n_jobs, 1);
    assert_non_null(strstr(x->f.jobs[0], "the report is due Friday")); /* the note in SENSE */
}

static void ask_then_answer_reaches_next_sense(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "Ask User: [p8] Shall I block time for the report?", NULL, T0 + 1000);
    int q = fake_event(&x->f, "question", 0);
    assert_true(q >= 0);
    assert_non_null(strstr(x->f.payloads[q], "\"priority\":8"));
    assert_non_null(strstr(x->f.payloads[q], "\"question\":\"Shall I block time for the report?\""));
    assert_non_null(strstr(x->f.payloads[q], "\"question_id\":\"s1.L1.q\""));
    char expires[64];
    snprintf(expires, sizeof expires, "\"expires_at\":%lld",
             (long long)(T0 + 1000 + x->c.question_ttl_ms));
    assert_non_null(strstr(x->f.payloads[q], expires));
    fake_reset(&x->f);

    char why[256] = "";
    assert_int_equal(council_on_answer(x->u, &x->c, "s1", "s1.L1.q", "Yes, 9 to 11 please", "a1",
                                       T0 + 2000, &x->sink, why, sizeof why),
                     COUNCIL_OK);
    /* the answer starts the next loop at once, and SENSE quotes it */
    assert_int_equal(x->u->s.loop, 2);
    assert_int_equal(x->f.n_jobs, 1);
    assert_non_null(strstr(x->f.jobs[0], "A: \\\"Yes, 9 to 11 please\\\""));
    int s = fake_event(&x->f, "phase", 0);
    assert_non_null(strstr(x->f.payloads[s], "\"answered_questions\":1"));
    /* a second answer to the same question is refused */
    assert_int_equal(council_on_answer(x->u, &x->c, "s1", "s1.L1.q", "again", "a2", T0 + 3000,
                                       &x->sink, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_non_null(strstr(why, "already answered"));
    assert_int_equal(council_on_answer(x->u, &x->c, "s1", "nope", "x", "a3", T0 + 3000, &x->sink,
                                       why, sizeof why),
                     COUNCIL_REFUSED);
}

static void question_expires(void **st)
{
    fx *x = *st;
    x->c.question_ttl_ms = 5000;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "ask user: still there?", NULL, T0 + 1000);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_QEXP), T0 + 6000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_QEXP, T0 + 6000, T0 + 6000, &x->sink);
    assert_int_equal(x->u->s.questions.v[0].status, COUNCIL_Q_EXPIRED);
    char why[256];
    assert_int_equal(council_on_answer(x->u, &x->c, "s1", "s1.L1.q", "late", "a1", T0 + 7000,
                                       &x->sink, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_non_null(strstr(why, "expired"));
}

/* Session s1 runs three loops, Sol proposing sol[0], sol[1], sol[2] (30 s
 * apart, the default interval); the sink holds only the third loop's
 * outputs. */
static void three_loops(fx *x, const char *const sol[3])
{
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, sol[0], NULL, T0 + 1000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 31000, T0 + 31000, &x->sink);
    outcome(x, sol[1], NULL, T0 + 32000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 62000, T0 + 62000, &x->sink);
    fake_reset(&x->f);
    outcome(x, sol[2], NULL, T0 + 63000);
}

static void three_reflects_pause(void **st)
{
    fx *x = *st;
    /* an unknown prefix is a reflect */
    three_loops(x, (const char *const[]){"reflect: hmm", "reflect: hmm again", "wander: somewhere"});
    assert_int_equal(x->u->s.status, COUNCIL_PAUSED);
    int p = fake_event(&x->f, "session_paused", 0);
    assert_true(p >= 0);
    assert_non_null(strstr(x->f.payloads[p], "spinning"));
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "\"warning\":\"unknown action prefix 'wander:'"));
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_LOOP), COUNCIL_TIMER_CANCEL);
    /* resume: the breaker starts over, a loop at once */
    fake_reset(&x->f);
    assert_int_equal(control(x, COUNCIL_CTL_RESUME, NULL, NULL, "c2", T0 + 70000), COUNCIL_OK);
    assert_int_equal(x->u->s.status, COUNCIL_ACTIVE);
    assert_int_equal(x->u->s.breaker.n, 0);
    assert_int_equal(x->f.n_jobs, 1);
}

/* The breaker trips on a session's last loop: the loop limit wins, the
 * session ends (a pause there could only be resumed into its end). */
static void the_last_loop_ends_the_session_even_when_spinning(void **st)
{
    fx *x = *st;
    x->c.max_loops = 3;
    three_loops(x, (const char *const[]){"note: same", "note: same", "note: same"});
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_string_equal(x->u->s.reason, "loop limit reached (VIGIL_COUNCIL_MAX_LOOPS)");
    assert_true(fake_event(&x->f, "session_ended", 0) >= 0);
    assert_int_equal(fake_event(&x->f, "session_paused", 0), -1);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_IDLE), COUNCIL_TIMER_CANCEL);
}

static void pause_drops_the_loop_in_flight(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    char job[COUNCIL_JOB_MAX + 1];
    snprintf(job, sizeof job, "%s", x->u->s.job);
    assert_int_equal(control(x, COUNCIL_CTL_PAUSE, "s1", NULL, "c2", T0 + 10), COUNCIL_OK);
    assert_int_equal(control(x, COUNCIL_CTL_PAUSE, NULL, NULL, "c3", T0 + 20), COUNCIL_REFUSED);
    /* starting the running session again is refused, not answered with an end */
    fake_reset(&x->f);
    assert_int_equal(control(x, COUNCIL_CTL_START, "s1", NULL, "c3b", T0 + 25), COUNCIL_REFUSED);
    assert_int_equal(x->f.n, 0);
    /* another session id while one is live: a refusal event on that id */
    assert_int_equal(control(x, COUNCIL_CTL_START, "s9", NULL, "c3c", T0 + 26), COUNCIL_OK);
    int r = fake_event(&x->f, "session_ended", 0);
    assert_non_null(strstr(x->f.topics[r], "council/s9/event"));
    assert_non_null(strstr(x->f.payloads[r], "session s1 is already paused"));
    assert_string_equal(x->u->s.id, "s1");
    fake_reset(&x->f);
    council_outcome o = {.job = job, .session = "s1", .loop = 1};
    o.answers[COUNCIL_SOL] = "note: x";
    assert_int_equal(council_on_outcome(x->u, &x->c, &o, T0 + 30, &x->sink), COUNCIL_OK);
    assert_int_equal(x->f.n, 0); /* nothing published */
    assert_int_equal(x->u->s.actions, 0);
    assert_int_equal(control(x, COUNCIL_CTL_END, NULL, NULL, "c4", T0 + 40), COUNCIL_OK);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_true(fake_event(&x->f, "session_ended", 0) >= 0);
    assert_int_equal(control(x, COUNCIL_CTL_RESUME, NULL, NULL, "c5", T0 + 50), COUNCIL_REFUSED);
}

static void no_llm_refuses_start(void **st)
{
    fx *x = *st;
    x->c.llm_enabled = false;
    assert_int_equal(control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0), COUNCIL_OK);
    assert_false(x->u->has_session);
    int e = fake_event(&x->f, "session_ended", 0);
    assert_true(e >= 0);
    assert_non_null(strstr(x->f.payloads[e], "no LLM configured"));
    assert_non_null(strstr(x->f.payloads[e], "\"started\":false"));
    assert_int_equal(x->f.n_jobs, 0);
}

static void daily_limit_and_auto_start(void **st)
{
    fx *x = *st;
    x->c.max_daily = 2;
    x->c.interval_ms = 60000;
    control(x, COUNCIL_CTL_START, "s1", "general", "c1", T0);
    control(x, COUNCIL_CTL_END, NULL, NULL, "c2", T0 + 10);
    /* automatic start one interval after the last start, in the last room */
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_AUTO), T0 + 60000);
    fake_reset(&x->f);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_AUTO, T0 + 60000, T0 + 60000, &x->sink);
    reload(x);
    assert_int_equal(x->u->s.status, COUNCIL_ACTIVE);
    assert_true(x->u->s.automatic);
    assert_string_equal(x->u->s.room, "general");
    assert_int_equal(x->u->day_count, 2);
    control(x, COUNCIL_CTL_END, NULL, NULL, "c3", T0 + 60010);
    fake_reset(&x->f);
    /* a third start the same day is refused with the reason */
    control(x, COUNCIL_CTL_START, "s3", NULL, "c4", T0 + 60020);
    int e = fake_event(&x->f, "session_ended", 0);
    assert_non_null(strstr(x->f.payloads[e], "daily limit"));
    /* and the next auto start does nothing but re-arm: the ended
     * session's retained state is not sent again with a new ts */
    fake_reset(&x->f);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_AUTO, T0 + 120000, T0 + 120000, &x->sink);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_int_equal(x->f.n, 0);
    assert_int_equal(x->f.records, 0);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_AUTO), T0 + 180000);
    /* automatic starts off: no automatic timer, starts by control still work */
    x->c.auto_start = false;
    fake_reset(&x->f);
    control(x, COUNCIL_CTL_START, "s4", NULL, "c5", T0 + COUNCIL_DAY_MS);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_AUTO), COUNCIL_TIMER_CANCEL);
    assert_int_equal(x->u->day_count, 1); /* a new day */
}

static void idle_timeout_and_loop_limit(void **st)
{
    fx *x = *st;
    x->c.idle_timeout_ms = 10000;
    x->c.max_loops = 2;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    /* a timer that finds nothing due (the idle timer armed before the
     * pause's progress, a loop timer of a paused session, a question
     * expiry with none pending) changes nothing: nothing is published,
     * no record written, the idle timer is armed at its new due */
    control(x, COUNCIL_CTL_PAUSE, NULL, NULL, "c2", T0 + 100);
    fake_reset(&x->f);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_IDLE, T0 + 10000, T0 + 10000, &x->sink);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 10000, T0 + 10000, &x->sink);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_QEXP, T0 + 10000, T0 + 10000, &x->sink);
    assert_int_equal(x->f.n, 0);
    assert_int_equal(x->f.records, 0);
    assert_int_equal(x->u->s.status, COUNCIL_PAUSED);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_IDLE), T0 + 10100);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_IDLE, T0 + 10100, T0 + 10100, &x->sink);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_non_null(strstr(x->u->s.reason, "idle"));

    x->u->day_count = 0;
    control(x, COUNCIL_CTL_START, "s2", NULL, "c3", T0 + 20000);
    outcome(x, "note: one", NULL, T0 + 21000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 51000, T0 + 51000, &x->sink);
    fake_reset(&x->f);
    outcome(x, "search: two", NULL, T0 + 52000);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_non_null(strstr(x->u->s.reason, "loop limit"));
    /* search: went out as a request */
    bool req = false;
    for (int i = 0; i < x->f.n; i++)
        req |= strcmp(x->f.topics[i], "council/s2/request") == 0 &&
               strstr(x->f.payloads[i], "\"kind\":\"search\"") &&
               strstr(x->f.payloads[i], "\"query\":\"two\"");
    assert_true(req);
}

/* A loop whose job never comes back (trimmed by the stream's cap before a
 * worker took it) leaves the session in PLAN: the idle timer still ends it,
 * naming the loop and the cap, and a late outcome changes nothing. */
static void a_loop_that_never_comes_back_ends_at_the_idle_timeout(void **st)
{
    fx *x = *st;
    x->c.idle_timeout_ms = 10000;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    assert_int_equal(x->u->s.phase, COUNCIL_PHASE_PLAN);
    char job[COUNCIL_JOB_MAX + 1];
    snprintf(job, sizeof job, "%s", x->u->s.job);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_IDLE), T0 + 10000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_IDLE, T0 + 10000, T0 + 10000, &x->sink);
    reload(x);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_non_null(strstr(x->u->s.reason, "idle timeout"));
    assert_non_null(strstr(x->u->s.reason, "loop 1 never came back"));
    assert_non_null(strstr(x->u->s.reason, "VIGIL_COUNCIL_JOBS_MAXLEN"));
    int e = fake_event(&x->f, "session_ended", 0);
    assert_non_null(strstr(x->f.payloads[e], "loop 1 never came back"));
    fake_reset(&x->f);
    council_outcome o = {.job = job, .session = "s1", .loop = 1};
    o.answers[COUNCIL_SOL] = "note: late";
    assert_int_equal(council_on_outcome(x->u, &x->c, &o, T0 + 20000, &x->sink), COUNCIL_OK);
    assert_int_equal(x->f.n, 0);
    assert_int_equal(x->u->s.actions, 0);
}

/* A sleep: shorter than the loop interval (0, 0s, 10ms) waits the loop
 * interval, as any other action does, and its result says so: it never
 * starts the next loop at once. Exactly the interval needs no note. A
 * note: between the sleeps keeps the breaker out of it. */
static void a_short_sleep_waits_the_loop_interval(void **st)
{
    fx *x = *st;
    static const struct {
        const char *sleep;
        int64_t asked;
    } SHORT[] = {{"sleep: 0", 0}, {"sleep: 0s", 0}, {"sleep: 10ms", 10}, {"sleep: 29999ms", 29999}};
    assert_int_equal(x->c.loop_ms, 30000);
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    int64_t t = T0;
    int a = 0;
    for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0] + 1; i++) {
        bool exact = i == sizeof SHORT / sizeof SHORT[0];
        outcome(x, exact ? "sleep: 30s" : SHORT[i].sleep, NULL, t + 1000);
        int k = fake_event(&x->f, "action", a++);
        assert_true(k >= 0);
        char want[128];
        if (exact)
            snprintf(want, sizeof want, "\"result\":\"sleeping 30000 ms\"");
        else
            snprintf(want, sizeof want,
                     "\"result\":\"sleeping 30000 ms (%lld ms asked: at least the loop "
                     "interval)\"",
                     (long long)SHORT[i].asked);
        if (!strstr(x->f.payloads[k], want))
            fail_msg("%zu: missing %s in %s", i, want, x->f.payloads[k]);
        assert_non_null(strstr(x->f.payloads[k], "\"until\":"));
        assert_int_equal(x->u->s.next_loop_at, t + 1000 + x->c.loop_ms);
        t += 1000 + x->c.loop_ms;
        council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, t, t, &x->sink);
        reload(x);
        outcome(x, "note: between sleeps", NULL, t + 1000);
        a++;
        t += 1000 + x->c.loop_ms;
        council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, t, t, &x->sink);
        reload(x);
    }
    assert_int_equal(x->u->s.status, COUNCIL_ACTIVE);
}

static void sleep_sets_the_next_loop(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "sleep: 10m", NULL, T0 + 1000);
    assert_int_equal(x->u->s.next_loop_at, T0 + 1000 + 600000);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_LOOP), T0 + 601000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 601000, T0 + 601000, &x->sink);
    /* a sleep: without a duration it reads is refused as an unknown prefix
     * is: a reflect (for the breaker too) with a warning, the loop interval */
    outcome(x, "sleep: whenever", NULL, T0 + 602000);
    int a = fake_event(&x->f, "action", 1);
    assert_non_null(strstr(x->f.payloads[a], "\"action\":\"reflect\""));
    assert_non_null(strstr(x->f.payloads[a], "'sleep:' with no duration understood in "
                                             "'whenever'"));
    assert_null(strstr(x->f.payloads[a], "\"until\""));
    assert_int_equal(x->u->s.next_loop_at, T0 + 602000 + x->c.loop_ms);
    assert_int_equal(x->u->s.breaker.last[x->u->s.breaker.n - 1], COUNCIL_ACT_REFLECT);

    /* 2h30m is two and a half hours (it was read as 2 h), past the idle
     * timeout: the wait is the idle timeout and the result says so */
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 632000, T0 + 632000, &x->sink);
    outcome(x, "sleep: 2h30m", NULL, T0 + 633000);
    a = fake_event(&x->f, "action", 2);
    assert_non_null(strstr(x->f.payloads[a], "\"result\":\"sleeping 1800000 ms (9000000 ms "
                                             "asked: at most the idle timeout)\""));
    assert_int_equal(x->u->s.next_loop_at, T0 + 633000 + x->c.max_sleep_ms);

    /* 1e3 was read as 1000 minutes */
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 633000 + x->c.max_sleep_ms,
                     T0 + 633000 + x->c.max_sleep_ms, &x->sink);
    outcome(x, "sleep: 1e3", NULL, T0 + 634000 + x->c.max_sleep_ms);
    a = fake_event(&x->f, "action", 3);
    assert_non_null(strstr(x->f.payloads[a], "\"action\":\"reflect\""));
    assert_non_null(strstr(x->f.payloads[a], "no duration understood in '1e3'"));
}

/* A loop interval longer than the idle timeout (VIGIL_COUNCIL_LOOP_MS 60
 * min, idle 30 min): a sleep past both waits the interval, and the result
 * names that bound, not the idle timeout it is longer than; one between
 * them waits the interval too, as the least wait. */
static void a_sleep_past_a_long_loop_interval_names_the_interval(void **st)
{
    fx *x = *st;
    x->c.loop_ms = 3600000;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "sleep: 2h", NULL, T0 + 1000);
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "\"result\":\"sleeping 3600000 ms (7200000 ms asked: "
                                             "at most the loop interval, longer than the idle "
                                             "timeout)\""));
    assert_int_equal(x->u->s.next_loop_at, T0 + 1000 + 3600000);
    int64_t t = T0 + 1000 + 3600000;
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, t, t, &x->sink);
    outcome(x, "sleep: 45m", NULL, t + 1000);
    a = fake_event(&x->f, "action", 1);
    assert_non_null(strstr(x->f.payloads[a], "\"result\":\"sleeping 3600000 ms (2700000 ms asked: "
                                             "at least the loop interval)\""));
}

static void research_with_and_without_a2a(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "research: vector databases", NULL, T0 + 1000);
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "not delegated"));
    assert_non_null(strstr(x->f.payloads[a], "\"delegated\":false"));

    x->c.a2a_enabled = true;
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 31000, T0 + 31000, &x->sink);
    council_a2a_reply r = {.ok = true};
    snprintf(r.task_id, sizeof r.task_id, "t-1");
    snprintf(r.state, sizeof r.state, "completed");
    snprintf(r.text, sizeof r.text, "Three options: pgvector, qdrant, milvus.");
    outcome(x, "research: vector databases", &r, T0 + 32000);
    a = fake_event(&x->f, "action", 1);
    assert_non_null(strstr(x->f.payloads[a], "\"result\":\"Three options"));
    assert_non_null(strstr(x->f.payloads[a], "\"a2a_task_id\":\"t-1\""));
    assert_int_equal(x->u->s.n_notes, 1); /* the artifact is kept for SENSE */

    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 62000, T0 + 62000, &x->sink);
    council_a2a_reply bad = {.ok = false};
    snprintf(bad.error, sizeof bad.error, "HTTP 500");
    outcome(x, "research: again", &bad, T0 + 63000);
    a = fake_event(&x->f, "action", 2);
    assert_non_null(strstr(x->f.payloads[a], "A2A delegation failed: HTTP 500"));
}

static void sol_failing_is_reflect_with_warning(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, NULL, NULL, T0 + 1000);
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "\"action\":\"reflect\""));
    assert_non_null(strstr(x->f.payloads[a], "Sol did not answer (timeout)"));
    int d = fake_event(&x->f, "deliberation", 0);
    assert_non_null(strstr(x->f.payloads[d], "\"sol\":\"(no answer: timeout)\""));
}

static void redelivered_start_is_the_same_session(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, NULL, NULL, "c1", T0);
    char sid[COUNCIL_ID_MAX + 1];
    snprintf(sid, sizeof sid, "%s", x->u->s.id);
    assert_int_equal(strncmp(sid, "s-", 2), 0);
    council_user *copy = calloc(1, sizeof *copy);
    council_user_init(copy, "joel");
    council_control in = {COUNCIL_CTL_START, NULL, NULL, false};
    char why[64];
    fake_sink f2 = {0};
    council_sink s2 = fake_sink_of(&f2);
    council_on_control(copy, &x->c, &in, "c1", T0, &s2, why, sizeof why);
    assert_string_equal(copy->s.id, sid);
    /* event ids are deterministic too */
    assert_string_equal(f2.payloads[0], x->f.payloads[0]);
    fake_reset(&f2);
    free(copy);
}

/* A control id is unique only within its user's topic: another user's
 * start of the same id is another session, with other event ids. */
static void two_users_one_start_id_are_two_sessions(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, NULL, NULL, "c1", T0);
    council_user *other = calloc(1, sizeof *other);
    council_user_init(other, "arya");
    council_control in = {COUNCIL_CTL_START, NULL, NULL, false};
    char why[64], sid[COUNCIL_ID_MAX + 1];
    fake_sink f2 = {0};
    council_sink s2 = fake_sink_of(&f2);
    council_on_control(other, &x->c, &in, "c1", T0, &s2, why, sizeof why);
    assert_int_equal(strncmp(other->s.id, "s-", 2), 0);
    assert_string_not_equal(other->s.id, x->u->s.id);
    council_start_session_id(&in, "arya", "c1", sid, sizeof sid);
    assert_string_equal(sid, other->s.id); /* what the shell looks up */
    json_object *a = json_tokener_parse(x->f.payloads[0]), *b = json_tokener_parse(f2.payloads[0]);
    json_object *ia, *ib;
    assert_true(json_object_object_get_ex(a, "id", &ia));
    assert_true(json_object_object_get_ex(b, "id", &ib));
    assert_string_equal(json_object_get_string(ia), "c1:joel:0");
    assert_string_equal(json_object_get_string(ib), "c1:arya:0");
    json_object_put(a);
    json_object_put(b);
    fake_reset(&f2);
    free(other);
}

static void messages_are_bounded(void **st)
{
    fx *x = *st;
    for (int i = 0; i < COUNCIL_MSGS_MAX + 5; i++) {
        char t[32];
        snprintf(t, sizeof t, "message %d", i);
        council_on_message(x->u, &x->c, i % 2 ? "a" : "b", t, T0 + i);
    }
    assert_int_equal(x->u->n_msgs, COUNCIL_MSGS_MAX);
    assert_string_equal(x->u->msgs[COUNCIL_MSGS_MAX - 1].text, "message 24");
    char *ctx = council_sense_context(x->u, &x->c, T0 + 100);
    assert_non_null(strstr(ctx, "message 24"));
    assert_null(strstr(ctx, "message 4\""));
    free(ctx);
}

/* SENSE in a room-limited session: the last N messages of that room, not
 * the last N of all rooms filtered afterwards; the sense event counts the
 * messages the prompts carry. */
static void sense_shows_the_last_messages_of_the_sessions_room(void **st)
{
    fx *x = *st;
    x->c.context_messages = 3;
    const char *rooms[] = {"general", "general", "general", "other", "other", "other"};
    for (int i = 0; i < 6; i++) {
        char t[32];
        snprintf(t, sizeof t, "%s message %d", rooms[i], i);
        council_on_message(x->u, &x->c, rooms[i], t, T0 - 6000 + i * 1000);
    }
    assert_int_equal(control(x, COUNCIL_CTL_START, "s1", "general", "c1", T0), COUNCIL_OK);
    int s = fake_event(&x->f, "phase", 0);
    assert_non_null(strstr(x->f.payloads[s], "\"phase\":\"sense\""));
    assert_non_null(strstr(x->f.payloads[s], "\"messages\":3"));
    council_job j;
    char why[128];
    assert_int_equal(council_job_parse(x->f.jobs[0], strlen(x->f.jobs[0]), &j, why, sizeof why), 0);
    for (int p = 0; p < COUNCIL_PERSONAS; p++) {
        for (int i = 0; i < 3; i++) {
            char t[32];
            snprintf(t, sizeof t, "general message %d", i);
            assert_non_null(strstr(j.prompts[p], t));
        }
        assert_null(strstr(j.prompts[p], "other message"));
        assert_null(strstr(j.prompts[p], "recent messages (oldest first):\n- (none)"));
    }
    council_job_clear(&j);
    /* the order is oldest first, and the count never exceeds N */
    int idx[COUNCIL_MSGS_MAX];
    council_on_message(x->u, &x->c, "general", "general message 6", T0 + 1);
    assert_int_equal(council_sense_messages(x->u, &x->c, idx, COUNCIL_MSGS_MAX), 3);
    assert_string_equal(x->u->msgs[idx[0]].text, "general message 1");
    assert_string_equal(x->u->msgs[idx[2]].text, "general message 6");
    /* a session without a room: the last N of every room */
    x->u->s.room[0] = '\0';
    assert_int_equal(council_sense_messages(x->u, &x->c, idx, COUNCIL_MSGS_MAX), 3);
    assert_string_equal(x->u->msgs[idx[0]].text, "other message 4");
    assert_string_equal(x->u->msgs[idx[2]].text, "general message 6");
    /* fewer in the room than N: all of them */
    snprintf(x->u->s.room, sizeof x->u->s.room, "other");
    x->c.context_messages = 10;
    assert_int_equal(council_sense_messages(x->u, &x->c, idx, COUNCIL_MSGS_MAX), 3);
    snprintf(x->u->s.room, sizeof x->u->s.room, "nowhere");
    assert_int_equal(council_sense_messages(x->u, &x->c, idx, COUNCIL_MSGS_MAX), 0);
}

/* Starts `session` as the shell would after finding its record (used). */
static council_rc start_known(fx *x, const char *session, bool used, const char *id, int64_t now,
                              char *why, size_t whylen)
{
    council_control in = {COUNCIL_CTL_START, session, NULL, used};
    council_rc rc = council_on_control(x->u, &x->c, &in, id, now, &x->sink, why, whylen);
    reload(x);
    return rc;
}

/* A session id is used once: starting an older, completed id again is
 * refused with no state change: no session, no index entry, no event on
 * the old session's topic (also while another session is live). */
static void a_used_session_id_is_refused(void **st)
{
    fx *x = *st;
    char why[256] = "";
    control(x, COUNCIL_CTL_START, "s-a", NULL, "c1", T0);
    control(x, COUNCIL_CTL_END, NULL, NULL, "c2", T0 + 10);
    control(x, COUNCIL_CTL_START, "s-b", NULL, "c3", T0 + 20);
    control(x, COUNCIL_CTL_END, NULL, NULL, "c4", T0 + 30);
    char *before = council_user_dump(x->u);
    fake_reset(&x->f);
    assert_int_equal(start_known(x, "s-a", true, "c5", T0 + 40, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_non_null(strstr(why, "session id 's-a' was already used"));
    assert_int_equal(x->f.n + x->f.n_jobs + x->f.n_appends + x->f.n_timers + x->f.records, 0);
    char *after = council_user_dump(x->u);
    assert_string_equal(before, after);
    free(after);
    /* the last session's id is known from the user record alone */
    assert_int_equal(start_known(x, "s-b", false, "c6", T0 + 50, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_non_null(strstr(why, "session id 's-b' was already used"));
    /* while another session is live: refused, never a session_ended on s-a */
    control(x, COUNCIL_CTL_START, "s-c", NULL, "c7", T0 + 60);
    assert_int_equal(x->u->s.status, COUNCIL_ACTIVE);
    free(before);
    before = council_user_dump(x->u);
    fake_reset(&x->f);
    assert_int_equal(start_known(x, "s-a", true, "c8", T0 + 70, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_int_equal(x->f.n + x->f.n_jobs + x->f.n_appends + x->f.n_timers + x->f.records, 0);
    after = council_user_dump(x->u);
    assert_string_equal(before, after);
    free(after);
    free(before);
    /* a start naming the live session says so */
    assert_int_equal(start_known(x, "s-c", true, "c9", T0 + 80, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_non_null(strstr(why, "session 's-c' is already active"));
    /* a new id still starts (after the live one ends) */
    control(x, COUNCIL_CTL_END, NULL, NULL, "c10", T0 + 90);
    assert_int_equal(start_known(x, "s-d", false, "c11", T0 + 100, why, sizeof why), COUNCIL_OK);
    assert_string_equal(x->u->s.id, "s-d");
}

/* The pending questions of a session that ends expire with it: the record
 * says so, the expiry timer goes with the session, and an answer is
 * refused. */
static void questions_expire_when_the_session_ends(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "ask user: [p7] still working on the report?", NULL, T0 + 1000);
    assert_int_equal(x->u->s.questions.v[0].status, COUNCIL_Q_PENDING);
    fake_reset(&x->f);
    assert_int_equal(control(x, COUNCIL_CTL_END, NULL, NULL, "c2", T0 + 2000), COUNCIL_OK);
    const council_question *q = &x->u->s.questions.v[0];
    assert_int_equal(q->status, COUNCIL_Q_EXPIRED);
    assert_int_equal(q->expires_at, T0 + 2000);
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_QEXP), COUNCIL_TIMER_CANCEL);
    assert_true(x->f.records > 0);
    json_object *rec = council_session_record(x->u), *qs = NULL;
    assert_true(json_object_object_get_ex(rec, "questions", &qs));
    json_object *q0 = json_object_array_get_idx(qs, 0), *status = NULL;
    assert_true(json_object_object_get_ex(q0, "status", &status));
    assert_string_equal(json_object_get_string(status), "expired");
    json_object_put(rec);
    int idx[COUNCIL_QUESTIONS_MAX];
    assert_int_equal(council_questions_pending(&x->u->s.questions, idx, COUNCIL_QUESTIONS_MAX), 0);
    /* the idle timeout and the loop limit end sessions the same way */
    x->u->day_count = 0;
    x->c.idle_timeout_ms = 10000;
    control(x, COUNCIL_CTL_START, "s2", NULL, "c3", T0 + 3000);
    outcome(x, "ask user: there?", NULL, T0 + 4000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_IDLE, T0 + 4000 + 30000 + 10000,
                     T0 + 44000, &x->sink);
    reload(x);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_int_equal(x->u->s.questions.v[0].status, COUNCIL_Q_EXPIRED);
}

/* An answer to a question of a session that ended is refused (nothing
 * would read it) and changes nothing, even for a question a record kept
 * pending from before questions expired at the end. */
static void an_answer_after_the_end_is_refused(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "ask user: lunch?", NULL, T0 + 1000);
    control(x, COUNCIL_CTL_END, NULL, NULL, "c2", T0 + 2000);
    x->u->s.questions.v[0].status = COUNCIL_Q_PENDING; /* as an older record kept it */
    x->u->s.questions.v[0].expires_at = T0 + 1000 + x->c.question_ttl_ms;
    char *before = council_user_dump(x->u);
    fake_reset(&x->f);
    char why[256] = "";
    assert_int_equal(council_on_answer(x->u, &x->c, "s1", "s1.L1.q", "yes", "a1", T0 + 3000,
                                       &x->sink, why, sizeof why),
                     COUNCIL_REFUSED);
    assert_string_equal(why, "question 's1.L1.q' belongs to session s1, which has ended "
                             "(completed)");
    assert_int_equal(x->f.n + x->f.n_jobs + x->f.n_appends + x->f.n_timers + x->f.records, 0);
    char *after = council_user_dump(x->u);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* The audit's A2A reply (another request's id, a task waiting for input)
 * read against the loop's job id is not a delegation: the failure path,
 * no note, no artifact. */
static void a2a_reply_not_ours_or_unfinished_is_not_delegated(void **st)
{
    fx *x = *st;
    x->c.a2a_enabled = true;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":\"other-id\",\"result\":{\"taskId\":"
                       "\"t9\",\"status\":{\"state\":\"input-required\"}}}";
    council_a2a_reply r;
    assert_int_equal(council_a2a_parse(body, strlen(body), x->u->s.job, &r), -1);
    outcome(x, "research: vector databases", &r, T0 + 1000);
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "\"delegated\":false"));
    assert_non_null(strstr(x->f.payloads[a], "\"result\":\"delegation failed\""));
    assert_non_null(strstr(x->f.payloads[a], "A2A delegation failed: A2A reply id 'other-id'"));
    assert_null(strstr(x->f.payloads[a], "a2a_task_id"));
    assert_int_equal(x->u->s.n_notes, 0);

    /* our id, still waiting for input: the state is said */
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 31000, T0 + 31000, &x->sink);
    char ours[256];
    snprintf(ours, sizeof ours, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"taskId\":"
             "\"t9\",\"status\":{\"state\":\"input-required\"}}}", x->u->s.job);
    assert_int_equal(council_a2a_parse(ours, strlen(ours), x->u->s.job, &r), -1);
    outcome(x, "research: vector databases", &r, T0 + 32000);
    a = fake_event(&x->f, "action", 1);
    assert_non_null(strstr(x->f.payloads[a], "\"delegated\":false"));
    assert_non_null(strstr(x->f.payloads[a], "A2A task state 'input-required': not completed"));
    assert_int_equal(x->u->s.n_notes, 0);

    /* our id, completed, but no text in it: not delegated with an empty
     * result (and an empty note), a failed delegation that says why */
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 62000, T0 + 62000, &x->sink);
    snprintf(ours, sizeof ours, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"taskId\":"
             "\"t9\",\"status\":{\"state\":\"completed\"},\"artifacts\":[]}}", x->u->s.job);
    assert_int_equal(council_a2a_parse(ours, strlen(ours), x->u->s.job, &r), -1);
    outcome(x, "research: vector databases", &r, T0 + 63000);
    a = fake_event(&x->f, "action", 2);
    assert_non_null(strstr(x->f.payloads[a], "\"delegated\":false"));
    assert_non_null(strstr(x->f.payloads[a], "\"result\":\"delegation failed\""));
    assert_non_null(strstr(x->f.payloads[a], "A2A delegation failed: A2A task 't9' completed "
                                             "with no text"));
    assert_int_equal(x->u->s.n_notes, 0);
}

/* Autonomous mode switched off (VIGIL_COUNCIL_ENABLED=0): a start by
 * control is answered started: false with the reason and nothing begins;
 * no automatic start is armed; a session that was live when it was
 * switched off ends at its next loop instead of running it. */
static void disabled_mode_starts_nothing_and_ends_live_sessions(void **st)
{
    fx *x = *st;
    x->c.interval_ms = 60000;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "note: fine", NULL, T0 + 1000);
    x->c.enabled = false;
    fake_reset(&x->f);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 1000 + x->c.loop_ms,
                     T0 + 1000 + x->c.loop_ms, &x->sink);
    reload(x);
    assert_int_equal(x->u->s.status, COUNCIL_COMPLETED);
    assert_int_equal(x->u->s.loop, 1);
    assert_int_equal(x->f.n_jobs, 0);
    int e = fake_event(&x->f, "session_ended", 0);
    assert_true(e >= 0);
    assert_non_null(strstr(x->f.payloads[e], "autonomous mode is disabled"));
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_AUTO), COUNCIL_TIMER_CANCEL);

    fake_reset(&x->f);
    assert_int_equal(control(x, COUNCIL_CTL_START, "s2", NULL, "c2", T0 + 50000), COUNCIL_OK);
    assert_string_equal(x->u->s.id, "s1");
    assert_int_equal(x->u->sessions, 1);
    assert_int_equal(x->f.n_jobs, 0);
    e = fake_event(&x->f, "session_ended", 0);
    assert_true(e >= 0);
    assert_non_null(strstr(x->f.payloads[e], "\"session\":\"s2\""));
    assert_non_null(strstr(x->f.payloads[e], "\"started\":false"));
    assert_non_null(strstr(x->f.payloads[e], "VIGIL_COUNCIL_ENABLED=0"));
    /* an automatic start that was due does not begin either */
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_AUTO, T0 + 60000, T0 + 60000, &x->sink);
    reload(x);
    assert_int_equal(x->u->sessions, 1);
    assert_int_equal(x->f.n_jobs, 0);
}

/* The user's availability (the latest presence report) reaches SENSE and
 * the prompts (Sol is told to weigh it) and is said in the `sense` and
 * `act` events; a report older than the one kept changes nothing. */
static void user_availability_reaches_sense_and_act(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    int e = fake_event(&x->f, "phase", 0);
    assert_non_null(strstr(x->f.payloads[e], "\"user_available\":false"));
    assert_non_null(strstr(x->f.payloads[e], "\"presence\":\"unknown\""));
    assert_non_null(strstr(x->f.jobs[0], "User available: unknown (no presence reported)"));
    /* the job carries it for Sol's ACT prompt (test_prompt.c) */
    assert_non_null(strstr(x->f.jobs[0], "\"user_available\":false"));

    council_on_presence(x->u, "general", COUNCIL_PRESENCE_ACTIVE, T0 + 500, T0 + 500, T0 + 500);
    council_on_presence(x->u, "lab", COUNCIL_PRESENCE_AWAY, T0 + 400, T0 + 400, T0 + 600); /* late */
    reload(x);
    assert_true(council_user_available(x->u, &x->c, T0 + 1000));
    /* an `active` ages: not refreshed for presence_active_ms, not available */
    assert_false(council_user_available(x->u, &x->c, T0 + 500 + x->c.presence_active_ms));
    assert_string_equal(x->u->presence_room, "general");
    fake_reset(&x->f);
    outcome(x, "ask user: Shall I draft the outline?", NULL, T0 + 1000);
    /* act says what Sol weighed: this loop's SENSE (no report yet), not
     * the report that came in while the council deliberated */
    e = fake_event(&x->f, "phase", 0); /* act */
    assert_non_null(strstr(x->f.payloads[e], "\"phase\":\"act\""));
    assert_non_null(strstr(x->f.payloads[e], "\"user_available\":false"));
    assert_non_null(strstr(x->f.payloads[e], "\"presence\":\"unknown\""));

    council_on_presence(x->u, "general", COUNCIL_PRESENCE_AWAY, T0 + 2000, T0 + 2000, T0 + 2000);
    reload(x);
    assert_false(council_user_available(x->u, &x->c, T0 + 2000));
    fake_reset(&x->f);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, T0 + 1000 + x->c.loop_ms,
                     T0 + 1000 + x->c.loop_ms, &x->sink);
    e = fake_event(&x->f, "phase", 0); /* sense of loop 2 */
    assert_non_null(strstr(x->f.payloads[e], "\"user_available\":false"));
    assert_non_null(strstr(x->f.payloads[e], "\"presence\":\"away\""));
    assert_non_null(
        strstr(x->f.jobs[0], "User available: no (away in room general, last active 29s ago)"));
}

/* A presence report dated in the future (a producer's clock ahead, a
 * mistyped date) is taken as heard now: it neither outranks the reports
 * that follow it nor keeps an `active` young for ever. */
static void a_future_dated_presence_is_taken_as_now(void **st)
{
    fx *x = *st;
    const int64_t year = 365 * COUNCIL_DAY_MS;
    council_on_presence(x->u, "general", COUNCIL_PRESENCE_ACTIVE, T0 + year, T0 + year, T0);
    reload(x);
    assert_int_equal(x->u->presence_ts, T0);
    assert_int_equal(x->u->presence_activity, T0);
    assert_true(council_user_available(x->u, &x->c, T0 + 1000));
    assert_false(council_user_available(x->u, &x->c, T0 + x->c.presence_active_ms));
    /* the next report, a second later by the receiver's clock, counts */
    council_on_presence(x->u, "general", COUNCIL_PRESENCE_AWAY, T0 + 1000, T0 + 1000, T0 + 1000);
    reload(x);
    assert_int_equal(x->u->presence, COUNCIL_PRESENCE_AWAY);
    assert_false(council_user_available(x->u, &x->c, T0 + 1000));
    /* an `active` whose last_activity alone is ahead ages from now */
    council_on_presence(x->u, "lab", COUNCIL_PRESENCE_ACTIVE, T0 + 2000, T0 + year, T0 + 2000);
    assert_int_equal(x->u->presence_activity, T0 + 2000);
    assert_false(council_user_available(x->u, &x->c, T0 + 2000 + x->c.presence_active_ms));
}

/* Every test runs on a fresh fx (setup, teardown). */
#define FX_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* An answer that comes while a loop is in PLAN is not in that loop's SENSE:
 * when the loop commits, the next one starts at once (not after the loop
 * interval or Sol's sleep:), so the answer reaches a SENSE as soon as an
 * answer to an idle session does. Once sensed, the interval applies again. */
static void an_answer_during_plan_starts_the_next_loop_when_it_commits(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    outcome(x, "ask user: Shall I block 9 to 11?", NULL, T0 + 1000);
    assert_int_equal(x->u->s.next_loop_at, T0 + 1000 + x->c.loop_ms);
    int64_t t2 = T0 + 1000 + x->c.loop_ms;
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, t2, t2, &x->sink);
    reload(x);
    assert_int_equal(x->u->s.loop, 2);
    assert_int_equal(x->u->s.phase, COUNCIL_PHASE_PLAN);
    char why[256] = "";
    assert_int_equal(council_on_answer(x->u, &x->c, "s1", "s1.L1.q", "Yes", "a1", t2 + 500,
                                       &x->sink, why, sizeof why),
                     COUNCIL_OK);
    reload(x);
    assert_int_equal(x->u->s.loop, 2); /* the loop in flight carries on */
    fake_reset(&x->f);
    outcome(x, "sleep: 10m", NULL, t2 + 2000);
    assert_int_equal(x->u->s.next_loop_at, t2 + 2000);
    int a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "not sleeping 600000 ms: the user answered"));
    char until[64];
    snprintf(until, sizeof until, "\"until\":%lld", (long long)(t2 + 2000));
    assert_non_null(strstr(x->f.payloads[a], until));
    assert_int_equal(fake_timer_due(&x->f, COUNCIL_TIMER_LOOP), t2 + 2000);
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, t2 + 2000, t2 + 2000, &x->sink);
    reload(x);
    assert_int_equal(x->u->s.loop, 3);
    assert_non_null(strstr(x->f.jobs[x->f.n_jobs - 1], "A: \\\"Yes\\\""));
    /* loop 3 sensed the answer: its successor waits the interval */
    outcome(x, "note: 9 to 11 is blocked", NULL, t2 + 3000);
    assert_int_equal(x->u->s.next_loop_at, t2 + 3000 + x->c.loop_ms);
}

/* A prefix that takes an object with nothing after it (only spaces, or a
 * bare priority marker) acts on nothing: no empty question for the user,
 * no empty request; the action is reflect with a warning saying so. */
static void a_bare_prefix_queues_nothing(void **st)
{
    fx *x = *st;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", T0);
    fake_reset(&x->f);
    outcome(x, "ask user:   [p9]   ", NULL, T0 + 1000);
    assert_int_equal(fake_event(&x->f, "question", 0), -1);
    assert_int_equal(x->u->s.questions.n, 0);
    int a = fake_event(&x->f, "action", 0);
    assert_true(a >= 0);
    assert_non_null(strstr(x->f.payloads[a], "\"action\":\"reflect\""));
    assert_non_null(strstr(x->f.payloads[a], "'ask user:' with nothing to act on"));
    council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, x->u->s.next_loop_at,
                     x->u->s.next_loop_at, &x->sink);
    reload(x);
    fake_reset(&x->f);
    outcome(x, "search:      ", NULL, x->u->s.last_progress + 1000);
    for (int i = 0; i < x->f.n; i++)
        assert_null(strstr(x->f.topics[i], "/request"));
    a = fake_event(&x->f, "action", 0);
    assert_non_null(strstr(x->f.payloads[a], "'search:' with nothing to act on"));
}

/* A stored record that names no user (not one council wrote) is refused,
 * so the shell starts the user over: loaded, its loop job would name no
 * user and the worker could never read it (found by fuzzing). */
/* Sixteen questions are kept per session: a 17th while all sixteen are
 * pending ends the oldest unanswered, and says so (a `question` event for
 * it with status expired, expires_at now and the reason), so Theater Mode
 * and the gateway's snapshot stop showing a question council forgot. Asks
 * alternate with notes (three asks in a row would trip the breaker). */
static void a_seventeenth_pending_question_ends_the_oldest_visibly(void **st)
{
    fx *x = *st;
    x->c.max_loops = 100;
    int64_t now = T0;
    control(x, COUNCIL_CTL_START, "s1", NULL, "c1", now);
    const int last = 2 * COUNCIL_QUESTIONS_MAX + 1; /* the 17th ask */
    for (int i = 1; i <= last; i++) {
        if (i > 1) {
            now = x->u->s.next_loop_at;
            council_on_timer(x->u, &x->c, COUNCIL_TIMER_LOOP, now, now, &x->sink);
            reload(x);
            assert_int_equal(x->u->s.loop, i);
        }
        fake_reset(&x->f);
        char sol[64];
        snprintf(sol, sizeof sol, i % 2 ? "ask user: question %d?" : "note: n%d", i);
        now += 1000;
        assert_int_equal(outcome(x, sol, NULL, now), COUNCIL_OK);
        if (i < last) { /* room left, or nothing pending to end */
            assert_int_equal(fake_event(&x->f, "question", 1), -1);
            assert_int_equal(x->dropped, 0);
        }
    }
    assert_int_equal(x->dropped, 1); /* counted by the shell once committed */
    int gone = fake_event(&x->f, "question", 0), added = fake_event(&x->f, "question", 1);
    assert_true(gone >= 0 && added > gone);
    const char *g = x->f.payloads[gone];
    assert_non_null(strstr(g, "\"question_id\":\"s1.L1.q\""));
    assert_non_null(strstr(g, "\"question\":\"question 1?\""));
    assert_non_null(strstr(g, "\"status\":\"expired\""));
    assert_non_null(strstr(g, "\"reason\":\"dropped: more than 16 questions pending\""));
    char exp[64];
    snprintf(exp, sizeof exp, "\"expires_at\":%lld", (long long)now);
    assert_non_null(strstr(g, exp));
    assert_non_null(strstr(x->f.payloads[added], "\"question_id\":\"s1.L33.q\""));
    assert_non_null(strstr(x->f.payloads[added], "\"status\":\"pending\""));
    assert_null(council_questions_find(&x->u->s.questions, "s1.L1.q"));
    assert_int_equal(x->u->s.questions.n, COUNCIL_QUESTIONS_MAX);
}

static void a_record_without_a_user_is_refused(void **st)
{
    fx *x = *st;
    char why[128] = "";
    assert_int_equal(council_user_load("{\"session\":{\"id\":\"s1\"}}", x->u, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, "no user"));
    why[0] = '\0';
    assert_int_equal(council_user_load("{\"user\":\"\",\"msgs\":[]}", x->u, why, sizeof why), -1);
    assert_true(why[0] != '\0');
}

/* A worker holds as many loops as can have all their calls in flight at
 * once (three advisors each), never fewer than one: VIGIL_LLM_CONCURRENCY
 * 32 runs 10 loops (30 calls), not a quarter of 32 (8 loops, 24 calls). */
static void loops_per_worker_fill_the_client(void **st)
{
    (void)st;
    assert_int_equal(council_loops_per_worker(32), 10);
    assert_int_equal(council_loops_per_worker(6), 2);
    assert_int_equal(council_loops_per_worker(4), 1);
    assert_int_equal(council_loops_per_worker(1), 1);
    for (int c = 3; c <= 64; c++)
        assert_true(council_loops_per_worker(c) * COUNCIL_SOL <= c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loops_per_worker_fill_the_client),
        FX_TEST(full_loop_in_order),
        FX_TEST(a_sleep_past_a_long_loop_interval_names_the_interval),
        FX_TEST(a_record_without_a_user_is_refused),
        FX_TEST(ask_then_answer_reaches_next_sense),
        FX_TEST(question_expires),
        FX_TEST(three_reflects_pause),
        FX_TEST(pause_drops_the_loop_in_flight),
        FX_TEST(no_llm_refuses_start),
        FX_TEST(daily_limit_and_auto_start),
        FX_TEST(idle_timeout_and_loop_limit),
        FX_TEST(a_loop_that_never_comes_back_ends_at_the_idle_timeout),
        FX_TEST(sleep_sets_the_next_loop),
        FX_TEST(a_short_sleep_waits_the_loop_interval),
        FX_TEST(research_with_and_without_a2a),
        FX_TEST(sol_failing_is_reflect_with_warning),
        FX_TEST(redelivered_start_is_the_same_session),
        FX_TEST(two_users_one_start_id_are_two_sessions),
        FX_TEST(messages_are_bounded),
        FX_TEST(sense_shows_the_last_messages_of_the_sessions_room),
        FX_TEST(a_used_session_id_is_refused),
        FX_TEST(questions_expire_when_the_session_ends),
        FX_TEST(an_answer_after_the_end_is_refused),
        FX_TEST(a2a_reply_not_ours_or_unfinished_is_not_delegated),
        FX_TEST(disabled_mode_starts_nothing_and_ends_live_sessions),
        FX_TEST(user_availability_reaches_sense_and_act),
        FX_TEST(a_future_dated_presence_is_taken_as_now),
        FX_TEST(the_last_loop_ends_the_session_even_when_spinning),
        FX_TEST(an_answer_during_plan_starts_the_next_loop_when_it_commits),
        FX_TEST(a_bare_prefix_queues_nothing),
        FX_TEST(a_seventeenth_pending_question_ends_the_oldest_visibly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
