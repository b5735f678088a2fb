/* test_limits.c - limits that speak: every bound of the room view that
 * refuses part of an input notes it on the room (the shell turns each note
 * into an error event on sys/floor-control/error and a count in
 * vigil_limit_refusals_total{limit}), and what fits is kept. The clock is
 * injected (fl_tick); notes live only while one input is applied, so a
 * round trip through the record starts each input with none. */
#include "fl_test.h"

/* A string of n copies of c (static storage, one per slot). */
static const char *rep(int slot, char c, size_t n)
{
    static char buf[4][FLOOR_TEXT_MAX + 16];
    assert_true(n < sizeof buf[0]);
    memset(buf[slot], c, n);
    buf[slot][n] = '\0';
    return buf[slot];
}

static const floor_note *note(const fl_fx *f, const char *limit)
{
    for (int i = 0; i < f->room->n_notes; i++)
        if (strcmp(f->room->notes[i].limit, limit) == 0)
            return &f->room->notes[i];
    return NULL;
}

static void assert_says(const floor_note *n, const char *what)
{
    assert_non_null(n);
    if (!strstr(n->detail, what))
        fail_msg("'%s' not in the detail: %s", what, n->detail);
}

/* A meta for room general with n domains "d0".."d<n-1>". */
static void meta_domains(fl_fx *f, const char *id, const char *name, const char *role, int n)
{
    static char names[64][16];
    const char *ds[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "d%d", i);
        ds[i] = names[i];
    }
    const char *rooms[] = {"general"};
    floor_meta m = {.persona = id, .name = name, .role = role, .rooms = rooms, .n_rooms = 1,
                    .domains = ds, .n_domains = n};
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, NULL));
}

static void test_full_room_drops_the_stalest_and_says_so(void **state)
{
    fl_fx *f = fl_new();
    f->cfg.max_personas = 3;
    fl_meta(f, "a", NULL, NULL);
    fl_tick(f, 1);
    fl_meta(f, "b", NULL, NULL);
    fl_tick(f, 1);
    fl_meta(f, "c", NULL, NULL);
    fl_tick(f, 1);
    fl_spoke(f, "a"); /* a is heard of again: b is now the stalest */
    assert_int_equal(f->room->n_notes, 0);
    fl_roundtrip(f);
    fl_tick(f, 1);
    fl_level(f, "d", FLOOR_SLEEP, "manual"); /* a state naming a new persona */
    assert_int_equal(f->room->n, 3);
    assert_null(floor_room_find(f->room, "b"));
    assert_int_equal(f->room->n_dropped, 1);
    assert_string_equal(f->room->dropped[0], "b");
    assert_int_equal(f->room->n_notes, 1);
    const floor_note *n = note(f, "personas_per_room");
    assert_says(n, "room 'general' keeps at most 3 personas (VIGIL_FLOOR_MAX_PERSONAS)");
    assert_says(n, "'b', learned about longest ago, is dropped from it to make room for 'd'");
    /* notes are not stored: the next input starts with none */
    fl_roundtrip(f);
    assert_int_equal(f->room->n_notes, 0);
    assert_int_equal(f->room->n_dropped, 0);
    fl_spoke(f, "d"); /* known: nothing dropped, nothing said */
    assert_int_equal(f->room->n_notes, 0);
    fl_free(f);
}

static void test_lowered_setting_drops_several_in_one_note(void **state)
{
    fl_fx *f = fl_new();
    const char *ids[] = {"p1", "p2", "p3", "p4", "p5"};
    for (int i = 0; i < 5; i++) {
        fl_meta(f, ids[i], NULL, NULL);
        fl_tick(f, 1);
    }
    fl_roundtrip(f);
    f->cfg.max_personas = 2; /* restarted with a lower setting */
    fl_spoke(f, "new");
    assert_int_equal(f->room->n, 2);
    assert_int_equal(f->room->n_dropped, 4);
    assert_string_equal(f->room->dropped[3], "p4");
    assert_int_equal(f->room->n_notes, 1);
    assert_says(note(f, "personas_per_room"), "'p1' and 3 more, learned about longest ago, are dropped");
    fl_free(f);
}

