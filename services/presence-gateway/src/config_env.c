/* config_env.c - the VIGIL_GATEWAY_* variables, and the token file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vigil/config.h>
#include <vigil/log.h>
#include "adapter.h"
#include "chat.h"

#define TOKENS_FILE_MAX (4 * 1024 * 1024)

const vigil_config_var GATEWAY_CONFIG_VARS[] = {
    {"VIGIL_GATEWAY_TOKENS_FILE", "", "file of 'token user' lines; empty = every /api/ call is refused (401)"},
    {"VIGIL_GATEWAY_PING_MS", "30000", "SSE keep-alive 'ping' event interval"},
    {"VIGIL_GATEWAY_ORIGINS", "", "CORS allow list (comma-separated origins; empty = same origin only; * = any)"},
    {"VIGIL_GATEWAY_MAX_BODY", "65536", "largest request body in bytes (413 beyond)"},
    {"VIGIL_GATEWAY_RATE", "50", "requests a second per token (429 beyond; 0 = unlimited)"},
    {"VIGIL_GATEWAY_AUTH_FAIL_RATE", "1",
     "failed authentications (401) a second per client address, bursts of 10 "
     "(429 beyond; 0 = unlimited)"},
    {"VIGIL_GATEWAY_PRESENCE_IDLE_MS", "120000", "a session is active this long after activity, then idle"},
    {"VIGIL_GATEWAY_PRESENCE_AWAY_MS", "300000", "... idle until this long after activity, then away"},
    {"VIGIL_GATEWAY_PRESENCE_EXPIRE_MS", "0", "heartbeats stopped this long = session gone, away (0 = the away time)"},
    {"VIGIL_GATEWAY_LOG_MAXLEN", "10000", "entries kept in the Theater log (what a reconnect can catch up on)"},
    {"VIGIL_GATEWAY_CLIENT_QUEUE", "1024", "events queued per SSE client; past it the client catches up from the log"},
    {"VIGIL_GATEWAY_CLIENT_STALL_MS", "30000", "an SSE client with a full queue that reads nothing this long is dropped"},
    {"VIGIL_GATEWAY_MAX_CLIENTS", "1024", "concurrent HTTP connections (SSE clients included)"},
    {"VIGIL_GATEWAY_COOKIE_SECURE", "0", "1 = the session cookie is Secure (behind HTTPS)"},
    {NULL, NULL, NULL}};

/* Reads the whole token file (bounded) into a table. */
static int load_tokens(gateway *g, char *err, size_t errlen)
{
    if (!g->cfg.tokens_file[0]) {
        vigil_log(VIGIL_LOG_WARN, "VIGIL_GATEWAY_TOKENS_FILE is empty: every /api/ call gets 401");
        return 0;
    }
    FILE *f = fopen(g->cfg.tokens_file, "rb");
    if (!f) {
        snprintf(err, errlen, "VIGIL_GATEWAY_TOKENS_FILE %s: %s", g->cfg.tokens_file, strerror(errno));
        return -1;
    }
    char *buf = malloc(TOKENS_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, TOKENS_FILE_MAX + 1, f) : 0;
    int read_err = ferror(f) ? errno : 0;
    fclose(f);
    if (!buf || n > TOKENS_FILE_MAX || read_err) {
        free(buf);
        snprintf(err, errlen, "VIGIL_GATEWAY_TOKENS_FILE %s: %s", g->cfg.tokens_file,
                 !buf ? "out of memory" : read_err ? strerror(read_err) : "larger than 4 MiB");
        return -1;
    }
    buf[n] = '\0';
    char perr[200];
    int rc = gw_tokens_parse(buf, &g->tokens, perr, sizeof perr);
    free(buf);
    if (rc != 0) {
        snprintf(err, errlen, "VIGIL_GATEWAY_TOKENS_FILE %s: %s", g->cfg.tokens_file, perr);
        return -1;
    }
    g->buckets = calloc((size_t)(g->tokens.n ? g->tokens.n : 1), sizeof *g->buckets);
    if (!g->buckets) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int gateway_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    gateway *g = ctx;
    gw_config *c = &g->cfg;
    gw_presence_cfg_init(&c->presence);
    int64_t expire = 0;
    if (vigil_env_string("VIGIL_GATEWAY_TOKENS_FILE", "", c->tokens_file, sizeof c->tokens_file, err, errlen) ||
        vigil_env_ms("VIGIL_GATEWAY_PING_MS", 30000, 10, &c->ping_ms, err, errlen) ||
        vigil_env_string("VIGIL_GATEWAY_ORIGINS", "", c->origins, sizeof c->origins, err, errlen) ||
        vigil_env_int64("VIGIL_GATEWAY_MAX_BODY", 65536, 64, 64LL * 1024 * 1024, &c->max_body, err, errlen) ||
        vigil_env_double("VIGIL_GATEWAY_RATE", 50, 0, 1e6, &c->rate, err, errlen) ||
        vigil_env_double("VIGIL_GATEWAY_AUTH_FAIL_RATE", 1, 0, 1e6, &c->auth_fail_rate, err,
                         errlen) ||
        vigil_env_ms("VIGIL_GATEWAY_PRESENCE_IDLE_MS", 120000, 1, &c->presence.idle_ms, err, errlen) ||
        vigil_env_ms("VIGIL_GATEWAY_PRESENCE_AWAY_MS", 300000, 1, &c->presence.away_ms, err, errlen) ||
        vigil_env_ms("VIGIL_GATEWAY_PRESENCE_EXPIRE_MS", 0, 0, &expire, err, errlen) ||
        vigil_env_int64("VIGIL_GATEWAY_LOG_MAXLEN", 10000, 10, 100000000, &c->log_maxlen, err, errlen) ||
        vigil_env_int64("VIGIL_GATEWAY_CLIENT_QUEUE", 1024, 4, 1000000, &c->client_queue, err, errlen) ||
        vigil_env_ms("VIGIL_GATEWAY_CLIENT_STALL_MS", 30000, 1, &c->client_stall_ms, err, errlen) ||
        vigil_env_int64("VIGIL_GATEWAY_MAX_CLIENTS", 1024, 4, 100000, &c->max_clients, err, errlen) ||
        vigil_env_bool("VIGIL_GATEWAY_COOKIE_SECURE", false, &c->cookie_secure, err, errlen))
        return -1;
    if (c->presence.away_ms < c->presence.idle_ms) {
        snprintf(err, errlen, "VIGIL_GATEWAY_PRESENCE_AWAY_MS must be >= VIGIL_GATEWAY_PRESENCE_IDLE_MS");
        return -1;
    }
    /* 0: the away time, so that a session whose beats stop goes idle at
     * the idle time and away at the away time, as its activity says (a
     * browser may beat only while its user is active) */
    c->presence.expire_ms = expire ? expire : c->presence.away_ms;
    c->max_text = common->max_payload > 1024 ? (int64_t)common->max_payload - 1024 : 1024;
    c->max_payload = (int64_t)common->max_payload;
    g->api.max_body = (size_t)c->max_body;
    g->api.max_clients = (unsigned)c->max_clients;
    snprintf(g->chat_log_prefix, sizeof g->chat_log_prefix, "%s%s:", common->redis_prefix, CHAT_SERVICE);
    if (gw_fail_table_init(&g->fails, GW_FAIL_ADDRS) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&g->rate_mu, NULL);
    pthread_mutex_init(&g->pool.mu, NULL);
    pthread_mutex_init(&g->hub.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int crc = pthread_cond_init(&g->hub.have_last_cond, &ca);
    pthread_condattr_destroy(&ca);
    if (crc != 0) {
        snprintf(err, errlen, "cannot make a condition variable");
        return -1;
    }
    return load_tokens(g, err, errlen);
}
