/* config.c - configuration from environment variables and the shared
 * --help / --version command line.
 *
 * Rules common to every getter: an unset variable gives the default; for
 * numbers and booleans an empty value does too, while for strings an empty
 * value is kept (so a variable whose default is not empty can be cleared).
 * A value that does not parse, is out of range, or is too long for its
 * buffer is an error naming the variable and the value, never a silent
 * truncation or fallback. */
#include "vigil/config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/mqtt_links.h"
#include "vigil/redact.h"
#include "vigil/redis.h"
#include "vigil/topic_prefix.h"

#include "mqtt_secure.h"

#define QUOTE_BYTES 80 /* how much of a bad value a message quotes */

const vigil_config_var VIGIL_COMMON_VARS[] = {
    {"VIGIL_MQTT_URL", "mqtt://127.0.0.1:1883",
     "MQTT broker URL (mqtt://, tcp://, mqtts:// or ssl://host:port)"},
    {"VIGIL_MQTT_USER", "", "MQTT user name (empty: anonymous)"},
    {"VIGIL_MQTT_PASSWORD", "", "MQTT password"},
    {"VIGIL_REDIS_URL", "redis://127.0.0.1:6379/0",
     "Redis URL (redis://[[user]:password@]host:port/db; user and password percent-encoded; "
     "a user sends AUTH user password)"},
    {"VIGIL_REDIS_PREFIX", "vigil:", "prefix of every Redis key (1-63 bytes)"},
    {"VIGIL_HTTP_ADDR", "127.0.0.1:<service port>", "address of /healthz, /readyz and /metrics"},
    {"VIGIL_LOG_LEVEL", "info", "debug, info, warn or error"},
    {"VIGIL_INSTANCE", "<hostname>", "instance name (an id) in status topics and logs"},
    {"VIGIL_MAX_PAYLOAD", "65536", "largest accepted payload in bytes (1-16777216)"},
    {"VIGIL_SHARD", "0/1",
     "this replica's shard, i/N with 0 <= i < N <= 1024 (i >= N: a replica that only drains "
     "while N shrinks)"},
    {"VIGIL_TICK_MS", "1000", "timer resolution in milliseconds (1-60000)"},
    {"VIGIL_TIMER_LEASE_MS", "30000", "lease on a claimed timer in milliseconds (100-3600000)"},
    {"VIGIL_OUTBOX_RETRY_MS", "1000",
     "pause before an output the broker did not acknowledge is published again (1-600000)"},
    {"VIGIL_OUTBOX_DEAD_LETTER_AFTER", "5",
     "broker refusals in a row (e.g. ACL) before an output moves to the dead-letter list (1-1000000)"},
    {"VIGIL_OUTBOX_REPLAY_MS", "3000",
     "outputs the broker acknowledged this long before a lost connection are published again "
     "once it is back, in case the broker died before saving them (0-600000, 0 = off; keep it "
     "above the broker's save interval)"},
    {"VIGIL_OUTBOX_SKIP_SUPERSEDED", "1",
     "1 = a retained output (a state snapshot) still waiting in the outbox behind a newer one "
     "for the same topic is not published, only the newer; 0 = every snapshot is published"},
    {"VIGIL_MQTT_INTAKE_GATHER_US", "500",
     "microseconds the intake lets input gather after a read of two or more messages (a "
     "burst), so one commit and one PUBACK segment carry more; a lone message is never held "
     "(0-100000, 0 = read at once)"},
    {"VIGIL_OUTBOX_HOLD_US", "500",
     "microseconds the outbox's connections, with 8 or more publishes in flight (a burst), "
     "wait before acknowledging the broker's PUBACK segments and reading again, so one wake "
     "takes several PUBACKs (0-100000, 0 = at once)"},
    {"VIGIL_MQTT_SESSION_EXPIRY_S", "604800",
     "seconds the broker keeps this replica's session and queued input while it is away "
     "(60-2147483647; keep it at or below the broker's persistent_client_expiration)"},
    {"VIGIL_DEDUPE_TTL_S", "604800",
     "seconds a record's processed input ids (redelivery dedupe) are kept after the last "
     "one (up to an hour more), so the ids of rooms gone quiet do not stay in Redis for ever "
     "(0-2147483647, 0 = kept for ever; keep it at or above VIGIL_MQTT_SESSION_EXPIRY_S: "
     "the broker redelivers nothing older than the session it keeps)"},
    {"VIGIL_OUTBOX_CONNECTIONS", "4",
     "broker connections the outbox may publish on (1-16): more than one only when the broker "
     "allows fewer than 40 messages in flight on one (mosquitto as shipped: 20, so 2), enough "
     "for 40 in all"},
    {"VIGIL_OUTBOX_PROCESS", "0",
     "1 = publish the outbox from a child process of the service (same executable), so outputs "
     "keep flowing while intake is saturated; 0 = a thread of the service"},
    {"VIGIL_MQTT_INTAKE", "link",
     "client that takes the service's input from the broker: link (Vigil's own: many messages "
     "per read, their acknowledgements written together, each after its commit) or paho"},
    {"VIGIL_LIVENESS_MS", "60000",
     "/healthz fails when intake, outbox or timers made no progress with work pending "
     "this long (1000-86400000)"},
    /* Secrets from files (a Kubernetes Secret mounted as a file). */
    {"VIGIL_MQTT_PASSWORD_FILE", "",
     "file holding the MQTT password (one trailing newline stripped; not with VIGIL_MQTT_PASSWORD)"},
    {"VIGIL_REDIS_URL_FILE", "",
     "file holding the Redis URL (one trailing newline stripped; not with VIGIL_REDIS_URL)"},
    /* TLS to the broker. */
    {"VIGIL_MQTT_CA_FILE", "",
     "PEM file of the CA(s) that sign the broker's certificate (mqtts:// only; empty: the "
     "system's trust store); certificate and host name are always verified"},
    {"VIGIL_MQTT_CERT_FILE", "", "PEM client certificate for brokers that require one (with VIGIL_MQTT_KEY_FILE)"},
    {"VIGIL_MQTT_KEY_FILE", "", "PEM private key of VIGIL_MQTT_CERT_FILE"},
    {"VIGIL_TOPIC_PREFIX", "",
     "every topic under <prefix>/ on a shared broker (A-Z a-z 0-9 . _ - in '/'-separated "
     "levels, at most 100 bytes; no '/' at either end, no $, + or #)"},
    {NULL, NULL, NULL},
};

