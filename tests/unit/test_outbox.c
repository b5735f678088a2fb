/* test_outbox.c - the publisher thread against a real redis-server and a
 * real mosquitto (tests/support). Outputs are committed through the store
 * exactly as a service does; an observer client records what reaches the
 * broker. Every test runs twice: publishing through paho's client (as the
 * outbox's child process does) and through the outbox's own connection
 * (mqtt_links.h: as a service's outbox thread does, on several connections,
 * since this broker allows 20 messages in flight on one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mosquitto_server.h"
#include "redis_server.h"
#include "vigil/clock.h"
#include "vigil/deadletter.h"
#include "vigil/effects.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/mqtt.h"
#include "vigil/mqtt_links.h"
#include "vigil/outbox.h"
#include "vigil/redis.h"
#include "vigil/store.h"

#define WAIT_MS 10000

static bool on_link; /* this run publishes through vigil_mqtt_links */

typedef struct env {
    vt_mosq *b;
    vt_redis *rs;
    vigil_redis_addr addr;
    vigil_store_config scfg;
    vigil_redis *r; /* the test's own connection, for commits and checks */
    vigil_store *s;
    vigil_mqtt *pub; /* the client the outbox publishes with, or */
    vigil_mqtt_links *link; /* its own connections (the second run) */
    vigil_mqtt *obs; /* records everything on ev/# */
    vt_msglog *log;
} env;

static vigil_mqtt *client(env *e, const char *id, const char *const *subs, const char *status)
{
    vigil_mqtt_config cfg = {
        .url = vt_mosq_url(e->b),
        .client_id = id,
        .subscriptions = subs,
        .status_topic = status,
        .ready_payload = "ready",
        .lost_payload = "lost",
        .on_message = subs ? vt_msglog_on_message : NULL,
        .ctx = e->log,
    };
    char err[256];
    vigil_mqtt *m = vigil_mqtt_new(&cfg, err, sizeof err);
    if (!m)
        fprintf(stderr, "vigil_mqtt_new: %s\n", err);
    assert_non_null(m);
    assert_int_equal(vigil_mqtt_start(m), 0);
    return m;
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    assert_non_null(e);
    e->b = vt_mosq_start();
    assert_non_null(e->b);
    e->rs = vt_redis_start();
    assert_non_null(e->rs);
    e->addr = vt_redis_addr(e->rs);
    e->scfg = (vigil_store_config){ .prefix = "vigil:", .service = "outbox-test", .shard_index = 3 };
    e->r = vigil_redis_new(&e->addr, 2000);
    assert_non_null(e->r);
    e->s = vigil_store_new(e->r, &e->scfg);
    assert_non_null(e->s);
    e->log = vt_msglog_new();
    assert_non_null(e->log);
    static const char *const subs[] = { "ev/#", NULL };
    /* Both connect in parallel (paho takes a while to bring up a second
     * connection in one process). */
    e->obs = client(e, "vigil-outbox-observer", subs, "sys/outbox-test/obs/status");
    e->pub = client(e, "vigil-outbox-publisher", NULL, "sys/outbox-test/pub/status");
    assert_true(vt_mqtt_wait_connected(e->obs, true, WAIT_MS));
    assert_true(vt_mqtt_wait_connected(e->pub, true, WAIT_MS));
    /* "ready" follows the SUBSCRIBE on the same connection. */
    assert_true(vt_mosq_wait_retained(e->b, "sys/outbox-test/obs/status", "ready", WAIT_MS));
    assert_true(vt_mosq_wait_retained(e->b, "sys/outbox-test/pub/status", "ready", WAIT_MS));
    if (on_link) {
        vigil_mqtt_config lc = { .url = vt_mosq_url(e->b), .client_id = "vigil-outbox-link" };
        char err[256];
        e->link = vigil_mqtt_links_new(&lc, VIGIL_LINKS_MAX, err, sizeof err);
        assert_non_null(e->link);
        assert_int_equal(vigil_mqtt_links_start(e->link), 0);
        assert_true(vt_links_wait_connected(e->link, true, WAIT_MS));
    }
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    unsetenv("VIGIL_OUTBOX_RETRY_MS");
    unsetenv("VIGIL_OUTBOX_DEAD_LETTER_AFTER");
    unsetenv("VIGIL_OUTBOX_REPLAY_MS");
    unsetenv("VIGIL_OUTBOX_SKIP_SUPERSEDED");
    vigil_mqtt_links_stop(e->link, 1000);
    vigil_mqtt_stop(e->pub, NULL, 2000);
    vigil_mqtt_stop(e->obs, NULL, 2000);
    vt_msglog_free(e->log);
    vigil_store_free(e->s);
    vigil_redis_free(e->r);
    vt_redis_stop(e->rs);
    vt_mosq_stop(e->b);
    free(e);
    return 0;
}


