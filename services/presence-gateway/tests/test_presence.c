/* test_presence.c - presence statuses from heartbeats, with an injected
 * clock: active within 2 min of activity, idle 2-5 min, away after 5 min
 * or when heartbeats stop; changes are reported, and refreshes of an
 * active room's activity at a bounded rate; the best session wins a room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gateway.h"

#define MIN (60 * 1000LL)
#define T0 1700000000000LL

static gw_presence_cfg cfg(void)
{
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    return c;
}

/* Applies a beat and swaps the state in place. */
static gw_presence_out beat(char **state, const char *session, const char *const *rooms, int n,
                            gw_status claimed, int64_t la, int64_t now)
{
    gw_presence_cfg c = cfg();
    gw_beat b = {.user = "joel", .session = session, .rooms = rooms, .nrooms = n,
                 .claimed = claimed, .last_activity = la};
    gw_presence_out o;
    assert_int_equal(gw_presence_beat(&c, *state, &b, now, &o), GW_PRESENCE_OK);
    free(*state);
    *state = strdup(o.new_state);
    return o;
}

static gw_presence_out tick(char **state, int64_t now)
{
    gw_presence_cfg c = cfg();
    gw_presence_out o;
    assert_int_equal(gw_presence_tick(&c, "joel", *state, now, &o), GW_PRESENCE_OK);
    free(*state);
    *state = strdup(o.new_state);
    return o;
}

static void test_derive_thresholds(void **s)
{
    (void)s;
    gw_presence_cfg c = cfg();
    assert_int_equal(gw_presence_derive(&c, T0, T0, GW_ACTIVE, T0), GW_ACTIVE);
    assert_int_equal(gw_presence_derive(&c, T0, T0 + 119999, GW_ACTIVE, T0 + 2 * MIN - 1), GW_ACTIVE);
    assert_int_equal(gw_presence_derive(&c, T0, T0 + 2 * MIN, GW_ACTIVE, T0 + 2 * MIN), GW_IDLE);
    assert_int_equal(gw_presence_derive(&c, T0, T0 + 5 * MIN - 1, GW_ACTIVE, T0 + 5 * MIN - 1), GW_IDLE);
    assert_int_equal(gw_presence_derive(&c, T0, T0 + 5 * MIN, GW_ACTIVE, T0 + 5 * MIN), GW_AWAY);
    /* the browser's own claim can only make it worse */
    assert_int_equal(gw_presence_derive(&c, T0, T0, GW_AWAY, T0), GW_AWAY);
    assert_int_equal(gw_presence_derive(&c, T0, T0, GW_IDLE, T0), GW_IDLE);
    /* heartbeats stopped for expire_ms (5 min, the away time): away whatever
     * the activity */
    assert_int_equal(c.expire_ms, c.away_ms);
    assert_int_equal(gw_presence_derive(&c, T0 + 5 * MIN, T0, GW_ACTIVE, T0 + 5 * MIN), GW_AWAY);
    assert_int_equal(gw_presence_derive(&c, T0 + 3 * MIN, T0, GW_ACTIVE, T0 + 3 * MIN), GW_ACTIVE);
}

