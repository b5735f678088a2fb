/* test_learn.c - the room view: meta joins and leaves, levels and speakers
 * learned, the bound on personas, the record's JSON round trip (and a
 * record listing a persona twice) and the wake-trigger list. */
#include <vigil/json.h>
#include "fl_test.h"

static void test_meta_join_leave(void **state)
{
    fl_fx *f = fl_new();
    const char *rooms[] = {"general"};
    const char *other[] = {"elsewhere"};
    floor_meta m = {.persona = "ann", .rooms = rooms, .n_rooms = 1};
    bool joined, left;
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, &joined, &left));
    assert_true(joined);
    assert_false(left);
    assert_int_equal(f->room->n, 1);
    /* meta moves ann to another room: she leaves this one */
    m.rooms = other;
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, &joined, &left));
    assert_true(left);
    assert_int_equal(f->room->n, 0);
    /* meta that never listed the room changes nothing */
    assert_false(floor_learn_meta(f->room, &f->cfg, &m, f->now, &joined, &left));
    fl_free(f);
}

static void test_speaker_stays_after_meta_leaves(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "rust", NULL);
    fl_spoke(f, "ann");
    const char *other[] = {"elsewhere"};
    floor_meta m = {.persona = "ann", .rooms = other, .n_rooms = 1};
    bool left;
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, &left));
    assert_false(left);
    assert_int_equal(f->room->n, 1);
    assert_false(f->room->personas[0].in_meta);
    fl_free(f);
}

static void test_speaker_and_level_join(void **state)
{
    fl_fx *f = fl_new();
    bool joined;
    assert_true(floor_learn_spoke(f->room, &f->cfg, "ann", f->now, &joined));
    assert_true(joined);
    floor_state_entry asleep = {.level = FLOOR_SLEEP, .trigger = "ai-only",
                                .cause = VIGIL_CAUSE_ABSENCE, .answered_human = 5, .order = 3};
    floor_state_entry awake = {.level = FLOOR_ACTIVE, .trigger = "human-reentry",
                               .cause = FLOOR_UNKNOWN, .order = FLOOR_UNKNOWN};
    assert_true(floor_learn_level(f->room, &f->cfg, "bob", &asleep, f->now, &joined));
    assert_true(joined);
    assert_int_equal(floor_room_find(f->room, "bob")->cause, VIGIL_CAUSE_ABSENCE);
    assert_int_equal(floor_room_find(f->room, "bob")->order, 3);
    assert_int_equal(floor_room_find(f->room, "bob")->answered_human, 5);
    assert_true(floor_learn_level(f->room, &f->cfg, "bob", &awake, f->now, &joined));
    assert_false(joined);
    assert_int_equal(floor_room_find(f->room, "bob")->level, FLOOR_ACTIVE);
    assert_string_equal(floor_room_find(f->room, "bob")->trigger, "human-reentry");
    assert_int_equal(floor_room_find(f->room, "ann")->last_spoke, T0);
    fl_free(f);
}

/* A state that does not list the room (a cleared one lists none): the room
 * forgets the level as if no state had come; a persona there only through
 * its states leaves; done again, nothing changes. */
