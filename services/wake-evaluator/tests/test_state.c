/* test_state.c - the room record: JSON round trip, unreadable records,
 * levels (stale reports ignored, rooms left), metadata and membership, the
 * recentActivity, and the token-savings estimate. */
#include <math.h>
#include "wk_test.h"

static void roundtrip_keeps_everything(void **state)
{
    (void)state;
    wk *t = wk_new();
    const char *doms[] = {"typescript", "testing"};
    double cv[] = {0.9, 0.8};
    wake_meta m = {.persona = "cr", .name = "Code \"Review\" AI", .role = "code-review",
                   .tier = "smart", .model = "llama3.1:70b", .mood = "focused",
                   .parameters = 70000000000LL, .availability = 0.8, .domains = doms,
                   .n_domains = 2, .conf_domains = doms, .conf_values = cv, .n_conf = 2,
                   .auto_wake = 0, .llm_wake = 1, .wake_conf = 0.85};
    assert_int_equal(wake_on_meta(t->r, &t->c, &m, true, t->now, &t->sink), 0);
    wk_level(t, "cr", WAKE_LEVEL_SLEEP, "manual");
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "h\xc3\xa9llo \"quoted\"\n\ttabbed \x01 ctl");
    wk_msg(t, "cr", WAKE_SENDER_AI, "answer");
    wk_roundtrip(t);
    const wake_persona *p = wake_room_find(t->r, "cr");
    assert_string_equal(p->name, "Code \"Review\" AI");
    assert_string_equal(p->model, "llama3.1:70b");
    assert_string_equal(p->mood, "focused");
    assert_int_equal(p->n_domains, 2);
    assert_int_equal(p->n_conf, 2);
    assert_true(p->conf[1] == 0.8);
    assert_int_equal(p->auto_wake_ov, 0);
    assert_int_equal(p->llm_wake_ov, 1);
    assert_true(p->wake_conf_ov == 0.85);
    assert_int_equal(p->level, WAKE_LEVEL_SLEEP);
    assert_int_equal(p->n_msgs, 1);
    assert_true(t->r->has_human);
    assert_string_equal(t->r->last_human.text, "h\xc3\xa9llo \"quoted\"\n\ttabbed \x01 ctl");
    assert_int_equal(t->r->n_times, 2);
    assert_int_equal(t->r->n_texts, 2);
    assert_true(t->r->msgs_total == 2);
    wk_free(t);
}

static void unreadable_record_starts_afresh(void **state)
{
    (void)state;
    bool corrupt = false;
    wake_room *r = wake_room_from_json("x", "{not json", &corrupt);
    assert_non_null(r);
    assert_true(corrupt);
    assert_int_equal(r->n_personas, 0);
    wake_room_free(r);
    r = wake_room_from_json("x", "{\"v\": 99}", &corrupt); /* another version */
    assert_true(corrupt);
    wake_room_free(r);
    r = wake_room_from_json("x", NULL, &corrupt);
    assert_false(corrupt);
    wake_room_free(r);
    /* odd types inside a record are ignored, not fatal */
    r = wake_room_from_json("x", "{\"v\":1,\"p\":[{\"id\":\"a\",\"l\":7,\"mt\":[1],\"mr\":\"x\"},5],"
                                 "\"tt\":[1,2],\"tk\":\"h\",\"lh\":[]}", &corrupt);
    assert_false(corrupt);
    assert_int_equal(r->n_personas, 1);
    assert_int_equal(r->personas[0].level, WAKE_LEVEL_UNKNOWN);
    assert_int_equal(r->n_times, 1);
    wake_room_free(r);
}

/* A damaged record's counters and times beyond any real one (json-c reads
 * 1e20 as INT64_MAX) read as absent, so the next message's counting
 * cannot overflow; a meta's parameter count is kept as said. Found with
 * the fuzz target. */
