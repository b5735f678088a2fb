/* mqtt_links.c - the outbox's publishing connections (see
 * vigil/mqtt_links.h). */
#include "vigil/mqtt_links.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/json.h"

#define M_CONNS "vigil_outbox_connections"
#define M_CONNS_HELP "Broker connections the outbox publishes on"
/* Failed connects in a row, while the first connection is up, after which
 * a further connection is given up (one refusal is enough): before the
 * first publish, and after it (with nothing in flight) */
#define LINKS_GIVE_UP_FAILURES 3
#define LINKS_GIVE_UP_FAILURES_LATER 5

struct vigil_mqtt_links {
    vigil_mqtt_link *links[VIGIL_LINKS_MAX];
    atomic_int n; /* links[0..n) are set, each before n counts it */
    int made;     /* links[0..made) exist (those past n halted) until _stop */
    int max_links;
    bool grown;
    bool published; /* a tagged publish since the growth */
    /* each further connection's failed connects when the first was last
     * seen down: those failures say nothing about this broker (settle) */
    int failed_before[VIGIL_LINKS_MAX];
    uint32_t queued; /* bit i: links[i] has messages since the last flush (outbox thread) */

    /* what vigil_mqtt_link_new needs again for each later connection */
    vigil_mqtt_config cfg;
    char *url, *user, *password, *client_id, *prefix, *ca_file, *cert_file, *key_file;