static void test_meta_past_the_word_and_domain_bounds_is_said(void **state)
{
    fl_fx *f = fl_new();
    /* 64 bytes fit: kept, nothing said */
    meta_domains(f, "ann", rep(0, 'n', FLOOR_WORD_MAX), rep(1, 'r', FLOOR_WORD_MAX), FLOOR_MAX_DOMAINS);
    assert_int_equal(f->room->n_notes, 0);
    assert_int_equal(strlen(floor_room_find(f->room, "ann")->name), FLOOR_WORD_MAX);
    fl_roundtrip(f);
    /* 65 bytes and 40 domains: the persona joins without them, each said */
    meta_domains(f, "bob", rep(0, 'N', FLOOR_WORD_MAX + 1), rep(1, 'R', FLOOR_WORD_MAX + 1), 40);
    floor_persona *p = floor_room_find(f->room, "bob");
    assert_non_null(p);
    assert_string_equal(p->name, "");
    assert_string_equal(p->role, "");
    assert_int_equal(p->n_domains, FLOOR_MAX_DOMAINS);
    assert_string_equal(p->domains[FLOOR_MAX_DOMAINS - 1], "d31");
    assert_int_equal(f->room->n_notes, 3);
    assert_says(note(f, "name_bytes"), "persona 'bob' in room 'general': its display name of 65 bytes");
    assert_says(note(f, "name_bytes"), "@mentions by that name do not reach it");
    assert_says(note(f, "role_bytes"), "its role of 65 bytes is longer than the 64");
    assert_says(note(f, "domains_per_persona"), "lists 40 expertise domains, more than the 32");
    assert_says(note(f, "domains_per_persona"), "the 8 from 'd32' on never match");
    /* what is lost: d35 matches nothing, d3 still does */
    fl_human(f, "a question about d35");
    assert_int_equal(fl_pick(f, "bob")->why, FLOOR_WHY_RECENCY);
    fl_human(f, "a question about d3");
    assert_int_equal(fl_pick(f, "bob")->why, FLOOR_WHY_DOMAIN);
    fl_free(f);
}

/* confidence_levels keys the expertise_domains do not name are domains
 * too, after them, under the same bound: 30 domains and 5 other keys keep
 * the first 2 keys, and the note counts all 35. */
static void test_confidence_keys_past_the_domain_bound_are_said(void **state)
{
    fl_fx *f = fl_new();
    static char names[30][16];
    const char *ds[30];
    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof names[i], "d%d", i);
        ds[i] = names[i];
    }
    const char *keys[] = {"d0", "k0", "k1", "k2", "k3", "k4"};
    double values[] = {0.9, 0.8, 0.8, 0.8, 0.8, 0.8};
    const char *rooms[] = {"general"};
    floor_meta m = {.persona = "ann", .rooms = rooms, .n_rooms = 1, .domains = ds,
                    .n_domains = 30, .conf_domains = keys, .conf_values = values, .n_conf = 6};
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, NULL));
    const floor_persona *p = floor_room_find(f->room, "ann");
    assert_int_equal(p->n_domains, FLOOR_MAX_DOMAINS);
    assert_string_equal(p->domains[FLOOR_MAX_DOMAINS - 1], "k1");
    assert_int_equal(f->room->n_notes, 1);
    assert_says(note(f, "domains_per_persona"), "lists 35 expertise domains, more than the 32");
    assert_says(note(f, "domains_per_persona"), "the 3 from 'k2' on never match");
    fl_free(f);
}

/* The most notes one input can cause: a meta refused its name, role and
 * domains, joining a full room. FLOOR_MAX_NOTES holds exactly that. */
static void test_the_worst_input_fits_the_notes(void **state)
{
    fl_fx *f = fl_new();
    f->cfg.max_personas = 1;
    fl_meta(f, "ann", NULL, NULL);
    fl_roundtrip(f);
    fl_tick(f, 1);
    meta_domains(f, "bob", rep(0, 'N', 100), rep(1, 'R', 100), 64);
    assert_int_equal(f->room->n_notes, 4);
    assert_int_equal(FLOOR_MAX_NOTES, 4);
    assert_non_null(note(f, "personas_per_room"));
    assert_non_null(note(f, "name_bytes"));
    assert_non_null(note(f, "role_bytes"));
    assert_non_null(note(f, "domains_per_persona"));
    fl_free(f);
}

