/* test_mqtt_link.c - the outbox's own MQTT connection (vigil/mqtt_link.h)
 * against a real mosquitto (tests/support), with a paho client as the
 * independent subscriber; and against a scripted fake broker on a loopback
 * socket for the answers mosquitto will not give on demand (a refused
 * CONNECT). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mosquitto_server.h"
#include "poll_until.h"
#include "tcp_cut.h"
#include "vigil/clock.h"
#include "vigil/log.h"
#include "vigil/mqtt.h"
#include "vigil/mqtt_link.h"

#define WAIT_MS 10000
#define MAX_TAGS 4096

/* What the ack handler heard, per tag. */
typedef struct acks {
    pthread_mutex_t mu;
    int outcome[MAX_TAGS]; /* 0 = none yet, else VIGIL_PUB_* + 2 */
    int calls[MAX_TAGS];
    int reason[MAX_TAGS];
    int order[MAX_TAGS]; /* tags in the order heard */
    int n;
} acks;

static void on_ack(void *ctx, uint64_t tag, int outcome, int reason)
{
    acks *a = ctx;
    pthread_mutex_lock(&a->mu);
    if (tag < MAX_TAGS) {
        a->outcome[tag] = outcome + 2;
        a->calls[tag]++;
        a->reason[tag] = reason;
        if (a->n < MAX_TAGS)
            a->order[a->n] = (int)tag;
    }
    a->n++;
    pthread_mutex_unlock(&a->mu);
}

static int acks_count(acks *a)
{
    pthread_mutex_lock(&a->mu);
    int n = a->n;
    pthread_mutex_unlock(&a->mu);
    return n;
}

typedef struct acks_want {
    acks *a;
    int n;
} acks_want;

static bool acks_reached(void *ctx)
{
    acks_want *w = ctx;
    return acks_count(w->a) >= w->n;
}

static bool wait_acks(acks *a, int n, int timeout_ms)
{
    acks_want w = { a, n };
    return vt_poll_until(acks_reached, &w, timeout_ms);
}

static vigil_mqtt_link *new_link(const char *url, const char *prefix, acks *a)
{
    vigil_mqtt_config cfg = { .url = url, .client_id = "vigil-link-test-out",
                              .topic_prefix = prefix };
    char err[256];
    vigil_mqtt_link *l = vigil_mqtt_link_new(&cfg, err, sizeof err);
    if (!l)
        fprintf(stderr, "vigil_mqtt_link_new: %s\n", err);
    assert_non_null(l);
    if (a) {
        pthread_mutex_init(&a->mu, NULL);
        vigil_mqtt_link_set_ack_handler(l, on_ack, a);
    }
    assert_int_equal(vigil_mqtt_link_start(l), 0);
    return l;
}

static void test_bad_configuration_refused(void **state)
{
    (void)state;
    char err[256];
    vigil_mqtt_config cfg = { .url = "http://h:1", .client_id = "x" };
    assert_null(vigil_mqtt_link_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "bad MQTT URL"));
    cfg.url = "mqtt://";
    assert_null(vigil_mqtt_link_new(&cfg, err, sizeof err));
    cfg.url = "mqtt://[::1";
    assert_null(vigil_mqtt_link_new(&cfg, err, sizeof err));
    cfg.url = "mqtt://h:1";
    cfg.client_id = "";
    assert_null(vigil_mqtt_link_new(&cfg, err, sizeof err));
    cfg.client_id = "x";
    cfg.topic_prefix = "a/+";
    assert_null(vigil_mqtt_link_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "VIGIL_TOPIC_PREFIX"));
    /* Not connected yet: nothing is taken, and nothing waits. */
    cfg.topic_prefix = NULL;
    cfg.url = "mqtt://127.0.0.1"; /* default port */
    vigil_mqtt_link *l = vigil_mqtt_link_new(&cfg, err, sizeof err);
    assert_non_null(l);
    vigil_pubmsg m = { "t/1", "x", 1, false };
    assert_int_equal(vigil_mqtt_link_publish_tagged(l, &m, 1), VIGIL_PUB_SEND_RETRY);
    assert_int_equal(vigil_mqtt_link_publish_batch(l, &m, 1, 100), 0);
    assert_false(vigil_mqtt_link_connected(l));
    assert_int_equal(vigil_mqtt_link_lost_at_ms(l), 0);
    vigil_mqtt_link_stop(l, 0); /* never started */
}

/* 3,000 tagged messages, flushed in a few groups: every tag is acknowledged
 * exactly once and in order, the subscriber sees them in order under the
 * prefix, and the window is the broker's Receive Maximum (mosquitto's
 * default 20). Topics paho would refuse are refused without a callback. */