/* Quotes a value for a message: at most QUOTE_BYTES, escaped so control
 * characters or invalid UTF-8 in the environment cannot garble a log line. */
static void quote(const char *v, char *out, size_t outlen)
{
    size_t n = strlen(v);
    vigil_json_sample(v, n > QUOTE_BYTES ? QUOTE_BYTES : n, out, outlen);
}

/* Like quote, for URLs: credentials before an '@' are masked so a
 * mistyped URL does not put a password into the logs. */
static void quote_url(const char *url, char *out, size_t outlen)
{
    const char *at = strrchr(url, '@');
    if (!at) {
        quote(url, out, outlen);
        return;
    }
    char masked[QUOTE_BYTES + 8];
    const char *scheme = strstr(url, "://");
    size_t keep = scheme && scheme < at ? (size_t)(scheme - url) + 3 : 0;
    if (keep > QUOTE_BYTES)
        keep = QUOTE_BYTES;
    snprintf(masked, sizeof masked, "%.*s***%.*s", (int)keep, url, QUOTE_BYTES - (int)keep, at);
    quote(masked, out, outlen);
}

/* err may be NULL or zero-sized: callers that only want the value. */
static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The value of name when it is set and not empty, else NULL. */
static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Reads name as a whole number (integer) or any finite number into *i or
 * *d: 1 when unset or empty, 0 when it parses, -1 when it does not. q gets
 * the value quoted for an error message. */