static void test_state_without_the_room_forgets_the_level(void **state)
{
    fl_fx *f = fl_new();
    f->cfg.wake.min_awake = 0; /* rule 3 wakes nobody here */
    fl_meta(f, "ann", "rust", NULL);
    fl_state(f, "ann", FLOOR_SLEEP, "manual", VIGIL_CAUSE_CHOICE, 1, T0 - 5);
    fl_spoke(f, "bob");
    fl_level(f, "bob", FLOOR_MENTION_ONLY, "redundant");
    fl_level(f, "cid", FLOOR_SLEEP, "manual");
    fl_human(f, "a rust question");
    assert_string_equal(fl_granted(f), "");
    bool left = true;
    assert_false(floor_forget_level(f->room, "dan", &left)); /* not in the room */
    assert_false(left);
    for (int pass = 0; pass < 2; pass++) {
        assert_true(floor_forget_level(f->room, "ann", &left) == (pass == 0));
        assert_false(left);
        assert_true(floor_forget_level(f->room, "bob", NULL) == (pass == 0));
        assert_true(floor_forget_level(f->room, "cid", &left) == (pass == 0));
        assert_true(left == (pass == 0));
        fl_roundtrip(f);
    }
    fl_human(f, "a rust question");
    assert_string_equal(fl_granted(f), "ann,bob");
    assert_int_equal(f->room->n, 2);
    assert_null(floor_room_find(f->room, "cid"));
    const floor_persona *ann = floor_room_find(f->room, "ann");
    assert_int_equal(ann->level, FLOOR_ACTIVE);
    assert_string_equal(ann->trigger, "");
    assert_int_equal(ann->cause, FLOOR_UNKNOWN);
    assert_int_equal(ann->order, FLOOR_UNKNOWN);
    assert_int_equal(ann->answered_human, 0);
    assert_true(ann->in_meta && ann->n_domains == 1); /* its meta is another input's */
    assert_int_equal(floor_room_find(f->room, "bob")->level, FLOOR_ACTIVE);
    fl_free(f);
}

/* The meta that says nothing (what {} and a cleared meta read as): a
 * persona there through its meta alone leaves, one that spoke stays out
 * of the meta and without its old profile; the same meta again changes
 * nothing. */
static void test_meta_that_says_nothing(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "rust", NULL);
    fl_meta(f, "bob", "go", NULL);
    fl_spoke(f, "bob");
    for (const char *const *p = (const char *const[]){"ann", "bob", NULL}; *p; p++) {
        floor_meta m = {.persona = *p};
        bool left;
        assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, &left));
        assert_true(left == (strcmp(*p, "ann") == 0));
        fl_roundtrip(f);
        assert_false(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, &left));
        assert_false(left);
    }
    assert_int_equal(f->room->n, 1);
    const floor_persona *bob = floor_room_find(f->room, "bob");
    assert_false(bob->in_meta);
    assert_int_equal(bob->n_domains, 0); /* it stays, with the meta's (empty) profile */
    fl_free(f);
}

static void test_view_is_bounded(void **state)
{
    fl_fx *f = fl_new();
    f->cfg.max_personas = 3;
    fl_meta(f, "a", NULL, NULL);
    fl_tick(f, 1);
    fl_meta(f, "b", NULL, NULL);
    fl_tick(f, 1);
    fl_meta(f, "c", NULL, NULL);
    fl_tick(f, 1);
    fl_spoke(f, "a"); /* a is seen again: b is now the stalest */
    fl_tick(f, 1);
    fl_meta(f, "d", NULL, NULL);
    assert_int_equal(f->room->n, 3);
    assert_null(floor_room_find(f->room, "b"));
    assert_non_null(floor_room_find(f->room, "a"));
    assert_non_null(floor_room_find(f->room, "d"));
    fl_free(f);
}

static void test_roundtrip_keeps_everything(void **state)
{
    fl_fx *f = fl_new();
    fl_meta_full(f, "ann", "Ann", "code-review", "typescript,testing", "0.9,0.25");
    fl_meta(f, "bob", "go", NULL);
    fl_level(f, "ann", FLOOR_HUMAN_ONLY, "manual");
    fl_tick(f, 7);
    fl_spoke(f, "bob");
    fl_roundtrip(f);
    floor_persona *a = floor_room_find(f->room, "ann");
    floor_persona *b = floor_room_find(f->room, "bob");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a->name, "Ann");
    assert_string_equal(a->role, "code-review");
    assert_int_equal(a->n_domains, 2);
    assert_string_equal(a->domains[1], "testing");
    assert_true(a->confidence[0] > 0.89 && a->confidence[0] < 0.91);
    assert_true(a->confidence[1] > 0.24 && a->confidence[1] < 0.26);
    assert_int_equal(a->level, FLOOR_HUMAN_ONLY);
    assert_string_equal(a->trigger, "manual");
    assert_true(a->in_meta);
    assert_true(b->confidence[0] == FLOOR_CONFIDENCE_UNSET);
    assert_int_equal(b->last_spoke, T0 + 7);
    assert_int_equal(b->seen, T0 + 7);
    fl_free(f);
}