    pthread_mutex_t mu; /* the handler, for connections opened later */
    vigil_mqtt_ack_fn ack_fn;
    void *ack_ctx;
};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void links_free(vigil_mqtt_links *s)
{
    free(s->url);
    free(s->user);
    free(s->password);
    free(s->client_id);
    free(s->prefix);
    free(s->ca_file);
    free(s->cert_file);
    free(s->key_file);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

vigil_mqtt_links *vigil_mqtt_links_new(const vigil_mqtt_config *cfg, int max_links, char *err,
                                       size_t errlen)
{
    if (!cfg || max_links < 1 || max_links > VIGIL_LINKS_MAX) {
        snprintf(err, errlen, "the outbox needs 1 to %d broker connections", VIGIL_LINKS_MAX);
        return NULL;
    }
    vigil_mqtt_links *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->max_links = max_links;
    /* Only what a publishing link reads (mqtt_link.h), copied: the caller's
     * strings need not outlive the start. */
    s->url = dup_or_null(cfg->url);
    s->user = dup_or_null(cfg->user);
    s->password = dup_or_null(cfg->password);
    s->client_id = dup_or_null(cfg->client_id);
    s->prefix = dup_or_null(cfg->topic_prefix);
    s->ca_file = dup_or_null(cfg->tls_ca_file);
    s->cert_file = dup_or_null(cfg->tls_cert_file);
    s->key_file = dup_or_null(cfg->tls_key_file);
    s->cfg = (vigil_mqtt_config){ 0 };
    s->cfg.url = s->url;
    s->cfg.user = s->user;
    s->cfg.password = s->password;
    s->cfg.client_id = s->client_id;
    s->cfg.topic_prefix = s->prefix;
    s->cfg.tls_ca_file = s->ca_file;
    s->cfg.tls_cert_file = s->cert_file;
    s->cfg.tls_key_file = s->key_file;
    s->links[0] = vigil_mqtt_link_new(&s->cfg, err, errlen);
    if (!s->links[0]) {
        links_free(s);
        return NULL;
    }
    atomic_init(&s->n, 1);
    s->made = 1;
    return s;
}

/* The gauge exists from the start (one connection until the broker's
 * window says how many), not only once the first connection is up. */
int vigil_mqtt_links_start(vigil_mqtt_links *s)
{
    if (!s)
        return -1;
    vigil_gauge_set(M_CONNS, M_CONNS_HELP, NULL, atomic_load(&s->n));
    return vigil_mqtt_link_start(s->links[0]);
}

int vigil_mqtt_links_wanted(int w, int max_links)
{
    if (w < 1)
        w = 1;
    int want = (VIGIL_LINKS_WANT_WINDOW + w - 1) / w;
    if (want > max_links)
        want = max_links;
    return want < 1 ? 1 : want;
}

/* The first two levels name the entity a topic is about (room/<room>,
 * persona/<persona>, council/<session>, sys/<service>): what a consumer
 * reads in order. FNV-1a so a topic's connection does not depend on the
 * build. */
int vigil_mqtt_links_pick(const char *topic, int n)
{
    if (n <= 1 || !topic)
        return 0;
    const char *slash = strchr(topic, '/');
    size_t len = strlen(topic);
    if (slash) {
        const char *second = strchr(slash + 1, '/');
        if (second)
            len = (size_t)(second - topic);
    }
    return (int)(vigil_hash64(topic, len) % (uint64_t)n);
}

int vigil_mqtt_links_grow(vigil_mqtt_links *s)
{
    if (!s)
        return 0;
    int n = atomic_load(&s->n);
    if (s->grown || !vigil_mqtt_link_connected(s->links[0]))
        return n;
    s->grown = true;
    int w0 = vigil_mqtt_link_window(s->links[0]);
    int want = vigil_mqtt_links_wanted(w0, s->max_links);
    pthread_mutex_lock(&s->mu);
    vigil_mqtt_ack_fn fn = s->ack_fn;
    void *ctx = s->ack_ctx;
    pthread_mutex_unlock(&s->mu);
    for (int i = n; i < want; i++) {
        char id[512], err[256];
        snprintf(id, sizeof id, "%s%d", s->client_id, i + 1);
        vigil_mqtt_config c = s->cfg;
        c.client_id = id;
        vigil_mqtt_link *l = vigil_mqtt_link_new(&c, err, sizeof err);
        if (!l) {
            vigil_log_kv(VIGIL_LOG_WARN, "outbox: cannot open another broker connection", "error",
                         err, NULL);
            break;
        }
        vigil_mqtt_link_set_ack_handler(l, fn, ctx);
        vigil_mqtt_link_set_shared(l, true);
        if (vigil_mqtt_link_start(l) != 0) {
            vigil_mqtt_link_stop(l, 0);
            break;
        }
        s->links[i] = l;
        s->made = i + 1;
        atomic_store(&s->n, i + 1);
    }
    n = atomic_load(&s->n);
    if (n > 1)
        vigil_mqtt_link_set_shared(s->links[0], true);
    vigil_gauge_set(M_CONNS, M_CONNS_HELP, NULL, n);
    if (n > 1)
        vigil_log(VIGIL_LOG_INFO,
                  "outbox: the broker allows %d messages in flight per connection; publishing on "
                  "%d connections", w0, n);
    return n;
}

/* A further connection the broker does not take (its connection limit, a
 * client id it does not accept, a quota) would hold the outbox forever,
 * since publishing waits for every connection; the first connection's
 * being up says the broker itself is there (failures while it was down,
 * a broker restarting, do not count). So the connections from the first
 * such one on are given up and the outbox goes on with fewer.
 * Before anything was published that keeps every entity on the
 * connection it will use; after it, only with nothing in flight (idle):
 * an entity's next output then leaves after all of its earlier ones were
 * acknowledged or failed (and a failed one is published again, in order,
 * on the entity's new connection), so each entity keeps its order. */
int vigil_mqtt_links_settle(vigil_mqtt_links *s, bool idle)
{
    if (!s)
        return 0;
    int n = atomic_load(&s->n);
    if (!s->grown || n < 2)
        return n;
    if (!vigil_mqtt_link_connected(s->links[0])) {
        /* the broker is away: the others' failures now are no sign */
        for (int i = 1; i < n; i++)
            s->failed_before[i] = vigil_mqtt_link_failures_since_up(s->links[i], NULL);
        return n;
    }
    if (s->published && !idle)
        return n;
    int keep = n;
    bool refused = false;
    int give_up = s->published ? LINKS_GIVE_UP_FAILURES_LATER : LINKS_GIVE_UP_FAILURES;
    for (int i = 1; i < n && keep == n; i++) {
        if (vigil_mqtt_link_connected(s->links[i]))
            continue;
        int all = vigil_mqtt_link_failures_since_up(s->links[i], &refused);
        if (all < s->failed_before[i]) /* it was up since: counted afresh */
            s->failed_before[i] = 0;
        int failed = all - s->failed_before[i];
        if ((refused && all > 0) || failed >= give_up)
            keep = i;
    }
    if (keep == n)
        return n;
    atomic_store(&s->n, keep);
    for (int i = keep; i < n; i++)
        vigil_mqtt_link_halt(s->links[i]);
    if (keep == 1)
        vigil_mqtt_link_set_shared(s->links[0], false);
    vigil_gauge_set(M_CONNS, M_CONNS_HELP, NULL, keep);
    vigil_log(VIGIL_LOG_WARN,
              "outbox: the broker did not take connection %d (%s; its connection limit or the "
              "client ids it accepts?); publishing on %d",
              keep + 1, refused ? "refused" : "failed to connect", keep);
    return keep;
}

bool vigil_mqtt_links_connected(const vigil_mqtt_links *s)
{
    if (!s)
        return false;
    int n = atomic_load(&((vigil_mqtt_links *)s)->n);
    for (int i = 0; i < n; i++)
        if (!vigil_mqtt_link_connected(s->links[i]))
            return false;
    return true;
}

bool vigil_mqtt_links_first_connected(const vigil_mqtt_links *s)
{
    return s && vigil_mqtt_link_connected(s->links[0]);
}

int64_t vigil_mqtt_links_lost_at_ms(const vigil_mqtt_links *s)
{
    if (!s)
        return 0;
    int n = atomic_load(&((vigil_mqtt_links *)s)->n);
    int64_t latest = 0;
    for (int i = 0; i < n; i++) {
        int64_t t = vigil_mqtt_link_lost_at_ms(s->links[i]);
        if (t > latest)
            latest = t;
    }
    return latest;
}

int vigil_mqtt_links_window(const vigil_mqtt_links *s)
{
    if (!s)
        return 1;
    int n = atomic_load(&((vigil_mqtt_links *)s)->n), sum = 0;
    for (int i = 0; i < n; i++)
        sum += vigil_mqtt_link_window(s->links[i]);
    return sum;
}

int vigil_mqtt_links_count(const vigil_mqtt_links *s)
{
    return s ? atomic_load(&((vigil_mqtt_links *)s)->n) : 0;
}

void vigil_mqtt_links_set_ack_handler(vigil_mqtt_links *s, vigil_mqtt_ack_fn fn, void *ctx)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->ack_fn = fn;
    s->ack_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
    int n = atomic_load(&s->n);
    for (int i = 0; i < n; i++)
        vigil_mqtt_link_set_ack_handler(s->links[i], fn, ctx);
}

int vigil_mqtt_links_publish_tagged(vigil_mqtt_links *s, const vigil_pubmsg *msg, uint64_t tag)
{
    int i = vigil_mqtt_links_pick(msg->topic, atomic_load(&s->n));
    s->published = true;
    int rc = vigil_mqtt_link_publish_tagged(s->links[i], msg, tag);
    if (rc == VIGIL_PUB_SEND_OK)
        s->queued |= 1u << i;
    return rc;
}

void vigil_mqtt_links_flush(vigil_mqtt_links *s)
{
    uint32_t q = s->queued;
    s->queued = 0;
    for (int i = 0; q; i++, q >>= 1)
        if (q & 1u)
            vigil_mqtt_link_flush(s->links[i]);
}

int vigil_mqtt_links_publish_batch(vigil_mqtt_links *s, const vigil_pubmsg *msgs, int n,
                                   int timeout_ms)
{
    return vigil_mqtt_link_publish_batch(s->links[0], msgs, n, timeout_ms);
}

void vigil_mqtt_links_stop(vigil_mqtt_links *s, int timeout_ms)
{
    if (!s)
        return;
    for (int i = 0; i < s->made; i++)
        vigil_mqtt_link_stop(s->links[i], timeout_ms);
    links_free(s);
}
