/* test_scan.c - the scan: a stalled agent is due exactly one resume (in
 * flight until sent, then one per interval), an active one none, a
 * warning/critical one none; a job that waited is checked again before
 * it is sent; the resume prompt and payloads; the record round trip; the
 * job. */
#include "st_test.h"

static stall_config cfg;

static int setup(void **state)
{
    (void)state;
    stall_config_init(&cfg);
    return 0;
}

static stall_agent *stalled(void)
{
    stall_agent *a = st_agent("ann");
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 13 * HOUR_MS, "wired the retry loop", false);
    return a;
}

/* A stalled agent whose first scan (at T0) decided resume 1. */
static stall_agent *first_resume_due(stall_scan_result *r)
{
    stall_agent *a = stalled();
    stall_agent_scan(a, &cfg, T0, NULL, r);
    assert_true(r->resume);
    assert_int_equal(r->seq, 1);
    assert_int_equal(r->as.category, STALL_CAT_AUTO_RESUME);
    return a;
}

static void test_stalled_gets_one_resume(void **state)
{
    (void)state;
    stall_scan_result r;
    stall_agent *a = first_resume_due(&r);
    a = st_roundtrip(a);
    /* the next scan, job still in flight: none */
    stall_agent_scan(a, &cfg, T0 + MIN_MS, NULL, &r);
    assert_false(r.resume);
    assert_non_null(strstr(r.why_not, "in flight"));
    /* sent: none until the interval has passed */
    assert_true(stall_agent_resume_sent(a, 1, "resume.ann.1:agent:ann:0", T0 + 2 * MIN_MS));
    assert_false(stall_agent_resume_sent(a, 1, "resume.ann.1:agent:ann:0", T0 + 3 * MIN_MS));
    a = st_roundtrip(a);
    stall_agent_scan(a, &cfg, T0 + 2 * MIN_MS + HOUR_MS - 1, NULL, &r);
    assert_false(r.resume);
    stall_agent_scan(a, &cfg, T0 + 2 * MIN_MS + HOUR_MS, NULL, &r);
    assert_true(r.resume);
    assert_int_equal(r.seq, 2);
    free(a);
}

/* A job lost for longer than the interval is decided again with the same
 * seq (so the same claim id: one task, one resume). */
static void test_stale_pending_same_seq(void **state)
{
    (void)state;
    stall_agent *a = stalled();
    stall_scan_result r;
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    assert_int_equal(r.seq, 1);
    stall_agent_scan(a, &cfg, T0 + HOUR_MS, NULL, &r);
    assert_true(r.resume);
    assert_int_equal(r.seq, 1);
    free(a);
}

/* The scan queued resume 1; by the time a worker takes the job the agent
 * may have worked again, or reported a fresh status: the resume is no
 * longer due, and its pending mark goes so that a later scan decides
 * afresh. Still stalled, or already sent: it goes (the send step sends a
 * seq once). */
static void test_resume_checked_again_when_sent(void **state)
{
    (void)state;
    char why[STALL_REASON_LEN];
    stall_agent *a = stalled();
    stall_scan_result r;
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    assert_true(r.resume);
    /* still stalled ten minutes later: due */
    assert_true(stall_resume_still_due(a, &cfg, 1, T0 + 10 * MIN_MS, why, sizeof why));
    assert_int_equal(a->pending_seq, 1);
    /* active again (two tier-1 signals): not due, pending cleared */
    stall_agent_add_signal(a, &cfg, "w1", STALL_SRC_GIT_COMMIT, "fixed it", false,
                           T0 + 9 * MIN_MS, T0 + 10 * MIN_MS);
    stall_agent_add_signal(a, &cfg, "w2", STALL_SRC_TEST_EXECUTION, "tests pass", false,
                           T0 + 9 * MIN_MS, T0 + 10 * MIN_MS);
    assert_false(stall_resume_still_due(a, &cfg, 1, T0 + 10 * MIN_MS, why, sizeof why));
    assert_non_null(strstr(why, "active"));
    assert_int_equal(a->pending_seq, 0);
    /* a later scan, the agent stalled again: a new decision, a new seq */
    stall_agent_scan(a, &cfg, T0 + 13 * HOUR_MS, NULL, &r);
    assert_true(r.resume);
    assert_int_equal(r.seq, 2);
    free(a);

    /* a fresh status (not active, but no longer auto-resume): not due */
    a = stalled();
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    st_status(a, "EXECUTING", 0);
    assert_false(stall_resume_still_due(a, &cfg, 1, T0, why, sizeof why));
    assert_non_null(strstr(why, "category fresh"));
    assert_int_equal(a->pending_seq, 0);
    free(a);

    /* already sent under this seq: "due", the send step dedupes */
    a = stalled();
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    assert_true(stall_agent_resume_sent(a, 1, "resume.ann.1:agent:ann:0", T0));
    assert_true(stall_resume_still_due(a, &cfg, 1, T0 + MIN_MS, why, sizeof why));
    free(a);

    /* an assessment that fails (a signal with an invalid source) fails
     * open: due */
    a = stalled();
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    a->sig[0].source = 99;
    assert_true(stall_resume_still_due(a, &cfg, 1, T0, why, sizeof why));
    assert_non_null(strstr(why, "failing open"));
    free(a);
}

