/* test_mention.c - @name parsing edges: start of text, punctuation,
 * e-mail addresses, repeated and self mentions, unicode around names,
 * length limits, the `mentions` field. */
#include "sim.h"

/* Parses text and returns the names joined by ',' in a static buffer. */
static const char *names(const char *text)
{
    static char buf[4096];
    char out[64][CHAT_ID_MAX + 1];
    int n = chat_mentions_parse(text, out, 64);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        strcat(buf, i ? "," : "");
        strcat(buf, out[i]);
    }
    return buf;
}

static const char *collect(const char *sender, const char *text, const char *const *field, int nf,
                           int max)
{
    static char buf[4096];
    char out[64][CHAT_ID_MAX + 1];
    chat_message m = { .id = "m1", .sender = sender, .sender_type = CHAT_SENDER_AI, .text = text,
                       .mentions = field, .n_mentions = nf };
    int n = chat_mentions_collect(&m, out, max);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        strcat(buf, i ? "," : "");
        strcat(buf, out[i]);
    }
    return buf;
}

static void test_start_and_middle(void **st)
{
    (void)st;
    assert_string_equal(names("@arya hi"), "arya");
    assert_string_equal(names("hi @arya"), "arya");
    assert_string_equal(names("@arya"), "arya");
    assert_string_equal(names("hi\n@arya\tthere"), "arya");
    assert_string_equal(names("@arya @gendry solve X"), "arya,gendry");
    assert_string_equal(names("@r2d2 beep"), "r2d2");
    assert_string_equal(names("no mention here"), "");
    assert_string_equal(names(""), "");
    assert_string_equal(names(NULL), "");
}

static void test_after_punctuation(void **st)
{
    (void)st;
    assert_string_equal(names("(@arya)"), "arya");
    assert_string_equal(names("hi,@arya"), "arya");
    assert_string_equal(names("\"@arya\""), "arya");
    assert_string_equal(names(".@arya you there"), "arya");
    assert_string_equal(names("ping:@arya;@gendry!"), "arya,gendry");
    assert_string_equal(names("@@arya"), "arya");
    assert_string_equal(names("[@arya]"), "arya");
}

static void test_trailing_punctuation(void **st)
{
    (void)st;
    assert_string_equal(names("thanks @arya."), "arya");
    assert_string_equal(names("thanks @arya... ok"), "arya");
    assert_string_equal(names("@arya, @gendry: go"), "arya,gendry");
    assert_string_equal(names("@arya's idea"), "arya");
    assert_string_equal(names("@a.b.c. done"), "a.b.c");
    assert_string_equal(names("@ann-bot hi"), "ann-bot");
    assert_string_equal(names("@ann- what"), "ann");
    assert_string_equal(names("@ann_ x"), "ann_");
    assert_string_equal(names("@arya?"), "arya");
}

static void test_email_addresses(void **st)
{
    (void)st;
    assert_string_equal(names("write to a@b.com"), "");
    assert_string_equal(names("joe.smith@example.com please"), "");
    assert_string_equal(names("x_@arya"), "");
    assert_string_equal(names("mail arya@winterfell.north or @gendry"), "gendry");
    assert_string_equal(names("josé@example.com"), "");
    assert_string_equal(names("café@arya"), "");
    assert_string_equal(names("\xce\xb1@arya"), ""); /* Greek alpha */
    assert_string_equal(names("\xd0\xb6@arya"), ""); /* Cyrillic zhe */
}

static void test_not_names(void **st)
{
    (void)st;
    assert_string_equal(names("@"), "");
    assert_string_equal(names("@ arya"), "");
    assert_string_equal(names("@. @- @..."), "");
    assert_string_equal(names("email me @ home"), "");
    char longname[80];
    memset(longname, 'a', sizeof longname);
    longname[0] = '@';
    longname[66] = '\0'; /* 65 characters: too long for an id */
    assert_string_equal(names(longname), "");
    longname[65] = '\0'; /* 64 characters */
    assert_int_equal(strlen(names(longname)), 64);
    assert_string_equal(names("@self awake"), "");
    assert_string_equal(names("@SELF dormant sleep @arya"), "arya");
}

