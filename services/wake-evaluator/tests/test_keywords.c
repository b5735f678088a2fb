/* test_keywords.c - the rules tier's reading of text: urgent keywords
 * anywhere in the text (case-insensitive, as specified), @mentions with
 * word boundaries, domain words as whole words, and the rules' order
 * (mention, human, keyword). */
#include <ctype.h>
#include "wk_test.h"

static void keyword_edges(void **state)
{
    (void)state;
    /* as specified: text.toLowerCase().includes(kw), inside words too */
    assert_string_equal(wake_urgent_keyword("that was helpful"), "help");
    assert_string_equal(wake_urgent_keyword("the build is BROKEN"), "broken");
    assert_string_equal(wake_urgent_keyword("help!"), "help");
    assert_string_equal(wake_urgent_keyword("Help me"), "help");
    assert_string_equal(wake_urgent_keyword("self-help book"), "help");
    assert_string_equal(wake_urgent_keyword("(down)"), "down");
    assert_string_equal(wake_urgent_keyword("prod is down."), "down");
    assert_string_equal(wake_urgent_keyword("shutdown complete"), "down");
    assert_string_equal(wake_urgent_keyword("planned Downtime"), "down");
    assert_string_equal(wake_urgent_keyword("two errors"), "error");
    assert_string_equal(wake_urgent_keyword("need it URGENTLY"), "urgent");
    assert_string_equal(wake_urgent_keyword("help_desk"), "help");
    assert_string_equal(wake_urgent_keyword("help\xc3\xa9"), "help");
    assert_string_equal(wake_urgent_keyword("Tests FAILED"), "failed");
    assert_string_equal(wake_urgent_keyword("EMERGENCY: prod"), "emergency");
    assert_string_equal(wake_urgent_keyword("urgent"), "urgent");
    assert_string_equal(wake_urgent_keyword("error 500"), "error");
    /* several: the first of the list, wherever it is in the text */
    assert_string_equal(wake_urgent_keyword("down, help, emergency"), "emergency");
    assert_string_equal(wake_urgent_keyword("broken and failed"), "failed");
    /* a keyword cut by the end of the text is not there */
    assert_null(wake_urgent_keyword("emergenc"));
    assert_null(wake_urgent_keyword("How was your weekend?"));
    assert_null(wake_urgent_keyword("dow n, hel p"));
    assert_null(wake_urgent_keyword(""));
    assert_null(wake_urgent_keyword(NULL));
    /* the specified list, in order */
    const char *want[] = {"emergency", "urgent", "help", "error", "failed", "down", "broken"};
    for (int i = 0; i < 7; i++)
        assert_string_equal(WAKE_URGENT_KEYWORDS[i], want[i]);
    assert_null(WAKE_URGENT_KEYWORDS[7]);
}

/* The reference: the text lowercased (ASCII), then each keyword of the
 * list in turn looked for anywhere in it, as the specified includes(kw). */
static const char *keyword_by_reference(const char *text)
{
    char low[256];
    size_t n = strlen(text);
    assert_true(n < sizeof low);
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)text[i]);
    for (int i = 0; WAKE_URGENT_KEYWORDS[i]; i++)
        if (strstr(low, WAKE_URGENT_KEYWORDS[i]))
            return WAKE_URGENT_KEYWORDS[i];
    return NULL;
}

/* The one-pass search answers as the reference on texts with the
 * keywords' letters next to the bytes a case fold by OR 0x20 could
 * confuse with them ('@' '[' '`' '{', digits, UTF-8 bytes). */
static void keywords_as_the_reference(void **state)
{
    (void)state;
    const char *texts[] = {"", "@help", "[down]", "`error`", "{broken}", "DoWn", "hElP",
                           "\xc3\xa9mergency \xc4\x85rgent", "h\xc5\x82lp help", "e@rror",
                           "urgen", "xurgenty", "F@ILED failed", "bROKEn12", "d0wn down",
                           "ER\x52OR", "emergencyurgent", "\xe5\xa4\x9a help\xe5",
                           "nothing here", "EMERGENC", "eerror", "hhelp", "ddown"};
    int found = 0;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        const char *want = keyword_by_reference(texts[i]);
        const char *got = wake_urgent_keyword(texts[i]);
        if (want)
            assert_string_equal(got, want);
        else
            assert_null(got);
        found += want != NULL;
    }
    assert_true(found >= 15); /* the table holds real matches */
}

