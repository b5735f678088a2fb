/* test_store.c - the atomic commit (compare-and-set, dedupe, outbox,
 * timers, snapshots), load, delete and the outbox reader, against a real
 * redis-server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fixture_redis.h"
#include "vigil/log.h"
#include "vigil/redis_raw.h"
#include "vigil/store.h"
#include "vigil/timers.h"

#define NOW 1700000000123LL /* 13-digit ms: must survive Lua doubles exactly */

typedef vt_store_fixture fixture;

static int setup_keep(void **state, int keep)
{
    vigil_store_config cfg = { "vigil:", "svc", 0, keep, 0 };
    return vt_store_fixture_setup(state, &cfg);
}

static int setup(void **state)
{
    return setup_keep(state, 0);
}

static int setup_keep3(void **state)
{
    return setup_keep(state, 3);
}

static vigil_commit_result commit(fixture *f, const char *key, int64_t expected,
                                  const char *id, const vigil_effects *fx, int64_t now,
                                  int64_t *nv, char **cur)
{
    vigil_commit c = { .key = key, .expected_version = expected, .input_id = id,
                       .fx = fx, .now_ms = now };
    return vigil_store_commit(f->s, &c, nv, cur);
}

static long long outbox_len(fixture *f)
{
    char k[256];
    vigil_store_key(f->s, "outbox", NULL, k, sizeof k);
    return vt_redis_int(f->r, "LLEN %s", k);
}

static void test_key_names(void **state)
{
    fixture *f = *state;
    char k[256];
    vigil_store_key(f->s, "state", "room-1", k, sizeof k);
    assert_string_equal(k, "vigil:svc:state:room-1");
    vigil_store_key(f->s, "ids", "room-1", k, sizeof k);
    assert_string_equal(k, "vigil:svc:ids:room-1");
    vigil_store_key(f->s, "outbox", NULL, k, sizeof k);
    assert_string_equal(k, "vigil:svc:outbox:0");
    vigil_store_key(f->s, "timers", NULL, k, sizeof k);
    assert_string_equal(k, "vigil:svc:timers:0");
    vigil_store_key(f->s, NULL, "persona:ann", k, sizeof k);
    assert_string_equal(k, "vigil:svc:persona:ann");
}

static void test_load_missing(void **state)
{
    fixture *f = *state;
    int seen = 7;
    int64_t v = 9;
    char *st = (char *)"x";
    assert_int_equal(vigil_store_load(f->s, "nokey", "id1", &seen, &v, &st), 0);
    assert_int_equal(seen, 0);
    assert_int_equal(v, 0);
    assert_null(st);
}

static void test_first_and_second_commit(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{\"n\":1}");
    int64_t nv = -1;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 1);
    assert_null(cur);

    int seen;
    int64_t v;
    char *st;
    assert_int_equal(vigil_store_load(f->s, "k", "m1", &seen, &v, &st), 0);
    assert_int_equal(seen, 1);
    assert_int_equal(v, 1);
    assert_string_equal(st, "{\"n\":1}");
    free(st);

    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"n\":2}");
    assert_int_equal(commit(f, "k", 1, "m2", &fx, NOW + 1, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 2);
    assert_int_equal(vigil_store_load(f->s, "k", "m3", &seen, &v, &st), 0);
    assert_int_equal(seen, 0);
    assert_int_equal(v, 2);
    assert_string_equal(st, "{\"n\":2}");
    free(st);
    /* load without an input id: seen may be NULL */
    assert_int_equal(vigil_store_load(f->s, "k", NULL, NULL, &v, &st), 0);
    assert_int_equal(v, 2);
    free(st);
    vigil_effects_free(&fx);
}

static void test_stale_version_conflicts_and_changes_nothing(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{\"n\":1}");
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_fx_set_state(&fx, "{\"n\":2}");
    assert_int_equal(commit(f, "k", 1, "m2", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);

    /* decided on version 1 (stale): conflict with the current record */
    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"n\":99}");
    vigil_fx_publish(&fx, "t/x", "{}", false);
    vigil_fx_timer_set(&fx, "late", NOW + 5);
    long long out_before = outbox_len(f);
    nv = -1;
    assert_int_equal(commit(f, "k", 1, "m3", &fx, NOW, &nv, &cur), VIGIL_COMMIT_CONFLICT);
    assert_int_equal(nv, 2);
    assert_non_null(cur);
    assert_string_equal(cur, "{\"n\":2}");
    free(cur);
    cur = NULL;
    assert_int_equal(outbox_len(f), out_before);
    assert_int_equal(vigil_timers_count(f->s), 0);
    int seen;
    int64_t v;
    char *st;
    assert_int_equal(vigil_store_load(f->s, "k", "m3", &seen, &v, &st), 0);
    assert_int_equal(seen, 0); /* not recorded: the retry must apply it */
    assert_int_equal(v, 2);
    assert_string_equal(st, "{\"n\":2}");
    free(st);

    /* expecting a record that does not exist: conflict, no state */
    assert_int_equal(commit(f, "other", 3, "m4", &fx, NOW, &nv, &cur), VIGIL_COMMIT_CONFLICT);
    assert_int_equal(nv, 0);
    assert_null(cur);
    vigil_effects_free(&fx);
}

