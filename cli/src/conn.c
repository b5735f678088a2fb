/* conn.c - the CLI's connections: configuration from the same environment
 * as the services, Redis (read the room log, the room list, confirmations)
 * and the broker (every change goes through chat-router as a message, so
 * the service stays the only writer of its rooms). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <vigil/clock.h>
#include <vigil/redact.h>
#include <vigil/json.h>
#include <vigil/log.h>
#include "cli.h"

#define PROBE_PREFIX "cli/"

int cli_fail(int code, const char *fmt, ...)
{
    char msg[2048], safe[2048 + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vigil_redact(msg, safe, sizeof safe); /* a URL's password never printed */
    fprintf(stderr, "vigil: %s\n", safe);
    return code;
}

int cli_redis_failed(cli *c, redisReply *r)
{
    int rc = cli_fail(CLI_ERR_RUNTIME, "Redis at %s: %s", c->cfg.redis_url,
                      r && r->type == REDIS_REPLY_ERROR ? r->str : vigil_redis_last_error(c->redis));
    if (r)
        vigil_redis_reply_free(r);
    return rc;
}

int64_t cli_now_ms(void)
{
    return vigil_now_ms();
}

/* The user named in messages and controls: VIGIL_USER, else $USER, reduced
 * to id characters; "cli" when nothing is left. */
static void default_user(char *out, size_t outlen)
{
    const char *u = getenv("VIGIL_USER");
    if (!u || !*u)
        u = getenv("USER");
    size_t n = 0;
    for (; u && *u && n + 1 < outlen && n < CHAT_ID_MAX; u++) {
        char ch = *u;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '.' || ch == '_' || ch == '-')
            out[n++] = ch;
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, outlen, "cli");
}

int cli_init(cli *c)
{
    char err[512];
    memset(c, 0, sizeof *c);
    vigil_common_config_init(&c->cfg, 0);
    if (vigil_common_config_load(&c->cfg, err, sizeof err) != 0)
        return cli_fail(CLI_ERR_USAGE, "configuration error: %s", err);
    if (vigil_env_int64("VIGIL_CLI_TIMEOUT_MS", CLI_DEFAULT_TIMEOUT_MS, 100, 3600000, &c->timeout_ms,
                        err, sizeof err) != 0 ||
        vigil_env_int64("VIGIL_CHAT_LOG_MAX_AGE_MS", CHAT_DEFAULT_LOG_MAX_AGE_MS, 0, INT64_MAX / 2,
                        &c->log_max_age_ms, err, sizeof err) != 0)
        return cli_fail(CLI_ERR_USAGE, "configuration error: %s", err);
    char level[16];
    vigil_log_level lvl = VIGIL_LOG_ERROR;
    if (vigil_env_string("VIGIL_CLI_LOG_LEVEL", "error", level, sizeof level, err, sizeof err) == 0)
        vigil_log_level_parse(level, &lvl);
    vigil_log_init("vigil", c->cfg.instance, lvl);
    default_user(c->user, sizeof c->user);
    return CLI_OK;
}

void cli_close(cli *c)
{
    if (c->mqtt) {
        vigil_mqtt_stop(c->mqtt, NULL, 2000);
        c->mqtt = NULL;
    }
    if (c->redis) {
        vigil_redis_free(c->redis);
        c->redis = NULL;
    }
}

int cli_redis(cli *c)
{
    if (c->redis)
        return CLI_OK;
    vigil_redis_addr addr;
    char err[256];
    if (vigil_redis_url_parse(c->cfg.redis_url, &addr, err, sizeof err) != 0)
        return cli_fail(CLI_ERR_USAGE, "VIGIL_REDIS_URL: %s", err);
    c->redis = vigil_redis_new(&addr, (int)c->timeout_ms);
    if (!c->redis)
        return cli_fail(CLI_ERR_RUNTIME, "out of memory");
    int probe = vigil_redis_probe(c->redis, err, sizeof err);
    if (probe < 0)
        return cli_fail(CLI_ERR_RUNTIME, "%s", err);
    if (probe == 0)
        return cli_fail(CLI_ERR_RUNTIME, "cannot reach Redis at %s: %s", c->cfg.redis_url,
                        vigil_redis_last_error(c->redis));
    return CLI_OK;
}