static void mentions(void **state)
{
    (void)state;
    assert_true(wake_text_mentions("hey @ann, look", "ann"));
    assert_true(wake_text_mentions("@ANN please", "ann"));
    assert_true(wake_text_mentions("ask @ann.", "ann"));
    assert_false(wake_text_mentions("ask @ann-bot", "ann"));
    assert_false(wake_text_mentions("ask @anna", "ann"));
    assert_false(wake_text_mentions("mail bob@ann.org", "ann"));
    assert_false(wake_text_mentions("ann without at", "ann"));
    assert_true(wake_text_mentions("@Helper AI can you", "Helper AI"));
}

static void domain_words(void **state)
{
    (void)state;
    assert_true(wake_text_has_domain("TypeScript generics", "typescript"));
    assert_false(wake_text_has_domain("typescripts", "typescript"));
    assert_true(wake_text_has_domain("I love c++ a lot", "c++"));
    assert_true(wake_text_has_domain("machine learning rocks", "machine learning"));
    assert_false(wake_text_has_domain("no", ""));
    /* a domain's '-' and '_' are read as spaces too, as floor-control does */
    assert_true(wake_text_has_domain("a Machine Learning question", "machine-learning"));
    assert_true(wake_text_has_domain("code review please", "code_review"));
    assert_true(wake_text_has_domain("machine-learning", "machine-learning"));
    assert_false(wake_text_has_domain("machinelearning", "machine-learning"));
}

static void format_ago(void **state)
{
    (void)state;
    char ago[32];
    wake_format_ago(500, ago, sizeof ago);
    assert_string_equal(ago, "just now");
    wake_format_ago(45000, ago, sizeof ago);
    assert_string_equal(ago, "45s ago");
    wake_format_ago(12 * MIN + 5000, ago, sizeof ago);
    assert_string_equal(ago, "12 min ago");
    wake_format_ago(3 * 60 * MIN, ago, sizeof ago);
    assert_string_equal(ago, "3 h ago");
    wake_format_ago(72 * 60 * MIN, ago, sizeof ago);
    assert_string_equal(ago, "3 days ago");
}

static bool rules(const char *persona, const char *text, wake_sender type, const char *mention,
                  char *why)
{
    const char *m[1] = {mention};
    wake_rules_in in = {persona, "", text, type, mention ? m : NULL, mention ? 1 : 0};
    bool wake;
    wake_rules_decide(&in, &wake, why, 200);
    return wake;
}

static void rules_tier(void **state)
{
    (void)state;
    char why[200];
    assert_true(rules("ann", "hi @ann", WAKE_SENDER_AI, NULL, why));
    assert_string_equal(why, "rules: @mention of ann");
    assert_true(rules("ann", "hi", WAKE_SENDER_AI, "ann", why)); /* mentions array */
    assert_false(rules("ann", "hi", WAKE_SENDER_AI, "bob", why));
    assert_true(rules("ann", "how was your weekend?", WAKE_SENDER_HUMAN, NULL, why));
    assert_string_equal(why, "rules: message from a human");
    assert_true(rules("ann", "deploy FAILED", WAKE_SENDER_AI, NULL, why));
    assert_string_equal(why, "rules: urgent keyword 'failed'");
    assert_true(rules("ann", "that was helpful", WAKE_SENDER_AI, NULL, why));
    assert_string_equal(why, "rules: urgent keyword 'help'");
    assert_false(rules("ann", "nice weather today", WAKE_SENDER_AI, NULL, why));
    assert_false(rules("ann", "system notice", WAKE_SENDER_SYSTEM, NULL, why));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keyword_edges),
        cmocka_unit_test(keywords_as_the_reference),
        cmocka_unit_test(mentions),
        cmocka_unit_test(domain_words),
        cmocka_unit_test(format_ago),
        cmocka_unit_test(rules_tier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
