/* metrics_backlog.c - backlog gauges read at scrape time (see
 * metrics_backlog.h). Its own Redis connection, so a scrape never waits
 * for the service's connection and never touches its pipeline; three
 * read-only commands per scrape. */
#include "vigil/metrics_backlog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/clock.h"
#include "vigil/config.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/redis.h"
#if __has_include("vigil/redis_raw.h")
#include "vigil/redis_raw.h"
#endif

#define BACKLOG_TIMEOUT_MS 1000
#define KEY_MAX 512

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_init, g_disabled;
static vigil_redis *g_redis;
static char g_outbox[KEY_MAX], g_timers[KEY_MAX];

#define M_PENDING "vigil_outbox_pending"
#define M_PENDING_HELP "Output messages committed and not yet published (this replica's outbox)"
#define M_AGE "vigil_outbox_oldest_age_seconds"
#define M_AGE_HELP "Age of the oldest unpublished output message (from its ts)"
#define M_TIMERS "vigil_timers_pending"
#define M_TIMERS_HELP "Timers set and not yet handled (this replica's timer set)"
#define M_OVERDUE "vigil_timers_overdue_seconds"
#define M_OVERDUE_HELP "How far past due the most overdue unclaimed timer is (0 when none)"
#define M_ERRORS "vigil_backlog_read_errors_total"
#define M_ERRORS_HELP "Scrapes whose backlog figures could not be read from Redis"

/* Reads the configuration once; on a bad one the gauges stay at zero. */
static void init_locked(void)
{
    g_init = true;
    vigil_gauge_set(M_PENDING, M_PENDING_HELP, NULL, 0);
    vigil_gauge_set(M_AGE, M_AGE_HELP, NULL, 0);
    vigil_gauge_set(M_TIMERS, M_TIMERS_HELP, NULL, 0);
    vigil_gauge_set(M_OVERDUE, M_OVERDUE_HELP, NULL, 0);
    vigil_counter_add(M_ERRORS, M_ERRORS_HELP, NULL, 0);
    vigil_common_config cfg;
    char err[256];
    vigil_redis_addr addr;
    vigil_common_config_init(&cfg, 0);
    if (vigil_common_config_load(&cfg, err, sizeof err) != 0 ||
        vigil_redis_url_parse(cfg.redis_url, &addr, err, sizeof err) != 0) {
        g_disabled = true;
        return;
    }
    /* the key layout of store.h: P S ":outbox:" i and P S ":timers:" i */
    snprintf(g_outbox, sizeof g_outbox, "%s%s:outbox:%d", cfg.redis_prefix, vigil_log_service(),
             cfg.shard_index);
    snprintf(g_timers, sizeof g_timers, "%s%s:timers:%d", cfg.redis_prefix, vigil_log_service(),
             cfg.shard_index);
    g_redis = vigil_redis_new(&addr, BACKLOG_TIMEOUT_MS);
    if (!g_redis)
        g_disabled = true;
}

/* "ts" of the payload of an outbox entry "<0|1><topic>\n<payload>", or 0. */
static long long entry_ts(const char *e, size_t len)
{
    const char *nl = memchr(e, '\n', len);
    if (!nl)
        return 0;
    const char *p = strstr(nl, "\"ts\":");
    return p ? strtoll(p + 5, NULL, 10) : 0;
}

/* An integer reply of "<cmd> <key>" (LLEN, ZCARD). */
static bool read_count(const char *cmd, const char *key, long long *out)
{
    redisReply *n = vigil_redis_command(g_redis, "%s %s", cmd, key);
    bool ok = n && n->type == REDIS_REPLY_INTEGER;
    if (ok)
        *out = n->integer;
    if (n)
        vigil_redis_reply_free(n);
    return ok;
}

static bool read_outbox(void)
{
    long long pending;
    if (!read_count("LLEN", g_outbox, &pending))
        return false;
    double age = 0;
    if (pending > 0) {
        redisReply *e = vigil_redis_command(g_redis, "LINDEX %s 0", g_outbox);
        if (!e)
            return false;
        long long ts = e->type == REDIS_REPLY_STRING ? entry_ts(e->str, e->len) : 0;
        vigil_redis_reply_free(e);
        long long now = vigil_now_ms();
        if (ts > 0 && ts < now)
            age = (double)(now - ts) / 1000.0;
    }
    vigil_gauge_set(M_PENDING, M_PENDING_HELP, NULL, (double)pending);
    vigil_gauge_set(M_AGE, M_AGE_HELP, NULL, age);
    return true;
}

static bool read_timers(void)
{
    long long pending;
    if (!read_count("ZCARD", g_timers, &pending))
        return false;
    double overdue = 0;
    redisReply *r = vigil_redis_command(g_redis, "ZRANGE %s 0 0 WITHSCORES", g_timers);
    if (!r)
        return false;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
        double due = strtod(r->element[1]->str, NULL);
        double now = (double)vigil_now_ms();
        if (due < now)
            overdue = (now - due) / 1000.0;
    }
    vigil_redis_reply_free(r);
    vigil_gauge_set(M_TIMERS, M_TIMERS_HELP, NULL, (double)pending);
    vigil_gauge_set(M_OVERDUE, M_OVERDUE_HELP, NULL, overdue);
    return true;
}

void vigil_metrics_backlog_collect(void)
{
    pthread_mutex_lock(&g_mu);
    if (!g_init)
        init_locked();
    if (!g_disabled) {
        bool ok = vigil_redis_ensure(g_redis) && read_outbox() && read_timers();
        if (!ok)
            vigil_counter_add(M_ERRORS, M_ERRORS_HELP, NULL, 1);
    }
    pthread_mutex_unlock(&g_mu);
}