/* The outbox under test, on this run's connection. */
static vigil_outbox *start_outbox(env *e)
{
    return on_link ? vigil_outbox_start_on_links(&e->addr, &e->scfg, e->link)
                   : vigil_outbox_start(&e->addr, &e->scfg, e->pub);
}

/* Waits until the outbox's connection is (or is not) up. */
static bool wait_pub(env *e, bool want)
{
    return on_link ? vt_links_wait_connected(e->link, want, WAIT_MS)
                   : vt_mqtt_wait_connected(e->pub, want, WAIT_MS);
}

/* Commits a new record `key` with the effects fx, and frees them. */
static void commit_fx(env *e, const char *key, vigil_effects *fx)
{
    char input_id[64];
    snprintf(input_id, sizeof input_id, "in-%s", key);
    vigil_commit c = { .key = key, .expected_version = 0, .input_id = input_id, .fx = fx,
                       .now_ms = vigil_now_ms() };
    int64_t version = 0;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(e->s, &c, &version, &cur), VIGIL_COMMIT_OK);
    free(cur);
    vigil_effects_free(fx);
}

/* Commits a new record `key` whose effects publish n outputs ev/<first+i>
 * (payload "m<first+i>"), the last one retained if retain_last. */
static void commit_outputs(env *e, const char *key, int first, int n, bool retain_last)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_set_state(&fx, "{\"k\":1}"), 0);
    for (int i = 0; i < n; i++) {
        char topic[32], payload[32];
        snprintf(topic, sizeof topic, "ev/%d", first + i);
        snprintf(payload, sizeof payload, "m%d", first + i);
        assert_int_equal(vigil_fx_publish(&fx, topic, payload, retain_last && i == n - 1), 0);
    }
    commit_fx(e, key, &fx);
}

static long long dl_len(env *e);

static int outbox_len(env *e)
{
    vigil_outmsg ents[100];
    int n = vigil_store_outbox_peek(e->s, 100, ents);
    if (n > 0)
        vigil_outbox_entries_free(ents, n);
    return n;
}

static bool wait_outbox_len(env *e, int want, int timeout_ms)
{
    int64_t deadline = vigil_mono_ms() + timeout_ms;
    while (outbox_len(e) != want) {
        if (vigil_mono_ms() >= deadline)
            return false;
        vigil_sleep_ms(20, NULL);
    }
    return true;
}

/* The connection an output ev/<k> leaves on (mqtt_links.h): outputs keep
 * their order on one connection, not across them. */
static int conn_of(env *e, int k)
{
    char topic[32];
    snprintf(topic, sizeof topic, "ev/%d", k);
    return on_link ? vigil_mqtt_links_pick(topic, vigil_mqtt_links_count(e->link)) : 0;
}

/* The observer saw exactly ev/first .. ev/first+n-1, each once, and those
 * of each connection in their order (one connection: all in order). */
static void assert_received_in_order(env *e, int first, int n)
{
    assert_true(vt_msglog_wait_count(e->log, NULL, n, WAIT_MS));
    vigil_sleep_ms(100, NULL);
    assert_int_equal(vt_msglog_count(e->log, NULL), n);
    int last[VIGIL_LINKS_MAX];
    for (int c = 0; c < VIGIL_LINKS_MAX; c++)
        last[c] = first - 1;
    bool *seen = calloc((size_t)n, sizeof *seen);
    assert_non_null(seen);
    for (int i = 0; i < n; i++) {
        char topic[32], payload[32], want_p[32];
        assert_int_equal(vt_msglog_get(e->log, NULL, i, topic, sizeof topic, payload,
                                       sizeof payload, NULL), 0);
        int k = -1;
        assert_int_equal(sscanf(topic, "ev/%d", &k), 1);
        assert_true(k >= first && k < first + n);
        assert_false(seen[k - first]);
        seen[k - first] = true;
        snprintf(want_p, sizeof want_p, "m%d", k);
        assert_string_equal(payload, want_p);
        int c = conn_of(e, k);
        assert_true(k > last[c]);
        last[c] = k;
    }
    free(seen);
}

static void test_committed_outputs_published_in_order(void **state)
{
    env *e = *state;
    double outputs0 = vigil_metric_value("vigil_outputs_total", NULL);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    commit_outputs(e, "room:a", 0, 3, false);
    vigil_outbox_kick(o);
    commit_outputs(e, "room:b", 3, 2, true);
    vigil_outbox_kick(o);
    assert_received_in_order(e, 0, 5);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    assert_int_equal(vigil_outbox_published(o), 5);
    assert_true(vigil_metric_value("vigil_outputs_total", NULL) >= outputs0 + 5);
    char got[64];
    assert_int_equal(vt_mosq_get_retained(e->b, "ev/4", got, sizeof got, 3), 0);
    assert_string_equal(got, "m4");
    if (on_link) {
        /* This broker allows 20 in flight per connection (mosquitto's
         * default): two connections make the window of 40. */
        assert_int_equal(vigil_mqtt_links_count(e->link), 2);
        assert_int_equal(vigil_mqtt_links_window(e->link), 40);
        assert_true(vigil_metric_value("vigil_outbox_connections", NULL) == 2);
    }
    vigil_outbox_stop(o, 1000);
}

