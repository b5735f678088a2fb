/* test_prompt.c - the specified smart, mid and autopilot prompts with their
 * fields filled in, checked against golden files (tests/golden/). The
 * smart and mid jobs come through intake (room -> job JSON -> parse), so
 * the context a job carries is checked too. WAKE_UPDATE_GOLDEN=1 rewrites
 * the files (then review the diff). */
#include "wk_test.h"

static void golden(const char *name, const char *got)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", WAKE_GOLDEN_DIR, name);
    if (getenv("WAKE_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fputs(got, f);
        fclose(f);
    }
    char *want = wk_read_file(path);
    if (!want)
        fail_msg("missing golden file %s", path);
    if (strcmp(want, got) != 0)
        fail_msg("prompt differs from %s:\n---- got ----\n%s\n---- want ----\n%s", path, got, want);
    free(want);
}

/* The example room: helper and teacher awake, codereview (smart)
 * and tiny (mid) asleep, joel asked something 3 minutes ago. */
static wk *example_room(void)
{
    wk *t = wk_new();
    wk_persona(t, "helper", "smart", -1, "typescript", 0.9);
    wk_persona(t, "teacher", "smart", -1, "teaching", 0.9);
    wk_persona(t, "codereview", NULL, 175000000000LL, "typescript", 0.85);
    wk_persona(t, "tiny", NULL, 8000000000LL, NULL, 0);
    wake_persona *cr = wake_room_find(t->r, "codereview");
    snprintf(cr->name, sizeof cr->name, "CodeReview AI");
    snprintf(cr->role, sizeof cr->role, "code-review");
    wk_level(t, "helper", WAKE_LEVEL_ACTIVE, "manual");
    wk_level(t, "codereview", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "tiny", WAKE_LEVEL_SLEEP, "manual");
    /* teacher: no report yet, a member: counts as active */
    t->now = T0 - 3 * MIN;
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "Can someone look at the flaky test?");
    t->now = T0 - 2 * MIN;
    wk_msg(t, "helper", WAKE_SENDER_AI, "Looking at it now.");
    t->now = T0 - 1 * MIN;
    wk_msg(t, "teacher", WAKE_SENDER_AI, "It fails on CI only.");
    t->now = T0;
    wk_clear(t);
    return t;
}

static void job_of(wk *t, int i, wake_job *j)
{
    wake_job_kind kind;
    wake_ap_job aj;
    char why[200];
    assert_true(i < t->n_jobs);
    assert_int_equal(wake_job_parse(t->jobs[i], strlen(t->jobs[i]), &kind, j, &aj, why, sizeof why), 0);
    assert_int_equal(kind, WAKE_JOB_WAKE);
}

static void smart_and_mid(void **state)
{
    (void)state;
    wk *t = example_room();
    assert_int_equal(wk_msg(t, "joel", WAKE_SENDER_HUMAN, "Server is down, need help ASAP!"), 0);
    assert_int_equal(t->n_jobs, 2);
    wake_job j;
    job_of(t, 0, &j);
    assert_string_equal(j.persona, "codereview");
    assert_int_equal(j.tier, WAKE_TIER_SMART);
    char *p = wake_prompt_smart(&j);
    golden("smart_prompt.txt", p);
    free(p);
    wake_job_clear(&j);
    job_of(t, 1, &j);
    assert_string_equal(j.persona, "tiny");
    assert_int_equal(j.tier, WAKE_TIER_MID);
    p = wake_prompt_mid(&j);
    golden("mid_prompt.txt", p);
    free(p);
    wake_job_clear(&j);
    wk_free(t);
}

static void smart_without_context(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "solo", "smart", -1, NULL, 0);
    wk_level(t, "solo", WAKE_LEVEL_SLEEP, "manual");
    wake_persona *p = wake_room_find(t->r, "solo");
    p->role[0] = '\0';
    assert_int_equal(wk_msg(t, "bot", WAKE_SENDER_AI, "How was your weekend?"), 0);
    wake_job j;
    job_of(t, 0, &j);
    char *s = wake_prompt_smart(&j);
    golden("smart_prompt_empty_room.txt", s);
    free(s);
    wake_job_clear(&j);
    wk_free(t);
}

