/* test_mqtt_links.c - the outbox's publishing connections
 * (vigil/mqtt_links.h): how many, which one carries a topic, and, against
 * a real mosquitto (its default Receive Maximum of 20), that the extra
 * connections open after the first, share the handler, and keep each
 * entity's outputs in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosquitto_server.h"
#include "tcp_cut.h"
#include "poll_until.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/mqtt.h"
#include "vigil/clock.h"
#include "vigil/mqtt_links.h"

#define WAIT_MS 10000
#define N_MSGS 2000

static void test_connections_wanted(void **state)
{
    (void)state;
    assert_int_equal(vigil_mqtt_links_wanted(20, 4), 2);   /* mosquitto as shipped */
    assert_int_equal(vigil_mqtt_links_wanted(20, 16), 2);  /* 40 in all is enough */
    assert_int_equal(vigil_mqtt_links_wanted(20, 1), 1);   /* the configured bound */
    assert_int_equal(vigil_mqtt_links_wanted(10, 3), 3);
    assert_int_equal(vigil_mqtt_links_wanted(13, 16), 4);
    assert_int_equal(vigil_mqtt_links_wanted(100, 4), 1);  /* the project's broker */
    assert_int_equal(vigil_mqtt_links_wanted(65535, 4), 1);
    assert_int_equal(vigil_mqtt_links_wanted(40, 4), 1);
    assert_int_equal(vigil_mqtt_links_wanted(39, 4), 2);
    assert_int_equal(vigil_mqtt_links_wanted(1, 16), 16);
    assert_int_equal(vigil_mqtt_links_wanted(0, 4), 4);    /* nonsense reads as 1 */
}

static void test_topic_picks_by_entity(void **state)
{
    (void)state;
    for (int n = 1; n <= VIGIL_LINKS_MAX; n++) {
        int a = vigil_mqtt_links_pick("persona/alice/state", n);
        assert_true(a >= 0 && a < n);
        /* every topic about one entity: one connection */
        assert_int_equal(vigil_mqtt_links_pick("persona/alice/dormancy", n), a);
        assert_int_equal(vigil_mqtt_links_pick("persona/alice", n), a);
        assert_int_equal(vigil_mqtt_links_pick("persona/alice/a/b/c", n), a);
        assert_int_equal(vigil_mqtt_links_pick("room/x", n),
                         vigil_mqtt_links_pick("room/x/state", n));
    }
    assert_int_equal(vigil_mqtt_links_pick("persona/alice/state", 1), 0);
    assert_int_equal(vigil_mqtt_links_pick("single", 4), vigil_mqtt_links_pick("single", 4));
    assert_int_equal(vigil_mqtt_links_pick(NULL, 4), 0);
    /* 200 rooms spread over five connections, none left out */
    int per[5] = { 0 };
    for (int i = 0; i < 200; i++) {
        char t[64];
        snprintf(t, sizeof t, "room/r%d/state", i);
        per[vigil_mqtt_links_pick(t, 5)]++;
    }
    for (int c = 0; c < 5; c++)
        assert_true(per[c] >= 20);
}