/* The kick flag another process sets (outbox_process.h): the thread clears
 * it when it takes kicks in, before it reads, so that a commit made after
 * the clear kicks again and one made before it is in the read. */
static void test_kick_flag_cleared_before_each_read(void **state)
{
    env *e = *state;
    static atomic_int flag;
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    vigil_outbox_set_kick_flag(o, &flag);
    for (int round = 0; round < 3; round++) {
        char key[16];
        snprintf(key, sizeof key, "room:k%d", round);
        commit_outputs(e, key, 2 * round, 2, false);
        atomic_store(&flag, 1); /* what the kicker does before it kicks */
        vigil_outbox_kick(o);
        assert_received_in_order(e, 0, 2 * round + 2);
        int64_t until = vigil_mono_ms() + WAIT_MS;
        while (atomic_load(&flag) != 0 && vigil_mono_ms() < until)
            vigil_sleep_ms(5, NULL);
        assert_int_equal(atomic_load(&flag), 0);
    }
    vigil_outbox_set_kick_flag(o, NULL);
    atomic_store(&flag, 1);
    vigil_outbox_kick(o);
    vigil_sleep_ms(200, NULL);
    assert_int_equal(atomic_load(&flag), 1); /* no longer ours to clear */
    vigil_outbox_stop(o, 1000);
}

/* Entries left by a previous run go out at start, without any kick. */
static void test_replay_at_start(void **state)
{
    env *e = *state;
    commit_outputs(e, "room:old", 0, 3, false);
    assert_int_equal(outbox_len(e), 3);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    assert_received_in_order(e, 0, 3);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    vigil_outbox_stop(o, 1000);
}

/* While the broker is down nothing leaves Redis; once it is back, all goes
 * out (the observer's persistent session queues it meanwhile). With the
 * replay off, each output arrives exactly once (with it, ev/0 would come
 * again: test_broker_crash_before_save_replays). */