static void test_duplicate_changes_nothing(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{\"n\":1}");
    vigil_fx_publish(&fx, "t/a", "first", false);
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(outbox_len(f), 1);

    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"n\":2}");
    vigil_fx_publish(&fx, "t/a", "second", false);
    vigil_fx_timer_set(&fx, "x", NOW);
    /* right version */
    assert_int_equal(commit(f, "k", 1, "m1", &fx, NOW + 1, &nv, &cur), VIGIL_COMMIT_DUPLICATE);
    /* and a stale one: the duplicate check comes first */
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW + 2, &nv, &cur), VIGIL_COMMIT_DUPLICATE);
    assert_null(cur);
    assert_int_equal(outbox_len(f), 1);
    assert_int_equal(vigil_timers_count(f->s), 0);
    int64_t v;
    char *st;
    assert_int_equal(vigil_store_load(f->s, "k", NULL, NULL, &v, &st), 0);
    assert_int_equal(v, 1);
    assert_string_equal(st, "{\"n\":1}");
    free(st);
    /* the same id on another key is a different input */
    assert_int_equal(commit(f, "k2", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
}

static void test_unchanged_state_keeps_version_records_id(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv = -1;
    char *cur = NULL;
    /* no record, nothing to store: OK at version 0, id recorded */
    assert_int_equal(commit(f, "k", 0, "m0", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 0);
    int seen;
    int64_t v;
    char *st;
    assert_int_equal(vigil_store_load(f->s, "k", "m0", &seen, &v, &st), 0);
    assert_int_equal(seen, 1);
    assert_int_equal(v, 0);
    assert_null(st);

    vigil_fx_set_state(&fx, "{\"n\":1}");
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_effects_reset(&fx);
    vigil_fx_publish(&fx, "t", "p", false);
    assert_int_equal(commit(f, "k", 1, "m2", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 1);
    assert_int_equal(vigil_store_load(f->s, "k", "m2", &seen, &v, &st), 0);
    assert_int_equal(seen, 1);
    assert_int_equal(v, 1);
    assert_string_equal(st, "{\"n\":1}");
    free(st);
    assert_int_equal(outbox_len(f), 1);
    vigil_effects_free(&fx);
}

static void test_no_input_id_no_dedupe(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{}");
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, NULL, &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(commit(f, "k", 1, NULL, &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 2);
    assert_int_equal(vt_redis_int(f->r, "EXISTS %s", "vigil:svc:ids:k"), 0);
    vigil_effects_free(&fx);
}

static int setup_keep1024(void **state)
{
    return setup_keep(state, 1024);
}

/* With a larger dedupe_keep the trim runs on about one commit in
 * keep / 256 (chosen by the id's hash): the key holds the newest
 * dedupe_keep ids at least, and never more than a few dozen over. */
static void test_dedupe_trims_on_some_commits_only(void **state)
{
    fixture *f = *state; /* dedupe_keep = 1024: a trim on about one commit in 4 */
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL, id[32];
    long long most = 0;
    for (int i = 0; i < 1500; i++) {
        snprintf(id, sizeof id, "in-%d", i);
        assert_int_equal(commit(f, "k", 0, id, &fx, NOW + i, &nv, &cur), VIGIL_COMMIT_OK);
        long long n = vt_redis_int(f->r, "ZCARD %s", "vigil:svc:ids:k");
        assert_true(n <= 1024 + 48);
        most = n > most ? n : most;
    }
    assert_true(most > 1024); /* not trimmed on every commit */
    for (int i = 1500 - 1024; i < 1500; i++) {
        snprintf(id, sizeof id, "in-%d", i);
        redisReply *rep = vigil_redis_command(f->r, "ZSCORE vigil:svc:ids:k %s", id);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STRING);
        vigil_redis_reply_free(rep);
    }
    vigil_effects_free(&fx);
}

static void test_dedupe_keeps_newest(void **state)
{
    fixture *f = *state; /* dedupe_keep = 3 */
    vigil_effects fx;
    vigil_effects_init(&fx);
    const char *ids[] = { "a", "b", "c", "d", "e" };
    int64_t nv;
    char *cur = NULL;
    for (int i = 0; i < 5; i++)
        assert_int_equal(commit(f, "k", 0, ids[i], &fx, NOW + i, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vt_redis_int(f->r, "ZCARD %s", "vigil:svc:ids:k"), 3);
    assert_int_equal(vt_redis_int(f->r, "PTTL %s", "vigil:svc:ids:k"), -1); /* no TTL set */
    int seen;
    int64_t v;
    char *st;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(vigil_store_load(f->s, "k", ids[i], &seen, &v, &st), 0);
        assert_int_equal(seen, i >= 2);
    }
    assert_int_equal(commit(f, "k", 0, "e", &fx, NOW + 9, &nv, &cur), VIGIL_COMMIT_DUPLICATE);
    assert_int_equal(commit(f, "k", 0, "a", &fx, NOW + 9, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_effects_free(&fx);
}

static int setup_ttl(void **state)
{
    vigil_store_config cfg = { "vigil:", "svc", 0, 0, 60000 };
    return vt_store_fixture_setup(state, &cfg);
}

/* With dedupe_ttl_ms (60 s here) the ids key expires at least that long
 * after its last id: a commit with an id sets it to the TTL plus the
 * refresh period (half the TTL under two hours, else an hour: 30 s), and
 * this store sets it again only once that period has passed since it last
 * did (a commit without an id never does). Without a TTL the key never
 * expires (test_dedupe_keeps_newest). */
static void test_dedupe_ids_expire_after_the_last_id(void **state)
{
    fixture *f = *state; /* dedupe_ttl_ms = 60000 */
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{}");
    int64_t nv;
    char *cur = NULL;
    const char *ids = "vigil:svc:ids:k";
    assert_int_equal(commit(f, "k", 0, "a", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    long long ttl = vt_redis_int(f->r, "PTTL %s", ids);
    assert_true(ttl > 80000 && ttl <= 90000);
    assert_int_equal(vt_redis_int(f->r, "PEXPIRE %s 5000", ids), 1);
    /* within the period: not set again, with an id or without */
    assert_int_equal(commit(f, "k", 1, "b", &fx, NOW + 29999, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(commit(f, "k", 2, NULL, &fx, NOW + 40000, &nv, &cur), VIGIL_COMMIT_OK);
    assert_true(vt_redis_int(f->r, "PTTL %s", ids) <= 5000);
    /* once the period is over, the next id sets it again */
    assert_int_equal(commit(f, "k", 3, "c", &fx, NOW + 30000, &nv, &cur), VIGIL_COMMIT_OK);
    assert_true(vt_redis_int(f->r, "PTTL %s", ids) > 80000);
    assert_int_equal(commit(f, "k", 4, "a", &fx, NOW + 30001, &nv, &cur), VIGIL_COMMIT_DUPLICATE);
    /* another key is set on its first id, whatever this one's */
    assert_int_equal(commit(f, "k2", 0, "z", &fx, NOW + 30001, &nv, &cur), VIGIL_COMMIT_OK);
    assert_true(vt_redis_int(f->r, "PTTL %s", "vigil:svc:ids:k2") > 80000);
    /* the record itself never expires */
    assert_int_equal(vt_redis_int(f->r, "PTTL %s", "vigil:svc:state:k"), -1);
    vigil_effects_free(&fx);
}

/* The due ms of a timer member, -1 when it is not set. */
static long long timer_due(fixture *f, const char *member)
{
    redisReply *rep = vigil_redis_command(f->r, "ZSCORE vigil:svc:timers:0 %s", member);
    assert_non_null(rep);
    long long due = rep->type == REDIS_REPLY_STRING ? strtoll(rep->str, NULL, 10) : -1;
    vigil_redis_reply_free(rep);
    return due;
}

/* A commit that names a timer twice keeps the last: set then cancelled is
 * gone, cancelled then set is due when last set (the effects keep every
 * change in order; the script applies them in that order). */
static void test_timer_named_twice_keeps_the_last(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{}");
    vigil_fx_timer_set(&fx, "a", NOW + 5);
    vigil_fx_timer_cancel(&fx, "a");
    vigil_fx_timer_cancel(&fx, "b");
    vigil_fx_timer_set(&fx, "b", NOW + 7);
    vigil_fx_timer_set(&fx, "c", NOW + 9);
    vigil_fx_timer_set(&fx, "c", NOW + 3);
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 2);
    assert_true(vigil_timers_next_due(f->s) == NOW + 3);
    assert_true(timer_due(f, "k|b") == NOW + 7);
    assert_true(timer_due(f, "k|a") == -1);
    vigil_effects_free(&fx);
}

static void test_outbox_order_format_peek_trim(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_publish(&fx, "room/r1/message", "{\"n\":1}", false);
    vigil_fx_publish(&fx, "persona/p/state", "{\"multi\":\n\"line\"}\n", true);
    vigil_fx_publish(&fx, "room/r1/message", "", false);
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_effects_reset(&fx);
    vigil_fx_publish(&fx, "t/4", "four", false);
    assert_int_equal(commit(f, "k2", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);

    /* raw entry format */
    redisReply *rep = vigil_redis_command(f->r, "LINDEX vigil:svc:outbox:0 1");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "1persona/p/state\n{\"multi\":\n\"line\"}\n");
    vigil_redis_reply_free(rep);

    vigil_outmsg out[10];
    assert_int_equal(vigil_store_outbox_peek(f->s, 10, out), 4);
    assert_string_equal(out[0].topic, "room/r1/message");
    assert_string_equal(out[0].payload, "{\"n\":1}");
    assert_false(out[0].retain);
    assert_string_equal(out[1].topic, "persona/p/state");
    assert_string_equal(out[1].payload, "{\"multi\":\n\"line\"}\n");
    assert_true(out[1].retain);
    assert_string_equal(out[2].payload, "");
    assert_string_equal(out[3].topic, "t/4");
    vigil_outbox_entries_free(out, 4);

    assert_int_equal(vigil_store_outbox_peek(f->s, 2, out), 2);
    assert_string_equal(out[1].topic, "persona/p/state");
    vigil_outbox_entries_free(out, 2);
    assert_int_equal(vigil_store_outbox_trim(f->s, 2), 0);
    assert_int_equal(vigil_store_outbox_peek(f->s, 10, out), 2);
    assert_string_equal(out[0].payload, "");
    assert_string_equal(out[1].payload, "four");
    vigil_outbox_entries_free(out, 2);
    assert_int_equal(vigil_store_outbox_trim(f->s, 5), 0);
    assert_int_equal(vigil_store_outbox_peek(f->s, 10, out), 0);
    assert_int_equal(vigil_store_outbox_trim(f->s, 0), 0);
    vigil_effects_free(&fx);
}

static void test_outbox_malformed_entry_keeps_count(void **state)
{
    fixture *f = *state;
    redisReply *rep = vigil_redis_command(f->r, "RPUSH vigil:svc:outbox:0 garbage %s", "0t\np");
    vigil_redis_reply_free(rep);
    vigil_outmsg out[4];
    assert_int_equal(vigil_store_outbox_peek(f->s, 4, out), 2);
    assert_string_equal(out[0].topic, "");
    assert_string_equal(out[0].payload, "garbage");
    assert_string_equal(out[1].topic, "t");
    assert_string_equal(out[1].payload, "p");
    vigil_outbox_entries_free(out, 2);
}

/* Pops the last outbox entry and parses its payload; checks topic and
 * retain flag. */
static json_object *last_snapshot(fixture *f, const char *topic)
{
    vigil_outmsg out[32];
    int n = vigil_store_outbox_peek(f->s, 32, out);
    assert_true(n > 0);
    assert_string_equal(out[n - 1].topic, topic);
    assert_true(out[n - 1].retain);
    json_object *o = json_tokener_parse(out[n - 1].payload);
    if (!o)
        fail_msg("snapshot payload is not JSON: %s", out[n - 1].payload);
    vigil_outbox_entries_free(out, n);
    return o;
}

static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, k, &v))
        fail_msg("missing member %s", k);
    return v;
}

/* The exact payload text for envelopes the plain path takes as they are
 * and for those it hands to json-c (a key to drop, whitespace, an escape,
 * a repeated key, a number): both give one compact object, envelope
 * members first, map and "ts" once each, last. */
static void test_snapshot_envelope_text(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *env, *want;
    } cases[] = {
        { "{}", "{\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"persona\":\"ann\"}", "{\"persona\":\"ann\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"p\":\"x\",\"q\":\"\xc3\xa9/y\"}",
          "{\"p\":\"x\",\"q\":\"\xc3\xa9/y\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"p\":\"x\",\"ts\":\"old\"}", "{\"p\":\"x\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"rooms\":\"old\",\"p\":\"x\"}", "{\"p\":\"x\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{ \"p\" : \"x\" }", "{\"p\":\"x\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"p\":\"a\\u0041\\/\"}", "{\"p\":\"aA/\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"p\":\"x\",\"p\":\"y\"}", "{\"p\":\"y\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"n\":2,\"p\":\"x\"}", "{\"n\":2,\"p\":\"x\",\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
        { "{\"ts\":1}", "{\"rooms\":{\"a\":1},\"ts\":1700000000123}" },
    };
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vigil_effects_reset(&fx);
        assert_int_equal(vigil_fx_snapshot(&fx, "h", "a", "1", "t/s", cases[i].env, "rooms"), 0);
        assert_int_equal(commit(f, "k", 0, NULL, &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
        vigil_outmsg out[32];
        int n = vigil_store_outbox_peek(f->s, 32, out);
        assert_true(n > 0);
        assert_string_equal(out[n - 1].payload, cases[i].want);
        vigil_outbox_entries_free(out, n);
    }
    vigil_effects_free(&fx);
}

static void test_snapshot_aggregates_across_keys(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    /* room a (one state key) writes its entry; the envelope's own "ts" and
     * "rooms" are replaced */
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:ann", "a",
                                       "{\"level\":\"sleep\",\"tags\":[],\"x\":1.5}",
                                       "persona/ann/state",
                                       "{\"persona\":\"ann\",\"ts\":1,\"rooms\":5}", "rooms"),
                     0);
    assert_int_equal(commit(f, "room:a", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_effects_reset(&fx);
    /* room b (another key, maybe another shard) adds its own */
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:ann", "b/x", "{\"level\":\"active\"}",
                                       "persona/ann/state", "{\"persona\":\"ann\"}", "rooms"),
                     0);
    assert_int_equal(commit(f, "room:b", 0, "m1", &fx, NOW + 1000, &nv, &cur),
                     VIGIL_COMMIT_OK);

    json_object *o = last_snapshot(f, "persona/ann/state");
    assert_string_equal(json_object_get_string(get(o, "persona")), "ann");
    json_object *ts = get(o, "ts");
    assert_true(json_object_is_type(ts, json_type_int)); /* not 1.7e+12 */
    assert_true(json_object_get_int64(ts) == NOW + 1000);
    json_object *rooms = get(o, "rooms");
    assert_true(json_object_is_type(rooms, json_type_object));
    assert_int_equal(json_object_object_length(rooms), 2);
    json_object *a = get(rooms, "a");
    assert_string_equal(json_object_get_string(get(a, "level")), "sleep");
    assert_true(json_object_is_type(get(a, "tags"), json_type_array)); /* [] stays [] */
    assert_true(json_object_get_double(get(a, "x")) == 1.5);
    assert_string_equal(json_object_get_string(get(get(rooms, "b/x"), "level")), "active");
    json_object_put(o);
    assert_int_equal(vt_redis_int(f->r, "HLEN %s", "vigil:svc:persona:ann"), 2);
    vigil_effects_free(&fx);
}

static void test_snapshot_delete_to_empty_map(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:bo", "a", "1", "persona/bo/state", "{}", "rooms"), 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:bo", "b", "2", "persona/bo/state", "{}", "rooms"), 0);
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    json_object *o = last_snapshot(f, "persona/bo/state");
    assert_int_equal(json_object_object_length(get(o, "rooms")), 2);
    json_object_put(o);

    vigil_effects_reset(&fx);
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:bo", "a", NULL, "persona/bo/state", "{}", "rooms"), 0);
    assert_int_equal(commit(f, "k", 0, "m2", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    o = last_snapshot(f, "persona/bo/state");
    json_object *rooms = get(o, "rooms");
    assert_int_equal(json_object_object_length(rooms), 1);
    assert_int_equal(json_object_get_int(get(rooms, "b")), 2);
    json_object_put(o);

    vigil_effects_reset(&fx);
    assert_int_equal(vigil_fx_snapshot(&fx, "persona:bo", "b", NULL, "persona/bo/state", "{}", "rooms"), 0);
    assert_int_equal(commit(f, "k", 0, "m3", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    o = last_snapshot(f, "persona/bo/state");
    rooms = get(o, "rooms");
    assert_true(json_object_is_type(rooms, json_type_object)); /* {} not [] */
    assert_int_equal(json_object_object_length(rooms), 0);
    assert_int_equal(json_object_object_length(o), 2); /* rooms, ts */
    json_object_put(o);
    assert_int_equal(vt_redis_int(f->r, "EXISTS %s", "vigil:svc:persona:bo"), 0);
    assert_int_equal(outbox_len(f), 4); /* one payload per snapshot op */
    vigil_effects_free(&fx);
}

static void test_snapshot_order_after_outputs(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(vigil_fx_snapshot(&fx, "room:r", "p", "{}", "room/r/state", "{\"room\":\"r\"}", "personas"), 0);
    vigil_fx_publish(&fx, "persona/p/dormancy", "{\"id\":\"e1\"}", false);
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_outmsg out[4];
    assert_int_equal(vigil_store_outbox_peek(f->s, 4, out), 2);
    assert_string_equal(out[0].topic, "persona/p/dormancy");
    assert_string_equal(out[1].topic, "room/r/state");
    assert_string_equal(out[1].payload, "{\"room\":\"r\",\"personas\":{\"p\":{}},\"ts\":1700000000123}");
    vigil_outbox_entries_free(out, 2);
    vigil_effects_free(&fx);
}

static void test_snapshot_fields_sorted(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    /* written in the order c, a, b: the payload lists a, b, c so equal
     * states give equal retained payloads */
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "c", "3", "s/t", "{}", "m"), 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "a", "1", "s/t", "{}", "m"), 0);
    assert_int_equal(vigil_fx_snapshot(&fx, "h", "b", "[]", "s/t", "{}", "m"), 0);
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_outmsg out[4];
    assert_int_equal(vigil_store_outbox_peek(f->s, 4, out), 3);
    assert_string_equal(out[0].payload, "{\"m\":{\"c\":3},\"ts\":1700000000123}");
    assert_string_equal(out[2].payload,
                        "{\"m\":{\"a\":1,\"b\":[],\"c\":3},\"ts\":1700000000123}");
    vigil_outbox_entries_free(out, 3);
    vigil_effects_free(&fx);
}

static void test_leased_completion(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    vigil_fx_timer_set(&fx, "t1", NOW);
    vigil_fx_timer_set(&fx, "t2", NOW);
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW - 10, &nv, &cur), VIGIL_COMMIT_OK);
    vigil_timer_claim cl[4];
    assert_int_equal(vigil_timers_claim(f->s, NOW, 30000, 4, cl), 2);
    assert_true(cl[0].lease_score == NOW + 30000);

    /* t2 is set again meanwhile (a newer deadline): its completion must
     * not remove it */
    vigil_effects_reset(&fx);
    vigil_fx_timer_set(&fx, "t2", NOW + 50000);
    assert_int_equal(commit(f, "k", 0, "m2", &fx, NOW + 1, &nv, &cur), VIGIL_COMMIT_OK);

    vigil_effects_reset(&fx);
    vigil_commit c = { .key = "k", .expected_version = 0, .fx = &fx, .now_ms = NOW + 2,
                       .leased_timer = "k|t1", .leased_score = cl[0].lease_score };
    assert_int_equal(vigil_store_commit(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    c.leased_timer = "k|t2";
    assert_int_equal(vigil_store_commit(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 1);
    assert_true(vigil_timers_next_due(f->s) == NOW + 50000);

    /* completing and setting the same timer anew in one commit keeps the
     * new deadline (removal comes first) */
    assert_int_equal(vigil_timers_claim(f->s, NOW + 50000, 1000, 4, cl), 1);
    vigil_fx_timer_set(&fx, "t2", NOW + 90000);
    c.leased_score = cl[0].lease_score;
    assert_int_equal(vigil_store_commit(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 1);
    assert_true(vigil_timers_next_due(f->s) == NOW + 90000);
    vigil_effects_free(&fx);
}

static void test_delete_removes_record_ids_and_own_timers(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t nv;
    char *cur = NULL;
    vigil_fx_set_state(&fx, "{}");
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        vigil_fx_timer_set(&fx, name, NOW + i);
    }
    assert_int_equal(commit(f, "a", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    /* many timers of other keys (a big set, scanned in pages), one of them
     * on key "ab" which shares the prefix "a" */
    vigil_effects_reset(&fx);
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        vigil_fx_timer_set(&fx, name, NOW + i);
    }
    assert_int_equal(commit(f, "ab", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_timers_count(f->s), 305);

    assert_int_equal(vigil_store_delete(f->s, "a"), 0);
    assert_int_equal(vigil_timers_count(f->s), 300);
    int seen;
    int64_t v;
    char *st;
    assert_int_equal(vigil_store_load(f->s, "a", "m1", &seen, &v, &st), 0);
    assert_int_equal(v, 0);
    assert_null(st);
    assert_int_equal(seen, 0);
    assert_int_equal(vigil_store_load(f->s, "ab", "m1", &seen, &v, &st), 0);
    assert_int_equal(seen, 1);
    /* a deleted key starts again from version 0 */
    vigil_effects_reset(&fx);
    vigil_fx_set_state(&fx, "{\"new\":true}");
    assert_int_equal(commit(f, "a", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 1);
    assert_int_equal(vigil_store_delete(f->s, "missing"), 0);
    vigil_effects_free(&fx);
}

/* SCRIPT FLUSH (what a Redis restart does to loaded scripts): the commit
 * needs none, and a record's delete (a script) loads its own again. */
static void test_commit_after_script_flush(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{}");
    vigil_fx_timer_set(&fx, "t", NOW + 5);
    int64_t nv;
    char *cur = NULL;
    assert_int_equal(commit(f, "k", 0, "m1", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(vigil_store_delete(f->s, "k"), 0);
    assert_true(vt_redis_exec(vt_srv, "SCRIPT FLUSH"));
    assert_int_equal(commit(f, "k", 0, "m2", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 1);
    assert_true(vt_redis_exec(vt_srv, "SCRIPT FLUSH"));
    assert_int_equal(vigil_store_delete(f->s, "k"), 0);
    assert_true(timer_due(f, "k|t") == -1);
    vigil_effects_free(&fx);
}

static void test_errors_when_unreachable(void **state)
{
    vigil_redis_addr a = vt_redis_addr(vt_srv);
    a.port = 1;
    vigil_redis *r = vigil_redis_new(&a, 300);
    vigil_store_config cfg = { "vigil:", "svc", 2, 0, 0 };
    vigil_store *s = vigil_store_new(r, &cfg);
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_commit c = { .key = "k", .fx = &fx, .now_ms = NOW };
    int64_t nv = 0, v;
    char *cur = NULL, *st;
    int seen;
    vigil_outmsg out[2];
    assert_int_equal(vigil_store_commit(s, &c, &nv, &cur), VIGIL_COMMIT_ERROR);
    assert_int_equal(vigil_store_load(s, "k", "id", &seen, &v, &st), -1);
    assert_int_equal(vigil_store_delete(s, "k"), -1);
    assert_int_equal(vigil_store_outbox_peek(s, 2, out), -1);
    assert_int_equal(vigil_store_outbox_trim(s, 1), -1);
    char k[64];
    vigil_store_key(s, "timers", NULL, k, sizeof k);
    assert_string_equal(k, "vigil:svc:timers:2");
    vigil_store_free(s);
    vigil_redis_free(r);
}

/* Commits sent together (vigil_store_commit_send) run in order and each
 * reply says what became of its own commit: a stale one in the middle
 * conflicts and writes nothing, the ones around it commit, a duplicate
 * is one, and their outputs reach the outbox in the order sent. */
static void test_pipelined_commits_answer_each_in_order(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{\"n\":0}");
    int64_t nv = 0;
    char *cur = NULL;
    /* one commit the plain way first: the script's sha is then known */
    assert_int_equal(commit(f, "b", 0, "m0", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);

    vigil_effects fa, fb, fc, fd;
    vigil_effects *all[] = { &fa, &fb, &fc, &fd };
    for (int i = 0; i < 4; i++)
        vigil_effects_init(all[i]);
    vigil_fx_set_state(&fa, "{\"n\":\"a1\"}");
    vigil_fx_publish(&fa, "t/a", "A", false);
    vigil_fx_set_state(&fb, "{\"n\":\"b2\"}"); /* decided on version 0: stale */
    vigil_fx_publish(&fb, "t/b", "B", false);
    vigil_fx_set_state(&fc, "{\"n\":\"c1\"}");
    vigil_fx_publish(&fc, "t/c", "C", false);
    vigil_fx_publish(&fd, "t/d", "D", false); /* b's first input again */
    vigil_commit cs[] = {
        { .key = "a", .expected_version = 0, .input_id = "m1", .fx = &fa, .now_ms = NOW },
        { .key = "b", .expected_version = 0, .input_id = "m2", .fx = &fb, .now_ms = NOW },
        { .key = "c", .expected_version = 0, .input_id = "m3", .fx = &fc, .now_ms = NOW },
        { .key = "b", .expected_version = 1, .input_id = "m0", .fx = &fd, .now_ms = NOW },
    };
    for (int i = 0; i < 4; i++)
        assert_int_equal(vigil_store_commit_send(f->s, &cs[i]), 0);
    vigil_commit_result want[] = { VIGIL_COMMIT_OK, VIGIL_COMMIT_CONFLICT, VIGIL_COMMIT_OK,
                                   VIGIL_COMMIT_DUPLICATE };
    for (int i = 0; i < 4; i++) {
        nv = -1;
        assert_int_equal(vigil_store_commit_recv(f->s, &cs[i], &nv, &cur), want[i]);
        if (want[i] == VIGIL_COMMIT_CONFLICT) {
            assert_int_equal(nv, 1);
            assert_string_equal(cur, "{\"n\":0}");
        } else if (want[i] == VIGIL_COMMIT_OK) {
            assert_int_equal(nv, 1);
        }
        free(cur);
        cur = NULL;
    }
    vigil_outmsg out[8];
    int n = vigil_store_outbox_peek(f->s, 8, out);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].topic, "t/a");
    assert_string_equal(out[1].topic, "t/c");
    vigil_outbox_entries_free(out, n);
    int64_t v;
    char *st;
    assert_int_equal(vigil_store_load(f->s, "b", NULL, NULL, &v, &st), 0);
    assert_int_equal(v, 1);
    assert_string_equal(st, "{\"n\":0}");
    free(st);
    /* the plain path still works on the same connection afterwards */
    assert_int_equal(commit(f, "b", 1, "m5", &fx, NOW, &nv, &cur), VIGIL_COMMIT_OK);
    for (int i = 0; i < 4; i++)
        vigil_effects_free(all[i]);
    vigil_effects_free(&fx);
}

/* A pipelined commit needs nothing loaded first (the commit runs no
 * script), and a connection lost between _send and _recv makes it an
 * ERROR that wrote nothing: the caller's plain retry reconnects and
 * commits. */
static void test_pipelined_commit_after_a_lost_connection(void **state)
{
    fixture *f = *state;
    vigil_effects fx;
    vigil_effects_init(&fx);
    vigil_fx_set_state(&fx, "{}");
    vigil_commit c = { .key = "k", .expected_version = 0, .input_id = "m1", .fx = &fx,
                       .now_ms = NOW };
    int64_t nv = 0;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit_send(f->s, &c), 0);
    assert_int_equal(vigil_store_commit_recv(f->s, &c, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 1);
    vigil_commit c2 = { .key = "k", .expected_version = 1, .input_id = "m2", .fx = &fx,
                        .now_ms = NOW };
    assert_int_equal(vigil_store_commit_send(f->s, &c2), 0);
    assert_true(vt_redis_exec(vt_srv, "CLIENT KILL TYPE normal"));
    assert_int_equal(vigil_store_commit_recv(f->s, &c2, &nv, &cur), VIGIL_COMMIT_ERROR);
    int64_t v = 0;
    char *st = NULL;
    int seen = -1;
    assert_int_equal(vigil_store_load(f->s, "k", "m2", &seen, &v, &st), 0);
    assert_int_equal(seen, 0);
    assert_int_equal(v, 1);
    free(st);
    assert_int_equal(vigil_store_commit(f->s, &c2, &nv, &cur), VIGIL_COMMIT_OK);
    assert_int_equal(nv, 2);
    vigil_effects_free(&fx);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, vt_store_fixture_teardown)
    const struct CMUnitTest tests[] = {
        T(test_key_names),
        T(test_load_missing),
        T(test_first_and_second_commit),
        T(test_stale_version_conflicts_and_changes_nothing),
        T(test_duplicate_changes_nothing),
        T(test_unchanged_state_keeps_version_records_id),
        T(test_no_input_id_no_dedupe),
        cmocka_unit_test_setup_teardown(test_dedupe_keeps_newest, setup_keep3, vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_dedupe_ids_expire_after_the_last_id, setup_ttl,
                                        vt_store_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_dedupe_trims_on_some_commits_only, setup_keep1024,
                                        vt_store_fixture_teardown),
        T(test_timer_named_twice_keeps_the_last),
        T(test_outbox_order_format_peek_trim),
        T(test_outbox_malformed_entry_keeps_count),
        T(test_snapshot_aggregates_across_keys),
        T(test_snapshot_envelope_text),
        T(test_snapshot_delete_to_empty_map),
        T(test_snapshot_order_after_outputs),
        T(test_snapshot_fields_sorted),
        T(test_leased_completion),
        T(test_delete_removes_record_ids_and_own_timers),
        T(test_commit_after_script_flush),
        T(test_pipelined_commits_answer_each_in_order),
        T(test_pipelined_commit_after_a_lost_connection),
        cmocka_unit_test(test_errors_when_unreachable),
    };
#undef T
    return cmocka_run_group_tests_name("store", tests, vt_redis_group_setup, vt_redis_group_teardown);
}
