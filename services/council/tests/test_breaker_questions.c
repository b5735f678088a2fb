/* test_breaker_questions.c - the circuit breaker's counting and reset,
 * question priority order and expiry (by time, and all at a session's
 * end). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "council.h"

static void three_in_a_row_trip(void **st)
{
    (void)st;
    council_breaker b;
    council_breaker_reset(&b);
    assert_false(council_breaker_record(&b, COUNCIL_ACT_REFLECT));
    assert_false(council_breaker_record(&b, COUNCIL_ACT_REFLECT));
    assert_true(council_breaker_record(&b, COUNCIL_ACT_REFLECT));
}

static void a_different_type_breaks_the_run(void **st)
{
    (void)st;
    council_breaker b;
    council_breaker_reset(&b);
    assert_false(council_breaker_record(&b, COUNCIL_ACT_NOTE));
    assert_false(council_breaker_record(&b, COUNCIL_ACT_NOTE));
    assert_false(council_breaker_record(&b, COUNCIL_ACT_SEARCH));
    assert_false(council_breaker_record(&b, COUNCIL_ACT_NOTE));
    assert_false(council_breaker_record(&b, COUNCIL_ACT_NOTE));
    assert_true(council_breaker_record(&b, COUNCIL_ACT_NOTE));
    /* keeps tripping while the same type goes on */
    assert_true(council_breaker_record(&b, COUNCIL_ACT_NOTE));
}

static void reset_starts_over(void **st)
{
    (void)st;
    council_breaker b;
    council_breaker_reset(&b);
    council_breaker_record(&b, COUNCIL_ACT_SLEEP);
    council_breaker_record(&b, COUNCIL_ACT_SLEEP);
    council_breaker_reset(&b);
    assert_false(council_breaker_record(&b, COUNCIL_ACT_SLEEP));
    assert_false(council_breaker_record(&b, COUNCIL_ACT_SLEEP));
    assert_true(council_breaker_record(&b, COUNCIL_ACT_SLEEP));
}

static void priority_order(void **st)
{
    (void)st;
    council_questions q;
    memset(&q, 0, sizeof q);
    council_questions_add(&q, "a", "low", 3, 2, 1, 1000, 5000);
    council_questions_add(&q, "b", "urgent", 6, 9, 1, 2000, 5000);
    council_questions_add(&q, "c", "default", 7, 5, 1, 3000, 5000);
    council_questions_add(&q, "d", "urgent too", 10, 9, 1, 4000, 5000);
    int idx[COUNCIL_QUESTIONS_MAX];
    int n = council_questions_pending(&q, idx, COUNCIL_QUESTIONS_MAX);
    assert_int_equal(n, 4);
    assert_string_equal(q.v[idx[0]].id, "b"); /* 9, older */
    assert_string_equal(q.v[idx[1]].id, "d"); /* 9, newer */
    assert_string_equal(q.v[idx[2]].id, "c");
    assert_string_equal(q.v[idx[3]].id, "a");
    /* priorities are clamped to 1..10 */
    council_question *x = council_questions_add(&q, "e", "x", 1, 42, 1, 5000, 5000);
    assert_int_equal(x->priority, 10);
}

static void expiry(void **st)
{
    (void)st;
    council_questions q;
    memset(&q, 0, sizeof q);
    council_questions_add(&q, "a", "first", 5, 5, 1, 1000, 1000);  /* expires 2000 */
    council_questions_add(&q, "b", "second", 6, 5, 1, 1500, 1000); /* expires 2500 */
    assert_int_equal(council_questions_next_expiry(&q), 2000);
    assert_int_equal(council_questions_expire(&q, 1999), 0);
    assert_int_equal(council_questions_expire(&q, 2000), 1);
    assert_int_equal(q.v[0].status, COUNCIL_Q_EXPIRED);
    assert_int_equal(council_questions_next_expiry(&q), 2500);
    q.v[1].status = COUNCIL_Q_ANSWERED;
    assert_int_equal(council_questions_next_expiry(&q), 0);
    assert_int_equal(council_questions_expire(&q, 99999), 0); /* answered never expires */
}

/* At a session's end every pending question expires then; settled ones
 * keep their state and times. */
static void expire_all_at_the_end(void **st)
{
    (void)st;
    council_questions q;
    memset(&q, 0, sizeof q);
    council_questions_add(&q, "a", "first", 5, 5, 1, 1000, 10000); /* expires 11000 */
    council_questions_add(&q, "b", "second", 6, 5, 1, 1500, 10000);
    council_questions_add(&q, "c", "third", 5, 5, 1, 1600, 100);   /* expires 1700 */
    q.v[1].status = COUNCIL_Q_ANSWERED;
    assert_int_equal(council_questions_expire_all(&q, 3000), 2);
    assert_int_equal(q.v[0].status, COUNCIL_Q_EXPIRED);
    assert_int_equal(q.v[0].expires_at, 3000);
    assert_int_equal(q.v[1].status, COUNCIL_Q_ANSWERED);
    assert_int_equal(q.v[1].expires_at, 11500);
    assert_int_equal(q.v[2].status, COUNCIL_Q_EXPIRED);
    assert_int_equal(q.v[2].expires_at, 1700); /* already due: its own time */
    assert_int_equal(council_questions_next_expiry(&q), 0);
    assert_int_equal(council_questions_expire_all(&q, 4000), 0);
}

static void full_list_drops_settled_first(void **st)
{
    (void)st;
    council_questions q;
    memset(&q, 0, sizeof q);
    char id[8];
    for (int i = 0; i < COUNCIL_QUESTIONS_MAX; i++) {
        assert_int_equal(council_questions_victim(&q), -1); /* room left */
        snprintf(id, sizeof id, "q%d", i);
        council_questions_add(&q, id, "x", 1, 5, 1, i, 100000);
    }
    assert_int_equal(council_questions_victim(&q), 0); /* all pending: the oldest */
    q.v[3].status = COUNCIL_Q_ANSWERED;
    assert_int_equal(council_questions_victim(&q), 3);
    council_questions_add(&q, "new", "y", 1, 5, 1, 100, 100000);
    assert_int_equal(q.n, COUNCIL_QUESTIONS_MAX);
    assert_null(council_questions_find(&q, "q3"));
    assert_non_null(council_questions_find(&q, "q0"));
    assert_non_null(council_questions_find(&q, "new"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(three_in_a_row_trip),
        cmocka_unit_test(a_different_type_breaks_the_run),
        cmocka_unit_test(reset_starts_over),
        cmocka_unit_test(priority_order),
        cmocka_unit_test(expiry),
        cmocka_unit_test(expire_all_at_the_end),
        cmocka_unit_test(full_list_drops_settled_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