static void test_broker_outage_keeps_entries(void **state)
{
    env *e = *state;
    setenv("VIGIL_OUTBOX_RETRY_MS", "50", 1);
    setenv("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "1", 1);
    setenv("VIGIL_OUTBOX_REPLAY_MS", "0", 1);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    commit_outputs(e, "room:first", 0, 1, false);
    vigil_outbox_kick(o);
    assert_received_in_order(e, 0, 1);

    assert_int_equal(vt_mosq_kill9(e->b), 0);
    assert_true(wait_pub(e, false));
    commit_outputs(e, "room:during", 1, 2, false);
    vigil_outbox_kick(o);
    vigil_sleep_ms(800, NULL);
    assert_int_equal(outbox_len(e), 2);

    assert_int_equal(vt_mosq_restart(e->b), 0);
    assert_received_in_order(e, 0, 3);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    assert_int_equal(dl_len(e), 0);
    vigil_outbox_stop(o, 1000);
}

/* Redis down at start: the thread backs off and publishes once it is back. */
static void test_redis_outage(void **state)
{
    env *e = *state;
    commit_outputs(e, "room:r", 0, 2, false);
    assert_int_equal(vt_redis_kill9(e->rs), 0);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    vigil_sleep_ms(700, NULL);
    assert_int_equal(vt_msglog_count(e->log, NULL), 0);
    assert_int_equal(vt_redis_restart(e->rs), 0);
    assert_received_in_order(e, 0, 2);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    vigil_outbox_stop(o, 1000);
}

static void test_ephemeral(void **state)
{
    env *e = *state;
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    vigil_outbox_push_ephemeral(o, "ev/0", "m0", false);
    vigil_outbox_push_ephemeral(o, "ev/1", "m1", false);
    vigil_outbox_push_ephemeral(o, "ev/2", "m2", true);
    assert_received_in_order(e, 0, 3);
    assert_int_equal(vigil_outbox_published(o), 3);
    assert_int_equal(outbox_len(e), 0);
    vigil_outbox_stop(o, 1000);
    vigil_outbox_push_ephemeral(NULL, "ev/x", "x", false); /* ignored */
    vigil_outbox_kick(NULL);
}

/* The ephemeral queue is bounded: beyond 10000 the oldest are dropped. */
static void test_ephemeral_bound(void **state)
{
    env *e = *state;
    double dropped0 = vigil_metric_value("vigil_outbox_dropped_total", NULL);
    /* The broker is down, so the queue only grows. */
    assert_int_equal(vt_mosq_kill9(e->b), 0);
    assert_true(wait_pub(e, false));
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    for (int i = 0; i < 10005; i++)
        vigil_outbox_push_ephemeral(o, "ev/flood", "f", false);
    assert_true(vigil_metric_value("vigil_outbox_dropped_total", NULL) >= dropped0 + 5);
    vigil_outbox_stop(o, 0);
    assert_int_equal(vt_mosq_restart(e->b), 0);
}

/* stop(drain_ms) publishes what is pending before returning. */
static void test_stop_drains(void **state)
{
    env *e = *state;
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    vigil_sleep_ms(100, NULL); /* let the start-up replay find nothing */
    commit_outputs(e, "room:late", 0, 4, false);
    vigil_outbox_push_ephemeral(o, "ev/eph", "e", false);
    vigil_outbox_stop(o, 5000);
    assert_int_equal(outbox_len(e), 0);
    assert_true(vt_msglog_wait_count(e->log, NULL, 5, WAIT_MS));
    assert_int_equal(vt_msglog_count(e->log, "ev/eph"), 1);
}

/* The CPU time of the whole test process, in seconds. */
static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A drain that waits for acknowledgements that do not come (the broker is
 * stopped) waits for them: it polls, it does not spin. It used to loop
 * without sleeping until the deadline, a whole core for drain_ms. */
static void test_stop_drain_waits_without_spinning(void **state)
{
    env *e = *state;
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    vigil_sleep_ms(100, NULL);
    assert_int_equal(kill(vt_mosq_pid(e->b), SIGSTOP), 0);
    commit_outputs(e, "room:stuck", 0, 5, false);
    vigil_outbox_kick(o);
    vigil_sleep_ms(300, NULL); /* sent, unacknowledged */
    double cpu0 = process_cpu_s();
    int64_t t0 = vigil_mono_ms();
    vigil_outbox_stop(o, 3000);
    int64_t wall = vigil_mono_ms() - t0;
    double cpu = process_cpu_s() - cpu0;
    assert_int_equal(kill(vt_mosq_pid(e->b), SIGCONT), 0);
    assert_true(wall >= 2500); /* it did wait for the deadline */
    if (cpu > 0.3)
        fail_msg("the drain used %.2f s of CPU in %lld ms", cpu, (long long)wall);
    assert_int_equal(outbox_len(e), 5); /* unacknowledged: still there for the next start */
}

/* ---- the window and dead letters ----------------------------------------- */

static void rpush_raw(env *e, const char *raw)
{
    char key[256];
    vigil_store_key(e->s, "outbox", NULL, key, sizeof key);
    redisReply *rep = vigil_redis_command(e->r, "RPUSH %s %s", key, raw);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    vigil_redis_reply_free(rep);
}

static long long dl_len(env *e)
{
    char key[256];
    assert_int_equal(vigil_deadletter_key("vigil:", "outbox-test", key, sizeof key), 0);
    assert_string_equal(key, "vigil:outbox-test:deadletter");
    redisReply *rep = vigil_redis_command(e->r, "LLEN %s", key);
    assert_non_null(rep);
    long long n = rep->integer;
    vigil_redis_reply_free(rep);
    return n;
}

static bool wait_dl_len(env *e, long long want, int timeout_ms)
{
    int64_t deadline = vigil_mono_ms() + timeout_ms;
    while (dl_len(e) != want) {
        if (vigil_mono_ms() >= deadline)
            return false;
        vigil_sleep_ms(20, NULL);
    }
    return true;
}

/* The first arrival of each of ev/first .. ev/first+n-1 came in that order
 * among those of its connection (later copies are allowed: a failed window
 * is published again). */
static void assert_first_arrivals_in_order(env *e, int first, int n)
{
    /* The outbox opens its connections before it publishes: once
     * something arrived, their number is settled. */
    assert_true(vt_msglog_wait_count(e->log, NULL, 1, 6 * WAIT_MS));
    int next[VIGIL_LINKS_MAX]; /* per connection: the next output it owes */
    int left = 0;
    for (int c = 0; c < VIGIL_LINKS_MAX; c++) {
        next[c] = first;
        while (next[c] < first + n && conn_of(e, next[c]) != c)
            next[c]++;
        if (next[c] < first + n)
            left++;
    }
    int64_t deadline = vigil_mono_ms() + 6 * WAIT_MS;
    for (int i = 0; left > 0; i++) {
        char topic[64];
        while (vt_msglog_get(e->log, NULL, i, topic, sizeof topic, NULL, 0, NULL) != 0) {
            assert_true(vigil_mono_ms() < deadline);
            vigil_sleep_ms(10, NULL);
        }
        int k = -1;
        if (sscanf(topic, "ev/%d", &k) != 1 || k < first || k >= first + n)
            continue;
        int c = conn_of(e, k);
        assert_true(k <= next[c]); /* never one before its predecessors */
        if (k == next[c]) {
            do
                next[c]++;
            while (next[c] < first + n && conn_of(e, next[c]) != c);
            if (next[c] >= first + n)
                left--;
        }
    }
}

/* Thousands of outputs go out through the window, in order, each once when
 * nothing fails, and leave the outbox. */
static void test_window_publishes_many_in_order(void **state)
{
    env *e = *state;
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    for (int c = 0; c < 30; c++) {
        char key[32];
        snprintf(key, sizeof key, "room:w%d", c);
        commit_outputs(e, key, c * 100, 100, false);
        vigil_outbox_kick(o);
    }
    /* generous: a sanitizer build on a loaded machine */
    assert_true(vt_msglog_wait_count(e->log, NULL, 3000, 6 * WAIT_MS));
    assert_received_in_order(e, 0, 3000);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    assert_int_equal(vigil_outbox_published(o), 3000);
    vigil_outbox_stop(o, 1000);
}

/* Commits record `key` publishing the event ev/r/e<i> ("e<i>") and then
 * the retained snapshot ev/r/st ("s<i>"), as a service commits an event and
 * its state. One entity (ev/r), so one connection and commit order. */
static void commit_event_and_state(env *e, const char *key, int i)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_set_state(&fx, "{\"k\":1}"), 0);
    char topic[32], payload[32];
    snprintf(topic, sizeof topic, "ev/r/e%d", i);
    snprintf(payload, sizeof payload, "e%d", i);
    assert_int_equal(vigil_fx_publish(&fx, topic, payload, false), 0);
    snprintf(payload, sizeof payload, "s%d", i);
    assert_int_equal(vigil_fx_publish(&fx, "ev/r/st", payload, true), 0);
    commit_fx(e, key, &fx);
}

