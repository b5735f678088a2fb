/* Unit tests of vigil_text (text.h): mentions and whole words, the rules
 * every service uses to read chat text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "vigil/text.h"

static int parse(const char *text, char (*out)[VIGIL_MENTION_NAME_MAX + 1], const char *excl)
{
    return vigil_mentions_parse(text, out, 0, 8, excl);
}

static void mentions_at_start_after_punctuation_and_at_end(void **u)
{
    (void)u;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    assert_int_equal(parse("@Ann hi, (@bob) and @carol.", out, NULL), 3);
    assert_string_equal(out[0], "ann");
    assert_string_equal(out[1], "bob");
    assert_string_equal(out[2], "carol");
}

static void email_addresses_and_self_are_not_mentions(void **u)
{
    (void)u;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    assert_int_equal(parse("mail a@b.com or josé@example.com; @self dormant sleep", out, NULL), 0);
}

static void repeated_and_excluded_names_appear_once_or_not_at_all(void **u)
{
    (void)u;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    assert_int_equal(parse("@ann @ANN @bob @ann", out, "BOB"), 1);
    assert_string_equal(out[0], "ann");
}

static void names_keep_inner_dots_and_dashes_but_not_trailing_ones(void **u)
{
    (void)u;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    assert_int_equal(parse("@ann-bot, @v1.2... @x_y-", out, NULL), 3);
    assert_string_equal(out[0], "ann-bot");
    assert_string_equal(out[1], "v1.2");
    assert_string_equal(out[2], "x_y");
}

static void unicode_around_names(void **u)
{
    (void)u;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    /* emoji and CJK are boundaries; a run into a non-ASCII letter is another word */
    assert_int_equal(parse("👋@ann 日本@bob «@carol» @josé", out, NULL), 3);
    assert_string_equal(out[2], "carol");
}

static void too_long_a_name_is_not_a_mention(void **u)
{
    (void)u;
    char out[8][VIGIL_MENTION_NAME_MAX + 1];
    char text[100] = "@";
    for (int i = 1; i <= 65; i++)
        text[i] = 'a';
    text[66] = '\0';
    assert_int_equal(parse(text, out, NULL), 0);
    text[65] = '\0'; /* 64 characters: fine */
    assert_int_equal(parse(text, out, NULL), 1);
}

static void text_mentions_is_case_insensitive_and_word_bounded(void **u)
{
    (void)u;
    assert_true(vigil_text_mentions("hey @Ann!", "ann"));
    assert_true(vigil_text_mentions("é @ann", "ANN"));
    assert_false(vigil_text_mentions("hey @annie", "ann"));
    assert_false(vigil_text_mentions("josé@ann", "ann"));
    assert_false(vigil_text_mentions("ann", "ann"));
    assert_false(vigil_text_mentions(NULL, "ann"));
}

static void find_mention_gives_the_at_and_allows_self(void **u)
{
    (void)u;
    const char *t = "ok @self dormant sleep, cc @ann";
    assert_ptr_equal(vigil_text_find_mention(t, "self"), t + 3);
    assert_ptr_equal(vigil_text_find_mention(t, "ANN"), t + 27);
    assert_false(vigil_text_mentions(t, "self")); /* a command, never a mention */
    assert_null(vigil_text_find_mention("mail me@self.org", "self"));
}

static void display_names_match_as_whole_words(void **u)
{
    (void)u;
    assert_true(vigil_text_mentions("@Helper AI can you look?", "Helper AI"));
    assert_true(vigil_text_mentions("hi (@helper ai)", "Helper AI"));
    assert_false(vigil_text_mentions("@Helper AIs", "Helper AI"));
    assert_false(vigil_text_mentions("x@Helper AI", "Helper AI"));
}

static void whole_words(void **u)
{
    (void)u;
    assert_true(vigil_text_has_word("Server is down, need help ASAP!", "help"));
    assert_true(vigil_text_has_word("Server is DOWN", "down"));
    assert_true(vigil_text_has_word("BROKEN!", "broken"));
    assert_false(vigil_text_has_word("that was helpful", "help"));
    assert_false(vigil_text_has_word("downtime", "down"));
    assert_false(vigil_text_has_word("errors_logged", "error"));
    assert_false(vigil_text_has_word("errorés", "error"));
    assert_true(vigil_text_has_word("(error)", "error"));
    assert_false(vigil_text_has_word("", "error"));
    /* either case on either side, the first letter included */
    assert_true(vigil_text_has_word("please hElp me", "HELP"));
    assert_true(vigil_text_has_word("go to the 2nd floor", "2ND"));
    assert_false(vigil_text_has_word("please gelp me", "help"));
}