static void test_beat_then_idle_then_away_by_timer(void **s)
{
    (void)s;
    char *st = NULL;
    const char *rooms[] = {"general"};
    gw_presence_out o = beat(&st, "tab1", rooms, 1, GW_ACTIVE, T0, T0);
    assert_int_equal(o.nchanges, 1);
    assert_string_equal(o.changes[0].room, "general");
    assert_string_equal(o.changes[0].session, "tab1");
    assert_int_equal(o.changes[0].status, GW_ACTIVE);
    assert_int_equal(o.next_due, T0 + 2 * MIN); /* idle time and expiry coincide */
    gw_presence_out_free(&o);
    /* beats every 30 s without activity: idle at 2 min, away at 5 min */
    int64_t now = T0;
    int statuses[8], n = 0;
    for (now = T0 + 30000; now <= T0 + 6 * MIN; now += 30000) {
        o = beat(&st, "tab1", rooms, 1, GW_ACTIVE, T0, now);
        for (int i = 0; i < o.nchanges; i++)
            statuses[n++] = o.changes[i].status;
        if (o.nchanges)
            assert_true(now == T0 + 2 * MIN || now == T0 + 5 * MIN);
        gw_presence_out_free(&o);
    }
    assert_int_equal(n, 2);
    assert_int_equal(statuses[0], GW_IDLE);
    assert_int_equal(statuses[1], GW_AWAY);
    /* activity again: active */
    o = beat(&st, "tab1", rooms, 1, GW_ACTIVE, now, now);
    assert_int_equal(o.nchanges, 1);
    assert_int_equal(o.changes[0].status, GW_ACTIVE);
    gw_presence_out_free(&o);
    free(st);
}

static void test_heartbeats_stop_session_expires(void **s)
{
    (void)s;
    char *st = NULL;
    const char *rooms[] = {"general", "ops"};
    gw_presence_out o = beat(&st, "tab1", rooms, 2, GW_ACTIVE, T0, T0);
    assert_int_equal(o.nchanges, 2);
    gw_presence_out_free(&o);
    /* a browser that beats only while its user is active stops at T0: idle
     * from 2 min (no activity for 2-5 min), not gone yet */
    o = tick(&st, T0 + 2 * MIN);
    assert_int_equal(o.nchanges, 2);
    assert_int_equal(o.changes[0].status, GW_IDLE);
    assert_int_equal(o.changes[1].status, GW_IDLE);
    assert_int_equal(o.next_due, T0 + 5 * MIN);
    gw_presence_out_free(&o);
    /* the timer at 5 min: no beat since T0 -> gone -> away in both rooms */
    o = tick(&st, T0 + 5 * MIN);
    assert_int_equal(o.nchanges, 2);
    assert_int_equal(o.changes[0].status, GW_AWAY);
    assert_int_equal(o.changes[1].status, GW_AWAY);
    assert_int_equal(o.next_due, 0);
    gw_presence_out_free(&o);
    /* nothing left to say */
    o = tick(&st, T0 + 10 * MIN);
    assert_int_equal(o.nchanges, 0);
    assert_null(strstr(o.new_state, "general"));
    gw_presence_out_free(&o);
    free(st);
}

static void test_best_session_wins_and_leaving_a_room(void **s)
{
    (void)s;
    char *st = NULL;
    const char *both[] = {"general", "ops"}, *gen[] = {"general"};
    gw_presence_out o = beat(&st, "a", both, 2, GW_ACTIVE, T0, T0);
    gw_presence_out_free(&o);
    /* a second tab that is idle changes nothing: a keeps the rooms active */
    o = beat(&st, "b", gen, 1, GW_IDLE, T0, T0 + 1000);
    assert_int_equal(o.nchanges, 0);
    gw_presence_out_free(&o);
    /* a leaves ops: ops goes away (nobody there); general stays active */
    o = beat(&st, "a", gen, 1, GW_ACTIVE, T0 + 2000, T0 + 2000);
    assert_int_equal(o.nchanges, 1);
    assert_string_equal(o.changes[0].room, "ops");
    assert_int_equal(o.changes[0].status, GW_AWAY);
    gw_presence_out_free(&o);
    /* a claims away (its client says the user left): general falls to b's idle */
    o = beat(&st, "a", gen, 1, GW_AWAY, T0 + 3000, T0 + 3000);
    assert_int_equal(o.nchanges, 1);
    assert_int_equal(o.changes[0].status, GW_IDLE);
    assert_string_equal(o.changes[0].session, "b");
    gw_presence_out_free(&o);
    free(st);
}

/* A person who keeps reading (beats every 30 s, each with new activity)
 * stays active for a consumer that ages the last_activity it was sent
 * (dormancy-monitor: active while younger than 2 min): the gateway
 * publishes it again once the published one is refresh_ms (idle_ms / 4)
 * old, so what the consumer holds is never 2 min old while beats come. */