static void test_publishes_in_order_under_prefix(void **state)
{
    (void)state;
    vt_mosq *b = vt_mosq_start();
    assert_non_null(b);
    vt_msglog *log = vt_msglog_new();
    vigil_mqtt *obs = vt_mqtt_observer(b, "vigil-link-observer", "pfx/t/#", log);
    static acks a;
    memset(&a, 0, sizeof a);
    vigil_mqtt_link *l = new_link(vt_mosq_url(b), "pfx", &a);
    assert_true(vt_link_wait_connected(l, true, WAIT_MS));
    assert_int_equal(vigil_mqtt_link_window(l), 20);

    vigil_pubmsg bad[] = { { "t/+", "x", 1, false }, { "", "x", 1, false },
                           { "t/\xff", "x", 1, false } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(vigil_mqtt_link_publish_tagged(l, &bad[i], 9999), VIGIL_PUB_SEND_REFUSED);
    char *big = calloc(1, 1200000); /* over the broker's max_packet_size 1100000 */
    assert_non_null(big);
    vigil_pubmsg huge = { "t/huge", big, 1200000, false };
    assert_int_equal(vigil_mqtt_link_publish_tagged(l, &huge, 9999), VIGIL_PUB_SEND_REFUSED);
    free(big);

    const int n = 3000;
    for (int i = 0; i < n; i++) {
        char topic[32], payload[32];
        snprintf(topic, sizeof topic, "t/%d", i);
        snprintf(payload, sizeof payload, "m%d", i);
        vigil_pubmsg m = { topic, payload, strlen(payload), i == n - 1 };
        assert_int_equal(vigil_mqtt_link_publish_tagged(l, &m, (uint64_t)i), VIGIL_PUB_SEND_OK);
        if (i % 700 == 699)
            vigil_mqtt_link_flush(l);
    }
    vigil_mqtt_link_flush(l);
    assert_true(wait_acks(&a, n, 6 * WAIT_MS));
    for (int i = 0; i < n; i++) {
        assert_int_equal(a.order[i], i);
        assert_int_equal(a.calls[i], 1);
        assert_int_equal(a.outcome[i], VIGIL_PUB_ACKED + 2);
    }
    vigil_sleep_ms(100, NULL);
    assert_int_equal(acks_count(&a), n); /* none for the refused ones */
    assert_true(vt_msglog_wait_count(log, NULL, n, 6 * WAIT_MS));
    for (int i = 0; i < n; i += 97) {
        char topic[64], payload[32], want[32];
        assert_int_equal(vt_msglog_get(log, NULL, i, topic, sizeof topic, payload, sizeof payload,
                                       NULL), 0);
        snprintf(want, sizeof want, "pfx/t/%d", i);
        assert_string_equal(topic, want);
    }
    assert_true(vt_mosq_wait_retained(b, "pfx/t/2999", "m2999", WAIT_MS));

    /* A batch waits for its acknowledgements, and is never heard by the
     * handler. */
    vigil_pubmsg batch[5];
    for (int i = 0; i < 5; i++)
        batch[i] = (vigil_pubmsg){ "t/batch", "b", 1, false };
    assert_int_equal(vigil_mqtt_link_publish_batch(l, batch, 5, WAIT_MS), 5);
    assert_int_equal(acks_count(&a), n);

    vigil_mqtt_link_stop(l, 1000);
    vigil_mqtt_stop(obs, NULL, 2000);
    vt_msglog_free(log);
    vt_mosq_stop(b);
}

/* The connection is cut (TCP reset) with messages in flight: each tag is
 * heard exactly once (acknowledged, or failed), the loss time is set, the
 * link connects again by itself and publishes again. A broker that stops
 * answering makes a batch give up at its timeout, and its late outcomes
 * reach nobody. */
static void test_cut_fails_in_flight_and_reconnects(void **state)
{
    (void)state;
    vt_mosq *b = vt_mosq_start();
    assert_non_null(b);
    vt_tcp_cut *cut = vt_tcp_cut_start(vt_mosq_port(b));
    assert_non_null(cut);
    char url[64];
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d", vt_tcp_cut_port(cut));
    static acks a;
    memset(&a, 0, sizeof a);
    vigil_mqtt_link *l = new_link(url, NULL, &a);
    assert_true(vt_link_wait_connected(l, true, WAIT_MS));
    const int n = 2000;
    for (int i = 0; i < n; i++) {
        vigil_pubmsg m = { "t/cut", "payload", 7, false };
        assert_int_equal(vigil_mqtt_link_publish_tagged(l, &m, (uint64_t)i), VIGIL_PUB_SEND_OK);
    }
    vigil_mqtt_link_flush(l);
    vigil_sleep_ms(2, NULL);
    assert_true(vt_tcp_cut_reset(cut) >= 1);
    assert_true(wait_acks(&a, n, WAIT_MS));
    vigil_sleep_ms(100, NULL);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(a.calls[i], 1);
        if (a.outcome[i] == VIGIL_PUB_FAILED + 2)
            failed++;
    }
    assert_int_equal(acks_count(&a), n);
    print_message("%d of %d failed at the cut\n", failed, n);
    assert_true(failed > 0); /* 2,000 messages do not all get through in 2 ms */
    assert_true(vigil_mqtt_link_lost_at_ms(l) > 0);
    assert_true(vt_link_wait_connected(l, true, WAIT_MS));
    vigil_pubmsg again = { "t/again", "x", 1, false };
    assert_int_equal(vigil_mqtt_link_publish_tagged(l, &again, n), VIGIL_PUB_SEND_OK);
    vigil_mqtt_link_flush(l);
    assert_true(wait_acks(&a, n + 1, WAIT_MS));
    assert_int_equal(a.outcome[n], VIGIL_PUB_ACKED + 2);

    /* A stopped broker: the batch returns at its timeout with nothing
     * acknowledged; once the broker answers, its outcomes go nowhere. */
    assert_int_equal(kill(vt_mosq_pid(b), SIGSTOP), 0);
    vigil_pubmsg batch[3] = { { "t/b", "1", 1, false }, { "t/b", "2", 1, false },
                              { "t/b", "3", 1, false } };
    int64_t t0 = vigil_mono_ms();
    assert_int_equal(vigil_mqtt_link_publish_batch(l, batch, 3, 300), 0);
    assert_true(vigil_mono_ms() - t0 < 2000);
    assert_int_equal(kill(vt_mosq_pid(b), SIGCONT), 0);
    vigil_sleep_ms(300, NULL);
    assert_int_equal(acks_count(&a), n + 1);

    /* Stopping with messages in flight reports them failed. */
    assert_int_equal(kill(vt_mosq_pid(b), SIGSTOP), 0);
    for (int i = 0; i < 10; i++) {
        vigil_pubmsg m = { "t/stop", "x", 1, false };
        assert_int_equal(vigil_mqtt_link_publish_tagged(l, &m, (uint64_t)(n + 1 + i)),
                         VIGIL_PUB_SEND_OK);
    }
    vigil_mqtt_link_flush(l);
    t0 = vigil_mono_ms();
    vigil_mqtt_link_stop(l, 200);
    assert_true(vigil_mono_ms() - t0 < 2000);
    assert_int_equal(acks_count(&a), n + 11);
    for (int i = 0; i < 10; i++)
        assert_int_equal(a.outcome[n + 1 + i], VIGIL_PUB_FAILED + 2);
    assert_int_equal(kill(vt_mosq_pid(b), SIGCONT), 0);
    vt_tcp_cut_stop(cut);
    vt_mosq_stop(b);
}

