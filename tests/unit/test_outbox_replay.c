/* test_outbox_replay.c - the ring of recently acknowledged outbox entries
 * (libshared/src/outbox_replay.h): order kept across growth, expiry by
 * acknowledgement time, the bound, and partial drops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../libshared/src/outbox_replay.h"

static vigil_outbox_raw raw_of(int i)
{
    vigil_outbox_raw r = { 0 };
    char buf[32];
    int n = snprintf(buf, sizeof buf, "entry-%d", i);
    r.buf = strdup(buf);
    assert_non_null(r.buf);
    r.len = (size_t)n;
    return r;
}

static void assert_entry(const vigil_replay *r, size_t i, int want)
{
    char buf[32];
    snprintf(buf, sizeof buf, "entry-%d", want);
    const vigil_outbox_raw *e = vigil_replay_at(r, i);
    assert_non_null(e);
    assert_int_equal(e->len, strlen(buf));
    assert_memory_equal(e->buf, buf, e->len);
}

static void off_when_window_is_zero(void **state)
{
    (void)state;
    assert_null(vigil_replay_new(0, 10));
    /* A disabled ring is a NULL one, and every call takes it. */
    vigil_outbox_raw raw = raw_of(1);
    vigil_replay_add(NULL, &raw, 0);
    assert_int_equal(vigil_replay_count(NULL), 0);
    vigil_replay_expire(NULL, 0);
    vigil_replay_drop(NULL, 1);
    vigil_replay_free(NULL);
    free(raw.buf);
}

static void keeps_order_across_growth_and_takes_the_text(void **state)
{
    (void)state;
    vigil_replay *r = vigil_replay_new(1000, 100000);
    assert_non_null(r);
    for (int i = 0; i < 1000; i++) {
        vigil_outbox_raw raw = raw_of(i);
        vigil_replay_add(r, &raw, 5000);
        assert_null(raw.buf); /* moved, not copied */
        assert_int_equal(raw.len, 0);
        if (i == 10)
            vigil_replay_drop(r, 5); /* head moves before the ring grows */
    }
    assert_int_equal(vigil_replay_count(r), 995);
    for (size_t i = 0; i < 995; i++)
        assert_entry(r, i, (int)i + 5);
    assert_null(vigil_replay_at(r, 995));
    vigil_replay_free(r);
}

static void expires_by_acknowledgement_time(void **state)
{
    (void)state;
    vigil_replay *r = vigil_replay_new(3000, 100);
    for (int i = 0; i < 10; i++) {
        vigil_outbox_raw raw = raw_of(i);
        vigil_replay_add(r, &raw, 1000 + i * 1000); /* acked at 1 s .. 10 s */
    }
    vigil_replay_expire(r, 10000); /* keep acked at >= 7 s */
    assert_int_equal(vigil_replay_count(r), 4);
    assert_entry(r, 0, 6);
    assert_entry(r, 3, 9);
    vigil_replay_expire(r, 10000); /* idempotent */
    assert_int_equal(vigil_replay_count(r), 4);
    vigil_replay_expire(r, 100000);
    assert_int_equal(vigil_replay_count(r), 0);
    /* Usable again after it gave its memory back. */
    vigil_outbox_raw raw = raw_of(42);
    vigil_replay_add(r, &raw, 100000);
    assert_entry(r, 0, 42);
    vigil_replay_free(r);
}

static void drops_the_oldest_beyond_the_bound(void **state)
{
    (void)state;
    vigil_replay *r = vigil_replay_new(3000, 100);
    for (int i = 0; i < 250; i++) {
        vigil_outbox_raw raw = raw_of(i);
        vigil_replay_add(r, &raw, 0);
    }
    assert_int_equal(vigil_replay_count(r), 100);
    assert_int_equal(vigil_replay_overflowed(r), 150);
    assert_entry(r, 0, 150);
    assert_entry(r, 99, 249);
    vigil_replay_drop(r, 30);
    assert_entry(r, 0, 180);
    vigil_replay_drop(r, 1000); /* more than held */
    assert_int_equal(vigil_replay_count(r), 0);
    vigil_replay_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(off_when_window_is_zero),
        cmocka_unit_test(keeps_order_across_growth_and_takes_the_text),
        cmocka_unit_test(expires_by_acknowledgement_time),
        cmocka_unit_test(drops_the_oldest_beyond_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