static void ids(void **u)
{
    (void)u;
    assert_true(vigil_text_is_id("a.b_c-D9"));
    assert_false(vigil_text_is_id(""));
    assert_false(vigil_text_is_id("a/b"));
    assert_false(vigil_text_is_id("$x"));
}

/* The quick test never rules out a name the full match finds: every pair
 * of these texts and names is checked both ways. */
static void mention_starts_never_rule_out_a_mention(void **u)
{
    (void)u;
    const char *texts[] = {"", "no at sign", "hi @Ann!", "(@BOB) and @carol.", "a@b.com",
                           "@Helper AI, wake up", "@self dormant sleep", "trailing @",
                           "@josé", "x @\xc3\xa9lise y", "@@ann", "@Zed-9."};
    const char *names[] = {"ann", "Bob", "carol", "b.com", "Helper AI", "helper",
                           "self", "josé", "\xc3\xa9lise", "zed-9", "zoe", "x"};
    int may = 0, mentioned = 0;
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        vigil_mention_starts m;
        vigil_mention_starts_of(&m, texts[t]);
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            bool yes = vigil_text_mentions(texts[t], names[n]);
            bool maybe = vigil_mention_may(&m, names[n]);
            if (yes)
                assert_true(maybe);
            may += maybe;
            mentioned += yes;
        }
    }
    assert_true(mentioned >= 6);      /* the table holds real mentions */
    assert_true(may < 12 * 12 / 2);   /* and rules most pairs out */
    vigil_mention_starts m;
    vigil_mention_starts_of(&m, "hello @Ann");
    assert_true(vigil_mention_may(&m, "ANNA"));
    assert_false(vigil_mention_may(&m, "bob"));
    assert_false(vigil_mention_may(&m, ""));
    vigil_mention_starts_of(&m, NULL);
    assert_false(vigil_mention_may(&m, "ann"));
}

/* A phrase is named as written or with its '-' and '_' read as spaces,
 * always as whole words; an empty one never. */
static void phrases_with_dashes_match_the_words_people_write(void **state)
{
    (void)state;
    assert_true(vigil_text_has_phrase("a Machine Learning question", "machine-learning"));
    assert_true(vigil_text_has_phrase("about machine-learning?", "machine-learning"));
    assert_true(vigil_text_has_phrase("code review, please", "code_review"));
    assert_true(vigil_text_has_phrase("typescript", "typescript"));
    assert_false(vigil_text_has_phrase("machinelearning", "machine-learning"));
    assert_false(vigil_text_has_phrase("machine learnings", "machine-learning"));
    assert_false(vigil_text_has_phrase("anything", ""));
    assert_false(vigil_text_has_phrase("anything", NULL));
    char longp[300];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    longp[5] = '-';
    assert_false(vigil_text_has_phrase("aaaaa aaaa", longp)); /* too long to respell */
}

static void blank_is_nothing_but_spaces_tabs_and_line_ends(void **state)
{
    (void)state;
    assert_true(vigil_text_blank(NULL));
    assert_true(vigil_text_blank(""));
    assert_true(vigil_text_blank(" \t\r\n "));
    assert_false(vigil_text_blank(" a "));
    assert_false(vigil_text_blank("\t.\n"));
    assert_false(vigil_text_blank("\xc2\xa0")); /* a no-break space is a character */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mentions_at_start_after_punctuation_and_at_end),
        cmocka_unit_test(email_addresses_and_self_are_not_mentions),
        cmocka_unit_test(repeated_and_excluded_names_appear_once_or_not_at_all),
        cmocka_unit_test(names_keep_inner_dots_and_dashes_but_not_trailing_ones),
        cmocka_unit_test(unicode_around_names),
        cmocka_unit_test(too_long_a_name_is_not_a_mention),
        cmocka_unit_test(text_mentions_is_case_insensitive_and_word_bounded),
        cmocka_unit_test(find_mention_gives_the_at_and_allows_self),
        cmocka_unit_test(display_names_match_as_whole_words),
        cmocka_unit_test(whole_words),
        cmocka_unit_test(ids),
        cmocka_unit_test(mention_starts_never_rule_out_a_mention),
        cmocka_unit_test(phrases_with_dashes_match_the_words_people_write),
        cmocka_unit_test(blank_is_nothing_but_spaces_tabs_and_line_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
