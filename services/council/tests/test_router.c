/* test_router.c - the action router (starts-with on trimmed, case-folded
 * text; keywords inside content never route), the [pN] priority marker
 * and sleep durations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <vigil/json.h>
#include "council.h"

static void expect_route(const char *text, council_action a, const char *content, bool unknown)
{
    council_routed r;
    council_route(text, &r);
    assert_int_equal(r.action, a);
    assert_int_equal(r.unknown, unknown);
    char buf[256];
    memcpy(buf, r.content, r.content_len);
    buf[r.content_len] = '\0';
    assert_string_equal(buf, content);
}

static void every_prefix(void **st)
{
    (void)st;
    expect_route("search: rust async runtimes", COUNCIL_ACT_SEARCH, "rust async runtimes", false);
    expect_route("note: user prefers mornings", COUNCIL_ACT_NOTE, "user prefers mornings", false);
    expect_route("ask user: how did the demo go?", COUNCIL_ACT_ASK, "how did the demo go?", false);
    expect_route("schedule: focus block tomorrow 9:00", COUNCIL_ACT_SCHEDULE,
                 "focus block tomorrow 9:00", false);
    expect_route("research: vector databases", COUNCIL_ACT_RESEARCH, "vector databases", false);
    expect_route("sleep: 10m", COUNCIL_ACT_SLEEP, "10m", false);
    expect_route("reflect: nothing urgent", COUNCIL_ACT_REFLECT, "nothing urgent", false);
}

static void case_and_leading_space(void **st)
{
    (void)st;
    expect_route("   NOTE:   shout  ", COUNCIL_ACT_NOTE, "shout", false);
    expect_route("\n\tAsk User: hi", COUNCIL_ACT_ASK, "hi", false);
    expect_route("Research:x", COUNCIL_ACT_RESEARCH, "x", false);
    expect_route("SLEEP:   10m ", COUNCIL_ACT_SLEEP, "10m", false);
}

static void keywords_inside_content_do_not_route(void **st)
{
    (void)st;
    /* the bug starts-with prevents: a keyword found inside the content */
    expect_route("note: we should search: later and ask user: maybe", COUNCIL_ACT_NOTE,
                 "we should search: later and ask user: maybe", false);
    expect_route("I think we should search: the docs", COUNCIL_ACT_REFLECT,
                 "I think we should search: the docs", true);
    expect_route("asking user: no", COUNCIL_ACT_REFLECT, "asking user: no", true);
    expect_route("ask: the user", COUNCIL_ACT_REFLECT, "ask: the user", true);
    expect_route("search the web", COUNCIL_ACT_REFLECT, "search the web", true);
}

static void unknown_is_reflect_with_warning(void **st)
{
    (void)st;
    council_routed r;
    council_route("email: send the boss a note", &r);
    assert_int_equal(r.action, COUNCIL_ACT_REFLECT);
    assert_true(r.unknown);
    assert_non_null(strstr(r.warning, "email:"));
    assert_non_null(strstr(r.warning, "reflect:"));
    council_route(NULL, &r);
    assert_true(r.unknown);
    assert_int_equal(r.content_len, 0);
    assert_non_null(strstr(r.warning, "empty"));
    council_route("   ", &r);
    assert_true(r.unknown);
}

/* An action that takes an object is not taken without one: a bare "ask
 * user:" (or one with only its priority marker) would queue an empty
 * question, a bare "search:" an empty request. Spaces after the prefix
 * are no object either (and never read past the trimmed text). */
static void a_prefix_with_nothing_after_it_is_reflect(void **st)
{
    (void)st;
    const char *bare[] = {"ask user:", "ask user:   ", "ASK USER: [p3]  ", "ask user:[p10]",
                          "search:", "search:    ", "note: \t ", "schedule:", "research:  ",
                          "sleep:", "sleep:   "};
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
        council_routed r;
        council_route(bare[i], &r);
        assert_int_equal(r.action, COUNCIL_ACT_REFLECT);
        assert_true(r.unknown);
        assert_true(r.content_len <= strlen(bare[i]));
        assert_non_null(strstr(r.warning, "nothing to act on"));
        assert_non_null(strstr(r.warning, "reflect:"));
    }
    expect_route("ask user: [p3] ok?", COUNCIL_ACT_ASK, "[p3] ok?", false);
    expect_route("ask user: [p11]", COUNCIL_ACT_ASK, "[p11]", false); /* marker kept: text */
    expect_route("reflect:", COUNCIL_ACT_REFLECT, "", false);
}

static void names_and_prefixes(void **st)
{
    (void)st;
    assert_string_equal(council_action_name(COUNCIL_ACT_ASK), "ask user");
    assert_string_equal(council_action_prefix(COUNCIL_ACT_ASK), "ask user:");
    assert_int_equal(council_action_parse("research"), COUNCIL_ACT_RESEARCH);
    assert_int_equal(council_action_parse("nope"), COUNCIL_ACT_NONE);
}

static void priority_marker(void **st)
{
    (void)st;
    const char *rest;
    assert_int_equal(council_question_priority("[p8] Deploy today?", &rest), 8);
    assert_string_equal(rest, "Deploy today?");
    assert_int_equal(council_question_priority("[P10]urgent", &rest), 10);
    assert_string_equal(rest, "urgent");
    assert_int_equal(council_question_priority("[p1] low", &rest), 1);
    assert_int_equal(council_question_priority("plain question", &rest), 5);
    assert_string_equal(rest, "plain question");
    assert_int_equal(council_question_priority("[p11] too high", &rest), 5);
    assert_string_equal(rest, "[p11] too high");
    assert_int_equal(council_question_priority("[p0] zero", &rest), 5);
    assert_int_equal(council_question_priority("[px] junk", &rest), 5);
    assert_int_equal(council_question_priority("[p7 missing bracket", &rest), 5);
}