static void test_active_reader_refreshed_for_consumers(void **s)
{
    (void)s;
    gw_presence_cfg c = cfg();
    int64_t refresh = gw_presence_refresh_ms(&c);
    assert_int_equal(refresh, 30000);
    char *st = NULL;
    const char *rooms[] = {"general"};
    gw_presence_out o = beat(&st, "tab1", rooms, 1, GW_ACTIVE, T0, T0);
    assert_int_equal(o.nchanges, 1);
    gw_presence_out_free(&o);
    int64_t consumer_la = T0, worst = 0;
    int published = 0;
    for (int64_t now = T0 + 30000; now <= T0 + 20 * MIN; now += 30000) {
        if (now - consumer_la > worst) /* the consumer's view just before the beat */
            worst = now - consumer_la;
        o = beat(&st, "tab1", rooms, 1, GW_ACTIVE, now - 1000, now);
        for (int i = 0; i < o.nchanges; i++) {
            assert_int_equal(o.changes[i].status, GW_ACTIVE);
            assert_string_equal(o.changes[i].session, "tab1");
            assert_int_equal(o.changes[i].last_activity, now - 1000);
            consumer_la = o.changes[i].last_activity;
            published++;
        }
        gw_presence_out_free(&o);
    }
    /* never idle for the consumer: its last_activity stayed under idle_ms */
    assert_true(worst < c.idle_ms);
    assert_true(worst <= refresh + 30000 + 1000);
    /* and refreshed at most once per refresh interval (40 beats, 20 min) */
    assert_true(published >= 20 && published <= 20 * MIN / refresh);
    free(st);
}

/* The refresh rate is bounded per room, not per beat or per tab: three
 * tabs beating every second with new activity publish one refresh a
 * refresh_ms; a beat without new activity publishes nothing, however old
 * the published one; an idle room is not refreshed. */
static void test_refresh_bounded_and_only_with_news(void **s)
{
    (void)s;
    gw_presence_cfg c = cfg();
    int64_t refresh = gw_presence_refresh_ms(&c);
    char *st = NULL;
    const char *rooms[] = {"general"};
    const char *tabs[] = {"t1", "t2", "t3"};
    gw_presence_out o = beat(&st, "t1", rooms, 1, GW_ACTIVE, T0, T0);
    gw_presence_out_free(&o);
    int published = 0;
    int64_t last_pub = T0;
    for (int64_t now = T0 + 1000; now <= T0 + 10 * MIN; now += 1000) {
        for (int t = 0; t < 3; t++) {
            o = beat(&st, tabs[t], rooms, 1, GW_ACTIVE, now, now);
            if (o.nchanges) {
                assert_int_equal(o.nchanges, 1);
                assert_true(now - last_pub >= refresh);
                last_pub = now;
                published++;
            }
            gw_presence_out_free(&o);
        }
    }
    assert_int_equal(published, 10 * MIN / refresh);
    /* a fresh record: beats carrying the same activity, long after */
    free(st);
    st = NULL;
    o = beat(&st, "t1", rooms, 1, GW_ACTIVE, T0, T0);
    gw_presence_out_free(&o);
    o = beat(&st, "t1", rooms, 1, GW_ACTIVE, T0, T0 + refresh + 5000);
    assert_int_equal(o.nchanges, 0);
    gw_presence_out_free(&o);
    /* just before the interval: nothing yet; at it: the refresh */
    o = beat(&st, "t1", rooms, 1, GW_ACTIVE, T0 + refresh - 1, T0 + refresh - 1);
    assert_int_equal(o.nchanges, 0);
    gw_presence_out_free(&o);
    o = beat(&st, "t1", rooms, 1, GW_ACTIVE, T0 + refresh + 6000, T0 + refresh + 6000);
    assert_int_equal(o.nchanges, 1);
    assert_int_equal(o.changes[0].last_activity, T0 + refresh + 6000);
    gw_presence_out_free(&o);
    /* a tab claiming idle keeps the room idle: no refresh of an idle room */
    free(st);
    st = NULL;
    o = beat(&st, "t1", rooms, 1, GW_IDLE, T0, T0);
    assert_int_equal(o.nchanges, 1);
    assert_int_equal(o.changes[0].status, GW_IDLE);
    gw_presence_out_free(&o);
    o = beat(&st, "t1", rooms, 1, GW_IDLE, T0 + 2 * refresh, T0 + 2 * refresh);
    assert_int_equal(o.nchanges, 0);
    gw_presence_out_free(&o);
    free(st);
}

