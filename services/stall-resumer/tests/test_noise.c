/* test_noise.c - every default noise pattern, configurable patterns, our own
 * prompts never counting as activity, and acknowledgements being neither
 * activity nor meaningful progress. */
#include "st_test.h"

static void test_each_default_pattern(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    const char *noisy[] = {"Resumer ping",          "STALL-RECOVERY prompt",
                           "#no-acknowledgments please", "Inactivity Detected for 3h",
                           "[C2A] broadcast",       "update #no-reply",
                           "#progress-only note",   NULL};
    assert_int_equal(c.n_noise, 7);
    for (int i = 0; noisy[i]; i++) {
        assert_true(stall_is_resumer_prompt(&c, noisy[i]));
        stall_agent *a = st_agent("a");
        assert_int_equal(stall_agent_add_signal(a, &c, "x", STALL_SRC_INBOX_PROCESSING, noisy[i],
                                                false, T0, T0),
                         STALL_SIGNAL_NOISE);
        assert_int_equal(a->n_sig, 0);
        free(a);
    }
    assert_false(stall_is_resumer_prompt(&c, "fixed the uploader retry"));
    assert_false(stall_is_resumer_prompt(&c, ""));
    assert_false(stall_is_resumer_prompt(&c, NULL));
}

static void test_configured_patterns(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    char err[80];
    assert_int_equal(stall_config_set_noise(&c, " Heartbeat , ,PING ", err, sizeof err), 0);
    assert_int_equal(c.n_noise, 2);
    assert_true(stall_is_resumer_prompt(&c, "a heartbeat tick"));
    assert_true(stall_is_resumer_prompt(&c, "ping"));
    assert_false(stall_is_resumer_prompt(&c, "inactivity detected")); /* replaced */
    /* our own prompt marker is noise whatever the configuration */
    assert_true(stall_is_resumer_prompt(&c, "echo: 🔄 [stall-recovery] a: no activity"));
    char longp[100];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(stall_config_set_noise(&c, longp, err, sizeof err), -1);
    assert_int_equal(c.n_noise, 2); /* unchanged on error */
    assert_int_equal(stall_config_set_noise(&c, "", err, sizeof err), 0);
    assert_int_equal(c.n_noise, 0);
}

/* A signal echoing one of our resume ids is not activity. */
static void test_own_resume_echo(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    stall_config_set_noise(&c, "", NULL, 0);
    stall_agent *a = st_agent("a");
    assert_true(stall_agent_resume_sent(a, 1, "resume.a.1:agent:a:0", T0));
    assert_int_equal(stall_agent_add_signal(a, &c, "resume.a.1:agent:a:0", STALL_SRC_INBOX_PROCESSING,
                                            "got it", false, T0, T0),
                     STALL_SIGNAL_NOISE);
    assert_int_equal(stall_agent_add_signal(a, &c, "m1", STALL_SRC_MESSAGE_QUEUE,
                                            "re resume.a.1:agent:a:0", false, T0, T0),
                     STALL_SIGNAL_NOISE);
    assert_int_equal(stall_agent_add_signal(a, &c, "m2", STALL_SRC_GIT_COMMIT, "real work", false,
                                            T0, T0),
                     STALL_SIGNAL_ADDED);
    free(a);
}

static void test_meaningful_progress(void **state)
{
    (void)state;
    const char *acks[] = {"ok", "OK.", "  Acknowledged!  ", "ack: will look", "got it", "Roger",
                          "👍", "will do", "", "   ", "OK 👍", "Got it, will do",
                          "acknowledged, thanks", "Roger that", "👍🏽", "ok👍", "Thanks — will do",
                          "yes, on it!", NULL};
    for (int i = 0; acks[i]; i++)
        assert_false(stall_is_meaningful_progress(acks[i]));
    assert_false(stall_is_meaningful_progress(NULL));
    assert_true(stall_is_meaningful_progress("pushed the retry fix"));
    assert_true(stall_is_meaningful_progress("ok, tests pass now after the fix"));
    /* an acknowledgement's letters inside a word are no acknowledgement */
    const char *progress[] = {"ok deploying now", "okay-ish fix landed", "kubernetes upgraded",
                              "yesterday's build fixed", "👍 merged #42", "thanks to the cache, 2x", NULL};
    for (int i = 0; progress[i]; i++)
        assert_true(stall_is_meaningful_progress(progress[i]));
    /* the noise filter drops acknowledgements from the activity
     * signals: an agent that answers its resume with "ok" stays stalled */
    const char *not_acks[] = {"", "   ", " . ", "pushed the retry fix", NULL};
    for (int i = 0; acks[i]; i++)
        assert_true(stall_is_acknowledgement(acks[i]) == (acks[i][strspn(acks[i], " ")] != '\0'));
    for (int i = 0; not_acks[i]; i++)
        assert_false(stall_is_acknowledgement(not_acks[i]));
    assert_false(stall_is_acknowledgement(NULL));
    stall_config c;
    stall_config_init(&c);
    stall_agent *a = st_agent("a");
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 10 * MIN_MS, "merged the uploader fix", false);
    for (int i = 0; acks[i]; i++) {
        if (!stall_is_acknowledgement(acks[i]))
            continue;
        char id[16];
        snprintf(id, sizeof id, "ack%d", i);
        assert_int_equal(stall_agent_add_signal(a, &c, id, STALL_SRC_TELEMETRY_EVENT, acks[i],
                                                false, T0, T0),
                         STALL_SIGNAL_ACKNOWLEDGEMENT);
    }
    assert_int_equal(a->n_sig, 1);
    assert_int_equal(a->last_seen, T0 - 10 * MIN_MS);
    /* a signal without a detail is activity, though not progress */
    st_sig(a, &c, STALL_SRC_INBOX_PROCESSING, 5 * MIN_MS, NULL, false);
    st_sig(a, &c, STALL_SRC_INBOX_PROCESSING, 4 * MIN_MS, "", false);
    assert_int_equal(a->n_sig, 3);
    assert_string_equal(a->progress, "merged the uploader fix");
    free(a);
}