static void test_unreadable_record(void **state)
{
    char err[200];
    assert_null(floor_room_from_json("not json", "r", err, sizeof err));
    assert_null(floor_room_from_json("{\"personas\":5}", "r", err, sizeof err));
    assert_null(floor_room_from_json("{\"personas\":[1]}", "r", err, sizeof err));
    assert_null(floor_room_from_json("{\"personas\":[{\"id\":\"\"}]}", "r", err, sizeof err));
    floor_room *r = floor_room_from_json("{\"personas\":[{\"id\":\"x\",\"level\":\"bogus\"}]}", "r",
                                         err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->personas[0].level, FLOOR_ACTIVE);
    floor_room_free(r);
}

/* A damaged record's confidence of 1e999 (infinity to json-c) or out of
 * 0..1 reads as unset, and a domain longer than a meta's may be is
 * skipped: the view written next, and the floor events, stay JSON in valid
 * UTF-8. Found by fuzzing. */
static void test_damaged_domains_on_load(void **state)
{
    (void)state;
    char err[200], long_domain[2 * 40 + 1];
    for (int i = 0; i < 40; i++)
        memcpy(long_domain + 2 * i, "\xC3\xA9", 2); /* 80 bytes of "é" */
    long_domain[80] = '\0';
    char text[512];
    snprintf(text, sizeof text,
             "{\"personas\":[{\"id\":\"ann\",\"domains\":[\"security\",\"crypto\",\"%s\","
             "\"ops\"],\"confidence\":[1e999,-0.5,0.5,0.25]}]}",
             long_domain);
    floor_room *r = floor_room_from_json(text, "general", err, sizeof err);
    assert_non_null(r);
    const floor_persona *p = &r->personas[0];
    assert_int_equal(p->n_domains, 3);
    assert_string_equal(p->domains[2], "ops");
    assert_true(p->confidence[0] == FLOOR_CONFIDENCE_UNSET);
    assert_true(p->confidence[1] == FLOOR_CONFIDENCE_UNSET);
    assert_true(p->confidence[2] == 0.25);
    json_object *o = floor_room_to_json(r);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_true(vigil_json_valid(s, strlen(s), true));
    json_object_put(o);
    floor_room_free(r);
}

/* A record listing a persona twice (never written so, but read as it is):
 * one entry, where the first was; the later entry's fields replace the
 * earlier ones (a field it lacks reads as its default), its domains follow
 * the earlier ones up to FLOOR_MAX_DOMAINS. */
static void test_duplicate_entries_on_load(void **state)
{
    char err[200];
    floor_room *r = floor_room_from_json(
        "{\"personas\":["
        "{\"id\":\"ann\",\"name\":\"Ann\",\"role\":\"go-dev\",\"domains\":[\"go\",\"rust\"],"
        "\"confidence\":[0.9,0.2],\"level\":\"sleep\",\"trigger\":\"manual\",\"spoke\":5,"
        "\"seen\":6,\"meta\":true},"
        "{\"id\":\"bob\",\"domains\":[\"c\"]},"
        "{\"id\":\"ann\",\"name\":\"Anna\",\"domains\":[\"zig\"],\"confidence\":[0.4],\"seen\":9}]}",
        "general", err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->n, 2);
    const floor_persona *a = &r->personas[0];
    assert_string_equal(a->id, "ann");
    assert_string_equal(r->personas[1].id, "bob");
    assert_string_equal(a->name, "Anna");
    assert_string_equal(a->role, "");
    assert_int_equal(a->level, FLOOR_ACTIVE);
    assert_string_equal(a->trigger, "");
    assert_int_equal(a->last_spoke, 0);
    assert_int_equal(a->seen, 9);
    assert_false(a->in_meta);
    assert_int_equal(a->n_domains, 3);
    assert_string_equal(a->domains[2], "zig");
    assert_true(a->confidence[0] > 0.89 && a->confidence[0] < 0.91);
    assert_true(a->confidence[2] > 0.39 && a->confidence[2] < 0.41);
    floor_room_free(r);
}