static void test_active_and_young_get_none(void **state)
{
    (void)state;
    stall_agent *a = stalled();
    st_sig(a, &cfg, STALL_SRC_TEST_EXECUTION, MIN_MS, "tests green", false);
    st_sig(a, &cfg, STALL_SRC_TELEMETRY_EVENT, MIN_MS, "task done", false);
    stall_scan_result r;
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    assert_true(r.as.is_active);
    assert_false(r.resume);
    assert_false(r.guard.send);
    free(a);
    a = st_agent("bob");
    st_status(a, "PLANNING", 11 * HOUR_MS); /* critical */
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    assert_int_equal(r.as.category, STALL_CAT_CRITICAL);
    assert_true(r.guard.send);
    assert_false(r.resume);
    assert_non_null(strstr(r.why_not, "critical"));
    free(a);
}

static void test_status_ordering(void **state)
{
    (void)state;
    stall_agent *a = st_agent("ann");
    stall_config c;
    stall_config_init(&c);
    stall_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.fsm_state, sizeof st.fsm_state, "EXECUTING");
    st.ts = T0;
    assert_true(stall_agent_set_status(a, &c, &st, T0));
    assert_false(stall_agent_set_status(a, &c, &st, T0)); /* same */
    st.ts = T0 - 1;
    snprintf(st.fsm_state, sizeof st.fsm_state, "OLD");
    assert_false(stall_agent_set_status(a, &c, &st, T0)); /* older */
    assert_string_equal(a->status.fsm_state, "EXECUTING");
    /* a status from the future counts as now */
    st.ts = T0 + HOUR_MS;
    snprintf(st.fsm_state, sizeof st.fsm_state, "AHEAD");
    assert_true(stall_agent_set_status(a, &c, &st, T0 + 5));
    assert_int_equal(a->status.ts, T0 + 5);
    /* and so does a signal */
    assert_int_equal(stall_agent_add_signal(a, &c, "f1", STALL_SRC_GIT_COMMIT, "x", false, T0 + HOUR_MS, T0),
                     STALL_SIGNAL_ADDED);
    assert_int_equal(a->sig[0].ts, T0);
    assert_int_equal(a->last_seen, T0);
    free(a);
}