/* Blank is white space only, the Unicode spaces a text can look empty
 * with included. A blank detail is a signal without a detail: activity,
 * neither an acknowledgement nor progress the prompt would quote as "". */
static void test_blank_texts(void **state)
{
    (void)state;
    const char *blank[] = {"", "   ", "\t\r\n", "\xc2\xa0", " \xe3\x80\x80 ", "\xe2\x80\x8b",
                           "\xef\xbb\xbf\xe2\x80\xaf\xe2\x81\x9f\xe1\x9a\x80", NULL};
    for (int i = 0; blank[i]; i++) {
        assert_true(stall_text_blank(blank[i]));
        assert_false(stall_is_meaningful_progress(blank[i]));
        assert_false(stall_is_acknowledgement(blank[i]));
    }
    assert_true(stall_text_blank(NULL));
    const char *not_blank[] = {"a", " x ", "\xc2\xa0x", "\xf0\x9f\x91\x8d", ".", NULL};
    for (int i = 0; not_blank[i]; i++)
        assert_false(stall_text_blank(not_blank[i]));
    /* an acknowledgement padded with no-break spaces is still one */
    assert_true(stall_is_acknowledgement("\xc2\xa0ok\xc2\xa0"));
    stall_config c;
    stall_config_init(&c);
    stall_agent *a = st_agent("a");
    st_sig(a, &c, STALL_SRC_GIT_COMMIT, 10 * MIN_MS, "merged the uploader fix", false);
    st_sig(a, &c, STALL_SRC_INBOX_PROCESSING, 5 * MIN_MS, "\xc2\xa0\xe3\x80\x80", false);
    assert_int_equal(a->n_sig, 2);
    assert_int_equal(a->last_seen, T0 - 5 * MIN_MS);
    assert_string_equal(a->progress, "merged the uploader fix");
    free(a);
}

/* Newest 200 kept; duplicates by id ignored. */
static void test_bounded_and_deduped(void **state)
{
    (void)state;
    stall_config c;
    stall_config_init(&c);
    stall_agent *a = st_agent("a");
    char id[32];
    for (int i = 0; i < 250; i++) {
        snprintf(id, sizeof id, "b%d", i);
        assert_int_equal(stall_agent_add_signal(a, &c, id, STALL_SRC_FILE_MODIFICATION, "edit",
                                                false, T0 - 1000 * (250 - i), T0),
                         STALL_SIGNAL_ADDED);
    }
    assert_int_equal(a->n_sig, STALL_MAX_SIGNALS);
    assert_int_equal(a->sig[0].ts, T0 - 1000);
    assert_int_equal(a->sig[STALL_MAX_SIGNALS - 1].ts, T0 - 1000 * 200);
    assert_int_equal(stall_agent_add_signal(a, &c, "b249", STALL_SRC_FILE_MODIFICATION, "edit",
                                            false, T0 - 1000, T0),
                     STALL_SIGNAL_DUPLICATE);
    /* older than every kept one when full */
    assert_int_equal(stall_agent_add_signal(a, &c, "old", STALL_SRC_FILE_MODIFICATION, "edit",
                                            false, T0 - 1000 * 300, T0),
                     STALL_SIGNAL_EXPIRED);
    a = st_roundtrip(a);
    assert_int_equal(a->n_sig, STALL_MAX_SIGNALS);
    free(a);
}

/* Texts kept shorter than they came (details, states, missions, titles:
 * STALL_DETAIL_MAX / STALL_TEXT_MAX bytes) are cut on a character
 * boundary, never inside a UTF-8 sequence. */
static void test_texts_cut_on_a_character_boundary(void **state)
{
    (void)state;
    char src[STALL_TEXT_MAX + 32], dst[STALL_TEXT_MAX + 1];
    memset(src, 'x', STALL_TEXT_MAX - 1);
    strcpy(src + STALL_TEXT_MAX - 1, "\xc3\xa9 and more"); /* "é" across the limit */
    vigil_utf8_copy(dst, sizeof dst, src);
    assert_int_equal(strlen(dst), STALL_TEXT_MAX - 1);
    memset(src, 'x', STALL_TEXT_MAX - 2);
    strcpy(src + STALL_TEXT_MAX - 2, "\xf0\x9f\x94\x84!"); /* a 4-byte emoji */
    vigil_utf8_copy(dst, sizeof dst, src);
    assert_int_equal(strlen(dst), STALL_TEXT_MAX - 2);
    /* whole when it fits, "" for none */
    vigil_utf8_copy(dst, sizeof dst, "\xc3\xa9t\xc3\xa9");
    assert_string_equal(dst, "\xc3\xa9t\xc3\xa9");
    vigil_utf8_copy(dst, sizeof dst, NULL);
    assert_string_equal(dst, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_default_pattern),
        cmocka_unit_test(test_configured_patterns),
        cmocka_unit_test(test_own_resume_echo),
        cmocka_unit_test(test_meaningful_progress),
        cmocka_unit_test(test_blank_texts),
        cmocka_unit_test(test_bounded_and_deduped),
        cmocka_unit_test(test_texts_cut_on_a_character_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