/* The record test_duplicates_at_scale reads: n ids, then each again (in
 * reverse order) with one more domain. */
static char *duplicated_record(int n)
{
    size_t cap = (size_t)n * 200 + 64, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    len += (size_t)snprintf(s + len, cap - len, "{\"personas\":[");
    for (int i = 0; i < 2 * n; i++) {
        int id = i < n ? i : 2 * n - 1 - i;
        len += (size_t)snprintf(s + len, cap - len,
                                "%s{\"id\":\"persona-%d\",\"seen\":%d,\"domains\":[\"d%d\"]}",
                                i ? "," : "", id, i, i);
    }
    snprintf(s + len, cap - len, "]}");
    return s;
}

/* Many personas each listed twice: every one kept once, in the order of
 * its first entry, with the later entry's fields and both domains. */
static void test_duplicates_at_scale(void **state)
{
    const int n = 2000;
    char *text = duplicated_record(n), err[200];
    floor_room *r = floor_room_from_json(text, "general", err, sizeof err);
    free(text);
    assert_non_null(r);
    assert_int_equal(r->n, n);
    for (int i = 0; i < n; i++) {
        char id[32], d[32];
        snprintf(id, sizeof id, "persona-%d", i);
        snprintf(d, sizeof d, "d%d", 2 * n - 1 - i);
        assert_string_equal(r->personas[i].id, id);
        assert_int_equal(r->personas[i].seen, 2 * n - 1 - i);
        assert_int_equal(r->personas[i].n_domains, 2);
        assert_string_equal(r->personas[i].domains[1], d);
    }
    floor_room_free(r);
}

/* A persona listed again and again in a record keeps FLOOR_MAX_DOMAINS
 * domains in all. */
static void test_duplicate_domains_capped_on_load(void **state)
{
    char text[8192] = "{\"personas\":[", err[200], last[16];
    for (int i = 0; i < FLOOR_MAX_DOMAINS + 5; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 "%s{\"id\":\"ann\",\"domains\":[\"d%d\"]}", i ? "," : "", i);
    strcat(text, "]}");
    floor_room *r = floor_room_from_json(text, "general", err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->personas[0].n_domains, FLOOR_MAX_DOMAINS);
    snprintf(last, sizeof last, "d%d", FLOOR_MAX_DOMAINS - 1);
    assert_string_equal(r->personas[0].domains[FLOOR_MAX_DOMAINS - 1], last);
    floor_room_free(r);
}