static void test_future_activity_clamped_and_bad_state(void **s)
{
    (void)s;
    char *st = strdup("[not a record]");
    const char *rooms[] = {"general"};
    gw_presence_out o = beat(&st, "t", rooms, 1, GW_ACTIVE, T0 + 10 * MIN, T0);
    assert_int_equal(o.nchanges, 1);
    assert_int_equal(o.changes[0].last_activity, T0);
    gw_presence_out_free(&o);
    json_object *p = gw_presence_payload("joel", &(gw_presence_change){"general", "t", GW_IDLE, T0}, T0 + 5);
    assert_string_equal(json_object_get_string(json_object_object_get(p, "status")), "idle");
    assert_int_equal(json_object_get_int64(json_object_object_get(p, "ts")), T0 + 5);
    json_object_put(p);
    free(st);
}

/* Times and statuses kept in the record are read within range: a record
 * holding an activity or a beat far in the future (or before the epoch),
 * or a status that is none of the three, gives sane deadlines and
 * statuses, never an overflow (found by fuzzing). */
static void test_out_of_range_record_values(void **s)
{
    (void)s;
    char *st = strdup("{\"user\":\"joel\",\"sessions\":{"
                      "\"t1\":{\"rooms\":[\"general\"],\"la\":9223372036854775807,"
                      "\"beat\":9223372036854775807,\"claimed\":7},"
                      "\"t2\":{\"rooms\":[\"lab\"],\"la\":-9223372036854775807,"
                      "\"beat\":-9223372036854775807,\"claimed\":-3}},"
                      "\"published\":{\"general\":{\"status\":99,\"session\":\"t1\","
                      "\"la\":9223372036854775807}}}");
    gw_presence_out o = tick(&st, T0);
    assert_true(o.next_due > T0 && o.next_due <= T0 + 10 * MIN);
    for (int i = 0; i < o.nchanges; i++) {
        assert_true(o.changes[i].status >= GW_ACTIVE && o.changes[i].status <= GW_AWAY);
        assert_true(o.changes[i].last_activity >= 0 && o.changes[i].last_activity <= T0);
    }
    gw_presence_out_free(&o);
    const char *rooms[] = {"general"};
    o = beat(&st, "t3", rooms, 1, GW_ACTIVE, T0, T0 + 1000);
    assert_true(o.next_due > T0 + 1000);
    gw_presence_out_free(&o);
    free(st);
}

/* A session whose `rooms` is not an array (a damaged record) is in no
 * room: reading it must not stop the gateway (json-c asserts on an array
 * call on anything else; found by fuzzing). */
static void test_session_rooms_not_an_array(void **s)
{
    (void)s;
    char *st = strdup("{\"user\":\"joel\",\"sessions\":{"
                      "\"t1\":{\"rooms\":17,\"la\":1700000000000,\"beat\":1700000000000},"
                      "\"t2\":{\"rooms\":{\"general\":true},\"la\":1700000000000,"
                      "\"beat\":1700000000000}}}");
    gw_presence_out o = tick(&st, T0 + 1000);
    assert_int_equal(o.nchanges, 0);
    gw_presence_out_free(&o);
    const char *rooms[] = {"general"};
    o = beat(&st, "t3", rooms, 1, GW_ACTIVE, T0, T0 + 2000);
    assert_int_equal(o.nchanges, 1);
    assert_string_equal(o.changes[0].session, "t3");
    gw_presence_out_free(&o);
    free(st);
}