static void durations(void **st)
{
    (void)st;
    /* the forms the README documents */
    assert_int_equal(council_parse_duration("10m"), 600000);
    assert_int_equal(council_parse_duration("30 seconds"), 30000);
    assert_int_equal(council_parse_duration("1.5 h"), 5400000);
    assert_int_equal(council_parse_duration("5000ms"), 5000);
    assert_int_equal(council_parse_duration("2"), 120000);
    assert_int_equal(council_parse_duration("0.5"), 30000);
    assert_int_equal(council_parse_duration("for 2 minutes while the user rests"), 120000);
    assert_int_equal(council_parse_duration("10 Minutes."), 600000);
    assert_int_equal(council_parse_duration("1 hr (until the meeting ends)"), 3600000);
    assert_int_equal(council_parse_duration("0m"), 0);
    /* compound, largest unit first */
    assert_int_equal(council_parse_duration("2h30m"), 9000000);
    assert_int_equal(council_parse_duration("2h 30m"), 9000000);
    assert_int_equal(council_parse_duration("1 hour and 30 minutes"), 5400000);
    assert_int_equal(council_parse_duration("1 hour, 30 minutes, and 15 seconds"), 5415000);
    assert_int_equal(council_parse_duration("1m30s500ms"), 90500);
    assert_int_equal(council_parse_duration("for 1h 5m, then check in"), 3900000);
    /* nothing else */
    assert_int_equal(council_parse_duration("a while"), -1);
    assert_int_equal(council_parse_duration("5 fortnights"), -1);
    assert_int_equal(council_parse_duration(""), -1);
    assert_int_equal(council_parse_duration("for"), -1);
    assert_int_equal(council_parse_duration("1e3"), -1);     /* strtod read 1000 minutes */
    assert_int_equal(council_parse_duration("0x10"), -1);    /* strtod read 16 minutes */
    assert_int_equal(council_parse_duration("2h30"), -1);    /* was 2 h: 30 what? */
    assert_int_equal(council_parse_duration("2h 30"), -1);
    assert_int_equal(council_parse_duration("30m 2h"), -1);  /* out of order */
    assert_int_equal(council_parse_duration("1h 1h"), -1);   /* a unit twice */
    assert_int_equal(council_parse_duration("10-20 minutes"), -1);
    assert_int_equal(council_parse_duration("10m-20m"), -1);
    assert_int_equal(council_parse_duration("5 while"), -1); /* a bare number stands alone */
    assert_int_equal(council_parse_duration("5."), -1);
    assert_int_equal(council_parse_duration("-5m"), -1);
    assert_int_equal(council_parse_duration(".5h"), -1);
    assert_int_equal(council_parse_duration("10mx"), -1);
    assert_int_equal(council_parse_duration("10m\xc3\xa9"), -1); /* no break after the unit */
    assert_int_equal(council_parse_duration("99999999999 hours"), -1);
    assert_int_equal(council_parse_duration("1000000000 hours"), 3600000000000000);
}

/* A sleep: the router cannot read is refused as an unknown prefix is:
 * reflect, `unknown`, a warning quoting what was written; one it reads
 * carries its duration. */
static void a_sleep_without_a_duration_is_reflect(void **st)
{
    (void)st;
    council_routed r;
    council_route("sleep: 2h30m", &r);
    assert_int_equal(r.action, COUNCIL_ACT_SLEEP);
    assert_false(r.unknown);
    assert_int_equal(r.sleep_ms, 9000000);
    const char *bad[] = {"sleep: 1e3", "sleep: 2h30", "Sleep: until tomorrow", "sleep: for"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        council_route(bad[i], &r);
        assert_int_equal(r.action, COUNCIL_ACT_REFLECT);
        assert_true(r.unknown);
        assert_int_equal(r.refused, COUNCIL_ACT_SLEEP);
        assert_int_equal(r.sleep_ms, -1);
        assert_non_null(strstr(r.warning, "'sleep:' with no duration understood in '"));
        assert_non_null(strstr(r.warning, bad[i] + 7));
        assert_non_null(strstr(r.warning, "recorded as reflect:"));
    }
    council_route("sleep:", &r);
    assert_int_equal(r.refused, COUNCIL_ACT_SLEEP);
    assert_non_null(strstr(r.warning, "'sleep:' with nothing to act on"));
    council_route("wander: off", &r);
    assert_int_equal(r.refused, COUNCIL_ACT_NONE);
    council_route("note: x", &r);
    assert_false(r.unknown);
    assert_int_equal(r.sleep_ms, -1);
    /* a long text is quoted cut (on a character boundary), with an ellipsis */
    council_route("sleep: whenever \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                  "\xc3\xa9\xc3\xa9\xc3\xa9 the user is back", &r);
    assert_true(r.unknown);
    assert_non_null(strstr(r.warning, "...' (say 10m"));
    assert_int_equal(vigil_utf8_valid(r.warning, strlen(r.warning)), true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_prefix),
        cmocka_unit_test(case_and_leading_space),
        cmocka_unit_test(keywords_inside_content_do_not_route),
        cmocka_unit_test(unknown_is_reflect_with_warning),
        cmocka_unit_test(a_prefix_with_nothing_after_it_is_reflect),
        cmocka_unit_test(names_and_prefixes),
        cmocka_unit_test(priority_marker),
        cmocka_unit_test(durations),
        cmocka_unit_test(a_sleep_without_a_duration_is_reflect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