void cli_new_id(char *out, size_t outlen, const char *tag)
{
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)vigil_mono_ms() ^ (uint32_t)getpid() * 2654435761u;
    snprintf(out, outlen, "%s-%" PRId64 "-%d-%08" PRIx32, tag, vigil_now_ms(), (int)getpid(), rnd);
}

/* The broker connection of one invocation. Its readiness probe: we also
 * subscribe to a private topic and publish to it; subscriptions of one
 * connect go out in one SUBSCRIBE, so when the probe comes back every
 * subscription is active (mqtt.h does not report the SUBACK). */
typedef struct mqtt_ctx {
    vigil_mqtt_on_message user_cb;
    void *user_ctx;
    char probe_topic[128];
    volatile int probe_seen;
} mqtt_ctx;

static mqtt_ctx g_mqtt_ctx;

static void on_message(void *ctx, const char *topic, const void *payload, size_t len, bool retained)
{
    mqtt_ctx *m = ctx;
    if (strcmp(topic, m->probe_topic) == 0) {
        __atomic_store_n(&m->probe_seen, 1, __ATOMIC_SEQ_CST);
        return;
    }
    if (m->user_cb)
        m->user_cb(m->user_ctx, topic, payload, len, retained);
}

int cli_mqtt(cli *c, const char *const *subs, vigil_mqtt_on_message cb, void *ctx)
{
    char err[256];
    mqtt_ctx *m = &g_mqtt_ctx;
    memset(m, 0, sizeof *m);
    m->user_cb = cb;
    m->user_ctx = ctx;
    char rnd[64];
    cli_new_id(rnd, sizeof rnd, "vigil-cli");
    /* "vigil-cli-<ms>-<pid>-<random>": unique per invocation */
    snprintf(c->client_id, sizeof c->client_id, "%s", rnd);
    snprintf(m->probe_topic, sizeof m->probe_topic, PROBE_PREFIX "%s/probe", c->client_id);
    const char *all_subs[16];
    int n = 0;
    for (; subs && subs[n] && n < 14; n++)
        all_subs[n] = subs[n];
    bool wait_subs = n > 0;
    if (wait_subs)
        all_subs[n++] = m->probe_topic;
    all_subs[n] = NULL;
    vigil_mqtt_config mc = vigil_mqtt_config_of(&c->cfg);
    mc.client_id = c->client_id;
    mc.subscriptions = all_subs;
    mc.session_expiry_s = -1; /* clean start, no session kept after we leave */
    mc.on_message = on_message;
    mc.ctx = m;
    c->mqtt = vigil_mqtt_new(&mc, err, sizeof err);
    if (!c->mqtt)
        return cli_fail(CLI_ERR_USAGE, "VIGIL_MQTT_URL: %s", err);
    if (vigil_mqtt_start(c->mqtt) != 0)
        return cli_fail(CLI_ERR_RUNTIME, "cannot start the MQTT client");
    int64_t deadline = vigil_mono_ms() + c->timeout_ms;
    while (!vigil_mqtt_connected(c->mqtt)) {
        char why[320];
        if (vigil_mqtt_refused(c->mqtt, why, sizeof why))
            return cli_fail(CLI_ERR_RUNTIME, "%s", why);
        if (vigil_mono_ms() >= deadline)
            return cli_fail(CLI_ERR_RUNTIME, "cannot reach the MQTT broker at %s (no connection within %lld ms)",
                            c->cfg.mqtt_url, (long long)c->timeout_ms);
        vigil_sleep_ms(10, NULL);
    }
    if (!wait_subs)
        return CLI_OK;
    /* Re-sent until it comes back: the first may overtake the SUBSCRIBE. */
    int64_t next = 0;
    while (!__atomic_load_n(&m->probe_seen, __ATOMIC_SEQ_CST)) {
        int64_t now = vigil_mono_ms();
        if (now >= deadline)
            return cli_fail(CLI_ERR_RUNTIME, "the MQTT broker at %s did not confirm our subscription",
                            c->cfg.mqtt_url);
        if (now >= next) {
            vigil_pubmsg p = { m->probe_topic, "{}", 2, false };
            vigil_mqtt_publish_batch(c->mqtt, &p, 1, 1000);
            next = now + 200;
        }
        vigil_sleep_ms(5, NULL);
    }
    return CLI_OK;
}

