/* Reading message text: @mentions with word boundaries, the @self command
 * language, and how thresholds are written. */
#include "dm_test.h"

static void mentions_have_word_boundaries(void **state)
{
    (void)state;
    assert_true(dormancy_text_mentions("@ann can you help?", "ann"));
    assert_true(dormancy_text_mentions("hey @Ann, look", "ann"));
    assert_true(dormancy_text_mentions("thanks @ann.", "ann"));
    assert_true(dormancy_text_mentions("(@ann)", "ann"));
    assert_true(dormancy_text_mentions("@helper-ai please", "helper-ai"));
    assert_false(dormancy_text_mentions("@annie hi", "ann"));
    assert_false(dormancy_text_mentions("@ann-bot hi", "ann"));
    assert_false(dormancy_text_mentions("@ann.v2 hi", "ann"));
    assert_false(dormancy_text_mentions("mail ann@ann.org", "ann"));
    assert_false(dormancy_text_mentions("ann without at", "ann"));
    assert_false(dormancy_text_mentions(NULL, "ann"));
    assert_false(dormancy_text_mentions("@", ""));
}

static void self_commands_parse(void **state)
{
    (void)state;
    dormancy_self_cmd c = dormancy_self_parse("ok. @self dormant mention-only", T0, 0);
    assert_int_equal(c.kind, DORMANCY_SELF_DORMANT);
    assert_int_equal(c.level, DORMANCY_MENTION_ONLY);
    assert_int_equal(c.until, 0);
    c = dormancy_self_parse("@SELF Dormant Human-Only.", T0, 0);
    assert_int_equal(c.kind, DORMANCY_SELF_DORMANT);
    assert_int_equal(c.level, DORMANCY_HUMAN_ONLY);
    c = dormancy_self_parse("@self dormant sleep for 1h", T0, 0);
    assert_int_equal(c.level, DORMANCY_SLEEP);
    assert_int_equal(c.until, T0 + 3600000);
    c = dormancy_self_parse("@self dormant sleep for 1h30m", T0, 0);
    assert_int_equal(c.until, T0 + 5400000);
    c = dormancy_self_parse("@self dormant sleep for 90s", T0, 0);
    assert_int_equal(c.until, T0 + 90000);
    c = dormancy_self_parse("@self dormant sleep for 2 hours", T0, 0);
    assert_int_equal(c.until, T0 + 7200000);
    c = dormancy_self_parse("@self dormant sleep for 1.5h", T0, 0);
    assert_int_equal(c.until, T0 + 5400000);
    assert_int_equal(dormancy_self_parse("@self awake", T0, 0).kind, DORMANCY_SELF_AWAKE);
    assert_int_equal(dormancy_self_parse("@self status please", T0, 0).kind, DORMANCY_SELF_STATUS);
    assert_int_equal(dormancy_self_parse("no command here", T0, 0).kind, DORMANCY_SELF_NONE);
    assert_int_equal(dormancy_self_parse("@selfish", T0, 0).kind, DORMANCY_SELF_NONE);
    assert_int_equal(dormancy_self_parse("@self dance", T0, 0).kind, DORMANCY_SELF_BAD);
    assert_int_equal(dormancy_self_parse("@self dormant banana", T0, 0).kind, DORMANCY_SELF_BAD);
    assert_int_equal(dormancy_self_parse("@self dormant active", T0, 0).kind, DORMANCY_SELF_BAD);
    assert_int_equal(dormancy_self_parse("@self dormant sleep for a while", T0, 0).kind,
                     DORMANCY_SELF_BAD);
    assert_int_equal(dormancy_self_parse("@self dormant sleep until later", T0, 0).kind,
                     DORMANCY_SELF_BAD);
    assert_int_equal(dormancy_self_parse("@self", T0, 0).kind, DORMANCY_SELF_BAD);
}

static void until_clock_time_is_the_next_one(void **state)
{
    (void)state;
    /* T0 = 2023-11-14T22:13:20Z */
    int64_t day = T0 - T0 % 86400000;
    dormancy_self_cmd c = dormancy_self_parse("@self dormant sleep until 17:00", T0, 0);
    assert_int_equal(c.kind, DORMANCY_SELF_DORMANT);
    assert_int_equal(c.until, day + 86400000 + 17 * 3600000); /* tomorrow 17:00 UTC */
    c = dormancy_self_parse("@self dormant sleep until 23:30", T0, 0);
    assert_int_equal(c.until, day + 23 * 3600000 + 30 * 60000); /* later today */
    c = dormancy_self_parse("@self dormant sleep until 5pm", T0, 0);
    assert_int_equal(c.until, day + 86400000 + 17 * 3600000);
    c = dormancy_self_parse("@self dormant sleep until 9:15 am", T0, 0);
    assert_int_equal(c.until, day + 86400000 + 9 * 3600000 + 15 * 60000);
    /* at UTC+2 it is already 00:13 on the 15th: 17:00 local is 15:00Z */
    c = dormancy_self_parse("@self dormant sleep until 17:00", T0, 120);
    assert_int_equal(c.until, day + 86400000 + 15 * 3600000);
    assert_int_equal(dormancy_self_parse("@self dormant sleep until 25:00", T0, 0).kind,
                     DORMANCY_SELF_BAD);
    assert_int_equal(dormancy_self_parse("@self dormant sleep until 17", T0, 0).kind,
                     DORMANCY_SELF_BAD);
}

static void durations_are_written_for_people(void **state)
{
    (void)state;
    char b[32];
    dormancy_format_duration(300000, b, sizeof b);
    assert_string_equal(b, "5min");
    dormancy_format_duration(180000, b, sizeof b);
    assert_string_equal(b, "3min");
    dormancy_format_duration(90000, b, sizeof b);
    assert_string_equal(b, "90s");
    dormancy_format_duration(3000, b, sizeof b);
    assert_string_equal(b, "3s");
    dormancy_format_duration(250, b, sizeof b);
    assert_string_equal(b, "250ms");
    dormancy_format_duration(1500, b, sizeof b);
    assert_string_equal(b, "1500ms");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mentions_have_word_boundaries),
        cmocka_unit_test(self_commands_parse),
        cmocka_unit_test(until_clock_time_is_the_next_one),
        cmocka_unit_test(durations_are_written_for_people),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