static void test_prompt_and_payloads(void **state)
{
    (void)state;
    stall_agent *a = stalled();
    snprintf(a->status.mission, sizeof a->status.mission, "Harden the uploader");
    stall_claimed task = {"task-118", "Add integration tests", 7};
    stall_task p1 = {"task-200", "Ship v2", 9, "", T0};
    const stall_task *prios[] = {&p1};
    char *prompt = stall_resume_prompt(a, 13 * HOUR_MS, &task, prios, 1);
    assert_non_null(prompt);
    assert_non_null(strstr(prompt, STALL_PROMPT_MARKER));
    assert_non_null(strstr(prompt, "no activity for 780 min"));
    assert_non_null(strstr(prompt, "state EXECUTING"));
    assert_non_null(strstr(prompt, stall_fsm_actions("executing", true)));
    assert_non_null(strstr(prompt, "\"wired the retry loop\""));
    assert_non_null(strstr(prompt, "task-118"));
    assert_non_null(strstr(prompt, "Ship v2 (9)"));
    assert_non_null(strstr(prompt, "Harden the uploader"));
    free(prompt);
    /* the agent's own tasks are there next to the project priorities */
    snprintf(a->status.tasks[0], sizeof a->status.tasks[0], "retry on 5xx");
    snprintf(a->status.tasks[1], sizeof a->status.tasks[1], "write docs");
    a->status.n_tasks = 2;
    prompt = stall_resume_prompt(a, 13 * HOUR_MS, &task, prios, 1);
    assert_non_null(
        strstr(prompt, "Project priorities: Ship v2 (9). Your tasks: retry on 5xx; write docs."));
    free(prompt);
    /* a mission or a last task that ends its own sentence gets no second stop */
    snprintf(a->status.mission, sizeof a->status.mission, "Harden the uploader.");
    snprintf(a->status.tasks[1], sizeof a->status.tasks[1], "write docs!");
    prompt = stall_resume_prompt(a, 13 * HOUR_MS, &task, prios, 1);
    assert_non_null(strstr(prompt, " Mission: Harden the uploader. Claimed for you:"));
    assert_non_null(strstr(prompt, "Your tasks: retry on 5xx; write docs! Reply with progress"));
    assert_null(strstr(prompt, ".."));
    /* the prompt itself is noise if it comes back */
    assert_true(stall_is_resumer_prompt(&cfg, prompt));
    /* the published title is the one the prompt quotes, trimmed */
    stall_claimed padded = task;
    snprintf(padded.title, sizeof padded.title, "  Add integration tests \n");
    json_object *o = stall_resume_json("resume.ann.1:agent:ann:0", a, prompt, &padded, "inactive", T0);
    json_object *v, *title;
    assert_true(json_object_object_get_ex(o, "claimed_task", &v));
    assert_true(json_object_object_get_ex(v, "title", &title));
    assert_string_equal(json_object_get_string(title), task.title);
    assert_true(json_object_object_get_ex(o, "fsm_state", &v));
    assert_string_equal(json_object_get_string(v), "EXECUTING");
    json_object_put(o);
    free(prompt);
    prompt = stall_resume_prompt(a, 45000, NULL, NULL, 0);
    assert_non_null(strstr(prompt, "No planner task is open"));
    assert_non_null(strstr(prompt, "no activity for 45 s"));
    free(prompt);
    /* the state's actions send the agent to a claimed task only when one
     * was claimed: without one, no "claimed" anywhere in the prompt, for
     * every state and the general fallback */
    static const char *const states[] = {"IDLE", "start", "Planning", "EXECUTING", "active",
                                         "BLOCKED", "waiting", "Review", "validating", "TESTING",
                                         "complete", "DONE", "error", "something-else"};
    for (size_t i = 0; i < sizeof states / sizeof *states; i++) {
        snprintf(a->status.fsm_state, sizeof a->status.fsm_state, "%s", states[i]);
        prompt = stall_resume_prompt(a, 13 * HOUR_MS, NULL, prios, 1);
        assert_non_null(prompt);
        assert_non_null(strstr(prompt, stall_fsm_actions(states[i], false)));
        assert_null(strstr(prompt, "claimed"));
        free(prompt);
        prompt = stall_resume_prompt(a, 13 * HOUR_MS, &task, prios, 1);
        assert_non_null(strstr(prompt, stall_fsm_actions(states[i], true)));
        free(prompt);
    }
    assert_string_equal(stall_fsm_actions("idle", true),
                        "pick up the claimed task below, post a status update, then start work");
    assert_string_equal(stall_fsm_actions("idle", false),
                        "pick up your next task, post a status update, then start work");
    snprintf(a->status.fsm_state, sizeof a->status.fsm_state, "EXECUTING");
    /* idle time in whole minutes (the specified inactivity_minutes), cut
     * down, seconds under a minute */
    static const struct {
        int64_t ms;
        const char *text;
    } IDLE[] = {{59999, "no activity for 59 s"},    {60000, "no activity for 1 min"},
                {59 * MIN_MS, "no activity for 59 min"}, {60 * MIN_MS, "no activity for 60 min"},
                {61 * MIN_MS + 59999, "no activity for 61 min"},
                {780 * MIN_MS, "no activity for 780 min"}};
    for (size_t i = 0; i < sizeof IDLE / sizeof IDLE[0]; i++) {
        prompt = stall_resume_prompt(a, IDLE[i].ms, NULL, NULL, 0);
        assert_non_null(prompt);
        if (!strstr(prompt, IDLE[i].text))
            fail_msg("%s: %s", IDLE[i].text, prompt);
        free(prompt);
    }
    assert_string_not_equal(stall_fsm_actions("BLOCKED", true), stall_fsm_actions("whatever", true));
    free(a);
}