/* Ten commits of an event and a snapshot of one retained topic wait in the
 * outbox (a backlog). Every event goes out, in order; of the snapshots only
 * the newest, after the last event (the older ones are counted as
 * superseded and trimmed with the rest). With VIGIL_OUTBOX_SKIP_SUPERSEDED=0
 * all ten snapshots go out. */
static void run_superseded(env *e, bool skip)
{
    setenv("VIGIL_OUTBOX_SKIP_SUPERSEDED", skip ? "1" : "0", 1);
    double sup0 = vigil_metric_value("vigil_outbox_superseded_total", NULL);
    for (int i = 0; i < 10; i++) {
        char key[32];
        snprintf(key, sizeof key, "room:s%d", i);
        commit_event_and_state(e, key, i);
    }
    assert_int_equal(outbox_len(e), 20);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    int want = skip ? 11 : 20;
    assert_true(vt_msglog_wait_count(e->log, NULL, want, WAIT_MS));
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    vigil_sleep_ms(100, NULL);
    assert_int_equal(vt_msglog_count(e->log, NULL), want);
    assert_int_equal(vigil_outbox_published(o), want);
    int next_event = 0, states = 0;
    for (int i = 0; i < want; i++) {
        char topic[32], payload[32], w[32];
        assert_int_equal(vt_msglog_get(e->log, NULL, i, topic, sizeof topic, payload,
                                       sizeof payload, NULL), 0);
        if (strcmp(topic, "ev/r/st") == 0) {
            /* each snapshot right after its event; the one left, last */
            snprintf(w, sizeof w, "s%d", skip ? 9 : states);
            assert_string_equal(payload, w);
            assert_int_equal(next_event, skip ? 10 : states + 1);
            states++;
            continue;
        }
        snprintf(w, sizeof w, "ev/r/e%d", next_event);
        assert_string_equal(topic, w);
        next_event++;
    }
    assert_int_equal(next_event, 10);
    assert_int_equal(states, skip ? 1 : 10);
    assert_true(vigil_metric_value("vigil_outbox_superseded_total", NULL) ==
                sup0 + (skip ? 9 : 0));
    char got[32];
    assert_int_equal(vt_mosq_get_retained(e->b, "ev/r/st", got, sizeof got, 3), 0);
    assert_string_equal(got, "s9");
    vigil_outbox_stop(o, 1000);
}

static void test_superseded_snapshots_skipped(void **state)
{
    run_superseded(*state, true);
}

static void test_superseded_snapshots_all_published_when_off(void **state)
{
    run_superseded(*state, false);
}

/* A subscriber to sys/outbox-test/error, for the dead-letter events. */
static vigil_mqtt *error_observer(env *e, vt_msglog *log)
{
    static const char *const subs[] = { "sys/outbox-test/error", NULL };
    vigil_mqtt_config cfg = {
        .url = vt_mosq_url(e->b), .client_id = "vigil-outbox-err-observer", .subscriptions = subs,
        .status_topic = "sys/outbox-test/errobs/status", .ready_payload = "ready",
        .lost_payload = "lost", .on_message = vt_msglog_on_message, .ctx = log,
    };
    char err[256];
    vigil_mqtt *m = vigil_mqtt_new(&cfg, err, sizeof err);
    assert_non_null(m);
    assert_int_equal(vigil_mqtt_start(m), 0);
    assert_true(vt_mosq_wait_retained(e->b, "sys/outbox-test/errobs/status", "ready", WAIT_MS));
    return m;
}