static void test_long_trigger_is_said(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    fl_roundtrip(f);
    char trig[FLOOR_TRIGGER_MAX + 1];
    snprintf(trig, sizeof trig, "%s", rep(0, 't', FLOOR_TRIGGER_MAX - 1)); /* 31: kept */
    assert_int_equal(floor_config_set_wake_triggers(&f->cfg, trig), 0);
    fl_level(f, "ann", FLOOR_SLEEP, trig);
    assert_int_equal(f->room->n_notes, 0);
    assert_string_equal(floor_room_find(f->room, "ann")->trigger, trig);
    fl_level(f, "bob", FLOOR_SLEEP, rep(1, 't', FLOOR_TRIGGER_MAX)); /* 32: not kept */
    assert_string_equal(floor_room_find(f->room, "bob")->trigger, "");
    assert_says(note(f, "trigger_bytes"), "persona 'bob' in room 'general': its dormancy trigger of 32 bytes");
    /* what is lost: ann's absence dormancy wakes her for a human, bob's not
     * (the minimum-awake guarantee, which would wake him too, off) */
    f->cfg.wake.min_awake = 0;
    fl_human(f, "hello");
    assert_true(fl_pick(f, "ann")->granted);
    assert_false(fl_pick(f, "bob")->granted);
    assert_string_equal(fl_pick(f, "bob")->reason, "asleep (manual)");
    fl_free(f);
}

static void test_waiting_room_is_bounded_and_says_so(void **state)
{
    fl_fx *f = fl_new();
    char id[32];
    const char *why = NULL;
    for (int i = 0; i < FLOOR_MAX_PENDING; i++) {
        snprintf(id, sizeof id, "m%d", i);
        floor_message m = {.id = id, .sender = "joel", .text = "x"};
        assert_int_equal(floor_pending_add(f->room, &m, f->now + 1500, &why), 0);
        fl_tick(f, 10);
    }
    assert_int_equal(f->room->n_notes, 0);
    floor_message more = {.id = "one-too-many", .sender = "joel", .text = "x"};
    assert_int_equal(floor_pending_add(f->room, &more, f->now + 1500, &why), 1);
    assert_int_equal(f->room->n_pending, FLOOR_MAX_PENDING);
    assert_says(note(f, "llm_waiting_per_room"), "room 'general' has 64 messages waiting for the LLM");
    assert_says(note(f, "llm_waiting_per_room"), "message 'one-too-many' is decided by the rules at once");
    assert_ptr_equal(why, note(f, "llm_waiting_per_room")->detail); /* the fallback */
    /* one decided: room for the next */
    floor_pending_remove(f->room, "m0");
    assert_int_equal(floor_pending_add(f->room, &more, f->now + 1500, NULL), 0);
    fl_free(f);
}

static void test_long_text_does_not_wait_and_is_never_cut(void **state)
{
    fl_fx *f = fl_new();
    const char *why = NULL;
    /* exactly FLOOR_TEXT_MAX bytes wait, whole */
    floor_message fits = {.id = "fits", .sender = "joel", .text = rep(0, 'a', FLOOR_TEXT_MAX)};
    assert_int_equal(floor_pending_add(f->room, &fits, f->now + 1500, &why), 0);
    fl_roundtrip(f);
    assert_int_equal(strlen(floor_pending_find(f->room, "fits")->text), FLOOR_TEXT_MAX);
    /* one byte more: refused, nothing kept, said */
    floor_message big = {.id = "big", .sender = "joel", .text = rep(1, 'a', FLOOR_TEXT_MAX + 1)};
    assert_int_equal(floor_pending_add(f->room, &big, f->now + 1500, &why), 1);
    assert_null(floor_pending_find(f->room, "big"));
    assert_says(note(f, "llm_text_bytes"), "message 'big' in room 'general' has a text of 4097 bytes");
    assert_says(note(f, "llm_text_bytes"), "decided by the rules at once, on its whole text");
    assert_string_equal(why, note(f, "llm_text_bytes")->detail);
    fl_free(f);
}