static void test_wake_trigger_list(void **state)
{
    floor_config c;
    floor_config_init(&c);
    assert_int_equal(c.k, 2);
    /* the fallback list leaves out suggestion-default, which ends
     * suggestions of either cause */
    assert_int_equal(c.n_wake_triggers, 2);
    assert_string_equal(c.wake_triggers[1], "ai-only");
    /* rule 3's defaults are dormancy-monitor's */
    assert_true(c.wake.auto_wake);
    assert_false(c.wake.human_wakes_all);
    assert_int_equal(c.wake.min_awake, 2);
    assert_int_equal(floor_config_set_wake_triggers(&c, "no-human"), 0);
    assert_int_equal(c.n_wake_triggers, 1);
    /* spaces around an entry are no part of it; an entry of spaces is empty */
    assert_int_equal(floor_config_set_wake_triggers(&c, " no-human , ai-only"), 0);
    assert_int_equal(c.n_wake_triggers, 2);
    assert_string_equal(c.wake_triggers[0], "no-human");
    assert_string_equal(c.wake_triggers[1], "ai-only");
    assert_int_equal(floor_config_set_wake_triggers(&c, "a, ,b"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a,,b"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a,"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a,b,c,d,e,f,g,h,i"), -1);
    assert_int_equal(floor_config_set_wake_triggers(&c, "a-very-long-trigger-name-beyond-limit"), -1);
}

static void test_match_whole_words(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", "test,machine learning", "0.7,0.9");
    floor_persona *p = floor_room_find(f->room, "ann");
    const char *d;
    double s;
    assert_int_equal(floor_match(p, "attest this", &d, &s), -1);
    assert_int_equal(floor_match(p, "please TEST it!", &d, &s), FLOOR_WHY_DOMAIN);
    assert_string_equal(d, "test");
    /* two domains: the higher confidence names the match */
    assert_int_equal(floor_match(p, "test my machine learning model", &d, &s), FLOOR_WHY_DOMAIN);
    assert_string_equal(d, "machine learning");
    assert_true(s > 0.89);
    assert_int_equal(floor_match(p, NULL, &d, &s), -1);
    /* a domain written with '-' or '_' also matches with spaces, as a role
     * does ("machine learning" for "machine-learning"); its own spelling
     * still matches, a lone part of it does not */
    fl_meta(f, "bob", "machine-learning,ci_cd", "0.8,0.6");
    p = floor_room_find(f->room, "bob");
    assert_int_equal(floor_match(p, "a Machine Learning question", &d, &s), FLOOR_WHY_DOMAIN);
    assert_string_equal(d, "machine-learning");
    assert_true(s > 0.79);
    assert_int_equal(floor_match(p, "our machine-learning model", &d, &s), FLOOR_WHY_DOMAIN);
    assert_int_equal(floor_match(p, "the ci cd pipeline", &d, &s), FLOOR_WHY_DOMAIN);
    assert_string_equal(d, "ci_cd");
    assert_int_equal(floor_match(p, "learning to cook", &d, &s), -1);
    assert_int_equal(floor_match(p, "machine learningx", &d, &s), -1);
    fl_free(f);
}

/* A domain matches whatever the case of the message's words, and its
 * confidence key is found whatever its case too; a key spelled exactly as
 * the domain wins over another case. With K=1 the 0.9 expert, whose meta
 * writes "Kubernetes" in expertise_domains and "kubernetes" in
 * confidence_levels, gets the floor over the 0.6 one. */
static void test_confidence_key_in_any_case(void **state)
{
    fl_fx *f = fl_new();
    const char *rooms[] = {"general"};
    const char *domains[] = {"Kubernetes", "go"};
    const char *keys[] = {"kubernetes", "GO", "go"};
    double values[] = {0.9, 0.2, 0.7};
    floor_meta m = {.persona = "bob", .rooms = rooms, .n_rooms = 1, .domains = domains,
                    .n_domains = 2, .conf_domains = keys, .conf_values = values, .n_conf = 3};
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, NULL));
    fl_tick(f, 10);
    fl_meta(f, "ann", "kubernetes", "0.6");
    fl_roundtrip(f);
    const floor_persona *bob = floor_room_find(f->room, "bob");
    assert_true(bob->confidence[0] > 0.89 && bob->confidence[0] < 0.91);
    assert_true(bob->confidence[1] > 0.69 && bob->confidence[1] < 0.71);
    f->cfg.k = 1;
    fl_human(f, "Why does my KUBERNETES pod restart?");
    assert_string_equal(fl_granted(f), "bob");
    assert_string_equal(fl_pick(f, "bob")->reason,
                        "expertise 'Kubernetes' (confidence 0.90) in the message");
    fl_free(f);
}

/* A persona may say its expertise by confidence_levels alone (the
 * autopilot finds a domain's experts by their confidence in it): each key
 * the expertise_domains do not name is a domain of its own, after them.
 * With K=1 the code reviewer sure of its architecture gets the floor for an
 * architecture question over one that knows nothing of it. */
