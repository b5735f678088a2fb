/* test_interpret_after_llm.c - once a wake job's LLM call is over, the core
 * chooses: the model's answer when it reads as a decision, the rules
 * (via fallback, saying why) otherwise; latency, tokens and the call's
 * status are carried into the decision. Linked with the real readers. */
#include "llm_reader.h"
#include "wk_test.h"

static wake_job job(const char *text)
{
    wake_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.job, sizeof j.job, "m1:wake:sre");
    snprintf(j.room, sizeof j.room, "ops");
    snprintf(j.persona, sizeof j.persona, "sre");
    snprintf(j.message_id, sizeof j.message_id, "m1");
    j.tier = WAKE_TIER_SMART;
    j.threshold = 0.7;
    j.sender_type = WAKE_SENDER_AI; /* the rules wake on every human message */
    j.text = (char *)text;
    j.enqueued = 1000;
    return j;
}

static wake_llm_answer answer(const char *content)
{
    wake_llm_answer a = {true, "ok", NULL, content, content ? strlen(content) : 0, false, 120, 400};
    return a;
}

static void the_models_answer_is_used_when_it_reads(void **state)
{
    (void)state;
    wake_job j = job("lunch?");
    wake_llm_answer a = answer("{\"shouldWake\": true, \"reason\": \"needs an expert\", \"confidence\": 0.9}");
    wake_decision d;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1800, &d);
    assert_int_equal(d.via, WAKE_VIA_LLM);
    assert_true(d.should_wake); /* the rules would not wake on "lunch?" */
    assert_string_equal(d.reason, "needs an expert");
    assert_string_equal(d.id, "m1:wake:sre");
    assert_string_equal(d.persona, "sre");
    assert_string_equal(d.room, "ops");
    assert_string_equal(d.message_id, "m1");
    assert_int_equal(d.latency_ms, 800); /* from the enqueue */
    assert_int_equal(d.llm_latency_ms, 400);
    assert_int_equal(d.tokens, 120);
    assert_string_equal(d.llm_status, "ok");
}

static void a_failed_call_falls_back_to_the_rules(void **state)
{
    (void)state;
    wake_job j = job("the deploy is down");
    wake_llm_answer a = {false, "timeout", "no answer in 400 ms", NULL, 0, false, 0, 400};
    wake_decision d;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_FALLBACK);
    assert_true(d.should_wake);
    assert_string_equal(d.reason, "LLM timeout: no answer in 400 ms; rules: urgent keyword 'down'");
    assert_int_equal(d.tokens, -1); /* failed, no usage */
    assert_string_equal(d.llm_status, "timeout");
    assert_int_equal(d.latency_ms, 500);
    assert_true(d.confidence == 1.0);
}

static void an_unusable_answer_falls_back_and_says_why(void **state)
{
    (void)state;
    wake_job j = job("lunch?");
    wake_llm_answer a = answer("I think maybe, not sure.");
    wake_decision d;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_FALLBACK);
    assert_false(d.should_wake);
    assert_non_null(strstr(d.reason, "LLM answer unusable: "));
    assert_int_equal(d.tokens, 120); /* spent all the same */
    assert_string_equal(d.llm_status, "ok");

    a = answer("{\"shouldWake\": true, \"reason\": \"cut");
    a.truncated = true;
    a.tokens = 0;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_FALLBACK);
    assert_non_null(strstr(d.reason, "LLM answer unusable (output truncated): "));
    assert_int_equal(d.tokens, 0); /* answered, usage not reported */

    a = answer(NULL); /* a completion without content */
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_FALLBACK);
}

/* A confidence the model put on no sound scale (1.5: 1.5 %? 0..2?) is not
 * guessed at: the answer is unusable and the rules decide, saying so. */
static void an_out_of_range_confidence_falls_back(void **state)
{
    (void)state;
    wake_job j = job("lunch?");
    wake_llm_answer a = answer("{\"shouldWake\": true, \"reason\": \"sure\", \"confidence\": 1.5}");
    wake_decision d;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_FALLBACK);
    assert_string_equal(d.llm_status, "ok");
    assert_false(d.should_wake); /* the rules: an AI's "lunch?" */
    assert_true(d.confidence == 1.0);
    assert_string_equal(d.reason, "LLM answer unusable: confidence out of range (neither 0..1 "
                                  "nor a whole percentage 2..100); rules: no @mention, not from "
                                  "a human, no urgent keyword: stay asleep");
    j.text = "the deploy is down";
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_FALLBACK);
    assert_true(d.should_wake);
}

static void below_the_threshold_the_model_still_decides(void **state)
{
    (void)state;
    wake_job j = job("the deploy is down"); /* the rules would wake */
    wake_llm_answer a = answer("{\"shouldWake\": true, \"reason\": \"maybe\", \"confidence\": 0.5}");
    wake_decision d;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.via, WAKE_VIA_LLM);
    assert_false(d.should_wake); /* smart tier: 0.5 is not above 0.7 */
}

static void latency_without_an_enqueue_time_is_the_calls(void **state)
{
    (void)state;
    wake_job j = job("x");
    j.enqueued = 0;
    wake_llm_answer a = answer("{\"shouldWake\": false, \"reason\": \"no\", \"confidence\": 0.9}");
    wake_decision d;
    wake_decide_after_llm(&WAKE_LLM_READER, &j, &a, 1500, &d);
    assert_int_equal(d.latency_ms, 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_models_answer_is_used_when_it_reads),
        cmocka_unit_test(a_failed_call_falls_back_to_the_rules),
        cmocka_unit_test(an_unusable_answer_falls_back_and_says_why),
        cmocka_unit_test(an_out_of_range_confidence_falls_back),
        cmocka_unit_test(below_the_threshold_the_model_still_decides),
        cmocka_unit_test(latency_without_an_enqueue_time_is_the_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