static void test_bad_count_refused(void **state)
{
    (void)state;
    char err[256];
    vigil_mqtt_config cfg = { .url = "mqtt://127.0.0.1:1", .client_id = "x" };
    assert_null(vigil_mqtt_links_new(&cfg, 0, err, sizeof err));
    assert_non_null(strstr(err, "1 to 16"));
    assert_null(vigil_mqtt_links_new(&cfg, VIGIL_LINKS_MAX + 1, err, sizeof err));
    cfg.url = "http://h:1";
    assert_null(vigil_mqtt_links_new(&cfg, 2, err, sizeof err));
    assert_non_null(strstr(err, "bad MQTT URL"));
    /* Not started: one connection, down, nothing grows. */
    cfg.url = "mqtt://127.0.0.1:1";
    vigil_mqtt_links *s = vigil_mqtt_links_new(&cfg, 4, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(vigil_mqtt_links_grow(s), 1);
    assert_false(vigil_mqtt_links_connected(s));
    assert_int_equal(vigil_mqtt_links_lost_at_ms(s), 0);
    vigil_mqtt_links_stop(s, 0);
}

/* What the handler heard, per tag. */
typedef struct heard {
    pthread_mutex_t mu;
    int calls[N_MSGS];
    int n;
} heard;

static void on_ack(void *ctx, uint64_t tag, int outcome, int reason)
{
    (void)reason;
    heard *h = ctx;
    pthread_mutex_lock(&h->mu);
    if (tag < N_MSGS && outcome == VIGIL_PUB_ACKED)
        h->calls[tag]++;
    h->n++;
    pthread_mutex_unlock(&h->mu);
}

static bool all_heard(void *ctx)
{
    heard *h = ctx;
    pthread_mutex_lock(&h->mu);
    bool done = h->n >= N_MSGS;
    pthread_mutex_unlock(&h->mu);
    return done;
}

/* At most three connections to url, acknowledgements counted in h,
 * started. */
static vigil_mqtt_links *links_started(const char *url, const char *client_id, heard *h)
{
    vigil_mqtt_config cfg = { .url = url, .client_id = client_id };
    char err[256];
    vigil_mqtt_links *s = vigil_mqtt_links_new(&cfg, 3, err, sizeof err);
    assert_non_null(s);
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    vigil_mqtt_links_set_ack_handler(s, on_ack, h);
    assert_int_equal(vigil_mqtt_links_start(s), 0);
    return s;
}

/* N_MSGS tagged messages (tag i, payload round * N_MSGS + i) about eight
 * entities (ent/e<i % 8>/...), flushed every 300; per_conn[c] counts those
 * that went on connection c of the links there are now. */
static void publish_all(vigil_mqtt_links *s, int round, int per_conn[2])
{
    int n = vigil_mqtt_links_count(s);
    for (int i = 0; i < N_MSGS; i++) {
        char topic[48], payload[32];
        snprintf(topic, sizeof topic, "ent/e%d/%s", i % 8, i % 3 ? "state" : "event");
        snprintf(payload, sizeof payload, "%d", round * N_MSGS + i);
        vigil_pubmsg m = { topic, payload, strlen(payload), false };
        assert_int_equal(vigil_mqtt_links_publish_tagged(s, &m, (uint64_t)i), VIGIL_PUB_SEND_OK);
        per_conn[vigil_mqtt_links_pick(topic, n)]++;
        if (i % 300 == 299)
            vigil_mqtt_links_flush(s);
    }
    vigil_mqtt_links_flush(s);
}

/* A broker and an observer of everything under ent/. */
typedef struct watched {
    vt_mosq *b;
    vt_msglog *log;
    vigil_mqtt *obs;
} watched;

static void watched_start(watched *w, const char *observer)
{
    w->b = vt_mosq_start();
    assert_non_null(w->b);
    w->log = vt_msglog_new();
    w->obs = vt_mqtt_observer(w->b, observer, "ent/#", w->log);
    assert_non_null(w->obs);
}

static void watched_stop(watched *w)
{
    vigil_mqtt_stop(w->obs, NULL, 2000);
    vt_msglog_free(w->log);
    vt_mosq_stop(w->b);
}

/* The observer received exactly n messages of publish_all's rounds, each
 * entity's in the order published. */
static void assert_in_order(vt_msglog *log, int n)
{
    assert_true(vt_msglog_wait_count(log, NULL, n, 6 * WAIT_MS));
    vigil_sleep_ms(200, NULL);
    assert_int_equal(vt_msglog_count(log, NULL), n);
    int last[8];
    for (int k = 0; k < 8; k++)
        last[k] = -1;
    for (int i = 0; i < n; i++) {
        char topic[64], payload[32];
        assert_int_equal(vt_msglog_get(log, NULL, i, topic, sizeof topic, payload,
                                       sizeof payload, NULL), 0);
        int e = -1, k = atoi(payload);
        assert_int_equal(sscanf(topic, "ent/e%d/", &e), 1);
        assert_int_equal(k % 8, e);
        assert_true(k > last[e]);
        last[e] = k;
    }
}

/* As the outbox asks (pub_connected): settle gives nothing up while the
 * further connection is on its way up. */
static bool grown_and_up(void *ctx)
{
    vigil_mqtt_links *s = ctx;
    (void)vigil_mqtt_links_grow(s);
    (void)vigil_mqtt_links_settle(s, true);
    return vigil_mqtt_links_count(s) > 1 && vigil_mqtt_links_connected(s);
}

/* Against mosquitto's 20 in flight, with at most 3: two connections (40
 * in all), a window of 40, every message acknowledged once through the one handler,
 * and each entity's messages received in the order published. */
static void test_extra_connections_keep_each_entity_in_order(void **state)
{
    (void)state;
    watched w;
    watched_start(&w, "vigil-links-observer");
    static heard h;
    vigil_mqtt_links *s = links_started(vt_mosq_url(w.b), "vigil-links-test-out", &h);
    assert_true(vt_poll_until(grown_and_up, s, WAIT_MS));
    assert_int_equal(vigil_mqtt_links_count(s), 2);
    assert_int_equal(vigil_mqtt_links_grow(s), 2); /* once only */
    assert_int_equal(vigil_mqtt_links_window(s), 40);
    assert_true(vigil_metric_value("vigil_outbox_connections", NULL) == 2);

    /* Eight entities, so both connections carry some. */
    int per_conn[2] = { 0 };
    publish_all(s, 0, per_conn);
    for (int c = 0; c < 2; c++)
        assert_true(per_conn[c] > 0);
    assert_true(vt_poll_until(all_heard, &h, 6 * WAIT_MS));
    for (int i = 0; i < N_MSGS; i++)
        assert_int_equal(h.calls[i], 1);

    assert_in_order(w.log, N_MSGS);
    /* The batch path (error events, the replay) goes on the first. */
    vigil_pubmsg one = { "ent/batch/x", "b", 1, false };
    assert_int_equal(vigil_mqtt_links_publish_batch(s, &one, 1, WAIT_MS), 1);
    assert_true(vt_msglog_wait(w.log, "ent/batch/x", "b", -1, WAIT_MS));

    /* A broker restart takes every connection down; each comes back. */
    assert_int_equal(vt_mosq_kill9(w.b), 0);
    assert_true(vt_links_wait_connected(s, false, WAIT_MS));
    assert_true(vigil_mqtt_links_lost_at_ms(s) > 0);
    assert_int_equal(vigil_mqtt_links_settle(s, true), 2); /* the first is down too */
    assert_int_equal(vt_mosq_restart(w.b), 0);
    assert_true(vt_poll_until(grown_and_up, s, 3 * WAIT_MS));
    assert_int_equal(vigil_mqtt_links_count(s), 2);

    vigil_mqtt_links_set_ack_handler(s, NULL, NULL);
    vigil_mqtt_links_stop(s, 1000);
    watched_stop(&w);
}

/* In front of mosquitto (tcp_cut.h), a broker that will not take some
 * client ids: a CONNECT whose client id ends in "2" is refused (a CONNACK
 * with Quota exceeded, 0x97, or the reason given) or, with drop, closed
 * unanswered; with refuse_n, only that many are turned away; any other
 * connection is relayed. */
typedef struct gate {
    bool drop;
    int reason;   /* the CONNACK's reason code; 0: Quota exceeded */
    int refuse_n; /* turn away this many, then relay; 0: every one */
    atomic_bool open; /* relays every connection */
    atomic_int turned_away;
    atomic_int tried2; /* CONNECTs seen with a client id ending in "2" */
} gate;

static int gate_connect(const unsigned char *b, int n, void *ctx, unsigned char *reply,
                        int *replylen)
{
    gate *g = ctx;
    /* MQTT 5 CONNECT: fixed header (a 1-byte length for these short
     * packets), 10 bytes of variable header, the properties (a length
     * byte and those), then the client id (2-byte length, bytes) */
    int at = 2 + 10;
    if (n <= at || b[0] != 0x10)
        return -1;
    at += 1 + b[at];
    if (n < at + 2)
        return -1;
    int idlen = b[at] << 8 | b[at + 1];
    if (idlen < 1 || n < at + 2 + idlen)
        return -1;
    if (b[at + 2 + idlen - 1] != '2')
        return 0;
    atomic_fetch_add(&g->tried2, 1);
    if (atomic_load(&g->open) || (g->refuse_n && atomic_load(&g->turned_away) >= g->refuse_n))
        return 0;
    atomic_fetch_add(&g->turned_away, 1);
    unsigned char connack[] = { 0x20, 0x03, 0x00, 0x97, 0x00 };
    if (g->reason)
        connack[3] = (unsigned char)g->reason;
    memcpy(reply, connack, sizeof connack);
    *replylen = (int)sizeof connack;
    return g->drop ? -1 : 1;
}

/* g in front of the broker on port: the relay, its URL in url. */
static vt_tcp_cut *gated(int port, gate *g, char *url, size_t urllen)
{
    vt_tcp_cut *cut = vt_tcp_cut_start(port);
    assert_non_null(cut);
    vt_tcp_cut_set_gate(cut, gate_connect, g);
    snprintf(url, urllen, "mqtt://127.0.0.1:%d", vt_tcp_cut_port(cut));
    return cut;
}

/* mosquitto, a relay with gate g in front of it, and a started link set
 * on the relay whose first connection is up (tear down with gated_stop) */
typedef struct gated_links {
    vt_mosq *b;
    vt_tcp_cut *cut;
    vigil_mqtt_links *s;
} gated_links;

static gated_links gated_start(gate *g, const char *client_id, heard *h)
{
    gated_links t;
    t.b = vt_mosq_start();
    assert_non_null(t.b);
    char url[64];
    t.cut = gated(vt_mosq_port(t.b), g, url, sizeof url);
    t.s = links_started(url, client_id, h);
    assert_true(vt_links_wait_connected(t.s, true, WAIT_MS));
    return t;
}

static void gated_stop(gated_links *t)
{
    vigil_mqtt_links_set_ack_handler(t->s, NULL, NULL);
    vigil_mqtt_links_stop(t->s, 1000);
    vt_tcp_cut_stop(t->cut);
    vt_mosq_stop(t->b);
}

static bool settled_to_one(void *ctx)
{
    vigil_mqtt_links *s = ctx;
    (void)vigil_mqtt_links_grow(s);
    (void)vigil_mqtt_links_settle(s, true);
    return vigil_mqtt_links_count(s) == 1 && vigil_mqtt_links_connected(s);
}

/* A broker that will not take the second connection its window of 20
 * calls for (a client id it refuses, a quota, a connection limit): the
 * outbox would wait for it forever. Refused once, or dropped three times,
 * it is given up while the first is up, and publishing goes on with one;
 * every message is acknowledged once. */
static void a_connection_given_up(bool drop)
{
    static gate g;
    memset(&g, 0, sizeof g);
    g.drop = drop;
    static heard h;
    gated_links t = gated_start(&g, "vigil-links-test-gate", &h);
    vigil_mqtt_links *s = t.s;
    assert_int_equal(vigil_mqtt_links_grow(s), 2);
    assert_false(vigil_mqtt_links_connected(s));
    int64_t t0 = vigil_mono_ms();
    assert_true(vt_poll_until(settled_to_one, s, 3 * WAIT_MS));
    int away = atomic_load(&g.turned_away);
    print_message("given up after %d attempts, %lld ms\n", away,
                  (long long)(vigil_mono_ms() - t0));
    assert_true(drop ? away >= 3 : away >= 1);
    assert_true(vigil_metric_value("vigil_outbox_connections", NULL) == 1);
    assert_int_equal(vigil_mqtt_links_window(s), 20);
    int per_conn[2] = { 0 };
    publish_all(s, 0, per_conn);
    assert_int_equal(per_conn[0], N_MSGS);
    assert_true(vt_poll_until(all_heard, &h, 6 * WAIT_MS));
    /* halted: no attempt since, all the while the round went out */
    assert_int_equal(atomic_load(&g.turned_away), away);
    for (int i = 0; i < N_MSGS; i++)
        assert_int_equal(h.calls[i], 1);
    assert_int_equal(vigil_mqtt_links_settle(s, true), 1);
    gated_stop(&t);
}

static void test_a_refused_connection_is_given_up(void **state)
{
    (void)state;
    a_connection_given_up(false);
}

static void test_a_connection_dropped_three_times_is_given_up(void **state)
{
    (void)state;
    a_connection_given_up(true);
}

static bool both_up_settling(void *ctx)
{
    vigil_mqtt_links *s = ctx;
    assert_int_equal(vigil_mqtt_links_settle(s, true), 2);
    return vigil_mqtt_links_connected(s);
}

/* "Server busy" and "Server unavailable" say "not now", not "not you": a
 * second connection the broker turns away twice with one of them is not
 * given up at the first (a refusal would be), and is up once the broker
 * takes it. */
static void a_passing_refusal_is_waited_out(int reason)
{
    static gate g;
    memset(&g, 0, sizeof g);
    g.reason = reason;
    g.refuse_n = 2;
    static heard h;
    gated_links t = gated_start(&g, "vigil-links-test-busy", &h);
    vigil_mqtt_links *s = t.s;
    assert_int_equal(vigil_mqtt_links_grow(s), 2);
    assert_true(vt_poll_until(both_up_settling, s, 3 * WAIT_MS));
    assert_int_equal(atomic_load(&g.turned_away), 2);
    assert_true(vigil_metric_value("vigil_outbox_connections", NULL) == 2);
    gated_stop(&t);
}

static void test_a_busy_broker_is_waited_out(void **state)
{
    (void)state;
    a_passing_refusal_is_waited_out(0x89);
}

static void test_an_unavailable_broker_is_waited_out(void **state)
{
    (void)state;
    a_passing_refusal_is_waited_out(0x88);
}

/* A broker down long enough for five failed connects of the second
 * connection after outputs flowed, asked as the outbox asks while it
 * waits: failures while the first connection is down too say nothing
 * about the broker that comes back, and both connections stay. */
static void test_a_broker_restart_gives_nothing_up(void **state)
{
    (void)state;
    vt_mosq *b = vt_mosq_start();
    assert_non_null(b);
    static gate g;
    memset(&g, 0, sizeof g);
    atomic_store(&g.open, true);
    char url[64];
    vt_tcp_cut *cut = gated(vt_mosq_port(b), &g, url, sizeof url);
    static heard h;
    vigil_mqtt_links *s = links_started(url, "vigil-links-test-restart", &h);
    assert_true(vt_poll_until(grown_and_up, s, WAIT_MS));
    int per_conn[2] = { 0 };
    publish_all(s, 0, per_conn);
    assert_true(vt_poll_until(all_heard, &h, 6 * WAIT_MS));

    assert_int_equal(vt_mosq_kill9(b), 0);
    assert_true(vt_links_wait_connected(s, false, WAIT_MS));
    int tried = atomic_load(&g.tried2);
    int64_t t0 = vigil_mono_ms();
    while (atomic_load(&g.tried2) - tried < 5 && vigil_mono_ms() - t0 < 3 * WAIT_MS) {
        assert_int_equal(vigil_mqtt_links_settle(s, true), 2);
        vigil_sleep_ms(20, NULL);
    }
    assert_true(atomic_load(&g.tried2) - tried >= 5);
    vigil_sleep_ms(100, NULL); /* the fifth is turned away at once: it is counted */
    assert_int_equal(vigil_mqtt_links_settle(s, true), 2);
    assert_int_equal(vt_mosq_restart(b), 0);
    assert_true(vt_poll_until(grown_and_up, s, 3 * WAIT_MS));
    assert_int_equal(vigil_mqtt_links_count(s), 2);
    assert_true(vigil_metric_value("vigil_outbox_connections", NULL) == 2);

    vigil_mqtt_links_set_ack_handler(s, NULL, NULL);
    vigil_mqtt_links_stop(s, 1000);
    vt_tcp_cut_stop(cut);
    vt_mosq_stop(b);
}

static gate *later_gate;

static bool first_up_second_refused(void *ctx)
{
    return vigil_mqtt_links_first_connected(ctx) && atomic_load(&later_gate->turned_away) >= 1;
}

/* Both connections up and publishing; then the broker comes back refusing
 * the second (a new quota or ACL, say): while anything is in flight the
 * count stays; with nothing in flight the second is given up, and the
 * next round's messages all leave on the first, each entity's after its
 * earlier ones. */
static void test_a_connection_refused_later_is_given_up_when_idle(void **state)
{
    (void)state;
    watched w;
    watched_start(&w, "vigil-links-observer2");
    static gate g;
    memset(&g, 0, sizeof g);
    atomic_store(&g.open, true);
    later_gate = &g;
    char url[64];
    vt_tcp_cut *cut = gated(vt_mosq_port(w.b), &g, url, sizeof url);
    static heard h;
    vigil_mqtt_links *s = links_started(url, "vigil-links-test-later", &h);
    assert_true(vt_poll_until(grown_and_up, s, WAIT_MS));
    int per_conn[2] = { 0 };
    publish_all(s, 0, per_conn);
    assert_true(per_conn[0] > 0 && per_conn[1] > 0);
    assert_true(vt_poll_until(all_heard, &h, 6 * WAIT_MS));

    atomic_store(&g.open, false);
    assert_true(vt_tcp_cut_reset(cut) >= 2);
    assert_true(vt_links_wait_connected(s, false, WAIT_MS));
    assert_true(vt_poll_until(first_up_second_refused, s, WAIT_MS));
    assert_int_equal(vigil_mqtt_links_settle(s, false), 2); /* not idle: stays */
    assert_true(vt_poll_until(settled_to_one, s, 3 * WAIT_MS));
    assert_true(atomic_load(&g.turned_away) >= 1);
    assert_true(vigil_metric_value("vigil_outbox_connections", NULL) == 1);

    memset(h.calls, 0, sizeof h.calls);
    pthread_mutex_lock(&h.mu);
    h.n = 0;
    pthread_mutex_unlock(&h.mu);
    int per_conn2[2] = { 0 };
    publish_all(s, 1, per_conn2);
    assert_int_equal(per_conn2[0], N_MSGS);
    assert_true(vt_poll_until(all_heard, &h, 6 * WAIT_MS));
    for (int i = 0; i < N_MSGS; i++)
        assert_int_equal(h.calls[i], 1);
    assert_in_order(w.log, 2 * N_MSGS);

    vigil_mqtt_links_set_ack_handler(s, NULL, NULL);
    vigil_mqtt_links_stop(s, 1000);
    vt_tcp_cut_stop(cut);
    watched_stop(&w);
}

/* With at most one allowed: one connection, whatever the window. */
static void test_one_connection_when_enough(void **state)
{
    (void)state;
    vt_mosq *b = vt_mosq_start();
    assert_non_null(b);
    vigil_mqtt_config cfg = { .url = vt_mosq_url(b), .client_id = "vigil-links-test-one" };
    char err[256];
    vigil_mqtt_links *s = vigil_mqtt_links_new(&cfg, 1, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(vigil_mqtt_links_start(s), 0);
    assert_true(vt_links_wait_connected(s, true, WAIT_MS));
    assert_int_equal(vigil_mqtt_links_grow(s), 1);
    assert_int_equal(vigil_mqtt_links_window(s), 20);
    vigil_mqtt_links_stop(s, 1000);
    vt_mosq_stop(b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    vigil_log_level lvl = VIGIL_LOG_ERROR;
    const char *env_lvl = getenv("VIGIL_LOG_LEVEL");
    if (env_lvl)
        vigil_log_level_parse(env_lvl, &lvl);
    vigil_log_init("test_mqtt_links", "t", lvl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connections_wanted),
        cmocka_unit_test(test_topic_picks_by_entity),
        cmocka_unit_test(test_bad_count_refused),
        cmocka_unit_test(test_extra_connections_keep_each_entity_in_order),
        cmocka_unit_test(test_a_refused_connection_is_given_up),
        cmocka_unit_test(test_a_connection_dropped_three_times_is_given_up),
        cmocka_unit_test(test_a_busy_broker_is_waited_out),
        cmocka_unit_test(test_an_unavailable_broker_is_waited_out),
        cmocka_unit_test(test_a_connection_refused_later_is_given_up_when_idle),
        cmocka_unit_test(test_a_broker_restart_gives_nothing_up),
        cmocka_unit_test(test_one_connection_when_enough),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