/* An undecodable entry (and one whose topic is a wildcard) cannot be
 * published: each moves to the dead-letter list exactly as stored, with a
 * metric and an error event, and what surrounds them goes out in order. */
static void test_undecodable_entries_become_dead_letters(void **state)
{
    env *e = *state;
    vt_msglog *errs = vt_msglog_new();
    vigil_mqtt *eo = error_observer(e, errs);
    double dead0 = vigil_metric_value("vigil_outbox_dead_letters_total", NULL);
    commit_outputs(e, "room:d1", 0, 2, false);
    rpush_raw(e, "garbage without a newline");
    commit_outputs(e, "room:d2", 2, 2, false);
    rpush_raw(e, "0ev/+\n{\"wildcard\":true}");
    commit_outputs(e, "room:d3", 4, 1, false);

    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    assert_received_in_order(e, 0, 5);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    assert_int_equal(dl_len(e), 2);
    redisReply *rep = vigil_redis_command(e->r, "LRANGE vigil:outbox-test:deadletter 0 -1");
    assert_non_null(rep);
    assert_int_equal(rep->elements, 2);
    assert_string_equal(rep->element[0]->str, "garbage without a newline");
    assert_string_equal(rep->element[1]->str, "0ev/+\n{\"wildcard\":true}");
    vigil_redis_reply_free(rep);
    assert_true(vigil_metric_value("vigil_outbox_dead_letters_total", NULL) >= dead0 + 2);
    assert_true(vigil_metric_value("vigil_outbox_dead_letters", NULL) >= 2);
    assert_true(vt_msglog_wait_count(errs, "sys/outbox-test/error", 2, WAIT_MS));
    char payload[2048];
    assert_int_equal(vt_msglog_get(errs, NULL, 0, NULL, 0, payload, sizeof payload, NULL), 0);
    assert_non_null(strstr(payload, "\"reason\":\"dead_letter\""));
    assert_non_null(strstr(payload, "\"service\":\"outbox-test\""));
    vigil_outbox_stop(o, 1000);
    vigil_mqtt_stop(eo, NULL, 2000);
    vt_msglog_free(errs);
}

static void list_cb(void *ctx, long long index, const vigil_deadletter *d)
{
    char *out = ctx;
    size_t used = strlen(out);
    snprintf(out + used, 512 - used, "%lld %s %.*s;", index, d->topic ? d->topic : "(raw)",
             (int)(d->payload ? d->payload_len : d->raw_len), d->payload ? d->payload : d->raw);
}

/* A message the broker refuses (ACL) is retried VIGIL_OUTBOX_DEAD_LETTER_AFTER
 * times, then moved to the dead-letter list; the outputs behind it go out.
 * Once the ACL is fixed, a replay publishes it. */