/* ---- a scripted broker ------------------------------------------------- */

/* refuse: every CONNECT gets Not authorized. Otherwise it is accepted with
 * a Server Keep Alive of 1 s, and then nothing is ever answered (a broker
 * that hangs): the fake only notes the PINGREQs until the client leaves. */
typedef struct fake {
    int lfd, port;
    bool refuse;
    atomic_int connects, pings;
    atomic_bool stop;
    pthread_t th;
} fake;

static void *fake_main(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        int c = accept(f->lfd, NULL, NULL);
        if (c < 0)
            continue;
        struct timeval tv = { 0, 100000 };
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        unsigned char buf[512];
        if (recv(c, buf, sizeof buf, 0) > 0 && buf[0] == 0x10) {
            atomic_fetch_add(&f->connects, 1);
            /* CONNACK: Not authorized (0x87), with a Reason String; or
             * accepted, Server Keep Alive 1 s */
            static const unsigned char refused[] = { 0x20, 0x09, 0x00, 0x87, 0x06, 0x1F,
                                                     0x00, 0x03, 'a',  'c',  'l' };
            static const unsigned char accepted[] = { 0x20, 0x06, 0x00, 0x00, 0x03,
                                                      0x13, 0x00, 0x01 };
            ssize_t w = f->refuse ? send(c, refused, sizeof refused, MSG_NOSIGNAL)
                                  : send(c, accepted, sizeof accepted, MSG_NOSIGNAL);
            (void)w;
            while (!f->refuse && !atomic_load(&f->stop)) {
                ssize_t n = recv(c, buf, sizeof buf, 0);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                    break; /* the client gave up on us */
                for (ssize_t i = 0; i + 1 < n; i++)
                    if (buf[i] == 0xC0 && buf[i + 1] == 0x00)
                        atomic_fetch_add(&f->pings, 1);
            }
        }
        close(c);
    }
    return NULL;
}

