/* Rule 4: more than two AIs answering the same human message within 30 s:
 * every responder after the first two gets a yes/no suggestion. */
#include "dm_test.h"

static dm_fx *room_of_five(void)
{
    dm_fx *f = dm_new();
    dm_personas(f, 5, "ann", "bob", "cara", "dan", "eve");
    return f;
}

static void third_and_fourth_responders_within_30s_get_suggestion(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    dm_human(f, "how do I fix this?");
    const char *order[] = {"ann", "bob", "cara", "dan"};
    for (int i = 0; i < 4; i++) {
        dm_advance(f, 5000);
        dm_ai(f, order[i], "try this");
    }
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "ann"), 0);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "bob"), 0);
    const dormancy_action *s = dm_last(f, DORMANCY_OUT_SUGGESTION, "cara");
    assert_non_null(s);
    assert_int_equal(s->suggest, DORMANCY_SUGGEST_REDUNDANT);
    assert_string_equal(s->text,
                        "\xF0\x9F\x92\xA4 Multiple AIs already responded. Switch to mention-only? "
                        "[Yes] [No]");
    assert_string_equal(s->message_id, f->last_msg_id);
    assert_non_null(dm_last(f, DORMANCY_OUT_SUGGESTION, "dan"));
    json_object *o = dormancy_suggestion_json(s, "general", f->now);
    assert_string_equal(json_object_to_json_string(json_object_object_get(o, "options")),
                        "[ \"yes\", \"no\" ]");
    assert_string_equal(json_object_get_string(json_object_object_get(o, "trigger")), "redundant");
    json_object_put(o);
    dm_free(f);
}

static void responder_at_31s_gets_none(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    dm_human(f, "question");
    dm_advance(f, 1000);
    dm_ai(f, "ann", "a");
    dm_ai(f, "bob", "b");
    dm_advance(f, 29000);
    dm_ai(f, "cara", "c at 30s"); /* inside the window */
    dm_advance(f, 1000);
    dm_ai(f, "dan", "d at 31s");
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "cara"), 1);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "dan"), 0);
    dm_free(f);
}

static void responder_counts_once(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    dm_human(f, "question");
    dm_ai(f, "ann", "a");
    dm_ai(f, "ann", "a again");
    dm_ai(f, "bob", "b");
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_ai(f, "cara", "c");
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "cara"), 1);
    dm_free(f);
}

static void reply_to_names_the_human_message(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    dm_human(f, "first");
    char first[64];
    snprintf(first, sizeof first, "%s", f->last_msg_id);
    dm_advance(f, 2000);
    dm_human(f, "second");
    dm_advance(f, 1000);
    dm_msg(f, DORMANCY_SENDER_AI, "ann", "re first", first, NULL);
    dm_msg(f, DORMANCY_SENDER_AI, "bob", "re first", first, NULL);
    dm_ai(f, "cara", "re second (latest)");
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, NULL), 0);
    dm_msg(f, DORMANCY_SENDER_AI, "dan", "re first", first, NULL);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "dan"), 1);
    /* a reply to something that is not a human message answers no human */
    dm_msg(f, DORMANCY_SENDER_AI, "eve", "re ann", "in-unknown", NULL);
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "eve"), 0);
    dm_free(f);
}

/* Stepping back after a pile-on is a choice: the next human message does
 * not undo it while enough others can answer. */
static void accepted_or_defaulted_pile_on_is_chosen(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    dm_human(f, "q1");
    const char *order[] = {"ann", "bob", "cara", "dan"};
    for (int i = 0; i < 4; i++)
        dm_ai(f, order[i], "answer");
    dm_answer(f, "cara", DORMANCY_ANSWER_YES, NULL);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "cara")->trigger, DORMANCY_TRIGGER_REDUNDANT);
    dm_advance(f, 30000); /* dan did not answer: default yes */
    assert_int_equal(dm_level(f, "dan"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_last(f, DORMANCY_OUT_CHANGE, "dan")->trigger,
                     DORMANCY_TRIGGER_SUGGESTION_DEFAULT);
    dm_human(f, "q2");
    assert_int_equal(dm_level(f, "cara"), DORMANCY_MENTION_ONLY);
    assert_int_equal(dm_level(f, "dan"), DORMANCY_MENTION_ONLY);
    dm_free(f);
}

static void no_keeps_the_responder_active(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    dm_human(f, "q1");
    dm_ai(f, "ann", "1");
    dm_ai(f, "bob", "2");
    dm_ai(f, "cara", "3");
    dm_answer(f, "cara", DORMANCY_ANSWER_NO, NULL);
    dm_advance(f, MIN_MS);
    assert_int_equal(dm_level(f, "cara"), DORMANCY_ACTIVE);
    dm_free(f);
}

static void keep_is_configurable(void **state)
{
    (void)state;
    dm_fx *f = room_of_five();
    f->cfg.redundant_keep = 1;
    dm_human(f, "q");
    dm_ai(f, "ann", "1");
    dm_ai(f, "bob", "2");
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "bob"), 1);
    dm_free(f);
}

static void per_persona_window(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dormancy_overrides ov = {0};
    ov.has = VIGIL_OV_REDUNDANT_WINDOW;
    ov.redundant_window_ms = 60000;
    dm_personas(f, 2, "ann", "bob");
    dm_meta(f, "patient", &ov);
    dm_human(f, "q");
    dm_ai(f, "ann", "1");
    dm_ai(f, "bob", "2");
    dm_advance(f, 45000);
    dm_ai(f, "patient", "3 at 45s");
    assert_int_equal(dm_count(f, DORMANCY_OUT_SUGGESTION, "patient"), 1);
    dm_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(third_and_fourth_responders_within_30s_get_suggestion),
        cmocka_unit_test(responder_at_31s_gets_none),
        cmocka_unit_test(responder_counts_once),
        cmocka_unit_test(reply_to_names_the_human_message),
        cmocka_unit_test(accepted_or_defaulted_pile_on_is_chosen),
        cmocka_unit_test(no_keeps_the_responder_active),
        cmocka_unit_test(keep_is_configurable),
        cmocka_unit_test(per_persona_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