static int env_number(const char *name, bool integer, long long *i, double *d, char *q,
                      size_t qlen)
{
    const char *v = env_nonempty(name);
    if (!v)
        return 1;
    quote(v, q, qlen);
    errno = 0;
    char *end = NULL;
    if (integer)
        *i = strtoll(v, &end, 10);
    else
        *d = strtod(v, &end);
    bool ok = end != v && *end == '\0' && errno != ERANGE && (integer || isfinite(*d));
    return ok ? 0 : -1;
}

int vigil_env_int64(const char *name, int64_t def, int64_t min, int64_t max, int64_t *out,
                    char *err, size_t errlen)
{
    char q[QUOTE_BYTES * 4 + 1];
    long long x = 0;
    int rc = env_number(name, true, &x, NULL, q, sizeof q);
    if (rc == 1)
        x = def;
    else if (rc < 0 || x < min || x > max)
        return fail(err, errlen, "%s: expected an integer in %" PRId64 "..%" PRId64 ", got '%s'",
                    name, min, max, q);
    *out = (int64_t)x;
    return 0;
}

int vigil_env_ms(const char *name, int64_t def, int64_t min, int64_t *out, char *err,
                 size_t errlen)
{
    return vigil_env_int64(name, def, min, VIGIL_ENV_MS_MAX, out, err, errlen);
}