/* The texts the resume prompt prints: state, mission, last progress and
 * the first two of the agent's own tasks. */
static void set_texts(stall_agent *a, const char *fsm, const char *mission, const char *progress,
                      const char *task0, const char *task1)
{
    snprintf(a->status.fsm_state, sizeof a->status.fsm_state, "%s", fsm);
    snprintf(a->status.mission, sizeof a->status.mission, "%s", mission);
    snprintf(a->progress, sizeof a->progress, "%s", progress);
    snprintf(a->status.tasks[0], sizeof a->status.tasks[0], "%s", task0);
    snprintf(a->status.tasks[1], sizeof a->status.tasks[1], "%s", task1);
}

/* Blank texts in the record (stored before intake refused or skipped
 * them) never make an empty item, an empty quote or a dangling separator
 * in the prompt. */
static void test_prompt_leaves_blank_texts_out(void **state)
{
    (void)state;
    stall_agent *a = stalled();
    set_texts(a, " \t", "   ", "\xc2\xa0", "  ", "retry on 5xx");
    a->status.tasks[2][0] = '\0';
    a->status.n_tasks = 3;
    stall_claimed task = {"task-7", "  ", 3};
    stall_task p1 = {"task-200", "\xe3\x80\x80", 9, "", T0};
    stall_task p2 = {"task-201", "Ship v2", 5, "", T0};
    const stall_task *prios[] = {&p1, &p2};
    static const char *const has[] = {"(state UNKNOWN)", " Claimed for you: task-7 (priority 3).",
                                      " Project priorities: task-200 (9); Ship v2 (5).",
                                      " Your tasks: retry on 5xx. Reply with progress", NULL};
    static const char *const lacks[] = {"Mission:", "last progress", "\"\"", "; ;", ":.", NULL};
    char *prompt = stall_resume_prompt(a, 13 * HOUR_MS, &task, prios, 2);
    assert_non_null(prompt);
    for (int i = 0; has[i]; i++)
        if (!strstr(prompt, has[i]))
            fail_msg("missing \"%s\" in: %s", has[i], prompt);
    for (int i = 0; lacks[i]; i++)
        if (strstr(prompt, lacks[i]))
            fail_msg("\"%s\" in: %s", lacks[i], prompt);
    free(prompt);
    /* only blank tasks: no "Your tasks:" at all */
    snprintf(a->status.tasks[1], sizeof a->status.tasks[1], "\xe2\x80\x8b");
    prompt = stall_resume_prompt(a, 13 * HOUR_MS, NULL, NULL, 0);
    assert_non_null(prompt);
    assert_null(strstr(prompt, "Your tasks"));
    assert_non_null(strstr(prompt, "continue your own tasks. Reply with progress"));
    free(prompt);
    free(a);
}

/* Texts print without their leading and trailing white space (ASCII and
 * the Unicode spaces): a mission stored as "x  " reads "Mission: x." and
 * never "Mission: x  .", a padded state still finds its advice. */
static void test_prompt_trims_texts(void **state)
{
    (void)state;
    stall_agent *a = stalled();
    set_texts(a, " executing\t", "  Harden the uploader  ", "\xc2\xa0wired the retry loop ",
              " retry on 5xx ", "write docs!\xe3\x80\x80");
    a->status.n_tasks = 2;
    stall_claimed task = {"task-7", "\tAdd tests \n", 3};
    stall_task p1 = {"task-200", " Ship v2  ", 9, "", T0};
    const stall_task *prios[] = {&p1};
    char *prompt = stall_resume_prompt(a, 13 * HOUR_MS, &task, prios, 1);
    assert_non_null(prompt);
    char want[512];
    snprintf(want, sizeof want,
             "(state executing). Next: %s. Your last progress: \"wired the retry loop\". "
             "Mission: Harden the uploader. Claimed for you: task-7 \"Add tests\" (priority 3). "
             "Project priorities: Ship v2 (9). Your tasks: retry on 5xx; write docs! Reply with",
             stall_fsm_actions("executing", true));
    if (!strstr(prompt, want))
        fail_msg("missing \"%s\" in: %s", want, prompt);
    free(prompt);
    const char *s = NULL;
    assert_int_equal(stall_text_trim(" \xe2\x80\x8b a b\xc2\xa0 ", &s), 3);
    assert_memory_equal(s, "a b", 3);
    assert_int_equal(stall_text_trim("\xe3\x80\x80", &s), 0);
    assert_int_equal(stall_text_trim(NULL, &s), 0);
    free(a);
}

