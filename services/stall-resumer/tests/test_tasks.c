/* test_tasks.c - task claim order (the agent's own tasks, then anyone's;
 * priority, then age, then id; never another agent's), idempotent claims,
 * claimed tasks never offered again, the pool's record. */
#include "st_test.h"

static stall_task task(const char *id, int64_t prio, const char *agent, int64_t ts)
{
    stall_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.id, sizeof t.id, "%s", id);
    snprintf(t.title, sizeof t.title, "title of %s", id);
    t.priority = prio;
    snprintf(t.agent, sizeof t.agent, "%s", agent ? agent : "");
    t.ts = ts;
    return t;
}

static stall_tasks *roundtrip(stall_tasks *t)
{
    char *json = stall_tasks_to_json(t);
    assert_non_null(json);
    char err[80];
    stall_tasks *u = stall_tasks_from_json(json, err, sizeof err);
    assert_non_null(u);
    free(json);
    stall_tasks_free(t);
    return u;
}

static void test_claim_order(void **state)
{
    (void)state;
    stall_tasks *t = stall_tasks_new();
    stall_task ts[] = {
        task("low", 1, NULL, T0 - 5000),     task("high-new", 9, NULL, T0 - 1000),
        task("high-old", 9, NULL, T0 - 2000), task("mine", 2, "ann", T0),
        task("bobs", 99, "bob", T0 - 9000),   task("high-old-b", 9, NULL, T0 - 2000),
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        assert_int_equal(stall_tasks_offer(t, &ts[i]), STALL_TASK_ADDED);
    t = roundtrip(t);
    const char *want[] = {"mine", "high-old", "high-old-b", "high-new", "low"};
    char claim[32];
    bool changed;
    for (int i = 0; i < 5; i++) {
        snprintf(claim, sizeof claim, "resume.ann.%d", i + 1);
        const stall_claim *c = stall_tasks_claim(t, "ann", claim, T0, &changed);
        assert_non_null(c);
        assert_true(changed);
        assert_string_equal(c->id, want[i]);
        assert_string_equal(c->agent, "ann");
        t = roundtrip(t);
    }
    /* only bob's task is left: never ann's */
    assert_null(stall_tasks_claim(t, "ann", "resume.ann.6", T0, &changed));
    assert_false(changed);
    const stall_claim *c = stall_tasks_claim(t, "bob", "resume.bob.1", T0, &changed);
    assert_non_null(c);
    assert_string_equal(c->id, "bobs");
    stall_tasks_free(t);
}

/* The same claim id gets the same task again; a claimed task re-offered is
 * refused. */
static void test_idempotent_and_not_reoffered(void **state)
{
    (void)state;
    stall_tasks *t = stall_tasks_new();
    stall_task a = task("t1", 5, NULL, T0), b = task("t2", 4, NULL, T0);
    stall_tasks_offer(t, &a);
    stall_tasks_offer(t, &b);
    bool changed;
    const stall_claim *c = stall_tasks_claim(t, "ann", "job-1", T0, &changed);
    assert_string_equal(c->id, "t1");
    t = roundtrip(t);
    c = stall_tasks_claim(t, "ann", "job-1", T0 + 5, &changed);
    assert_false(changed);
    assert_string_equal(c->id, "t1");
    assert_int_equal(t->n_open, 1);
    assert_int_equal(stall_tasks_offer(t, &a), STALL_TASK_ALREADY_CLAIMED);
    /* a newer version of an open task replaces it; an older one does not */
    stall_task b2 = task("t2", 8, NULL, T0 + 10);
    assert_int_equal(stall_tasks_offer(t, &b2), STALL_TASK_UPDATED);
    assert_int_equal(stall_tasks_offer(t, &b), STALL_TASK_UNCHANGED);
    assert_int_equal(t->open[0].priority, 8);
    stall_tasks_free(t);
}

static void test_top_and_full(void **state)
{
    (void)state;
    stall_tasks *t = stall_tasks_new();
    char id[32];
    for (int i = 0; i < STALL_MAX_OPEN_TASKS; i++) {
        snprintf(id, sizeof id, "t%d", i);
        stall_task k = task(id, i % 10, NULL, T0 + i);
        assert_int_equal(stall_tasks_offer(t, &k), STALL_TASK_ADDED);
    }
    stall_task low = task("zero", 0, NULL, T0 + 5000);
    assert_int_equal(stall_tasks_offer(t, &low), STALL_TASK_FULL);
    stall_task top = task("top", 50, NULL, T0 + 5000);
    assert_int_equal(stall_tasks_offer(t, &top), STALL_TASK_ADDED);
    assert_int_equal(t->n_open, STALL_MAX_OPEN_TASKS);
    const stall_task *out[3];
    assert_int_equal(stall_tasks_top(t, "ann", out, 3), 3);
    assert_string_equal(out[0]->id, "top");
    assert_int_equal(out[1]->priority, 9);
    assert_string_equal(out[1]->id, "t9"); /* oldest of priority 9 */
    assert_string_equal(out[2]->id, "t19");
    stall_tasks_free(t);
    char err[80];
    assert_null(stall_tasks_from_json("{\"open\":[[1]],\"claimed\":[]}", err, sizeof err));
    assert_null(stall_tasks_from_json("[]", err, sizeof err));
}

/* A claim whose resume was never sent goes back to the pool as offered
 * (its own agent, priority and ts), through the record; releasing twice,
 * or a claim id never used, changes nothing. */
static void test_release(void **state)
{
    (void)state;
    stall_tasks *t = stall_tasks_new();
    stall_task mine = task("t-mine", 5, "ann", T0 + 1), any = task("t-any", 3, NULL, T0 + 2);
    stall_tasks_offer(t, &mine);
    stall_tasks_offer(t, &any);
    bool changed;
    assert_string_equal(stall_tasks_claim(t, "ann", "job-1", T0 + 10, &changed)->id, "t-mine");
    assert_string_equal(stall_tasks_claim(t, "ann", "job-2", T0 + 11, &changed)->id, "t-any");
    assert_int_equal(t->n_open, 0);
    t = roundtrip(t);
    assert_true(stall_tasks_release(t, "job-2"));
    assert_false(stall_tasks_release(t, "job-2"));
    assert_false(stall_tasks_release(t, "job-never"));
    assert_int_equal(t->n_claimed, 1);
    assert_int_equal(t->n_open, 1);
    /* back as offered: for anyone again, so bob can take it */
    assert_string_equal(t->open[0].agent, "");
    assert_int_equal(t->open[0].ts, T0 + 2);
    assert_int_equal(t->open[0].priority, 3);
    assert_string_equal(t->open[0].title, "title of t-any");
    assert_string_equal(stall_tasks_claim(t, "bob", "job-b", T0 + 20, &changed)->id, "t-any");
    /* ann's own task comes back as ann's: bob never gets it */
    assert_true(stall_tasks_release(t, "job-1"));
    assert_string_equal(t->open[0].agent, "ann");
    assert_null(stall_tasks_claim(t, "bob", "job-b2", T0 + 21, &changed));
    assert_string_equal(stall_tasks_claim(t, "ann", "job-3", T0 + 22, &changed)->id, "t-mine");
    stall_tasks_free(t);
}

/* A pool record written before claims kept the task's agent and ts (six
 * items per claim) still reads; its claims release as tasks for anyone. */
static void test_release_of_an_old_record(void **state)
{
    (void)state;
    char err[80];
    stall_tasks *t = stall_tasks_from_json(
        "{\"open\":[],\"claimed\":[[\"t1\",\"T\",4,\"ann\",\"job-1\",100]]}", err,
        sizeof err);
    assert_non_null(t);
    assert_true(stall_tasks_release(t, "job-1"));
    assert_int_equal(t->n_open, 1);
    assert_string_equal(t->open[0].agent, "");
    assert_int_equal(t->open[0].priority, 4);
    stall_tasks_free(t);
    assert_null(stall_tasks_from_json(
        "{\"open\":[],\"claimed\":[[\"t1\",\"T\",4,\"ann\",\"job-1\",100,\"\"]]}", err,
        sizeof err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_order),
        cmocka_unit_test(test_idempotent_and_not_reoffered),
        cmocka_unit_test(test_top_and_full),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_release_of_an_old_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