static void test_refused_entry_dead_letter_and_replay(void **state)
{
    env *e = *state;
    setenv("VIGIL_OUTBOX_RETRY_MS", "50", 1);
    setenv("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "3", 1);
    assert_int_equal(vt_mosq_set_acl(e->b, "topic read ev/#\ntopic write ev/+\n"
                                           "topic readwrite sys/#\n"), 0);
    assert_int_equal(vt_mosq_restart(e->b), 0);
    assert_true(wait_pub(e, true));
    assert_true(vt_mqtt_wait_connected(e->obs, true, WAIT_MS));
    assert_true(vt_mosq_wait_retained(e->b, "sys/outbox-test/obs/status", "ready", WAIT_MS));
    double refused0 = vigil_metric_value("vigil_outbox_refusals_total", NULL);

    commit_outputs(e, "room:a0", 0, 1, false);
    vigil_effects fx;
    vigil_effects_init(&fx);
    assert_int_equal(vigil_fx_publish(&fx, "ev/no/x", "refused", false), 0);
    vigil_commit c = { .key = "room:acl", .input_id = "in-acl", .fx = &fx, .now_ms = vigil_now_ms() };
    int64_t v = 0;
    char *cur = NULL;
    assert_int_equal(vigil_store_commit(e->s, &c, &v, &cur), VIGIL_COMMIT_OK);
    free(cur);
    vigil_effects_free(&fx);
    commit_outputs(e, "room:a1", 1, 2, false);

    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    assert_first_arrivals_in_order(e, 0, 3);
    assert_true(wait_dl_len(e, 1, WAIT_MS));
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    assert_true(vigil_metric_value("vigil_outbox_refusals_total", NULL) >= refused0 + 3);
    assert_int_equal(vt_msglog_count(e->log, "ev/no/x"), 0);

    char listed[512] = "";
    assert_int_equal(vigil_deadletter_list(e->r, "vigil:", "outbox-test", list_cb, listed), 1);
    assert_string_equal(listed, "0 ev/no/x refused;");

    /* Fix the ACL, replay: it goes out and leaves no dead letter behind. */
    assert_int_equal(vt_mosq_set_acl(e->b, NULL), 0);
    assert_int_equal(vt_mosq_restart(e->b), 0);
    assert_true(wait_pub(e, true));
    assert_true(vt_mosq_wait_retained(e->b, "sys/outbox-test/obs/status", "ready", WAIT_MS));
    assert_int_equal(vigil_deadletter_replay(e->r, "vigil:", "outbox-test", 3), 1);
    assert_int_equal(dl_len(e), 0);
    assert_true(vt_msglog_wait(e->log, "ev/no/x", "refused", -1, WAIT_MS));
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    vigil_outbox_stop(o, 1000);
}

/* A broker that stops answering (SIGSTOP) for a while is slow, not a
 * refusal: even with one refusal allowed, nothing becomes a dead letter and
 * everything goes out once it answers again. */
static void test_slow_broker_never_dead_letters(void **state)
{
    env *e = *state;
    setenv("VIGIL_OUTBOX_RETRY_MS", "50", 1);
    setenv("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "1", 1);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    commit_outputs(e, "room:s0", 0, 50, false);
    vigil_outbox_kick(o);
    assert_int_equal(kill(vt_mosq_pid(e->b), SIGSTOP), 0);
    commit_outputs(e, "room:s1", 50, 200, false);
    vigil_outbox_kick(o);
    vigil_sleep_ms(1500, NULL);
    assert_int_equal(kill(vt_mosq_pid(e->b), SIGCONT), 0);
    assert_true(vt_msglog_wait_count(e->log, NULL, 250, 6 * WAIT_MS));
    assert_first_arrivals_in_order(e, 0, 250);
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    assert_int_equal(dl_len(e), 0);
    vigil_outbox_stop(o, 1000);
}

/* kill -9 of the broker and then of Redis while thousands of outputs are in
 * flight: every output still arrives (first arrivals in commit order),
 * nothing is trimmed that the broker did not acknowledge, nothing becomes a
 * dead letter, and the outbox ends empty. */
static void test_broker_and_redis_crash_mid_flow(void **state)
{
    env *e = *state;
    setenv("VIGIL_OUTBOX_RETRY_MS", "50", 1);
    setenv("VIGIL_OUTBOX_DEAD_LETTER_AFTER", "1", 1);
    for (int c = 0; c < 20; c++) {
        char key[32];
        snprintf(key, sizeof key, "room:c%d", c);
        commit_outputs(e, key, c * 100, 100, false);
    }
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    assert_true(vt_msglog_wait_count(e->log, NULL, 300, WAIT_MS));
    assert_int_equal(vt_mosq_kill9(e->b), 0);
    vigil_sleep_ms(300, NULL);
    assert_int_equal(vt_mosq_restart(e->b), 0);
    assert_true(vt_msglog_wait_count(e->log, NULL, 1200, 3 * WAIT_MS));
    assert_int_equal(vt_redis_kill9(e->rs), 0);
    vigil_sleep_ms(300, NULL);
    assert_int_equal(vt_redis_restart(e->rs), 0);
    assert_true(vt_msglog_wait_count(e->log, NULL, 2000, 6 * WAIT_MS));
    assert_first_arrivals_in_order(e, 0, 2000);
    assert_true(wait_outbox_len(e, 0, 3 * WAIT_MS));
    assert_int_equal(dl_len(e), 0);
    vigil_outbox_stop(o, 1000);
}

/* The broker is killed before it saved outputs it had acknowledged (its
 * database is wiped, as an unsaved one would be): once it is back, the
 * outbox publishes again what was acknowledged within
 * VIGIL_OUTBOX_REPLAY_MS before the loss, and not what is older. */
static void test_broker_crash_before_save_replays(void **state)
{
    env *e = *state;
    setenv("VIGIL_OUTBOX_RETRY_MS", "50", 1);
    setenv("VIGIL_OUTBOX_REPLAY_MS", "1000", 1);
    double replayed0 = vigil_metric_value("vigil_outbox_replayed_total", NULL);
    commit_outputs(e, "room:old", 0, 1, true);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    assert_true(vt_mosq_wait_retained(e->b, "ev/0", "m0", WAIT_MS));
    assert_true(wait_outbox_len(e, 0, WAIT_MS));
    vigil_sleep_ms(1300, NULL); /* ev/0 is now older than the window */
    commit_outputs(e, "room:new", 1, 3, true);
    vigil_outbox_kick(o);
    assert_true(vt_mosq_wait_retained(e->b, "ev/3", "m3", WAIT_MS));
    assert_true(wait_outbox_len(e, 0, WAIT_MS));

    assert_int_equal(vt_mosq_kill9(e->b), 0);
    assert_int_equal(vt_mosq_wipe_db(e->b), 0);
    assert_int_equal(vt_mosq_restart(e->b), 0);
    assert_true(vt_mosq_wait_retained(e->b, "ev/3", "m3", 3 * WAIT_MS));
    char got[64];
    assert_int_equal(vt_mosq_get_retained(e->b, "ev/0", got, sizeof got, 1), -1);
    /* ev/1..3 again, in order, each once. */
    assert_int_equal((int)(vigil_metric_value("vigil_outbox_replayed_total", NULL) - replayed0), 3);
    assert_int_equal(dl_len(e), 0);
    vigil_outbox_stop(o, 1000);
    unsetenv("VIGIL_OUTBOX_REPLAY_MS");
}

/* The broker dies right after acknowledging outputs the outbox has not
 * trimmed yet (trimming rides on the next read or a 50 ms poll), and comes
 * back without them: they are published again, as the replay ring's are.
 * The loss must be seen while they are still untrimmed; each attempt checks
 * that it was (they are still in Redis with the broker down), and at least
 * one attempt must catch it. */
static void test_broker_crash_before_trim_republishes(void **state)
{
    env *e = *state;
    setenv("VIGIL_OUTBOX_RETRY_MS", "50", 1);
    setenv("VIGIL_OUTBOX_REPLAY_MS", "2000", 1);
    vigil_outbox *o = start_outbox(e);
    assert_non_null(o);
    vigil_sleep_ms(100, NULL); /* let the start-up replay find nothing */
    int caught = 0, attempt = 0;
    for (; attempt < 8 && caught < 2; attempt++) {
        int first = attempt * 3;
        int seen = vt_msglog_count(e->log, NULL);
        char key[32], topic[32], payload[32];
        snprintf(key, sizeof key, "room:t%d", attempt);
        commit_outputs(e, key, first, 3, true);
        vigil_outbox_kick(o);
        assert_true(vt_msglog_wait_count(e->log, NULL, seen + 3, WAIT_MS));
        assert_int_equal(vt_mosq_kill9(e->b), 0);
        vigil_sleep_ms(300, NULL);
        if (outbox_len(e) == 3)
            caught++; /* acknowledged, and untrimmed when the loss was seen */
        assert_int_equal(vt_mosq_wipe_db(e->b), 0);
        assert_int_equal(vt_mosq_restart(e->b), 0);
        snprintf(topic, sizeof topic, "ev/%d", first + 2);
        snprintf(payload, sizeof payload, "m%d", first + 2);
        assert_true(vt_mosq_wait_retained(e->b, topic, payload, 3 * WAIT_MS));
        assert_true(wait_outbox_len(e, 0, WAIT_MS));
        /* The wiped broker forgot the observer's subscription: wait until
         * it has subscribed again ("ready" follows the SUBSCRIBE), as the
         * outbox's own connection may be back long before it. */
        assert_true(vt_mosq_wait_retained(e->b, "sys/outbox-test/obs/status", "ready", 3 * WAIT_MS));
    }
    print_message("loss seen before the trim in %d of %d attempts\n", caught, attempt);
    assert_true(caught > 0);
    assert_int_equal(dl_len(e), 0);
    vigil_outbox_stop(o, 1000);
}

/* With no argument both groups run; "paho" or "link" runs one (ctest
 * runs them as two tests, side by side: each restarts brokers for about
 * a minute). */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only && strcmp(only, "paho") != 0 && strcmp(only, "link") != 0) {
        fprintf(stderr, "usage: %s [paho|link]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    vigil_log_level lvl = VIGIL_LOG_ERROR;
    const char *env_lvl = getenv("VIGIL_LOG_LEVEL");
    if (env_lvl)
        vigil_log_level_parse(env_lvl, &lvl);
    vigil_log_init("test_outbox", "t", lvl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_committed_outputs_published_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kick_flag_cleared_before_each_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_outage_keeps_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_outage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ephemeral, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ephemeral_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_drains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_drain_waits_without_spinning, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_publishes_many_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_superseded_snapshots_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_superseded_snapshots_all_published_when_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_undecodable_entries_become_dead_letters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_refused_entry_dead_letter_and_replay, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_slow_broker_never_dead_letters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_and_redis_crash_mid_flow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_crash_before_save_replays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_crash_before_trim_republishes, setup,
                                        teardown),
    };
    int failed = 0;
    if (!only || strcmp(only, "paho") == 0)
        failed += _cmocka_run_group_tests("outbox on paho's client", tests,
                                          sizeof tests / sizeof tests[0], NULL, NULL);
    if (!only || strcmp(only, "link") == 0) {
        on_link = true;
        failed += _cmocka_run_group_tests("outbox on its own connection", tests,
                                          sizeof tests / sizeof tests[0], NULL, NULL);
    }
    return failed;
}
