/* test_prompt.c - the loop's two stages as prompts: the advisors (Polaris,
 * Aurora, Vega) are asked with the SENSE context only; Sol's prompt (the
 * job's first part completed by council_sol_prompt) holds the context,
 * what the three advisors answered (a failed one as its "(no answer: ...)"
 * text) and whether the user is available, before the prefixes to answer
 * with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "fake_sink.h"

#define T0 1763800000000LL

/* The job of a session's first loop, for a user last seen `presence`. */
static void first_job(council_presence presence, council_job *j)
{
    council_config c;
    council_config_init(&c);
    c.llm_enabled = true;
    council_user *u = calloc(1, sizeof *u);
    assert_non_null(u);
    council_user_init(u, "joel");
    council_on_message(u, &c, "general", "I need to finish the report by Friday", T0 - 5000);
    if (presence != COUNCIL_PRESENCE_UNKNOWN)
        council_on_presence(u, "general", presence, T0 - 1000, T0 - 1000, T0 - 1000);
    fake_sink f = {0};
    council_sink sink = fake_sink_of(&f);
    council_control in = {COUNCIL_CTL_START, "s1", NULL, false};
    char why[256] = "";
    assert_int_equal(council_on_control(u, &c, &in, "c1", T0, &sink, why, sizeof why),
                     COUNCIL_OK);
    assert_int_equal(f.n_jobs, 1);
    /* one job for the loop: SENSE, then PLAN saying Sol comes after the
     * advisors; no next loop is due while it is out */
    char seq[128];
    fake_sequence(&f, seq, sizeof seq);
    assert_string_equal(seq, "phase:sense,phase:plan");
    int plan = fake_event(&f, "phase", 1);
    assert_true(plan >= 0);
    assert_non_null(strstr(f.payloads[plan], "then Sol with their answers"));
    assert_int_equal(fake_timer_due(&f, COUNCIL_TIMER_LOOP), COUNCIL_TIMER_CANCEL);
    assert_int_equal(council_job_parse(f.jobs[0], strlen(f.jobs[0]), j, why, sizeof why), 0);
    fake_reset(&f);
    free(u);
}

static const char *const PREFIXES[] = {"search: ", "note: ", "ask user: ", "schedule: ",
                                       "research: ", "sleep: ", "reflect: "};

static void sol_is_asked_with_the_advisors_answers(void **st)
{
    (void)st;
    council_job j;
    first_job(COUNCIL_PRESENCE_AWAY, &j);
    assert_int_equal(j.available, 0);
    assert_string_equal(j.presence, "away");
    const char *answers[COUNCIL_PERSONAS] = {"Keep the Friday report in view.", NULL,
                                             "The deadline is the key fact.", NULL};
    const char *errors[COUNCIL_PERSONAS] = {"", "timeout: no answer in 10000 ms", "", ""};
    char *sol = council_sol_prompt(j.prompts[COUNCIL_SOL], answers, errors, j.available,
                                   j.presence);
    assert_non_null(sol);
    /* its persona and the SENSE context, as the advisors got it */
    assert_non_null(strstr(sol, "You are Sol, the Executor"));
    assert_non_null(strstr(sol, "finish the report by Friday"));
    /* the deliberation: each advisor's answer, a failed one said so */
    const char *polaris = strstr(sol, "- Polaris, the Navigator: Keep the Friday report in view.\n");
    const char *aurora = strstr(sol, "- Aurora, the Empath: (no answer: timeout: no answer in "
                                     "10000 ms)\n");
    const char *vega = strstr(sol, "- Vega, the Analyst: The deadline is the key fact.\n");
    assert_non_null(polaris);
    assert_non_null(aurora);
    assert_non_null(vega);
    /* whether the user is available, then the prefixes: after what the
     * council said, which the action is to weigh */
    const char *avail = strstr(sol, "User available now: no (presence away, as SENSE found it)");
    const char *propose = strstr(sol, "Propose exactly one action");
    assert_non_null(avail);
    assert_non_null(propose);
    assert_true(polaris < aurora && aurora < vega && vega < avail && avail < propose);
    assert_true(strstr(sol, "finish the report by Friday") < polaris);
    for (size_t i = 0; i < sizeof PREFIXES / sizeof PREFIXES[0]; i++)
        assert_non_null(strstr(propose, PREFIXES[i]));
    assert_non_null(strstr(propose, "Weigh whether the user is available"));
    free(sol);
    council_job_clear(&j);
}

/* PLAN asks the advisors only about their own question: no proposal of an
 * action, no other persona's answer (there is none yet). */
static void the_advisors_are_asked_with_the_context_only(void **st)
{
    (void)st;
    council_job j;
    first_job(COUNCIL_PRESENCE_ACTIVE, &j);
    assert_int_equal(j.available, 1);
    for (int p = 0; p < COUNCIL_SOL; p++) {
        assert_non_null(strstr(j.prompts[p], "finish the report by Friday"));
        assert_non_null(strstr(j.prompts[p], COUNCIL_PERSONA_DEFS[p].question));
        assert_null(strstr(j.prompts[p], "Propose exactly one action"));
        assert_null(strstr(j.prompts[p], "The council's deliberation"));
    }
    const char *answers[COUNCIL_PERSONAS] = {"a", "b", "c", NULL};
    const char *errors[COUNCIL_PERSONAS] = {0};
    char *sol = council_sol_prompt(j.prompts[COUNCIL_SOL], answers, errors, j.available,
                                   j.presence);
    assert_non_null(strstr(sol, "User available now: yes (presence active"));
    free(sol);
    council_job_clear(&j);
}

/* A job an older version enqueued (all four prompts, no availability)
 * still gets Sol its advisors' answers; no availability line is made up. */
static void an_older_job_without_availability(void **st)
{
    (void)st;
    const char *old = "{\"job\":\"s1.L1\",\"user\":\"joel\",\"session\":\"s1\",\"loop\":1,"
                      "\"prompts\":{\"polaris\":\"P\",\"aurora\":\"A\",\"vega\":\"V\","
                      "\"sol\":\"You are Sol\"}}";
    council_job j;
    char why[128];
    assert_int_equal(council_job_parse(old, strlen(old), &j, why, sizeof why), 0);
    assert_int_equal(j.available, -1);
    const char *answers[COUNCIL_PERSONAS] = {"a1", "a2", "a3", NULL};
    const char *errors[COUNCIL_PERSONAS] = {0};
    char *sol = council_sol_prompt(j.prompts[COUNCIL_SOL], answers, errors, j.available,
                                   j.presence);
    assert_non_null(strstr(sol, "- Vega, the Analyst: a3\n"));
    assert_null(strstr(sol, "User available now"));
    free(sol);
    council_job_clear(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sol_is_asked_with_the_advisors_answers),
        cmocka_unit_test(the_advisors_are_asked_with_the_context_only),
        cmocka_unit_test(an_older_job_without_availability),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