static void out_of_range_record_numbers_read_as_absent(void **state)
{
    (void)state;
    wk *t = wk_new();
    wake_room_free(t->r);
    bool corrupt = true;
    t->r = wake_room_from_json("general",
                               "{\"v\":1,\"mn\":100000000000000000000,\"am\":9223372036854775807,"
                               "\"ac\":9223372036854775807,\"tw\":9223372036854775807,"
                               "\"ev\":9223372036854775807,\"pt\":-9223372036854775807,"
                               "\"p\":[{\"id\":\"a\",\"pa\":9000000000000000000,"
                               "\"mt\":[-9223372036854775807],\"mr\":[9223372036854775807]}]}",
                               &corrupt);
    assert_false(corrupt);
    assert_int_equal(t->r->msgs_total, 0);
    assert_int_equal(t->r->ai_msgs, 0);
    assert_int_equal(t->r->prev_ts, 0);
    assert_int_equal(t->r->personas[0].parameters, 9000000000000000000LL);
    assert_int_equal(t->r->personas[0].resp_ms[0], -1);
    assert_int_equal(wk_msg(t, "a", WAKE_SENDER_AI, "hello"), 0);
    assert_int_equal(wk_msg(t, "joel", WAKE_SENDER_HUMAN, "hi"), 0);
    assert_int_equal(t->r->msgs_total, 2);
    wk_free(t);
}

/* Message times are stored as one string of differences ("td", a
 * persona's "mtd"); records written before, with arrays ("tt", "mt"), still
 * read, and any time (negative, far apart, out of order) comes back. */
static void times_are_kept_as_differences(void **state)
{
    (void)state;
    wake_room *r = wake_room_new("x");
    wake_persona *p = wake_room_add(r, "a", 0);
    snprintf(p->mood, sizeof p->mood, "calm"); /* "md", beside "mtd" */
    const int64_t t[] = {1732448000000, 1732448000003, 1732447999000, -5, INT64_MAX, INT64_MIN, 0};
    int n = (int)(sizeof t / sizeof t[0]);
    for (int i = 0; i < n; i++) {
        r->times[i] = t[i];
        r->kinds[i] = i % 2 ? WAKE_SENDER_HUMAN : WAKE_SENDER_AI;
        p->msg_ts[i] = t[n - 1 - i];
        p->resp_ms[i] = i - 1;
    }
    r->n_times = p->n_msgs = n;
    char *j = wake_room_to_json(r);
    assert_non_null(strstr(j, "\"td\":\"1732448000000,3,-1003,"));
    assert_null(strstr(j, "\"tt\""));
    bool corrupt = true;
    wake_room *back = wake_room_from_json("x", j, &corrupt);
    assert_false(corrupt);
    assert_int_equal(back->n_times, n);
    assert_int_equal(back->personas[0].n_msgs, n);
    assert_string_equal(back->personas[0].mood, "calm");
    for (int i = 0; i < n; i++) {
        assert_true(back->times[i] == t[i]);
        assert_int_equal(back->kinds[i], r->kinds[i]);
        assert_true(back->personas[0].msg_ts[i] == t[n - 1 - i]);
        assert_true(back->personas[0].resp_ms[i] == i - 1);
    }
    char *again = wake_room_to_json(back);
    assert_string_equal(again, j);
    free(again);
    free(j);
    wake_room_free(back);
    wake_room_free(r);
    /* a full list whose every difference takes the longest text there is
     * (20 bytes: 0 and INT64_MIN alternating), written in place */
    r = wake_room_new("x");
    for (int i = 0; i < WAKE_TIMES_MAX; i++) {
        r->times[i] = i % 2 ? INT64_MIN : 0;
        r->kinds[i] = i % 3 ? WAKE_SENDER_AI : WAKE_SENDER_SYSTEM;
    }
    r->n_times = WAKE_TIMES_MAX;
    j = wake_room_to_json(r);
    assert_non_null(j);
    const char *td = strstr(j, "\"td\":\"0,-9223372036854775808,-9223372036854775808,");
    assert_non_null(td);
    const char *td_end = strchr(td + 6, '"');
    assert_int_equal(td_end - (td + 6), 1 + (WAKE_TIMES_MAX - 1) * 21);
    back = wake_room_from_json("x", j, &corrupt);
    assert_false(corrupt);
    assert_int_equal(back->n_times, WAKE_TIMES_MAX);
    for (int i = 0; i < WAKE_TIMES_MAX; i++) {
        assert_true(back->times[i] == r->times[i]);
        assert_int_equal(back->kinds[i], r->kinds[i]);
    }
    free(j);
    wake_room_free(back);
    wake_room_free(r);
    /* the arrays of records written before */
    r = wake_room_from_json("x", "{\"v\":1,\"p\":[{\"id\":\"a\",\"mt\":[5,7],\"mr\":[-1,2]}],"
                                 "\"tt\":[10,20,30],\"tk\":\"ahs\"}", &corrupt);
    assert_false(corrupt);
    assert_int_equal(r->n_times, 3);
    assert_true(r->times[2] == 30 && r->kinds[1] == WAKE_SENDER_HUMAN);
    assert_int_equal(r->personas[0].n_msgs, 2);
    assert_true(r->personas[0].msg_ts[1] == 7 && r->personas[0].resp_ms[1] == 2);
    wake_room_free(r);
    /* a damaged list keeps what was read before the damage */
    r = wake_room_from_json("x", "{\"v\":1,\"td\":\"100,5,x,7\",\"tk\":\"aaaa\"}", &corrupt);
    assert_false(corrupt);
    assert_int_equal(r->n_times, 2);
    assert_true(r->times[1] == 105);
    wake_room_free(r);
}