static void test_session_cap(void **s)
{
    (void)s;
    char *st = NULL;
    const char *rooms[] = {"general"};
    char sid[16];
    for (int i = 0; i < 40; i++) {
        snprintf(sid, sizeof sid, "s%d", i);
        gw_presence_out o = beat(&st, sid, rooms, 1, GW_ACTIVE, T0 + i, T0 + i);
        gw_presence_out_free(&o);
    }
    json_object *j = json_tokener_parse(st);
    assert_int_equal(json_object_object_length(json_object_object_get(j, "sessions")), 16);
    json_object_put(j);
    free(st);
}

/* The 17th live session pushes out the longest silent one and says which
 * (the caller answers it and counts sessions_per_user); a session that
 * had expired anyway is dropped without being reported. */
static void test_session_cap_reports_the_forgotten(void **s)
{
    (void)s;
    char *st = NULL;
    const char *rooms[] = {"general"};
    char sid[16];
    for (int i = 0; i < GW_MAX_SESSIONS; i++) {
        snprintf(sid, sizeof sid, "s%d", i);
        gw_presence_out o = beat(&st, sid, rooms, 1, GW_ACTIVE, T0 + i, T0 + i);
        assert_int_equal(o.nforgotten, 0);
        gw_presence_out_free(&o);
    }
    gw_presence_out o = beat(&st, "s0", rooms, 1, GW_ACTIVE, T0 + 20, T0 + 20); /* known: no cap */
    assert_int_equal(o.nforgotten, 0);
    gw_presence_out_free(&o);
    o = beat(&st, "new", rooms, 1, GW_ACTIVE, T0 + 30, T0 + 30);
    assert_int_equal(o.nforgotten, 1);
    assert_string_equal(o.forgotten[0], "s1"); /* s0 beat again: s1 is the longest silent */
    gw_presence_out_free(&o);
    free(st);
    /* the longest silent session has expired (not yet dropped: no beat
     * since): a new session takes its place and nothing is reported */
    int64_t e = cfg().expire_ms;
    st = NULL;
    o = beat(&st, "gone", rooms, 1, GW_ACTIVE, T0, T0);
    gw_presence_out_free(&o);
    for (int i = 1; i < GW_MAX_SESSIONS; i++) {
        snprintf(sid, sizeof sid, "s%d", i);
        o = beat(&st, sid, rooms, 1, GW_ACTIVE, T0 + e - 100 + i, T0 + e - 100 + i);
        gw_presence_out_free(&o);
    }
    o = beat(&st, "x", rooms, 1, GW_ACTIVE, T0 + e + 1, T0 + e + 1);
    assert_int_equal(o.nforgotten, 0);
    gw_presence_out_free(&o);
    json_object *j = json_tokener_parse(st);
    json_object *sessions = json_object_object_get(j, "sessions");
    assert_int_equal(json_object_object_length(sessions), GW_MAX_SESSIONS);
    assert_null(json_object_object_get(sessions, "gone"));
    json_object_put(j);
    free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_derive_thresholds),
        cmocka_unit_test(test_beat_then_idle_then_away_by_timer),
        cmocka_unit_test(test_heartbeats_stop_session_expires),
        cmocka_unit_test(test_best_session_wins_and_leaving_a_room),
        cmocka_unit_test(test_active_reader_refreshed_for_consumers),
        cmocka_unit_test(test_refresh_bounded_and_only_with_news),
        cmocka_unit_test(test_future_activity_clamped_and_bad_state),
        cmocka_unit_test(test_out_of_range_record_values),
        cmocka_unit_test(test_session_rooms_not_an_array),
        cmocka_unit_test(test_session_cap),
        cmocka_unit_test(test_session_cap_reports_the_forgotten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