/* The resume event's fsm_state is the state the prompt names: trimmed as
 * the prompt prints it, UNKNOWN when blank or without a status, so a
 * consumer reading the field and an agent reading the prompt agree. */
static void test_resume_state_as_the_prompt_says(void **state)
{
    (void)state;
    stall_agent *a = stalled();
    static const struct {
        const char *stored;
        bool present;
        const char *state;
    } CASES[] = {{" executing\t", true, "executing"},
                 {"\xc2\xa0REVIEW\xe3\x80\x80", true, "REVIEW"},
                 {"BLOCKED", true, "BLOCKED"},
                 {" \t", true, "UNKNOWN"},
                 {"\xc2\xa0", true, "UNKNOWN"},
                 {"EXECUTING", false, "UNKNOWN"}};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        snprintf(a->status.fsm_state, sizeof a->status.fsm_state, "%s", CASES[i].stored);
        a->status.present = CASES[i].present;
        char *prompt = stall_resume_prompt(a, 13 * HOUR_MS, NULL, NULL, 0);
        assert_non_null(prompt);
        char want[64];
        snprintf(want, sizeof want, "(state %s).", CASES[i].state);
        if (!strstr(prompt, want))
            fail_msg("case %zu: missing \"%s\" in: %s", i, want, prompt);
        json_object *o = stall_resume_json("resume.ann.1:agent:ann:0", a, prompt, NULL,
                                           "inactive", T0);
        json_object *v;
        assert_true(json_object_object_get_ex(o, "fsm_state", &v));
        if (strcmp(json_object_get_string(v), CASES[i].state) != 0)
            fail_msg("case %zu: fsm_state \"%s\", the prompt says \"%s\"", i,
                     json_object_get_string(v), CASES[i].state);
        json_object_put(o);
        free(prompt);
    }
    free(a);
}

/* The assessment payload of a scan of a at now, as text (malloc'd). */
static char *scanned_json(stall_agent *a, int64_t now, stall_scan_result *r)
{
    stall_agent_scan(a, &cfg, now, NULL, r);
    json_object *o = stall_assessment_json(a, r, now);
    char *txt = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    assert_non_null(txt);
    return txt;
}

static void test_assessment_payload(void **state)
{
    (void)state;
    stall_agent *a = st_agent("ann");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 45 * MIN_MS, "c", false);
    stall_scan_result r;
    char *txt = scanned_json(a, T0, &r);
    assert_non_null(strstr(txt, "\"confidence\":0.595"));
    assert_non_null(strstr(txt, "\"inactivity_minutes\":45"));
    assert_non_null(strstr(txt, "\"category\":\"fresh\""));
    assert_non_null(strstr(txt, "\"is_active\":true"));
    free(txt);
    free(a);
    a = st_agent("nobody");
    txt = scanned_json(a, T0, &r);
    assert_non_null(strstr(txt, "\"last_activity\":null"));
    free(txt);
    free(a);
    /* a change key moves with what readers act on */
    stall_assessment x, y;
    memset(&x, 0, sizeof x);
    y = x;
    assert_true(stall_assessment_key(&x) == stall_assessment_key(&y));
    y.confidence_milli = 500;
    assert_true(stall_assessment_key(&x) != stall_assessment_key(&y));
}

static void test_job_roundtrip(void **state)
{
    (void)state;
    stall_job j, k;
    stall_job_make(&j, "ann", 3, T0, "inactive");
    assert_string_equal(j.id, "resume.ann.3");
    char *s = stall_job_to_json(&j);
    char err[80];
    assert_int_equal(stall_job_parse(s, strlen(s), &k, err, sizeof err), 0);
    assert_string_equal(k.id, j.id);
    assert_int_equal(k.seq, 3);
    char trailing[512];
    snprintf(trailing, sizeof trailing, "%s}", s); /* a damaged entry: bytes after the object */
    assert_int_equal(stall_job_parse(trailing, strlen(trailing), &k, err, sizeof err), -1);
    free(s);
    assert_int_equal(stall_job_parse("{\"id\":1}", 8, &k, err, sizeof err), -1);
    assert_int_equal(stall_job_parse("{", 1, &k, err, sizeof err), -1);
    const char *bad = "{\"id\":\"x\",\"agent\":\"a/b\",\"seq\":1,\"decided\":1,\"reason\":\"\"}";
    assert_int_equal(stall_job_parse(bad, strlen(bad), &k, err, sizeof err), -1);
    char e2[80];
    assert_null(stall_agent_from_json("{\"sig\":[[1,2]]}", "a", e2, sizeof e2));
    assert_null(stall_agent_from_json("nope", "a", e2, sizeof e2));
}