static void levels_newest_report_wins(void **state)
{
    (void)state;
    wk *t = wk_new();
    assert_int_equal(wake_on_level(t->r, &t->c, "a", true, WAKE_LEVEL_SLEEP, T0, "manual", T0 + 5, &t->sink), 0);
    assert_int_equal(t->members_added, 1);
    /* an older report (e.g. a retained state older than a dormancy event) */
    wake_on_level(t->r, &t->c, "a", true, WAKE_LEVEL_ACTIVE, T0 - 1000, "mention", T0 + 5, &t->sink);
    assert_int_equal(wake_room_find(t->r, "a")->level, WAKE_LEVEL_SLEEP);
    wake_on_level(t->r, &t->c, "a", true, WAKE_LEVEL_ACTIVE, T0 + 1, "mention", T0 + 5, &t->sink);
    assert_int_equal(wake_room_find(t->r, "a")->level, WAKE_LEVEL_ACTIVE);
    /* a report from the future is taken as now */
    wake_on_level(t->r, &t->c, "a", true, WAKE_LEVEL_SLEEP, T0 + 999999, "manual", T0 + 10, &t->sink);
    assert_true(wake_room_find(t->r, "a")->level_ts == T0 + 10);
    /* the state no longer lists the room, and no meta holds it: gone */
    wake_on_level(t->r, &t->c, "a", false, WAKE_LEVEL_UNKNOWN, 0, NULL, T0 + 20, &t->sink);
    assert_null(wake_room_find(t->r, "a"));
    assert_int_equal(t->members_removed, 1);
    wk_free(t);
}

static void meta_membership(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, NULL, 0);
    assert_int_equal(t->members_added, 1);
    wk_level(t, "a", WAKE_LEVEL_SLEEP, "manual");
    wake_meta m = {.persona = "a", .parameters = -1, .availability = -1, .auto_wake = -1,
                   .llm_wake = -1, .wake_conf = -1};
    /* left the room per its meta, but dormancy-monitor still reports it */
    assert_int_equal(wake_on_meta(t->r, &t->c, &m, false, t->now, &t->sink), 0);
    assert_non_null(wake_room_find(t->r, "a"));
    assert_false(wake_room_find(t->r, "a")->member);
    wake_on_level(t->r, &t->c, "a", false, WAKE_LEVEL_UNKNOWN, 0, NULL, t->now, &t->sink);
    assert_null(wake_room_find(t->r, "a"));
    /* a room full of personas tracks no more */
    t->c.max_personas = 2;
    wk_persona(t, "b", "smart", -1, NULL, 0);
    wk_persona(t, "c", "smart", -1, NULL, 0);
    wk_persona(t, "d", "smart", -1, NULL, 0);
    assert_int_equal(t->r->n_personas, 2);
    wk_free(t);
}