static void test_many_mentions_do_not_wait(void **state)
{
    fl_fx *f = fl_new();
    static char names[FLOOR_MAX_MENTIONS + 1][16];
    const char *ms[FLOOR_MAX_MENTIONS + 1];
    for (int i = 0; i <= FLOOR_MAX_MENTIONS; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        ms[i] = names[i];
    }
    floor_message m = {.id = "m1", .sender = "joel", .text = "hi", .mentions = ms,
                       .n_mentions = FLOOR_MAX_MENTIONS};
    assert_int_equal(floor_pending_add(f->room, &m, f->now + 1500, NULL), 0);
    assert_int_equal(f->room->pending[0].n_mentions, FLOOR_MAX_MENTIONS);
    m.id = "m2";
    m.n_mentions = FLOOR_MAX_MENTIONS + 1;
    assert_int_equal(floor_pending_add(f->room, &m, f->now + 1500, NULL), 1);
    assert_says(note(f, "llm_mentions_per_message"), "message 'm2' in room 'general' has 33 mentions");
    fl_free(f);
}

/* The prompt quotes a waiting message's text whole, so the model sees all
 * the rules see (no cut of its own). */
static void test_prompt_quotes_the_whole_text(void **state)
{
    fl_fx *f = fl_new();
    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        fl_meta(f, id, NULL, NULL);
    }
    char *text = malloc(FLOOR_TEXT_MAX + 1);
    memset(text, 'a', FLOOR_TEXT_MAX);
    memcpy(text + FLOOR_TEXT_MAX - 4, "TAIL", 5);
    floor_message m = {.id = "m1", .sender = "joel", .sender_type = FLOOR_SENDER_HUMAN, .text = text};
    char *p = floor_llm_prompt(f->room, &f->cfg, &m);
    assert_non_null(p);
    assert_non_null(strstr(p, "aaaaTAIL\""));
    free(p);
    free(text);
    fl_free(f);
}

/* A held or granted reason never reaches FLOOR_REASON_MAX: the longest
 * (a 64-byte domain, a 31-byte trigger, K=1000) is printed and must fit. */
static void test_longest_reason_fits(void **state)
{
    fl_fx *f = fl_new();
    char trig[FLOOR_TRIGGER_MAX];
    snprintf(trig, sizeof trig, "%s", rep(0, 't', FLOOR_TRIGGER_MAX - 1));
    const char *domain = rep(1, 'k', FLOOR_WORD_MAX);
    assert_int_equal(floor_config_set_wake_triggers(&f->cfg, trig), 0);
    f->cfg.k = 1000;
    f->cfg.max_personas = 1001;
    for (int i = 0; i < 1001; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%04d", i);
        fl_meta(f, id, domain, NULL);
        fl_level(f, id, FLOOR_MENTION_ONLY, trig); /* woken by a human message */
    }
    fl_human(f, domain);
    size_t longest = 0;
    for (int i = 0; i < f->d.n; i++)
        if (strlen(f->d.v[i].reason) > longest)
            longest = strlen(f->d.v[i].reason);
    assert_int_equal(f->d.n_granted, 1000);
    assert_non_null(strstr(f->d.v[1000].reason, "floor full (K=1000)"));
    print_message("longest reason: %zu bytes (of %d)\n", longest, FLOOR_REASON_MAX - 1);
    assert_true(longest < FLOOR_REASON_MAX - 1);
    fl_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_room_drops_the_stalest_and_says_so),
        cmocka_unit_test(test_lowered_setting_drops_several_in_one_note),
        cmocka_unit_test(test_meta_past_the_word_and_domain_bounds_is_said),
        cmocka_unit_test(test_confidence_keys_past_the_domain_bound_are_said),
        cmocka_unit_test(test_the_worst_input_fits_the_notes),
        cmocka_unit_test(test_long_trigger_is_said),
        cmocka_unit_test(test_waiting_room_is_bounded_and_says_so),
        cmocka_unit_test(test_long_text_does_not_wait_and_is_never_cut),
        cmocka_unit_test(test_many_mentions_do_not_wait),
        cmocka_unit_test(test_prompt_quotes_the_whole_text),
        cmocka_unit_test(test_longest_reason_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