static void test_repeated_and_case(void **st)
{
    (void)st;
    assert_string_equal(names("@arya @Arya @ARYA"), "arya");
    assert_string_equal(names("@Gendry then @arya then @gendry"), "gendry,arya");
}

static void test_unicode_around(void **st)
{
    (void)st;
    assert_string_equal(names("\xc2\xab@arya\xc2\xbb"), "arya");             /* «@arya» */
    assert_string_equal(names("\xc2\xa1@arya!"), "arya");                    /* ¡@arya! */
    assert_string_equal(names("\xe6\x97\xa5\xe6\x9c\xac@arya"), "arya");     /* 日本@arya */
    assert_string_equal(names("@arya\xe3\x81\xaf"), "arya");                 /* @aryaは */
    assert_string_equal(names("@arya\xf0\x9f\x99\x82 hi"), "arya");          /* @arya🙂 */
    assert_string_equal(names("\xf0\x9f\x99\x82@arya"), "arya");             /* 🙂@arya */
    assert_string_equal(names("\xe2\x80\x94@arya"), "arya");                 /* —@arya */
    assert_string_equal(names("@arya\xe2\x80\x99s idea"), "arya");           /* @arya’s */
    assert_string_equal(names("@jos\xc3\xa9 hi"), "");                       /* @josé */
    assert_string_equal(names("\xc3\xa9t\xc3\xa9 @arya"), "arya");
}

static void test_collect_sender_and_field(void **st)
{
    (void)st;
    assert_string_equal(collect("arya", "@arya and @gendry", NULL, 0, 32), "gendry");
    assert_string_equal(collect("Arya", "@ARYA talking to myself", NULL, 0, 32), "");
    const char *field[] = { "gendry", "Sansa", "arya", "self" };
    assert_string_equal(collect("arya", "@bran hi", field, 4, 32), "bran,gendry,sansa");
    assert_string_equal(collect("arya", "@Gendry hi", field, 1, 32), "gendry");
    const char *bad[] = { "no/slash", "" };
    assert_string_equal(collect("x", "", bad, 2, 32), "");
}

/* Only an AI sender is left out of its own message's mentions: a person
 * who shares a persona's name may still call on it. */
static void test_human_namesake_mentions_the_persona(void **st)
{
    (void)st;
    char out[8][CHAT_ID_MAX + 1];
    const char *field[] = { "arya" };
    chat_message m = { .id = "m", .sender = "Arya", .sender_type = CHAT_SENDER_HUMAN,
                       .text = "@arya please look" };
    assert_int_equal(chat_mentions_collect(&m, out, 8), 1);
    assert_string_equal(out[0], "arya");
    m.text = "no at-mention";
    m.mentions = field;
    m.n_mentions = 1;
    assert_int_equal(chat_mentions_collect(&m, out, 8), 1);
    assert_string_equal(out[0], "arya");
    m.sender_type = CHAT_SENDER_AI; /* the persona itself: never */
    assert_int_equal(chat_mentions_collect(&m, out, 8), 0);
    m.text = "@ARYA me";
    m.n_mentions = 0;
    assert_int_equal(chat_mentions_collect(&m, out, 8), 0);
}

static void test_collect_cap(void **st)
{
    (void)st;
    char text[4096] = "";
    for (int i = 0; i < 40; i++) {
        char w[16];
        snprintf(w, sizeof w, "@p%d ", i);
        strcat(text, w);
    }
    char out[64][CHAT_ID_MAX + 1];
    chat_message m = { .id = "m", .sender = "p0", .sender_type = CHAT_SENDER_AI, .text = text };
    /* the sender does not use up a slot */
    assert_int_equal(chat_mentions_collect(&m, out, 32), 32);
    assert_string_equal(out[0], "p1");
    assert_string_equal(out[31], "p32");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_and_middle),
        cmocka_unit_test(test_after_punctuation),
        cmocka_unit_test(test_trailing_punctuation),
        cmocka_unit_test(test_email_addresses),
        cmocka_unit_test(test_not_names),
        cmocka_unit_test(test_repeated_and_case),
        cmocka_unit_test(test_unicode_around),
        cmocka_unit_test(test_collect_sender_and_field),
        cmocka_unit_test(test_collect_cap),
        cmocka_unit_test(test_human_namesake_mentions_the_persona),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