/* Applies a level report that does not list the room (what a cleared
 * persona/{p}/state, or {"rooms":{}}, is for each room holding p) or, with
 * m, a meta that does not list it; returns the record afterwards. */
static char *forget(wk *t, const char *persona, const wake_meta *m)
{
    if (m)
        assert_int_equal(wake_on_meta(t->r, &t->c, m, false, t->now, &t->sink), 0);
    else
        assert_int_equal(wake_on_level(t->r, &t->c, persona, false, WAKE_LEVEL_UNKNOWN, 0, NULL,
                                       t->now, &t->sink),
                         0);
    wk_roundtrip(t);
    char *json = wake_room_to_json(t->r);
    assert_non_null(json);
    return json;
}

/* A state without the room forgets the level as if none had been
 * reported (so a report older than the forgotten one is taken), and a
 * persona its meta does not hold leaves; the meta that says nothing (what
 * {} and a cleared meta read as) then takes out a persona without a level.
 * Each applied twice: the second changes nothing. */
static void cleared_state_and_meta_forget(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, "servers", 0.9);
    wk_level(t, "a", WAKE_LEVEL_SLEEP, "manual");
    wk_level(t, "b", WAKE_LEVEL_SLEEP, "manual"); /* in the room through its state alone */
    t->now += 10 * MIN;
    char *once = forget(t, "a", NULL);
    free(once);
    once = forget(t, "b", NULL);
    char *twice = forget(t, "a", NULL);
    free(twice);
    twice = forget(t, "b", NULL);
    assert_string_equal(once, twice);
    free(once);
    free(twice);
    const wake_persona *a = wake_room_find(t->r, "a");
    assert_int_equal(a->level, WAKE_LEVEL_UNKNOWN);
    assert_true(a->level_ts == 0 && a->dormant_since == 0);
    assert_string_equal(a->trigger, "");
    assert_true(a->member);
    assert_null(wake_room_find(t->r, "b"));
    assert_int_equal(t->members_removed, 1);
    wake_on_level(t->r, &t->c, "a", true, WAKE_LEVEL_SLEEP, T0 - MIN, "manual", t->now, &t->sink);
    assert_int_equal(wake_room_find(t->r, "a")->level, WAKE_LEVEL_SLEEP);
    free(forget(t, "a", NULL));
    wake_meta none = {.persona = "a", .parameters = -1, .availability = -1, .auto_wake = -1,
                      .llm_wake = -1, .wake_conf = -1};
    once = forget(t, NULL, &none);
    twice = forget(t, NULL, &none);
    assert_string_equal(once, twice);
    free(once);
    free(twice);
    assert_null(wake_room_find(t->r, "a"));
    assert_int_equal(t->members_removed, 2);
    assert_int_equal(t->r->n_personas, 0);
    /* one with a level stays: its profile is the meta's all the same */
    wk_persona(t, "c", "smart", -1, "servers", 0.9);
    wk_level(t, "c", WAKE_LEVEL_SLEEP, "manual");
    none.persona = "c";
    free(forget(t, NULL, &none));
    const wake_persona *c = wake_room_find(t->r, "c");
    assert_non_null(c);
    assert_false(c->member);
    assert_int_equal(c->level, WAKE_LEVEL_SLEEP);
    assert_true(c->n_domains == 0 && c->n_conf == 0 && c->tier[0] == '\0');
    assert_true(c->availability < 0);
    wk_free(t);
}

/* The last WAKE_TEXTS_MAX messages with their text are kept, oldest
 * first, however many came before (they are a ring inside): written to the
 * record in that order, read back in it, and going on after the read. */