static void autopilot(void **state)
{
    (void)state;
    wake_ap_persona ps[] = {{.id = "helper-ai", .level = WAKE_LEVEL_ACTIVE},
                            {.id = "claude-assistant", .level = WAKE_LEVEL_MENTION_ONLY},
                            {.id = "codereview", .level = WAKE_LEVEL_SLEEP}};
    wake_ap_job j = {.job = "x", .room = "general", .n_personas = 3, .personas = ps,
                     .human_5m = 1, .ai_5m = 14, .since_human = "4 min ago", .velocity = 3.0};
    char *p = wake_prompt_autopilot(&j);
    golden("autopilot_prompt.txt", p);
    free(p);
}

/* The example room's autopilot job, fired by its timer and read back as
 * the worker reads it; the room is the caller's to free. */
static wk *autopilot_job_of_example_room(wake_ap_job *aj)
{
    wk *t = example_room();
    t->c.autopilot_interval_ms = MIN;
    /* the messages armed the timer; fire it */
    assert_int_equal(wake_on_timer(t->r, &t->c, WAKE_TIMER_AUTOPILOT, T0, T0, &t->sink), 0);
    assert_int_equal(t->n_jobs, 1);
    wake_job_kind kind;
    wake_job wj;
    char why[200];
    assert_int_equal(wake_job_parse(t->jobs[0], strlen(t->jobs[0]), &kind, &wj, aj, why,
                                    sizeof why), 0);
    assert_int_equal(kind, WAKE_JOB_AUTOPILOT);
    return t;
}

static void autopilot_job_through_the_timer(void **state)
{
    (void)state;
    wake_ap_job aj;
    wk *t = autopilot_job_of_example_room(&aj);
    char *p = wake_prompt_autopilot(&aj);
    golden("autopilot_prompt_room.txt", p);
    free(p);
    wake_ap_job_clear(&aj);
    wk_free(t);
}

/* The state lines name personas by display name, as the specified prompt
 * does (p.name): "CodeReview AI", not its id, while the id stays in the
 * job for reading the answer. A job written before jobs carried names
 * lists the ids. */
static void autopilot_names_personas_by_display_name(void **state)
{
    (void)state;
    wake_ap_job aj;
    wk *t = autopilot_job_of_example_room(&aj);
    assert_string_equal(aj.personas[2].id, "codereview");
    assert_string_equal(aj.personas[2].name, "CodeReview AI");
    char *p = wake_prompt_autopilot(&aj);
    assert_non_null(strstr(p, "\n- CodeReview AI: sleep\n"));
    assert_null(strstr(p, "- codereview:"));
    assert_non_null(strstr(p, "\n- helper: active\n"));
    free(p);
    wake_ap_job_clear(&aj);

    const char *old_job = "{\"kind\":\"autopilot\",\"job\":\"j1\",\"room\":\"general\","
                          "\"personas\":[{\"id\":\"codereview\",\"level\":\"sleep\"}],"
                          "\"human_5m\":0,\"ai_5m\":1,\"since_human\":\"never\","
                          "\"velocity\":0.2,\"enqueued\":1}";
    wake_job_kind kind;
    wake_job wj;
    char why[200];
    assert_int_equal(wake_job_parse(old_job, strlen(old_job), &kind, &wj, &aj, why, sizeof why),
                     0);
    p = wake_prompt_autopilot(&aj);
    assert_non_null(strstr(p, "\n- codereview: sleep\n"));
    free(p);
    wake_ap_job_clear(&aj);
    wk_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(smart_and_mid),
        cmocka_unit_test(smart_without_context),
        cmocka_unit_test(autopilot),
        cmocka_unit_test(autopilot_job_through_the_timer),
        cmocka_unit_test(autopilot_names_personas_by_display_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
