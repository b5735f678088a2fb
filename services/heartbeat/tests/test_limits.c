/* Limits that speak, in the core, with an injected clock: the rooms whose
 * level a persona remembers (HB_LEVELS_MAX: the configured room's first,
 * the rest refused and said in out.limit), a proactive message longer than
 * HB_MESSAGE_MAX (sent cut, said in the run's detail and out.limit), the
 * rule that refuses a config joining a full room, and a time zone name
 * longer than HB_TZ_NAME_MAX refused for its length. */
#include "hb_test.h"

typedef struct fx {
    hb_config c;
    hb_state s;
    hb_out out;
    int64_t t0;
} fx;

static void setup(fx *f)
{
    test_config(&f->c);
    hb_out_init(&f->out);
    f->t0 = utc_ms(2026, 7, 1, 14, 0); /* peak, in UTC */
    configured(&f->s, &f->c, NULL, f->t0);
}

static void teardown_fx(fx *f)
{
    hb_out_clear(&f->out);
    hb_state_free(&f->s);
}

/* n rooms "r00".. at level active, with the configured room "general"
 * asleep at position at (or absent when at < 0). */
static void rooms(hb_room_level *lv, int n, int at)
{
    for (int i = 0; i < n; i++) {
        snprintf(lv[i].room, sizeof lv[i].room, "r%02d", i);
        lv[i].level = HB_LEVEL_ACTIVE;
    }
    if (at >= 0) {
        snprintf(lv[at].room, sizeof lv[at].room, "general");
        lv[at].level = HB_LEVEL_SLEEP;
    }
}

static void levels(fx *f, const hb_room_level *lv, int n)
{
    hb_out_clear(&f->out);
    assert_int_equal(hb_on_levels(&f->s, lv, n, f->t0, &f->out), HB_OK);
}

static void levels_past_the_limit_keep_the_configured_room_and_say_so(void **st)
{
    (void)st;
    fx f;
    setup(&f);
    hb_room_level lv[HB_LEVELS_MAX + 8];
    rooms(lv, HB_LEVELS_MAX + 8, HB_LEVELS_MAX + 7); /* the configured room comes last */
    levels(&f, lv, HB_LEVELS_MAX + 8);
    assert_true(f.out.changed);
    assert_int_equal(f.s.n_levels, HB_LEVELS_MAX);
    assert_string_equal(f.s.levels[0].room, "general");
    assert_string_equal(f.s.levels[1].room, "r00");
    assert_non_null(f.out.limit);
    assert_string_equal(f.out.limit, HB_LIMIT_LEVELS);
    assert_non_null(strstr(f.out.limit_detail, "state of persona helper lists 40 rooms"));
    assert_non_null(strstr(f.out.limit_detail, "the levels of 8 rooms are not kept"));
    assert_non_null(strstr(f.out.limit_detail, "'general' is kept first"));
    /* the level that matters is the one a run reads */
    json_object *ev = fire(&f.s, &f.c, f.t0 + 2 * MIN_MS, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "reason"), "persona-asleep");
    json_object_put(ev);
    /* and it survives the record's round trip */
    char *dump = hb_state_dump(&f.s), err[100];
    hb_state back;
    assert_int_equal(hb_state_load(&back, "helper", dump, err, sizeof err), 0);
    assert_int_equal(back.n_levels, HB_LEVELS_MAX);
    assert_int_equal(hb_state_level(&back, "general"), HB_LEVEL_SLEEP);
    hb_state_free(&back);
    free(dump);
    teardown_fx(&f);
}

static void levels_within_the_limit_are_silent(void **st)
{
    (void)st;
    fx f;
    setup(&f);
    hb_room_level lv[HB_LEVELS_MAX];
    rooms(lv, HB_LEVELS_MAX, 3);
    levels(&f, lv, HB_LEVELS_MAX);
    assert_null(f.out.limit);
    assert_int_equal(f.s.n_levels, HB_LEVELS_MAX);
    levels(&f, lv, HB_LEVELS_MAX); /* the same snapshot again changes nothing */
    assert_false(f.out.changed);
    assert_null(f.out.limit);
    teardown_fx(&f);
}

static void levels_of_an_unconfigured_persona_keep_the_first(void **st)
{
    (void)st;
    hb_state s;
    hb_out out;
    char err[100];
    assert_int_equal(hb_state_load(&s, "ghost", NULL, err, sizeof err), 0);
    hb_out_init(&out);
    hb_room_level lv[HB_LEVELS_MAX + 1];
    rooms(lv, HB_LEVELS_MAX + 1, -1);
    assert_int_equal(hb_on_levels(&s, lv, HB_LEVELS_MAX + 1, 0, &out), HB_OK);
    assert_int_equal(s.n_levels, HB_LEVELS_MAX);
    assert_string_equal(s.levels[HB_LEVELS_MAX - 1].room, "r31");
    assert_string_equal(out.limit, HB_LIMIT_LEVELS);
    assert_non_null(strstr(out.limit_detail, "the levels of 1 rooms are not kept"));
    assert_null(strstr(out.limit_detail, "configured room"));
    hb_out_clear(&out);
    hb_state_free(&s);
}