int vigil_env_int(const char *name, int def, int min, int max, int *out, char *err,
                  size_t errlen)
{
    int64_t v;
    if (vigil_env_int64(name, def, min, max, &v, err, errlen) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

int vigil_env_double(const char *name, double def, double min, double max, double *out,
                     char *err, size_t errlen)
{
    char q[QUOTE_BYTES * 4 + 1];
    double x = 0;
    int rc = env_number(name, false, NULL, &x, q, sizeof q);
    if (rc == 1)
        x = def;
    else if (rc < 0 || x < min || x > max)
        return fail(err, errlen, "%s: expected a number in %g..%g, got '%s'", name, min, max, q);
    *out = x;
    return 0;
}

int vigil_env_bool(const char *name, bool def, bool *out, char *err, size_t errlen)
{
    static const char *const YES[] = {"1", "true", "yes", "on"};
    static const char *const NO[] = {"0", "false", "no", "off"};
    const char *v = env_nonempty(name);
    if (!v) {
        *out = def;
        return 0;
    }
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, YES[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(v, NO[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    char q[QUOTE_BYTES * 4 + 1];
    quote(v, q, sizeof q);
    return fail(err, errlen, "%s: expected 1/0/true/false/yes/no/on/off, got '%s'", name, q);
}

int vigil_env_string(const char *name, const char *def, char *out, size_t outlen, char *err,
                     size_t errlen)
{
    const char *v = getenv(name);
    if (!v)
        v = def ? def : "";
    size_t n = strlen(v);
    if (!out || n >= outlen)
        return fail(err, errlen, "%s: value of %zu bytes is too long (at most %zu)", name, n,
                    outlen ? outlen - 1 : 0);
    memcpy(out, v, n + 1);
    return 0;
}

/* Reads the whole file at path into out and strips one trailing newline
 * ("\n" or "\r\n"). The file is read into a buffer two bytes larger than
 * out, so a value that fits exactly may still end in "\r\n". Errors name
 * the variable and the path, never a byte of the content. */
static int read_secret_file(const char *var, const char *path, char *out, size_t outlen,
                            char *err, size_t errlen)
{
    char qp[QUOTE_BYTES * 4 + 1];
    quote(path, qp, sizeof qp);
    size_t cap = outlen + 2;
    char *buf = malloc(cap);
    if (!buf)
        return fail(err, errlen, "%s: out of memory", var);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return fail(err, errlen, "%s: cannot read '%s': %s", var, qp, strerror(errno));
    }
    size_t n = 0;
    int rc = 0;
    while (n < cap) {
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = fail(err, errlen, "%s: cannot read '%s': %s", var, qp, strerror(errno));
            break;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    if (rc == 0 && n > 0 && buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r')
            n--;
    }
    if (rc == 0 && n == 0)
        rc = fail(err, errlen, "%s: '%s' is empty", var, qp);
    else if (rc == 0 && n >= outlen)
        rc = fail(err, errlen, "%s: '%s' is longer than %zu bytes", var, qp, outlen - 1);
    else if (rc == 0 && memchr(buf, '\0', n))
        rc = fail(err, errlen, "%s: '%s' holds a NUL byte", var, qp);
    if (rc == 0) {
        memcpy(out, buf, n);
        out[n] = '\0';
    }
    memset(buf, 0, cap); /* no copy of a secret left in freed memory */
    free(buf);
    return rc;
}

/* name or name_FILE into out, without registering the value (the Redis
 * URL registers only its password: the rest of it is no secret). */
static int env_or_file(const char *name, const char *def, char *out, size_t outlen, char *err,
                       size_t errlen)
{
    char file_var[128];
    snprintf(file_var, sizeof file_var, "%s_FILE", name);
    const char *path = env_nonempty(file_var);
    if (path && env_nonempty(name))
        return fail(err, errlen, "%s and %s are both set: set one", name, file_var);
    if (path) {
        if (!out || outlen < 2)
            return fail(err, errlen, "%s: no room for the value", file_var);
        if (read_secret_file(file_var, path, out, outlen, err, errlen) != 0)
            return -1;
    } else if (vigil_env_string(name, def, out, outlen, err, errlen) != 0) {
        return -1;
    }
    return 0;
}

int vigil_env_secret(const char *name, const char *def, char *out, size_t outlen, char *err,
                     size_t errlen)
{
    if (env_or_file(name, def, out, outlen, err, errlen) != 0)
        return -1;
    vigil_redact_add_secret(out);
    return 0;
}

int vigil_env_choice(const char *name, const char *const *choices, int def, int *out, char *err,
                     size_t errlen)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; choices[i]; i++) {
        if (strcasecmp(v, choices[i]) == 0) {
            *out = i;
            return 0;
        }
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? " or " : "", choices[i]);
        if (n > 0 && (size_t)n < sizeof list - used)
            used += (size_t)n;
    }
    return fail(err, errlen, "%s: expected %s, got '%.64s'", name, list, v);
}

/* Strict decimal without sign or spaces, at most 4 digits (N <= 1024). */
static int parse_small_uint(const char *s, size_t n, int *out)
{
    if (n == 0 || n > 4)
        return -1;
    int x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (s[i] - '0');
    }
    *out = x;
    return 0;
}

int vigil_shard_parse(const char *s, int *index, int *count)
{
    if (!s)
        return -1;
    const char *slash = strchr(s, '/');
    if (!slash)
        return -1;
    int i, n;
    if (parse_small_uint(s, (size_t)(slash - s), &i) != 0 ||
        parse_small_uint(slash + 1, strlen(slash + 1), &n) != 0)
        return -1;
    /* i >= N is allowed: a replica that drains while N shrinks
     * (shard_view.h); i stays below the largest N. */
    if (n < 1 || n > 1024 || i >= 1024)
        return -1;
    if (index)
        *index = i;
    if (count)
        *count = n;
    return 0;
}

/* The instance name goes into sys/{service}/{instance}/status, so the
 * hostname default is turned into an id: other characters become '-' and
 * it is cut to VIGIL_ID_MAX. */
static void default_instance(char *out, size_t outlen)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "vigil");
    host[sizeof host - 1] = '\0';
    size_t n = strlen(host);
    if (n > VIGIL_ID_MAX)
        n = VIGIL_ID_MAX;
    if (n >= outlen)
        n = outlen - 1;
    for (size_t i = 0; i < n; i++) {
        char c = host[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '-';
    }
    out[n] = '\0';
}