/* A cleared status retires the agent: what it reported is forgotten, a
 * resume job already queued for it is not due any more, and the record
 * keeps the mark through a round trip. Retiring again changes nothing. An
 * agent that comes back is resumed under new numbers (its old resume ids
 * are kept, so their echoes are still not activity). */
static void test_retired_agent(void **state)
{
    (void)state;
    stall_scan_result r;
    stall_agent *a = first_resume_due(&r);
    assert_true(stall_agent_resume_sent(a, 1, "resume.ann.1:agent:ann:0", T0 + MIN_MS));
    stall_agent_scan(a, &cfg, T0 + 2 * HOUR_MS, NULL, &r);
    assert_true(r.resume); /* seq 2 queued, not sent */
    assert_int_equal(r.seq, 2);
    assert_true(stall_agent_retire(a));
    assert_false(stall_agent_retire(a));
    assert_true(a->retired);
    assert_int_equal(a->n_sig, 0);
    assert_false(a->status.present);
    assert_int_equal(a->pending_seq, 0);
    assert_int_equal(a->next_scan, 0);
    a = st_roundtrip(a);
    assert_true(a->retired);
    char why[STALL_REASON_LEN];
    assert_false(stall_resume_still_due(a, &cfg, 2, T0 + 2 * HOUR_MS + MIN_MS, why, sizeof why));
    assert_non_null(strstr(why, "retired"));
    /* a scan (which the service no longer runs for it) decides none either */
    stall_agent_scan(a, &cfg, T0 + 5 * HOUR_MS, NULL, &r);
    assert_false(r.resume);
    assert_non_null(strstr(r.why_not, "retired"));
    assert_int_equal(a->pending_seq, 0);
    /* it comes back: seq goes on from 2, our resume's echo is still ours */
    assert_int_equal(stall_agent_add_signal(a, &cfg, "echo", STALL_SRC_INBOX_PROCESSING,
                                            "resume.ann.1:agent:ann:0", false, T0 - 13 * HOUR_MS,
                                            T0 + 3 * HOUR_MS),
                     STALL_SIGNAL_NOISE);
    stall_agent_return(a);
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 13 * HOUR_MS, "back at the retry loop", false);
    a = st_roundtrip(a);
    assert_false(a->retired);
    stall_agent_scan(a, &cfg, T0 + 3 * HOUR_MS, NULL, &r);
    assert_true(r.resume);
    assert_int_equal(r.seq, 3);
    free(a);
}

/* Only the agent's pending resume is still due: a job queued for resume 2
 * before the agent retired and came back is not, once its scans decided
 * resume 3 (carried out, it was a second resume within the interval); the
 * pending mark of 3 stays. */
static void test_a_job_not_pending_is_not_due(void **state)
{
    (void)state;
    char why[STALL_REASON_LEN];
    stall_scan_result r;
    stall_agent *a = first_resume_due(&r);
    assert_true(stall_agent_resume_sent(a, 1, "resume.ann.1:agent:ann:0", T0 + MIN_MS));
    stall_agent_scan(a, &cfg, T0 + 2 * HOUR_MS, NULL, &r);
    assert_int_equal(r.seq, 2); /* job 2 queued */
    assert_true(stall_agent_retire(a));
    stall_agent_return(a);
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    /* no scan yet: nothing is pending, job 2 is not due */
    assert_false(stall_resume_still_due(a, &cfg, 2, T0 + 2 * HOUR_MS + MIN_MS, why, sizeof why));
    assert_non_null(strstr(why, "no longer pending"));
    stall_agent_scan(a, &cfg, T0 + 2 * HOUR_MS + MIN_MS, NULL, &r);
    assert_true(r.resume);
    assert_int_equal(r.seq, 3);
    assert_false(stall_resume_still_due(a, &cfg, 2, T0 + 2 * HOUR_MS + MIN_MS, why, sizeof why));
    assert_int_equal(a->pending_seq, 3);
    assert_true(stall_resume_still_due(a, &cfg, 3, T0 + 2 * HOUR_MS + MIN_MS, why, sizeof why));
    free(a);
}

