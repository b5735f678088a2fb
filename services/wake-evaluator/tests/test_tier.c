/* test_tier.c - getIntelligenceTier: explicit tier first, then
 * parameters > 70e9 smart, > 7e9 mid, otherwise (and unknown) basic. */
#include "wk_test.h"

static void explicit_tier_wins(void **state)
{
    (void)state;
    assert_int_equal(wake_tier_select("smart", 1), WAKE_TIER_SMART);
    assert_int_equal(wake_tier_select("mid", 100000000000LL), WAKE_TIER_MID);
    assert_int_equal(wake_tier_select("basic", 100000000000LL), WAKE_TIER_BASIC);
}

static void parameters_boundaries_are_strict(void **state)
{
    (void)state;
    assert_int_equal(wake_tier_select(NULL, 70000000001LL), WAKE_TIER_SMART);
    assert_int_equal(wake_tier_select(NULL, 70000000000LL), WAKE_TIER_MID); /* not "> 70B" */
    assert_int_equal(wake_tier_select(NULL, 7000000001LL), WAKE_TIER_MID);
    assert_int_equal(wake_tier_select(NULL, 7000000000LL), WAKE_TIER_BASIC);
    assert_int_equal(wake_tier_select(NULL, 3000000000LL), WAKE_TIER_BASIC);
    assert_int_equal(wake_tier_select(NULL, 0), WAKE_TIER_BASIC);
}

static void unknown_is_basic(void **state)
{
    (void)state;
    assert_int_equal(wake_tier_select(NULL, -1), WAKE_TIER_BASIC);
    assert_int_equal(wake_tier_select("", -1), WAKE_TIER_BASIC);
    /* an invalid tier name falls through to the model size */
    assert_int_equal(wake_tier_select("genius", 80000000000LL), WAKE_TIER_SMART);
    assert_int_equal(wake_tier_select("SMART", -1), WAKE_TIER_BASIC);
}

static void persona_tier_from_meta(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", NULL, 175000000000LL, NULL, 0);
    wk_persona(t, "b", "mid", -1, NULL, 0);
    wk_persona(t, "c", NULL, -1, NULL, 0);
    wk_roundtrip(t);
    assert_int_equal(wake_persona_tier(wake_room_find(t->r, "a")), WAKE_TIER_SMART);
    assert_int_equal(wake_persona_tier(wake_room_find(t->r, "b")), WAKE_TIER_MID);
    assert_int_equal(wake_persona_tier(wake_room_find(t->r, "c")), WAKE_TIER_BASIC);
    wk_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(explicit_tier_wins),
        cmocka_unit_test(parameters_boundaries_are_strict),
        cmocka_unit_test(unknown_is_basic),
        cmocka_unit_test(persona_tier_from_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