/* The model's JSON answer with a message of n copies of the UTF-8 text u. */
static char *long_answer(const char *u, int n)
{
    size_t ul = strlen(u), len = ul * (size_t)n + 128;
    char *a = malloc(len);
    assert_non_null(a);
    size_t k = (size_t)snprintf(a, len, "{\"priority\":\"urgent\",\"category\":\"reminder\",\"message\":\"");
    for (int i = 0; i < n; i++, k += ul)
        memcpy(a + k, u, ul);
    snprintf(a + k, len - k, "\"}");
    return a;
}

static void a_message_past_the_limit_is_sent_cut_and_says_so(void **st)
{
    (void)st;
    fx f;
    setup(&f);
    fire(&f.s, &f.c, f.t0 + 2 * MIN_MS, &f.out);
    assert_non_null(f.out.job);
    char *text = long_answer("\xe2\x82\xac", 1667); /* 5001 bytes of a 3-byte character */
    json_object *ev = answer(&f.s, &f.c, text, f.t0 + 2 * MIN_MS + 1000, &f.out);
    assert_non_null(ev);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    assert_non_null(strstr(jstr(ev, "detail"), "message cut to 3999 of 5001 bytes"));
    json_object_put(ev);
    assert_string_equal(f.out.limit, HB_LIMIT_MESSAGE);
    assert_non_null(strstr(f.out.limit_detail, "of 5001 bytes was cut to 3999"));
    json_object *msg = out_json(&f.out, "/message");
    assert_non_null(msg);
    assert_int_equal(strlen(jstr(msg, "text")), 3999); /* never inside a UTF-8 sequence */
    json_object_put(msg);
    free(text);
    teardown_fx(&f);
}

static void a_message_at_the_limit_is_whole_and_silent(void **st)
{
    (void)st;
    fx f;
    setup(&f);
    fire(&f.s, &f.c, f.t0 + 2 * MIN_MS, &f.out);
    char *text = long_answer("x", HB_MESSAGE_MAX);
    json_object *ev = answer(&f.s, &f.c, text, f.t0 + 2 * MIN_MS + 1000, &f.out);
    assert_string_equal(jstr(ev, "outcome"), "sent");
    assert_null(strstr(jstr(ev, "detail"), "cut"));
    assert_null(f.out.limit);
    json_object_put(ev);
    free(text);
    hb_reply r;
    text = long_answer("x", HB_MESSAGE_MAX + 1);
    hb_reply_read(text, strlen(text), &r);
    assert_int_equal(r.kind, HB_REPLY_MESSAGE);
    assert_int_equal(r.cut_from, HB_MESSAGE_MAX + 1);
    assert_int_equal(strlen(r.message), HB_MESSAGE_MAX);
    hb_reply_clear(&r);
    free(text);
    teardown_fx(&f);
}

static void a_config_joining_a_full_room_is_refused(void **st)
{
    (void)st;
    fx f;
    setup(&f); /* helper serves "general" */
    hb_persona_cfg same, other;
    parse_cfg(&f.c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":false}",
              &same);
    parse_cfg(&f.c, "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"busy\",\"enabled\":true}",
              &other);
    /* its own room: republished or switched off, even past the limit */
    assert_false(hb_config_joins_full_room(&f.s, &same, 64, 64));
    assert_false(hb_config_joins_full_room(&f.s, &same, 65, 64));
    /* another room: only while it has a free place */
    assert_false(hb_config_joins_full_room(&f.s, &other, 63, 64));
    assert_true(hb_config_joins_full_room(&f.s, &other, 64, 64));
    assert_true(hb_config_joins_full_room(&f.s, &other, 65, 64));
    /* a persona not configured yet joins like any other */
    hb_state fresh;
    char err[100];
    assert_int_equal(hb_state_load(&fresh, "helper", NULL, err, sizeof err), 0);
    assert_true(hb_config_joins_full_room(&fresh, &same, 64, 64));
    assert_false(hb_config_joins_full_room(&fresh, &same, 0, 64));
    hb_state_free(&fresh);
    hb_persona_cfg_clear(&same);
    hb_persona_cfg_clear(&other);
    teardown_fx(&f);
}

static void a_time_zone_name_past_the_limit_is_refused_for_its_length(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    char name[HB_TZ_NAME_MAX + 2], json[512], err[200] = "";
    memset(name, 'A', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    snprintf(json, sizeof json,
             "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":true,"
             "\"timezone\":\"%s\"}", name);
    assert_int_equal(parse_cfg_status(&c, json, err, sizeof err), HB_CFG_BAD_VALUE);
    assert_non_null(strstr(err, "longer than 64 bytes"));
    name[HB_TZ_NAME_MAX] = '\0'; /* 64 bytes: not refused for its length */
    snprintf(json, sizeof json,
             "{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":true,"
             "\"timezone\":\"%s\"}", name);
    assert_int_equal(parse_cfg_status(&c, json, err, sizeof err), HB_CFG_BAD_VALUE);
    assert_non_null(strstr(err, "unknown time zone"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(levels_past_the_limit_keep_the_configured_room_and_say_so),
        cmocka_unit_test(levels_within_the_limit_are_silent),
        cmocka_unit_test(levels_of_an_unconfigured_persona_keep_the_first),
        cmocka_unit_test(a_message_past_the_limit_is_sent_cut_and_says_so),
        cmocka_unit_test(a_message_at_the_limit_is_whole_and_silent),
        cmocka_unit_test(a_config_joining_a_full_room_is_refused),
        cmocka_unit_test(a_time_zone_name_past_the_limit_is_refused_for_its_length),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
