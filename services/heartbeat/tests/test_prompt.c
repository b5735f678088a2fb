/* The specified prompt: identity, checklist, the current time in the user's
 * zone, minutes since the last interaction, the last 10 messages cut to 100
 * characters, the HEARTBEAT_OK instruction, whose last line goes on past
 * the specified text to ask for JSON (priority and category, which the VoI
 * gate and the allow list use; prompt.c). The default checklist, the
 * specified HEARTBEAT.md but for its generic title. And the job a started run
 * leaves for the worker. */
#include "hb_test.h"

static const char EXPECTED[] =
    "You are helper, an AI persona in the chat room \"general\". You keep an eye out for joel.\n"
    "\n"
    "- Check the CI status\n"
    "- If more than 2 minutes have passed, remind the user to take a break.\n"
    "\n"
    "Current time: Wednesday 2026-07-01 21:07 (Asia/Jakarta, UTC+07:00)\n"
    "Time since last user interaction: 7 minutes\n"
    "\n"
    "Recent conversation summary:\n"
    "joel: working on the release notes\n"
    "ann: "
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
    "\n"
    "Run the heartbeat check. If nothing needs attention, reply only with: HEARTBEAT_OK\n"
    /* the specified line ends at "send"; the JSON request is Vigil's */
    "If something needs attention, compose the message to send, as JSON: "
    "{\"message\": \"...\", \"priority\": \"urgent\"|\"normal\"|\"low\", \"category\": "
    "\"reminder\"|\"deadline\"|\"alert\"|\"notification\"|\"check-in\"|\"update\"}";

static void the_specified_prompt(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    int64_t t0 = utc_ms(2026, 7, 1, 14, 0);
    configured(&s, &c,
               "\"timezone\":\"Asia/Jakarta\",\"checklist\":\"- Check the CI status\\n- If more than 2 "
               "minutes have passed, remind the user to take a break.\",",
               t0 - MIN_MS);
    hb_message m1 = {"a", "general", "joel", "working on the release notes", true, false, t0};
    hb_on_message(&s, &c, &m1, t0, &out);
    char longtext[200];
    memset(longtext, 'x', 150);
    longtext[150] = '\0';
    hb_message m2 = {"b", "general", "ann", longtext, false, false, t0};
    hb_on_message(&s, &c, &m2, t0, &out);
    int64_t t = t0 + 7 * MIN_MS + 10 * 1000; /* 21:07:10 WIB */
    fire(&s, &c, t, &out);
    assert_non_null(out.job);
    hb_job j;
    char err[100];
    assert_int_equal(hb_job_parse(out.job, strlen(out.job), &j, err, sizeof err), 0);
    assert_string_equal(j.prompt, EXPECTED);
    assert_string_equal(j.persona, "helper");
    assert_string_equal(j.run, s.running);
    assert_int_equal(j.max_tokens, 300);
    assert_string_equal(j.model, "");
    hb_job_clear(&j);
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* The specified HEARTBEAT.md, its title made generic ("# Orion Heartbeat
 * Protocol" names another assistant; a persona has its own name). */
static void the_default_checklist_is_the_specified_one_with_a_generic_title(void **st)
{
    (void)st;
    static const char BODY_START[] =
        "\n"
        "When running a heartbeat check, review the following:\n"
        "\n"
        "## Check 1: Pending Items\n";
    static const char TITLE[] = "# Heartbeat Protocol\n";
    assert_memory_equal(HB_DEFAULT_CHECKLIST, TITLE, sizeof TITLE - 1);
    assert_memory_equal(HB_DEFAULT_CHECKLIST + sizeof TITLE - 1, BODY_START, sizeof BODY_START - 1);
    assert_null(strstr(HB_DEFAULT_CHECKLIST, "Orion"));
    assert_non_null(strstr(HB_DEFAULT_CHECKLIST, "- If nothing needs attention: reply "
                                                 "HEARTBEAT_OK (this reply is stripped and not "
                                                 "shown)\n"));
}

static void default_checklist_identity_and_empty_room(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_state s;
    hb_out out;
    hb_out_init(&out);
    int64_t t0 = utc_ms(2026, 1, 5, 8, 0);
    configured(&s, &c, "\"identity\":\"You are Orion, Joel's assistant.\",\"model\":\"llama3.2:3b\",", t0);
    fire(&s, &c, t0 + 2 * MIN_MS, &out);
    hb_job j;
    char err[100];
    assert_int_equal(hb_job_parse(out.job, strlen(out.job), &j, err, sizeof err), 0);
    assert_true(strncmp(j.prompt, "You are Orion, Joel's assistant.\n\n# Heartbeat Protocol\n", 55) == 0);
    assert_non_null(strstr(j.prompt, "## Check 4: Value Assessment\n"));
    assert_non_null(strstr(j.prompt, "- Never send more than one proactive message per heartbeat unless truly urgent\n"));
    assert_non_null(strstr(j.prompt, "Current time: Monday 2026-01-05 08:02 (UTC, UTC+00:00)\n"));
    assert_non_null(strstr(j.prompt, "Time since last user interaction: 2 minutes\n"));
    assert_non_null(strstr(j.prompt, "Recent conversation summary:\n(no recent conversations)\n"));
    assert_string_equal(j.model, "llama3.2:3b");
    hb_job_clear(&j);
    assert_int_equal(hb_job_parse("{\"run\":1}", 9, &j, err, sizeof err), -1);
    hb_job_clear(&j);
    hb_out_clear(&out);
    hb_state_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_specified_prompt),
        cmocka_unit_test(the_default_checklist_is_the_specified_one_with_a_generic_title),
        cmocka_unit_test(default_checklist_identity_and_empty_room),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