/* A re-check whose assessment fails (here a signal the core cannot
 * read) fails open as the scan does: as if inactive, so the status age
 * still decides. A fresh status holds the resume back; an old one lets
 * it through. */
static void test_a_failed_recheck_still_asks_the_category(void **state)
{
    (void)state;
    char why[STALL_REASON_LEN];
    stall_scan_result r;
    stall_agent *a = first_resume_due(&r);
    a->sig[0].source = 999;
    st_status(a, "EXECUTING", MIN_MS);
    assert_false(stall_resume_still_due(a, &cfg, 1, T0, why, sizeof why));
    assert_non_null(strstr(why, "category fresh"));
    assert_int_equal(a->pending_seq, 0);
    free(a);

    a = first_resume_due(&r);
    a->sig[0].source = 999;
    assert_true(stall_resume_still_due(a, &cfg, 1, T0, why, sizeof why));
    free(a);
}

/* The stand-in for an unreadable record numbers its resumes from now: the
 * lost record's resume 1 had job id resume.ann.1 (its claim and dedupe
 * id), and a stand-in deciding "1" again found that resume done. */
static void test_a_replaced_record_numbers_resumes_past_the_lost_ones(void **state)
{
    (void)state;
    stall_agent *a = calloc(1, sizeof *a);
    assert_non_null(a);
    stall_agent_replace(a, "ann", T0);
    assert_string_equal(a->agent, "ann");
    assert_int_equal(a->n_sig, 0);
    assert_false(a->status.present);
    a = st_roundtrip(a);
    stall_scan_result r;
    stall_agent_scan(a, &cfg, T0 + MIN_MS, "agent record unreadable", &r);
    assert_true(r.guard.failed_open);
    assert_true(r.resume);
    assert_int_equal(r.seq, T0 + 1);
    stall_job j;
    stall_job_make(&j, a->agent, r.seq, T0 + MIN_MS, r.guard.reason);
    assert_string_equal(j.id, "resume.ann.1700000000001");
    char why[STALL_REASON_LEN];
    assert_true(stall_resume_still_due(a, &cfg, r.seq, T0 + MIN_MS, why, sizeof why));
    free(a);
}

/* An agent the service knows nothing about (no status, no activity: the
 * stand-in for an unreadable record) has no age: the assessment says so
 * (status_age_hours and aged_from null) rather than the hours since 1970.
 * Its category is auto-resume because detection failed and the guard
 * fails open, and the reasons say that instead of an age. */
static void test_an_agent_known_nothing_about_has_no_age(void **state)
{
    (void)state;
    stall_agent *a = st_agent("nobody");
    stall_scan_result r;
    char *txt = scanned_json(a, T0, &r);
    assert_int_equal(r.as.category, STALL_CAT_AUTO_RESUME);
    assert_true(r.resume);
    assert_non_null(strstr(txt, "\"status_age_hours\":null"));
    assert_non_null(strstr(txt, "\"aged_from\":null"));
    assert_non_null(strstr(txt, "\"category\":\"auto-resume\""));
    assert_non_null(strstr(txt, "no status and no activity known: age unknown, failing open"));
    free(txt);
    /* the scan's resume reason says why it goes out although nothing is aged */
    assert_non_null(strstr(a->pending_reason, "validation failed (confidence 0.000): resume allowed"));
    assert_non_null(strstr(a->pending_reason, "failing open"));
    char why[STALL_REASON_LEN];
    assert_true(stall_resume_still_due(a, &cfg, r.seq, T0 + MIN_MS, why, sizeof why));
    assert_string_equal(why, a->pending_reason);
    /* a signal gives it an age again (aged from activity) */
    st_sig(a, &cfg, STALL_SRC_MESSAGE_QUEUE, 7 * HOUR_MS, "m", false);
    txt = scanned_json(a, T0, &r);
    assert_non_null(strstr(txt, "\"status_age_hours\":7"));
    assert_non_null(strstr(txt, "\"aged_from\":\"activity\""));
    assert_null(strstr(txt, "age unknown"));
    free(txt);
    free(a);
}

/* The re-check before a resume is sent says why it is allowed *then*:
 * the reason the resume is published with (the scan's may be stale). */
