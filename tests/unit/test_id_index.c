/* test_id_index.c - ids to small integers (vigil/id_index.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "vigil/id_index.h"

static void test_add_get(void **state)
{
    (void)state;
    vigil_id_index x;
    assert_int_equal(vigil_id_index_init(&x, 3), 0);
    assert_int_equal(vigil_id_index_get(&x, "a"), 0);
    assert_int_equal(vigil_id_index_add(&x, "a", 1), 0);
    assert_int_equal(vigil_id_index_add(&x, "b", 2), 0);
    assert_int_equal(vigil_id_index_get(&x, "a"), 1);
    assert_int_equal(vigil_id_index_get(&x, "b"), 2);
    assert_int_equal(vigil_id_index_get(&x, "c"), 0);
    /* a duplicate keeps the first value and says which */
    assert_int_equal(vigil_id_index_add(&x, "a", 7), 1);
    assert_int_equal(vigil_id_index_get(&x, "a"), 1);
    vigil_id_index_free(&x);
    assert_int_equal(vigil_id_index_get(&x, "a"), 0); /* freed: empty, not a crash */
}

/* Many ids (collisions included): each found with its own value; past
 * the size it was made for, an add is refused instead of looping. */
static void test_many_and_full(void **state)
{
    (void)state;
    enum { N = 5000 };
    static char ids[N][16];
    vigil_id_index x;
    assert_int_equal(vigil_id_index_init(&x, N), 0);
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "p-%d", i);
        assert_int_equal(vigil_id_index_add(&x, ids[i], i + 1), 0);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(vigil_id_index_get(&x, ids[i]), i + 1);
    int refused = 0;
    static char more[N * 4][16];
    for (int i = 0; i < N * 4; i++) {
        snprintf(more[i], sizeof more[i], "q-%d", i);
        if (vigil_id_index_add(&x, more[i], 1) < 0)
            refused++;
    }
    assert_true(refused > 0);
    assert_int_equal(vigil_id_index_get(&x, "p-42"), 43);
    vigil_id_index_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_get),
        cmocka_unit_test(test_many_and_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
