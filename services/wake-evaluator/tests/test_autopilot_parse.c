/* test_autopilot_parse.c - reading the autopilot model's list of actions
 * (linked with the real readers): plain, fenced, wrapped in an object by
 * JSON mode, other spellings, names for ids, unknown personas and actions
 * dropped, nonsense refused. */
#include "llm_reader.h"
#include "wk_test.h"

static wk *room(void)
{
    wk *t = wk_new();
    wk_persona(t, "helper-ai", "smart", -1, NULL, 0);
    wk_persona(t, "claude-assistant", "smart", -1, NULL, 0);
    snprintf(wake_room_find(t->r, "claude-assistant")->name, WAKE_NAME_MAX, "Claude Assistant");
    return t;
}

static int parse(wk *t, const char *text, wake_ap_list *l)
{
    char why[300];
    return wake_autopilot_parse(&WAKE_LLM_READER, t->r, text, strlen(text), l, why, sizeof why);
}

static void the_example_answer(void **state)
{
    (void)state;
    wk *t = room();
    wake_ap_list *l = calloc(1, sizeof *l);
    const char *texts[] = {
        "[\n  {\"persona\": \"helper-ai\", \"action\": \"suggest-mention-only\", \"reason\": \"r1\"},\n"
        "  {\"persona\": \"claude-assistant\", \"action\": \"auto-sleep\", \"reason\": \"r2\"}\n]",
        "```json\n[{\"persona\": \"helper-ai\", \"action\": \"suggest-mention-only\", \"reason\": \"r1\"},"
        "{\"persona\": \"claude-assistant\", \"action\": \"auto-sleep\", \"reason\": \"r2\"}]\n```",
        "{\"actions\": [{\"persona\": \"helper-ai\", \"action\": \"suggest_mention_only\", \"reason\": \"r1\"},"
        "{\"persona\": \"Claude Assistant\", \"action\": \"Sleep\", \"reason\": \"r2\"}]}",
        "Here you go: [{\"persona\": \"HELPER-AI\", \"action\": \"mention-only\", \"reason\": \"r1\"},"
        "{\"persona\": \"claude-assistant\", \"action\": \"auto sleep\", \"reason\": \"r2\"}] done",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        assert_int_equal(parse(t, texts[i], l), 0);
        if (l->n != 2)
            fail_msg("case %zu: %d decisions", i, l->n);
        assert_string_equal(l->v[0].persona, "helper-ai");
        assert_int_equal(l->v[0].action, WAKE_AP_SUGGEST_MENTION_ONLY);
        assert_string_equal(l->v[0].reason, "r1");
        assert_string_equal(l->v[1].persona, "claude-assistant");
        assert_int_equal(l->v[1].action, WAKE_AP_AUTO_SLEEP);
    }
    free(l);
    wk_free(t);
}

static void entries_dropped(void **state)
{
    (void)state;
    wk *t = room();
    wake_ap_list *l = calloc(1, sizeof *l);
    assert_int_equal(parse(t, "[{\"persona\": \"ghost\", \"action\": \"wake\"},"
                              "{\"persona\": \"helper-ai\", \"action\": \"explode\"},"
                              "{\"persona\": \"helper-ai\"},"
                              "{\"action\": \"wake\"},"
                              "42, \"text\", null,"
                              "{\"persona\": \"helper-ai\", \"action\": \"keep\"},"
                              "{\"persona\": \"helper-ai\", \"action\": \"auto-sleep\"}]", l), 0);
    assert_int_equal(l->n, 1);
    assert_int_equal(l->v[0].action, WAKE_AP_KEEP);             /* first one for a persona */
    assert_string_equal(l->v[0].reason, "(no reason given)");
    assert_int_equal(parse(t, "[]", l), 0);
    assert_int_equal(l->n, 0);
    free(l);
    wk_free(t);
}

/* A persona or action from the model holding a NUL names nobody
 * ("helper-ai\u0000x" is not helper-ai): the entry is dropped like one
 * naming a ghost. A reason holding one reads as none given. */
static void strings_with_a_nul(void **state)
{
    (void)state;
    wk *t = room();
    wake_ap_list *l = calloc(1, sizeof *l);
    assert_int_equal(parse(t, "[{\"persona\": \"helper-ai\\u0000x\", \"action\": \"auto-sleep\"},"
                              "{\"persona\": \"claude-assistant\", \"action\": \"wake\\u0000x\"},"
                              "{\"persona\": \"claude-assistant\", \"action\": \"keep\", "
                              "\"reason\": \"busy\\u0000 secret\"}]", l), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->v[0].persona, "claude-assistant");
    assert_int_equal(l->v[0].action, WAKE_AP_KEEP);
    assert_string_equal(l->v[0].reason, "(no reason given)");
    free(l);
    wk_free(t);
}

static void nonsense_is_refused(void **state)
{
    (void)state;
    wk *t = room();
    wake_ap_list *l = calloc(1, sizeof *l);
    assert_int_equal(parse(t, "Everyone should keep going.", l), -1);
    assert_int_equal(parse(t, "[{\"persona\": \"helper-ai\", \"action\": \"wa", l), -1);
    assert_int_equal(parse(t, "{\"a\": [1], \"b\": [2]}", l), -1); /* which array? */
    assert_int_equal(parse(t, "", l), -1);
    free(l);
    wk_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_example_answer),
        cmocka_unit_test(entries_dropped),
        cmocka_unit_test(strings_with_a_nul),
        cmocka_unit_test(nonsense_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