static void recent_texts_keep_the_last_in_order(void **state)
{
    (void)state;
    wake_room *r = wake_room_new("x");
    char id[32], text[32];
    for (int i = 0; i < 3 * WAKE_TEXTS_MAX + 7; i++) {
        snprintf(id, sizeof id, "m%d", i);
        snprintf(text, sizeof text, "text %d", i);
        wake_room_record(r, id, "s", WAKE_SENDER_AI, text, 1000 + i);
    }
    assert_int_equal(r->n_texts, WAKE_TEXTS_MAX);
    int first = 2 * WAKE_TEXTS_MAX + 7;
    for (int i = 0; i < WAKE_TEXTS_MAX; i++) {
        snprintf(id, sizeof id, "m%d", first + i);
        assert_string_equal(wake_room_text(r, i)->id, id);
        assert_true(wake_room_text(r, i)->ts == 1000 + first + i);
    }
    char *j = wake_room_to_json(r);
    snprintf(id, sizeof id, "\"tx\":[{\"i\":\"m%d\"", first);
    assert_non_null(strstr(j, id));
    bool corrupt = true;
    wake_room *back = wake_room_from_json("x", j, &corrupt);
    assert_false(corrupt);
    wake_room_record(back, "next", "s", WAKE_SENDER_AI, "next", 99999);
    assert_int_equal(back->n_texts, WAKE_TEXTS_MAX);
    snprintf(id, sizeof id, "m%d", first + 1);
    assert_string_equal(wake_room_text(back, 0)->id, id);
    assert_string_equal(wake_room_text(back, WAKE_TEXTS_MAX - 1)->id, "next");
    assert_string_equal(wake_room_text(back, WAKE_TEXTS_MAX - 1)->text, "next");
    free(j);
    wake_room_free(back);
    wake_room_free(r);
}

/* The record's texts of the times and of the recent messages are kept
 * beside them and updated per message; after every message they are what
 * writing each entry again gives (the stale path), what a copy writes and
 * what a read of the record writes back: through pruning by age, a prune
 * of everything, times that go back, the bound of WAKE_TIMES_MAX and the
 * ring of texts, with texts that need escaping or are cut. */