void vigil_common_config_init(vigil_common_config *c, int default_http_port)
{
    memset(c, 0, sizeof *c);
    snprintf(c->mqtt_url, sizeof c->mqtt_url, "mqtt://127.0.0.1:1883");
    snprintf(c->redis_url, sizeof c->redis_url, "redis://127.0.0.1:6379/0");
    snprintf(c->redis_prefix, sizeof c->redis_prefix, "vigil:");
    snprintf(c->http_addr, sizeof c->http_addr, "127.0.0.1:%d", default_http_port);
    snprintf(c->log_level, sizeof c->log_level, "info");
    default_instance(c->instance, sizeof c->instance);
    c->max_payload = 65536;
    c->shard_index = 0;
    c->shard_count = 1;
    c->tick_ms = 1000;
    c->timer_lease_ms = 30000;
    c->mqtt_session_expiry_s = 604800;
    c->dedupe_ttl_s = 604800;
    c->liveness_ms = 60000;
    c->outbox_connections = 4;
    c->mqtt_intake_link = true;
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* "host:port", "[v6]:port" or ":port": whatever precedes it, the address
 * must end in ':' and a port 0..65535 (0 = any free port, for tests). */
static bool http_addr_valid(const char *a)
{
    const char *colon = strrchr(a, ':');
    if (!colon || !colon[1] || strlen(colon + 1) > 5)
        return false;
    long port = 0;
    for (const char *p = colon + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        port = port * 10 + (*p - '0');
    }
    return port <= 65535;
}

/* Reads every common variable over the defaults already in c (so call
 * vigil_common_config_init first). On error c may be partly updated. */
int vigil_common_config_load(vigil_common_config *c, char *err, size_t errlen)
{
    char q[QUOTE_BYTES * 4 + 1];
    int64_t x;

    if (vigil_env_string("VIGIL_MQTT_URL", c->mqtt_url, c->mqtt_url, sizeof c->mqtt_url, err, errlen) ||
        vigil_env_string("VIGIL_MQTT_USER", c->mqtt_user, c->mqtt_user, sizeof c->mqtt_user, err, errlen) ||
        vigil_env_secret("VIGIL_MQTT_PASSWORD", c->mqtt_password, c->mqtt_password,
                         sizeof c->mqtt_password, err, errlen) ||
        env_or_file("VIGIL_REDIS_URL", c->redis_url, c->redis_url, sizeof c->redis_url, err,
                    errlen) ||
        vigil_env_string("VIGIL_REDIS_PREFIX", c->redis_prefix, c->redis_prefix,
                         sizeof c->redis_prefix, err, errlen) ||
        vigil_env_string("VIGIL_HTTP_ADDR", c->http_addr, c->http_addr, sizeof c->http_addr, err, errlen) ||
        vigil_env_string("VIGIL_LOG_LEVEL", c->log_level, c->log_level, sizeof c->log_level, err, errlen) ||
        vigil_env_string("VIGIL_INSTANCE", c->instance, c->instance, sizeof c->instance, err, errlen) ||
        vigil_env_string("VIGIL_MQTT_CA_FILE", c->mqtt_ca_file, c->mqtt_ca_file,
                         sizeof c->mqtt_ca_file, err, errlen) ||
        vigil_env_string("VIGIL_MQTT_CERT_FILE", c->mqtt_cert_file, c->mqtt_cert_file,
                         sizeof c->mqtt_cert_file, err, errlen) ||
        vigil_env_string("VIGIL_MQTT_KEY_FILE", c->mqtt_key_file, c->mqtt_key_file,
                         sizeof c->mqtt_key_file, err, errlen) ||
        vigil_env_string("VIGIL_TOPIC_PREFIX", c->topic_prefix, c->topic_prefix,
                         sizeof c->topic_prefix, err, errlen) ||
        vigil_topic_prefix_check(c->topic_prefix, err, errlen) != 0)
        return -1;

    if (!has_prefix(c->mqtt_url, "mqtt://") && !has_prefix(c->mqtt_url, "tcp://") &&
        !has_prefix(c->mqtt_url, "mqtts://") && !has_prefix(c->mqtt_url, "ssl://")) {
        quote_url(c->mqtt_url, q, sizeof q);
        return fail(err, errlen, "VIGIL_MQTT_URL: expected mqtt://, tcp://, mqtts:// or ssl://host:port, got '%s'", q);
    }
    /* MQTT sends a password only with a user name: one alone would be
     * silently dropped and the broker would see an anonymous client. */
    if (c->mqtt_password[0] && !c->mqtt_user[0])
        return fail(err, errlen, "VIGIL_MQTT_PASSWORD is set but VIGIL_MQTT_USER is empty");
    /* A CA file with a plain mqtt:// URL is an error, not a warning: the
     * operator asked for TLS and would silently not get it. */
    if (vigil_mqtt_tls_check(c->mqtt_url, c->mqtt_ca_file, c->mqtt_cert_file, c->mqtt_key_file,
                             err, errlen) != 0)
        return -1;
    if (!has_prefix(c->redis_url, "redis://")) {
        quote_url(c->redis_url, q, sizeof q);
        return fail(err, errlen, "VIGIL_REDIS_URL: expected redis://host:port/db, got '%s'", q);
    }
    vigil_redis_addr raddr; /* the one parser; its messages never quote a password */
    char rerr[160];
    if (vigil_redis_url_parse(c->redis_url, &raddr, rerr, sizeof rerr) != 0)
        return fail(err, errlen, "VIGIL_REDIS_URL: %s", rerr);
    vigil_redact_add_secret(raddr.password);
    if (!c->redis_prefix[0])
        return fail(err, errlen, "VIGIL_REDIS_PREFIX: must not be empty");
    if (!http_addr_valid(c->http_addr)) {
        quote(c->http_addr, q, sizeof q);
        return fail(err, errlen, "VIGIL_HTTP_ADDR: expected host:port or :port, got '%s'", q);
    }
    vigil_log_level lvl;
    if (vigil_log_level_parse(c->log_level, &lvl) != 0) {
        quote(c->log_level, q, sizeof q);
        return fail(err, errlen, "VIGIL_LOG_LEVEL: expected debug, info, warn or error, got '%s'", q);
    }
    for (char *p = c->log_level; *p; p++) /* one spelling for later compares */
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (!vigil_id_valid(c->instance, strlen(c->instance))) {
        quote(c->instance, q, sizeof q);
        return fail(err, errlen, "VIGIL_INSTANCE: expected 1-64 characters of A-Z a-z 0-9 . _ -, got '%s'", q);
    }

    if (vigil_env_int64("VIGIL_MAX_PAYLOAD", (int64_t)c->max_payload, 1, 16777216, &x, err, errlen))
        return -1;
    c->max_payload = (size_t)x;

    const char *shard = env_nonempty("VIGIL_SHARD");
    if (shard) {
        int i, n;
        if (vigil_shard_parse(shard, &i, &n) != 0) {
            quote(shard, q, sizeof q);
            return fail(err, errlen, "VIGIL_SHARD: expected i/N with 0 <= i < 1024 and 1 <= N <= 1024, got %s", q);
        }
        c->shard_index = i;
        c->shard_count = n;
    }

    if (vigil_env_int64("VIGIL_TICK_MS", c->tick_ms, 1, 60000, &c->tick_ms, err, errlen) ||
        vigil_env_int64("VIGIL_TIMER_LEASE_MS", c->timer_lease_ms, 100, 3600000, &c->timer_lease_ms,
                        err, errlen) ||
        vigil_env_int64("VIGIL_MQTT_SESSION_EXPIRY_S", c->mqtt_session_expiry_s, 60, 2147483647,
                        &c->mqtt_session_expiry_s, err, errlen) ||
        vigil_env_int64("VIGIL_DEDUPE_TTL_S", c->dedupe_ttl_s, 0, 2147483647, &c->dedupe_ttl_s,
                        err, errlen) ||
        vigil_env_int64("VIGIL_LIVENESS_MS", c->liveness_ms, 1000, 86400000, &c->liveness_ms, err,
                        errlen) ||
        vigil_env_int64("VIGIL_OUTBOX_CONNECTIONS", c->outbox_connections, 1, VIGIL_LINKS_MAX,
                        &c->outbox_connections, err, errlen) ||
        vigil_env_bool("VIGIL_OUTBOX_PROCESS", false, &c->outbox_process, err, errlen))
        return -1;
    static const char *const intakes[] = { "paho", "link", NULL };
    int intake;
    if (vigil_env_choice("VIGIL_MQTT_INTAKE", intakes, c->mqtt_intake_link ? 1 : 0, &intake, err, errlen))
        return -1;
    c->mqtt_intake_link = intake == 1;
    /* Read by the outbox publisher itself (outbox.c) and the intake's
     * connection (mqtt_link.c); checked here so a bad value stops the
     * start. */
    int64_t outbox_setting;
    if (vigil_env_int64("VIGIL_OUTBOX_RETRY_MS", 1000, 1, 600000, &outbox_setting, err, errlen) ||
        vigil_env_int64("VIGIL_OUTBOX_DEAD_LETTER_AFTER", 5, 1, 1000000, &outbox_setting, err,
                        errlen) ||
        vigil_env_int64("VIGIL_OUTBOX_REPLAY_MS", 3000, 0, 600000, &outbox_setting, err, errlen) ||
        vigil_env_int64("VIGIL_OUTBOX_SKIP_SUPERSEDED", 1, 0, 1, &outbox_setting, err, errlen) ||
        vigil_env_int64("VIGIL_MQTT_INTAKE_GATHER_US", 500, 0, 100000, &outbox_setting, err,
                        errlen) ||
        vigil_env_int64("VIGIL_OUTBOX_HOLD_US", 500, 0, 100000, &outbox_setting, err, errlen))
        return -1;
    return 0;
}

static int help_http_port; /* shown in --help as VIGIL_HTTP_ADDR's default */

void vigil_cli_set_http_port(int port)
{
    help_http_port = port;
}

static void print_var(FILE *f, const vigil_config_var *v)
{
    if (help_http_port > 0 && strcmp(v->name, "VIGIL_HTTP_ADDR") == 0) {
        fprintf(f, "  %s (default: 127.0.0.1:%d)  %s\n", v->name, help_http_port,
                v->help ? v->help : "");
        return;
    }
    fprintf(f, "  %s (default: %s)  %s\n", v->name, v->def && *v->def ? v->def : "empty",
            v->help ? v->help : "");
}

/* Arguments are looked at in order; the first --help/--version wins, and
 * anything else is an error, since a daemon configured by environment takes
 * no other arguments and a typo must not be ignored. */
int vigil_cli_handle(int argc, char **argv, const char *service, const char *summary,
                     const vigil_config_var *service_vars)
{
    const char *svc = service ? service : "vigil";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("Usage: %s [--help] [--version]\n\n", svc);
            if (summary && *summary)
                printf("%s\n\n", summary);
            printf("Environment:\n");
            for (const vigil_config_var *v = VIGIL_COMMON_VARS; v->name; v++)
                print_var(stdout, v);
            for (const vigil_config_var *v = service_vars; v && v->name; v++)
                print_var(stdout, v);
            fflush(stdout);
            return 1;
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("%s %s\n", svc, VIGIL_VERSION);
            fflush(stdout);
            return 1;
        }
        fprintf(stderr, "%s: unknown argument '%s'\nUsage: %s [--help] [--version]\n", svc, a, svc);
        return -1;
    }
    return 0;
}