static void test_confidence_keys_are_domains(void **state)
{
    fl_fx *f = fl_new();
    const char *rooms[] = {"general"};
    const char *domains[] = {"testing"};
    const char *keys[] = {"architecture", "Testing", "typescript", "ARCHITECTURE"};
    double values[] = {0.85, 0.8, 0.9, 0.1};
    floor_meta m = {.persona = "zed", .role = "code-review", .rooms = rooms, .n_rooms = 1,
                    .domains = domains, .n_domains = 1, .conf_domains = keys,
                    .conf_values = values, .n_conf = 4};
    assert_true(floor_learn_meta(f->room, &f->cfg, &m, f->now, NULL, NULL));
    fl_meta(f, "aaa", NULL, NULL);
    fl_roundtrip(f);
    const floor_persona *zed = floor_room_find(f->room, "zed");
    assert_int_equal(zed->n_domains, 3);
    assert_string_equal(zed->domains[0], "testing");
    assert_true(zed->confidence[0] > 0.79 && zed->confidence[0] < 0.81);
    assert_string_equal(zed->domains[1], "architecture");
    assert_true(zed->confidence[1] > 0.84 && zed->confidence[1] < 0.86);
    assert_string_equal(zed->domains[2], "typescript");
    f->cfg.k = 1;
    fl_human(f, "an architecture question");
    assert_string_equal(fl_granted(f), "zed");
    assert_string_equal(fl_pick(f, "zed")->reason,
                        "expertise 'architecture' (confidence 0.85) in the message");
    assert_int_equal(f->room->n_notes, 0);
    fl_tick(f, 10);
    fl_human(f, "a question about cooking");
    assert_string_equal(fl_granted(f), "aaa");
    fl_free(f);
}

static void test_forget_unless_active_since(void **state)
{
    fl_fx *f = fl_new();
    fl_meta(f, "ann", NULL, NULL);
    fl_meta(f, "bob", NULL, NULL);
    floor_learn_message(f->room, T0 + 100);
    floor_learn_message(f->room, T0 + 50); /* an older one does not go back */
    fl_roundtrip(f);
    assert_int_equal(f->room->last_message, T0 + 100);
    /* cleanup of rooms inactive since T0+100: this one had a message then */
    assert_false(floor_may_forget(f->room, T0 + 100));
    assert_true(floor_may_forget(f->room, T0 + 101));
    assert_true(floor_may_forget(f->room, 0)); /* unconditional */
    floor_forget(f->room);
    fl_roundtrip(f);
    assert_int_equal(f->room->n, 0);
    fl_human(f, "anyone?");
    assert_int_equal(f->d.n, 0);
    fl_free(f);
}

/* A room record written before cause, order and auto-wake were kept reads
 * them as unknown: the trigger list, view order and the variable decide. */
static void test_old_record_reads_unknown(void **state)
{
    char err[200];
    floor_room *r = floor_room_from_json(
        "{\"room\":\"general\",\"personas\":[{\"id\":\"ann\",\"level\":\"sleep\","
        "\"trigger\":\"ai-only\",\"spoke\":0,\"seen\":1,\"meta\":true}]}",
        "general", err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->personas[0].cause, FLOOR_UNKNOWN);
    assert_int_equal(r->personas[0].order, FLOOR_UNKNOWN);
    assert_int_equal(r->personas[0].auto_wake, FLOOR_UNKNOWN);
    assert_int_equal(r->personas[0].answered_human, 0);
    floor_room_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_record_reads_unknown),
        cmocka_unit_test(test_meta_join_leave),
        cmocka_unit_test(test_speaker_stays_after_meta_leaves),
        cmocka_unit_test(test_speaker_and_level_join),
        cmocka_unit_test(test_state_without_the_room_forgets_the_level),
        cmocka_unit_test(test_meta_that_says_nothing),
        cmocka_unit_test(test_view_is_bounded),
        cmocka_unit_test(test_roundtrip_keeps_everything),
        cmocka_unit_test(test_unreadable_record),
        cmocka_unit_test(test_damaged_domains_on_load),
        cmocka_unit_test(test_duplicate_entries_on_load),
        cmocka_unit_test(test_duplicates_at_scale),
        cmocka_unit_test(test_duplicate_domains_capped_on_load),
        cmocka_unit_test(test_wake_trigger_list),
        cmocka_unit_test(test_match_whole_words),
        cmocka_unit_test(test_confidence_key_in_any_case),
        cmocka_unit_test(test_confidence_keys_are_domains),
        cmocka_unit_test(test_forget_unless_active_since),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