static void kept_texts_equal_the_entries_written_again(void **state)
{
    (void)state;
    wake_room *r = wake_room_new("x");
    const char *who[] = { "p0", "p1", "p2" }; /* personas: their own lists too */
    for (int k = 0; k < 3; k++)
        assert_non_null(wake_room_add(r, who[k], 0));
    const char *odd[] = { "q\"uote and back\\slash", "line\nbreak\ttab", "ctl\x01\x1f",
                          "caf\xc3\xa9 \xe2\x82\xac" };
    char id[32], text[400];
    int64_t now = 1700000000000;
    for (int i = 0; i < 4600; i++) {
        if (i < 2100)
            now += 1; /* 2,100 within ten minutes: the bound of 2,000 */
        else if (i % 97 == 0)
            now += 11 * 60 * 1000; /* everything older than ten minutes goes */
        else if (i % 13 == 0)
            now -= 50; /* a clock that went back */
        else
            now += 150 + i % 400;
        snprintf(id, sizeof id, "m%d", i);
        if (i % 5 == 0)
            snprintf(text, sizeof text, "%s %d", odd[(i / 5) % 4], i);
        else if (i % 11 == 0)
            memset(text, 'y', 300), text[300] = '\0'; /* longer than kept */
        else
            snprintf(text, sizeof text, "text %d", i);
        if (i == 3000) { /* a persona leaves (its texts go with it) and comes back */
            wake_room_remove(r, "p1");
            assert_non_null(wake_room_add(r, "p1", 0));
        }
        wake_room_record(r, id, i % 3 ? who[i % 7 % 3] : "h",
                         i % 3 ? WAKE_SENDER_AI : WAKE_SENDER_HUMAN, text, now);
        assert_int_equal(vigil_tlist_count(&r->times_text), r->n_times - 1);
        assert_int_equal(vigil_tlist_count(&r->texts_text), r->n_texts);
        /* kept in step: never written whole again */
        assert_int_equal(r->times_text.rewrites + r->texts_text.rewrites, 0);
        for (int k = 0; k < r->n_personas; k++) {
            const wake_persona *p = &r->personas[k];
            assert_int_equal(vigil_tlist_count(&p->msg_text), p->n_msgs - 1 + (p->n_msgs == 0));
            assert_int_equal(vigil_tlist_count(&p->resp_text), p->n_msgs);
            assert_int_equal(p->msg_text.rewrites + p->resp_text.rewrites, 0);
        }
        if (i == 2099)
            assert_int_equal(r->n_times, WAKE_TIMES_MAX);
        if (i > 300 && i < 2050 && i % 50 != 0)
            continue; /* the long stretch checked now and then */
        char *kept = wake_room_to_json(r);
        wake_room *c = wake_room_clone(r);
        assert_non_null(c);
        char *copied = wake_room_to_json(c);
        vigil_tlist_stale(&c->times_text);
        vigil_tlist_stale(&c->texts_text);
        for (int k = 0; k < c->n_personas; k++) {
            vigil_tlist_stale(&c->personas[k].msg_text);
            vigil_tlist_stale(&c->personas[k].resp_text);
        }
        char *whole = wake_room_to_json(c);
        bool corrupt = true;
        wake_room *back = wake_room_from_json("x", kept, &corrupt);
        assert_false(corrupt);
        char *reread = wake_room_to_json(back);
        assert_int_equal(back->times_text.rewrites, 1); /* written once, after the read */
        assert_int_equal(back->texts_text.rewrites, 1);
        assert_string_equal(kept, whole);
        assert_string_equal(kept, copied);
        assert_string_equal(kept, reread);
        /* stale texts are written whole again by the next message */
        wake_room_record(c, "n", "s", WAKE_SENDER_AI, "next", now + 1);
        assert_int_equal(vigil_tlist_count(&c->times_text), c->n_times - 1);
        assert_int_equal(vigil_tlist_count(&c->texts_text), c->n_texts);
        free(kept);
        free(copied);
        free(whole);
        free(reread);
        wake_room_free(c);
        wake_room_free(back);
    }
    wake_room_free(r);
}

static void recent_activity(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "a", "smart", -1, NULL, 0);
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "q1");
    t->now += 4000;
    wk_msg(t, "a", WAKE_SENDER_AI, "a1");       /* answers after 4 s */
    t->now += 1000;
    wk_msg(t, "a", WAKE_SENDER_AI, "a1 more");  /* still answering joel: 5 s */
    t->now += 10000;
    wk_msg(t, "joel", WAKE_SENDER_HUMAN, "q2");
    t->now += 2000;
    wk_msg(t, "a", WAKE_SENDER_AI, "a2");       /* 2 s */
    const wake_persona *p = wake_room_find(t->r, "a");
    assert_int_equal(wake_messages_last_hour(p, t->now), 3);
    assert_true(wake_avg_response_ms(p, t->now) == (4000 + 5000 + 2000) / 3);
    assert_int_equal(wake_room_count(t->r, t->now, WAKE_ACTIVITY_MS, WAKE_SENDER_HUMAN), 2);
    assert_int_equal(wake_room_count(t->r, t->now, WAKE_ACTIVITY_MS, WAKE_SENDER_AI), 3);
    assert_true(fabs(wake_room_velocity(t->r, t->now) - 1.0) < 1e-9); /* 5 in 5 min */
    assert_true(fabs(wake_room_ai_ratio(t->r, t->now) - 1.5) < 1e-9);
    /* an AI speaking that nobody reported is added as a persona */
    wk_msg(t, "newbie", WAKE_SENDER_AI, "hi");
    assert_non_null(wake_room_find(t->r, "newbie"));
    /* windows slide */
    t->now += 11 * MIN;
    assert_int_equal(wake_room_count(t->r, t->now, WAKE_RECENT_MS, -1), 0);
    t->now += 60 * MIN;
    p = wake_room_find(t->r, "a"); /* the round trips made a new room */
    assert_int_equal(wake_messages_last_hour(p, t->now), 0);
    assert_true(wake_avg_response_ms(p, t->now) == -1);
    wk_free(t);
}