int cli_publish(cli *c, const char *topic, const char *payload)
{
    vigil_pubmsg p = { topic, payload, strlen(payload), false };
    if (vigil_mqtt_publish_batch(c->mqtt, &p, 1, (int)c->timeout_ms) != 1)
        return cli_fail(CLI_ERR_RUNTIME, "the MQTT broker at %s did not acknowledge %s",
                        c->cfg.mqtt_url, topic);
    return CLI_OK;
}

void cli_key(const cli *c, const char *suffix, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s:%s", c->cfg.redis_prefix, CHAT_SERVICE, suffix);
}

int cli_check_room(const char *room)
{
    if (!room || !vigil_id_valid(room, strlen(room)))
        return cli_fail(CLI_ERR_USAGE,
                        "bad room name '%s': use 1-64 characters of A-Z a-z 0-9 . _ -",
                        room ? room : "");
    return CLI_OK;
}

int cli_room_exists(cli *c, const char *room, bool *exists)
{
    char key[256];
    cli_key(c, CHAT_KEY_ROOMS, key, sizeof key);
    redisReply *r = vigil_redis_command(c->redis, "SISMEMBER %s %s", key, room);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return cli_redis_failed(c, r);
    *exists = r->integer == 1;
    vigil_redis_reply_free(r);
    return CLI_OK;
}

int cli_require_room(cli *c, const char *room)
{
    bool exists = false;
    int rc = cli_room_exists(c, room, &exists);
    if (rc != CLI_OK)
        return rc;
    if (!exists)
        return cli_fail(CLI_ERR_NOT_FOUND, "room '%s' not found (vigil chat lists the rooms; "
                        "vigil chat new %s creates it)", room, room);
    return CLI_OK;
}

redisReply *cli_room_set(cli *c, int *rc)
{
    *rc = cli_redis(c);
    if (*rc != CLI_OK)
        return NULL;
    char key[256];
    cli_key(c, CHAT_KEY_ROOMS, key, sizeof key);
    return vigil_redis_command(c->redis, "SMEMBERS %s", key);
}

int cli_open_room(cli *c, const char *room)
{
    int rc = cli_check_room(room);
    if (rc == CLI_OK)
        rc = cli_redis(c);
    if (rc == CLI_OK)
        rc = cli_require_room(c, room);
    return rc;
}

int cli_poll_processed(cli *c, const char *room, const char *id, bool *done)
{
    char key[256], suffix[CHAT_ID_MAX + 8];
    snprintf(suffix, sizeof suffix, "ids:%s", room);
    cli_key(c, suffix, key, sizeof key);
    int64_t deadline = vigil_mono_ms() + c->timeout_ms;
    for (;;) {
        redisReply *r = vigil_redis_command(c->redis, "ZSCORE %s %s", key, id);
        if (!r)
            return cli_redis_failed(c, NULL);
        *done = r->type == REDIS_REPLY_STRING;
        vigil_redis_reply_free(r);
        if (*done || vigil_mono_ms() >= deadline)
            return CLI_OK;
        vigil_sleep_ms(10, NULL);
    }
}

int cli_wait_processed(cli *c, const char *room, const char *id, const char *what)
{
    bool done = false;
    int rc = cli_poll_processed(c, room, id, &done);
    if (rc != CLI_OK || done)
        return rc;
    return cli_fail(CLI_ERR_RUNTIME,
                    "%s was published, but chat-router did not confirm it within %lld ms "
                    "(is chat-router running?)",
                    what, (long long)c->timeout_ms);
}

bool cli_paused_all(cli *c)
{
    char key[256];
    cli_key(c, CHAT_KEY_PAUSED_ALL, key, sizeof key);
    bool on = false;
    (void)vigil_read_flag(c->redis, key, &on, NULL, 0); /* unreadable: shown as not paused */
    return on;
}

bool cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    }
    return false;
}