static void test_the_recheck_gives_the_reason_at_send_time(void **state)
{
    (void)state;
    char why[STALL_REASON_LEN];
    stall_agent *a = st_agent("ann");
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    stall_scan_result r;
    stall_agent_scan(a, &cfg, T0, NULL, &r);
    assert_true(r.resume);
    assert_string_equal(a->pending_reason, "validation failed (confidence 0.000): resume allowed");
    /* a tier-3 signal since: still not active, but the confidence moved */
    stall_agent_add_signal(a, &cfg, "q1", STALL_SRC_MESSAGE_QUEUE, "queue polled", false,
                           T0 + 9 * MIN_MS, T0 + 10 * MIN_MS);
    assert_true(stall_resume_still_due(a, &cfg, r.seq, T0 + 10 * MIN_MS, why, sizeof why));
    assert_string_equal(why, "validation failed (confidence 0.300): resume allowed");
    free(a);
}

/* One notion of inactivity: the prompt's idle time is the assessment's
 * (since its last_activity). A status with nothing but a state is no sign
 * of life for either; an agent never seen active has no idle time. */
static void test_the_prompt_idle_time_is_the_assessments(void **state)
{
    (void)state;
    stall_agent *a = st_agent("ann");
    st_sig(a, &cfg, STALL_SRC_GIT_COMMIT, 20 * HOUR_MS, "last commit", false);
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    stall_assessment as = st_assess(a, &cfg, T0);
    assert_int_equal(as.last_activity, T0 - 20 * HOUR_MS);
    assert_int_equal(stall_idle_ms(a, &cfg, T0), 20 * HOUR_MS);
    char *prompt = stall_resume_prompt(a, stall_idle_ms(a, &cfg, T0), NULL, NULL, 0);
    assert_non_null(strstr(prompt, "ann: no activity for 1200 min (state EXECUTING)."));
    free(prompt);
    /* a status with a mission is a sign of life: for both again */
    stall_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.fsm_state, sizeof st.fsm_state, "EXECUTING");
    snprintf(st.mission, sizeof st.mission, "Harden the uploader");
    st.ts = T0 - 13 * HOUR_MS + 1;
    assert_true(stall_agent_set_status(a, &cfg, &st, T0));
    assert_int_equal(stall_idle_ms(a, &cfg, T0), 13 * HOUR_MS - 1);
    free(a);

    a = st_agent("bea"); /* a bare status only: never active */
    st_status(a, "EXECUTING", 13 * HOUR_MS);
    assert_int_equal(st_assess(a, &cfg, T0).last_activity, 0);
    assert_int_equal(stall_idle_ms(a, &cfg, T0), -1);
    prompt = stall_resume_prompt(a, stall_idle_ms(a, &cfg, T0), NULL, NULL, 0);
    assert_non_null(strstr(prompt, "bea: no activity seen (state EXECUTING). Next: "));
    free(prompt);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_stalled_gets_one_resume, setup),
        cmocka_unit_test_setup(test_stale_pending_same_seq, setup),
        cmocka_unit_test_setup(test_resume_checked_again_when_sent, setup),
        cmocka_unit_test_setup(test_active_and_young_get_none, setup),
        cmocka_unit_test_setup(test_status_ordering, setup),
        cmocka_unit_test_setup(test_prompt_and_payloads, setup),
        cmocka_unit_test_setup(test_prompt_leaves_blank_texts_out, setup),
        cmocka_unit_test_setup(test_prompt_trims_texts, setup),
        cmocka_unit_test_setup(test_resume_state_as_the_prompt_says, setup),
        cmocka_unit_test_setup(test_assessment_payload, setup),
        cmocka_unit_test_setup(test_job_roundtrip, setup),
        cmocka_unit_test_setup(test_retired_agent, setup),
        cmocka_unit_test_setup(test_a_job_not_pending_is_not_due, setup),
        cmocka_unit_test_setup(test_a_failed_recheck_still_asks_the_category, setup),
        cmocka_unit_test_setup(test_a_replaced_record_numbers_resumes_past_the_lost_ones, setup),
        cmocka_unit_test_setup(test_an_agent_known_nothing_about_has_no_age, setup),
        cmocka_unit_test_setup(test_the_recheck_gives_the_reason_at_send_time, setup),
        cmocka_unit_test_setup(test_the_prompt_idle_time_is_the_assessments, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