static void tokens_saved_estimate(void **state)
{
    (void)state;
    wk *t = wk_new();
    wk_persona(t, "talker", "basic", -1, NULL, 0);
    wk_level(t, "talker", WAKE_LEVEL_ACTIVE, "manual");
    char text[401];
    memset(text, 'x', 400);
    text[400] = '\0';
    /* 12 messages of 400 bytes (100 tokens) in the hour before going dormant */
    for (int i = 0; i < 12; i++) {
        t->now += 5 * MIN;
        wk_msg(t, "talker", WAKE_SENDER_AI, text);
    }
    assert_true(wake_room_avg_ai_tokens(t->r) == 100.0);
    wk_level(t, "talker", WAKE_LEVEL_SLEEP, "ai-only");
    /* 30 minutes asleep: 12/h x 0.5 h = 6 messages = 600 tokens */
    t->now += 30 * MIN;
    assert_true(fabs(wake_saved_messages(t->r, t->now) - 6.0) < 1e-9);
    assert_int_equal(wake_saved_tokens(t->r, t->now), 600);
    /* it spoke once anyway (mentioned): one message fewer saved */
    wk_msg(t, "talker", WAKE_SENDER_AI, text);
    assert_true(fabs(wake_saved_messages(t->r, t->now) - 5.0) < 1e-9);
    /* woken after 60 minutes: the period closes at 12 - 1 = 11 messages */
    t->now += 30 * MIN;
    wk_level(t, "talker", WAKE_LEVEL_ACTIVE, "mention");
    wk_roundtrip(t);
    assert_true(fabs(t->r->saved_msgs - 11.0) < 1e-9);
    t->now += 60 * MIN;
    assert_true(fabs(wake_saved_messages(t->r, t->now) - 11.0) < 1e-9); /* closed */
    /* a persona silent before its dormancy saves nothing */
    wk_persona(t, "silent", "basic", -1, NULL, 0);
    wk_level(t, "silent", WAKE_LEVEL_SLEEP, "manual");
    t->now += 60 * MIN;
    assert_true(fabs(wake_saved_messages(t->r, t->now) - 11.0) < 1e-9);
    /* the economics event */
    wk_clear(t);
    assert_int_equal(wake_publish_economics(t->r, t->now, &t->sink), 0);
    const wk_pub *p = NULL;
    assert_int_equal(wk_count(t, "/economics", &p), 1);
    assert_string_equal(p->topic, "room/general/economics");
    json_object *o = wk_json(p->payload), *v;
    json_object_object_get_ex(o, "tokens_saved_estimate", &v);
    assert_true(json_object_get_int64(v) > 1000);
    const char *keys[] = {"room", "tokens_spent", "tokens_saved_estimate", "evaluations", "ts"};
    for (size_t i = 0; i < 5; i++)
        assert_true(json_object_object_get_ex(o, keys[i], &v));
    json_object_put(o);
    wk_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_keeps_everything),
        cmocka_unit_test(unreadable_record_starts_afresh),
        cmocka_unit_test(out_of_range_record_numbers_read_as_absent),
        cmocka_unit_test(times_are_kept_as_differences),
        cmocka_unit_test(levels_newest_report_wins),
        cmocka_unit_test(meta_membership),
        cmocka_unit_test(cleared_state_and_meta_forget),
        cmocka_unit_test(recent_texts_keep_the_last_in_order),
        cmocka_unit_test(kept_texts_equal_the_entries_written_again),
        cmocka_unit_test(recent_activity),
        cmocka_unit_test(tokens_saved_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