static void fake_start(fake *f, bool refuse)
{
    memset(f, 0, sizeof *f);
    f->refuse = refuse;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
    f->port = ntohs(sa.sin_port);
    assert_int_equal(listen(f->lfd, 8), 0);
    struct timeval tv = { 0, 100000 };
    setsockopt(f->lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv); /* accept wakes for stop */
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(fake *f)
{
    atomic_store(&f->stop, true);
    pthread_join(f->th, NULL);
    close(f->lfd);
}

/* A refused CONNECT: never connected, publishes are not taken, attempts
 * go on with a growing pause (not in a tight loop), and stop is prompt. */
static void test_refused_connect_retried_with_backoff(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, true);
    char url[64];
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d", f.port);
    vigil_mqtt_link *l = new_link(url, NULL, NULL);
    vigil_sleep_ms(1500, NULL);
    int attempts = atomic_load(&f.connects);
    print_message("%d CONNECTs in 1.5 s\n", attempts);
    assert_true(attempts >= 2);  /* retried */
    assert_true(attempts <= 5);  /* 200, 400, 800 ms apart: not a busy loop */
    assert_false(vigil_mqtt_link_connected(l));
    /* what vigil_mqtt_links_settle reads to give such a connection up */
    bool refused = false;
    int failed = vigil_mqtt_link_failures_since_up(l, &refused);
    assert_true(failed >= 1 && failed <= attempts);
    assert_true(refused);
    vigil_pubmsg m = { "t/x", "x", 1, false };
    assert_int_equal(vigil_mqtt_link_publish_tagged(l, &m, 1), VIGIL_PUB_SEND_RETRY);
    /* halted at once, though the link was pausing between attempts (its
     * thread is joined: no more attempts); not connected, still safe to
     * ask */
    int64_t th = vigil_mono_ms();
    vigil_mqtt_link_halt(l);
    assert_true(vigil_mono_ms() - th < 500);
    assert_false(vigil_mqtt_link_connected(l));
    int64_t t0 = vigil_mono_ms();
    vigil_mqtt_link_stop(l, 1000);
    assert_true(vigil_mono_ms() - t0 < 1500);
    fake_stop(&f);
}

static bool reconnected(void *ctx)
{
    return atomic_load(&((fake *)ctx)->connects) >= 2;
}

/* A broker that accepts and then never answers: the link sends PINGREQ
 * after half the Server Keep Alive without traffic, gives up when no
 * answer came within the keep alive, reports the loss and connects again. */
static void test_silent_broker_detected_by_keepalive(void **state)
{
    (void)state;
    fake f;
    fake_start(&f, false);
    char url[64];
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d", f.port);
    static acks a;
    memset(&a, 0, sizeof a);
    vigil_mqtt_link *l = new_link(url, NULL, &a);
    assert_true(vt_link_wait_connected(l, true, WAIT_MS));
    bool refused = true;
    assert_int_equal(vigil_mqtt_link_failures_since_up(l, &refused), 0);
    assert_false(refused);
    vigil_pubmsg m = { "t/x", "x", 1, false };
    assert_int_equal(vigil_mqtt_link_publish_tagged(l, &m, 1), VIGIL_PUB_SEND_OK);
    vigil_mqtt_link_flush(l);
    /* never acknowledged: failed when the keep alive gives up */
    assert_true(wait_acks(&a, 1, WAIT_MS));
    assert_int_equal(a.outcome[1], VIGIL_PUB_FAILED + 2);
    assert_true(vigil_mqtt_link_lost_at_ms(l) > 0);
    assert_true(vt_poll_until(reconnected, &f, WAIT_MS));
    assert_true(atomic_load(&f.pings) >= 1);
    vigil_mqtt_link_stop(l, 200);
    fake_stop(&f);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    vigil_log_level lvl = VIGIL_LOG_ERROR;
    const char *env_lvl = getenv("VIGIL_LOG_LEVEL");
    if (env_lvl)
        vigil_log_level_parse(env_lvl, &lvl);
    vigil_log_init("test_mqtt_link", "t", lvl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_configuration_refused),
        cmocka_unit_test(test_publishes_in_order_under_prefix),
        cmocka_unit_test(test_cut_fails_in_flight_and_reconnects),
        cmocka_unit_test(test_refused_connect_retried_with_backoff),
        cmocka_unit_test(test_silent_broker_detected_by_keepalive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
