/* redis.c - one hiredis connection that reconnects, scripts by SHA,
 * pipelining. See redis.h for the contract. */
#include "vigil/redis.h"
#include "vigil/redis_raw.h"
#include "vigil/str.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "vigil/jtext.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

#define ERRORS_METRIC "vigil_redis_errors_total"
#define ERRORS_HELP "Redis connection and I/O errors (failed connects, dropped connections)."
#define RECONNECTS_METRIC "vigil_redis_reconnects_total"
#define RECONNECTS_HELP "Successful Redis connects after the first one."

struct vigil_redis {
    vigil_redis_addr addr;
    int timeout_ms;
    redisContext *c;
    bool ever_connected;
    /* true once a failure has been logged; cleared by the next successful
     * connect, so an outage logs one line, not one per retry. */
    bool down_logged;
    bool auth_refused; /* the last failure was AUTH/NOAUTH/NOPERM at setup */
    bool auth_logged;  /* that refusal was logged in this outage */
    bool served;       /* a command was answered once: we are past startup */
    int pending; /* pipelined commands whose replies are not read yet */
    uint64_t epoch; /* bumped whenever owed replies are dropped (vigil_redis_epoch) */
    char err[256];
    char *cmd;      /* commands appended and not yet written (RESP), reused */
    size_t cmd_len; /* bytes of them */
    size_t cmd_cap;
};

/* ---- URL parsing ------------------------------------------------------- */

/* Copies src[0..n) into out, decoding %XX escapes: a password containing
 * '@', ':' or '/' can only be written percent-encoded in a URL. */
static int pct_decode(const char *src, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)src[i];
        if (ch == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = vigil_hex_digit((unsigned char)src[i + 1]);
            int lo = vigil_hex_digit((unsigned char)src[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            ch = hi * 16 + lo;
            i += 2;
        }
        if (ch == 0 || o + 1 >= outlen)
            return -1;
        out[o++] = (char)ch;
    }
    out[o] = '\0';
    return 0;
}

/* Parses a decimal number of at most 9 digits in s[0..n); -1 if empty or
 * not all digits. */
static long parse_digits(const char *s, size_t n)
{
    if (n == 0 || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int vigil_redis_url_parse(const char *url, vigil_redis_addr *out, char *err, size_t errlen)
{
    static const char scheme[] = "redis://";
    vigil_redis_addr a;
    memset(&a, 0, sizeof a);
    a.port = 6379;
    a.db = 0;

    if (err && errlen)
        err[0] = '\0';
    if (!url || strncmp(url, scheme, sizeof scheme - 1) != 0) {
        snprintf(err, errlen, "redis url must start with redis:// (got '%.40s')",
                 url ? url : "(null)");
        return -1;
    }
    const char *p = url + sizeof scheme - 1;
    /* The db path never contains '@', so the last '@' ends the user info
     * even if the (unencoded) password contains one. */
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *uend = colon ? colon : at;
        if (pct_decode(p, (size_t)(uend - p), a.user, sizeof a.user) != 0) {
            snprintf(err, errlen, "redis url: bad or too long user name");
            return -1;
        }
        if (colon) { /* [user]:password */
            if (pct_decode(colon + 1, (size_t)(at - colon - 1), a.password,
                           sizeof a.password) != 0) {
                snprintf(err, errlen, "redis url: bad or too long password");
                return -1;
            }
        }
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    const char *hend = slash ? slash : p + strlen(p);
    const char *host = p, *hostend, *portp = NULL;
    if (*host == '[') { /* [IPv6]:port */
        const char *rb = memchr(host, ']', (size_t)(hend - host));
        if (!rb) {
            snprintf(err, errlen, "redis url: unterminated '[' in host");
            return -1;
        }
        host++;
        hostend = rb;
        if (rb + 1 < hend) {
            if (rb[1] != ':') {
                snprintf(err, errlen, "redis url: garbage after ']'");
                return -1;
            }
            portp = rb + 2;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(hend - host));
        hostend = colon ? colon : hend;
        if (colon)
            portp = colon + 1;
    }
    size_t hlen = (size_t)(hostend - host);
    if (hlen == 0 || hlen >= sizeof a.host) {
        snprintf(err, errlen, "redis url: %s host", hlen ? "too long" : "missing");
        return -1;
    }
    memcpy(a.host, host, hlen);
    a.host[hlen] = '\0';
    if (portp) {
        long port = parse_digits(portp, (size_t)(hend - portp));
        if (port < 1 || port > 65535) {
            snprintf(err, errlen, "redis url: bad port '%.*s'", (int)(hend - portp), portp);
            return -1;
        }
        a.port = (int)port;
    }
    if (slash && slash[1] != '\0') {
        long db = parse_digits(slash + 1, strlen(slash + 1));
        if (db < 0) {
            snprintf(err, errlen, "redis url: bad db '%.20s'", slash + 1);
            return -1;
        }
        a.db = (int)db;
    }
    *out = a;
    return 0;
}

/* ---- error replies ---------------------------------------------------- */

/* Error codes that say the data itself is wrong: the same command on the
 * same data fails again however long one waits, so the input that asked for
 * it may be refused. Everything else (LOADING, BUSY, NOAUTH, OOM,
 * MASTERDOWN, READONLY, MISCONF, TRYAGAIN, an unknown code, ...) describes
 * the server's condition at the moment and is retried like a lost
 * connection: refusing the input then would acknowledge and lose it. */
static const char *const DATA_ERRORS[] = {
    "WRONGTYPE",                  /* a key holds another type */
    "NOGROUP",                    /* stream consumer group missing (the caller creates it) */
    "BUSYGROUP",                  /* consumer group exists already (the caller ignores it) */
    "NOSCRIPT",                   /* handled by vigil_redis_eval (loads the script) */
    "ERR value is not",           /* INCR/ZADD on a string that is no number */
    "ERR hash value is not",      /* HINCRBY on a field that is no number */
    "ERR no such key",            /* XINFO STREAM of a missing stream (read as none) */
    "VIGIL_BAD_DATA",             /* our scripts' own refusal before any write */
    NULL,
};

bool vigil_redis_error_transient(const char *msg)
{
    if (!msg)
        return true;
    for (int i = 0; DATA_ERRORS[i]; i++)
        if (strncmp(msg, DATA_ERRORS[i], strlen(DATA_ERRORS[i])) == 0)
            return false;
    return true;
}

/* ---- connection -------------------------------------------------------- */

vigil_redis *vigil_redis_new(const vigil_redis_addr *addr, int timeout_ms)
{
    vigil_redis *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->addr = *addr;
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
    return r;
}

void vigil_redis_free(vigil_redis *r)
{
    if (!r)
        return;
    if (r->c)
        redisFree(r->c);
    free(r->cmd);
    free(r);
}

/* Records an error: keeps the text, counts it, logs the first one of an
 * outage and drops the context (hiredis cannot reuse it after an error). */
static void fail(vigil_redis *r, const char *what, const char *detail)
{
    snprintf(r->err, sizeof r->err, "%s: %s", what, detail && *detail ? detail : "unknown error");
    vigil_counter_add(ERRORS_METRIC, ERRORS_HELP, NULL, 1);
    /* One line per outage, plus one when the credentials are refused in
     * it (e.g. the password rotated while the connection was down). A
     * running service retries, so that line is an error an operator must
     * see; before the first connect the caller decides (the runtime exits
     * with its own error line). */
    bool auth_news = r->auth_refused && !r->auth_logged;
    if (!r->down_logged || auth_news) {
        if (auth_news && r->served)
            vigil_log(VIGIL_LOG_ERROR, "redis %s:%d: %s (credentials refused; retrying)",
                      r->addr.host, r->addr.port, r->err);
        else
            vigil_log(VIGIL_LOG_WARN, "redis %s:%d: %s", r->addr.host, r->addr.port, r->err);
        r->down_logged = true;
        r->auth_logged = r->auth_logged || auth_news;
    }
    if (r->c) {
        redisFree(r->c);
        r->c = NULL;
    }
    r->pending = 0;
    r->cmd_len = 0;
    r->epoch++;
}

/* Context errors carry the text; a NULL reply without one is still a
 * failure of the connection. */
static void fail_ctx(vigil_redis *r, const char *what)
{
    char detail[160];
    if (r->c && r->c->err)
        snprintf(detail, sizeof detail, "%s", r->c->errstr);
    else
        snprintf(detail, sizeof detail, "no reply");
    fail(r, what, detail);
}

static struct timeval ms_to_tv(int ms)
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
    return tv;
}

/* True for the error replies that mean "these credentials are refused":
 * WRONGPASS (bad user or password), NOAUTH (a password is required, or
 * AUTH was not accepted), NOPERM (the ACL user may not run a command we
 * need at setup, such as SELECT). */
static bool auth_error(const char *msg)
{
    return msg && (strncmp(msg, "WRONGPASS", 9) == 0 || strncmp(msg, "NOAUTH", 6) == 0 ||
                   strncmp(msg, "NOPERM", 6) == 0 ||
                   strncmp(msg, "ERR invalid password", 20) == 0 ||
                   strncmp(msg, "ERR AUTH <password> called without", 34) == 0);
}

/* Sends a setup command (AUTH/SELECT) on the fresh context; any error
 * reply or I/O failure makes the whole connect fail. */
static bool setup_cmd(vigil_redis *r, const char *what, int argc, const char **argv)
{
    redisReply *rep = redisCommandArgv(r->c, argc, argv, NULL);
    if (!rep) {
        fail_ctx(r, what);
        return false;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s", rep->str ? rep->str : "error reply");
        r->auth_refused = auth_error(rep->str);
        vigil_redis_reply_free(rep);
        fail(r, what, detail);
        return false;
    }
    vigil_redis_reply_free(rep);
    return true;
}

/* AUTH user password (ACL user, Redis 6+) or AUTH password: hiredis 0.14
 * knows no user, so the command is sent here. The error text is Redis's
 * reply, which never holds the password. */
static bool auth(vigil_redis *r)
{
    const char *argv[] = { "AUTH", r->addr.user, r->addr.password };
    if (!r->addr.user[0])
        return setup_cmd(r, "AUTH", 2, (const char *[]){ "AUTH", r->addr.password });
    return setup_cmd(r, "AUTH", 3, argv);
}

uint64_t vigil_redis_epoch(const vigil_redis *r) { return r->epoch; }

bool vigil_redis_ensure(vigil_redis *r)
{
    if (r->c)
        return true;
    r->pending = 0;
    r->auth_refused = false;
    r->c = redisConnectWithTimeout(r->addr.host, r->addr.port, ms_to_tv(r->timeout_ms));
    if (!r->c) {
        fail(r, "connect", "out of memory");
        return false;
    }
    if (r->c->err) {
        fail_ctx(r, "connect");
        return false;
    }
    r->c->reader->fn = &vigil_redis_reply_functions; /* nothing read yet */
    if (redisSetTimeout(r->c, ms_to_tv(r->timeout_ms)) != REDIS_OK) {
        fail_ctx(r, "set timeout");
        return false;
    }
    if (r->addr.password[0] && !auth(r))
        return false;
    if (r->addr.db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", r->addr.db);
        const char *argv[] = { "SELECT", db };
        if (!setup_cmd(r, "SELECT", 2, argv))
            return false;
    }
    if (r->ever_connected) {
        vigil_counter_add(RECONNECTS_METRIC, RECONNECTS_HELP, NULL, 1);
        vigil_log(VIGIL_LOG_INFO, "redis %s:%d: reconnected", r->addr.host, r->addr.port);
    }
    r->ever_connected = true;
    r->down_logged = false;
    r->auth_logged = false;
    r->err[0] = '\0';
    return true;
}

bool vigil_redis_connected(const vigil_redis *r)
{
    return r->c != NULL;
}

const char *vigil_redis_last_error(const vigil_redis *r)
{
    return r->err;
}

bool vigil_redis_auth_refused(const vigil_redis *r)
{
    return r->auth_refused;
}

int vigil_redis_probe(vigil_redis *r, char *err, size_t errlen)
{
    redisReply *pong = vigil_redis_command(r, "PING");
    if (pong) {
        vigil_redis_reply_free(pong);
        return 1;
    }
    if (!r->auth_refused)
        return 0;
    snprintf(err, errlen, "Redis %s:%d refused user '%s': %s", r->addr.host, r->addr.port,
             r->addr.user[0] ? r->addr.user : "default", r->err);
    return -1;
}

int vigil_redis_probe_key(vigil_redis *r, const char *key, char *err, size_t errlen)
{
    bool logged = r->auth_logged;
    r->auth_logged = true; /* a refusal is the caller's one error line */
    redisReply *rep = vigil_redis_command(r, "EXISTS %s", key);
    r->auth_logged = logged;
    if (rep) {
        vigil_redis_reply_free(rep);
        return 1;
    }
    if (!r->auth_refused)
        return 0;
    snprintf(err, errlen, "Redis %s:%d refused user '%s' the key %s: %s", r->addr.host,
             r->addr.port, r->addr.user[0] ? r->addr.user : "default", key, r->err);
    return -1;
}

static bool flush_cmds(vigil_redis *r, const char *what);

/* A plain command issued while pipelined replies are still unread would
 * read one of those instead of its own: discard them first. */
static bool drain_pending(vigil_redis *r)
{
    if (!flush_cmds(r, "pipeline drain"))
        return false;
    if (r->pending > 0)
        r->epoch++; /* whoever appended them will not read them */
    while (r->c && r->pending > 0) {
        void *rep = NULL;
        if (redisGetReply(r->c, &rep) != REDIS_OK || !rep) {
            fail_ctx(r, "pipeline drain");
            return false;
        }
        vigil_redis_reply_free(rep);
        r->pending--;
    }
    return r->c != NULL;
}

/* Turns a transient error reply into a failure of the connection (see
 * vigil_redis_error_transient): every caller already retries a NULL reply
 * with backoff and never acknowledges meanwhile, so this one check covers
 * every path through the store, timers, jobs and route lookups. The
 * connection is dropped too: the next attempt reconnects (and AUTHs again,
 * which is what NOAUTH after a server restart needs). */
static redisReply *screen(vigil_redis *r, redisReply *rep, const char *what)
{
    if (!rep) {
        fail_ctx(r, what);
        return NULL;
    }
    if (rep->type == REDIS_REPLY_ERROR && vigil_redis_error_transient(rep->str)) {
        char detail[200];
        snprintf(detail, sizeof detail, "%s", rep->str ? rep->str : "error reply");
        r->auth_refused = auth_error(rep->str);
        vigil_redis_reply_free(rep);
        fail(r, what, detail);
        vigil_counter_add("vigil_redis_transient_errors_total",
                          "Redis error replies retried as an outage (LOADING, BUSY, OOM, ...)",
                          NULL, 1);
        return NULL;
    }
    r->served = true;
    return rep;
}

redisReply *vigil_redis_command(vigil_redis *r, const char *fmt, ...)
{
    if (!vigil_redis_ensure(r) || !drain_pending(r))
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(r->c, fmt, ap);
    va_end(ap);
    return screen(r, rep, "command");
}

#define CMD_KEEP_MAX (1u << 20) /* a larger command buffer is not kept */

/* Writes "$<n>\r\n" (or "*<n>\r\n") at p; returns the end. Most of a
 * command's lengths (key names, ids, counts) are below 100: those digits
 * are written here, without the general writer's buffer and copy. */
static char *put_header(char *p, char kind, size_t n)
{
    *p++ = kind;
    if (n < 10) {
        *p++ = (char)('0' + n);
    } else if (n < 100) {
        *p++ = (char)('0' + n / 10);
        *p++ = (char)('0' + n % 10);
    } else {
        p += vigil_i64_text(p, (int64_t)n);
    }
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* The command in the protocol's form, added to the commands not yet
 * written in r->cmd (kept between commands): what redisCommandArgv builds,
 * without its per-argument sdscatfmt and a fresh allocation each time,
 * which were about 2 % of a service's CPU per input (a commit carries the
 * whole record). Returns its length, or 0 when out of memory. */
static size_t format_command(vigil_redis *r, int argc, const char **argv,
                             const size_t *argvlen)
{
    /* without argvlen, each length is measured once (kept here for the
     * usual few arguments), not once for the size and again for the copy */
    size_t measured[16];
    if (!argvlen && argc <= (int)(sizeof measured / sizeof measured[0])) {
        for (int i = 0; i < argc; i++)
            measured[i] = strlen(argv[i]);
        argvlen = measured;
    }
    size_t need = r->cmd_len + 1 + VIGIL_I64_TEXT_MAX + 2;
    for (int i = 0; i < argc; i++)
        need += 1 + VIGIL_I64_TEXT_MAX + 2 + (argvlen ? argvlen[i] : strlen(argv[i])) + 2;
    if (need > r->cmd_cap) {
        size_t cap = r->cmd_cap ? r->cmd_cap : 4096;
        while (cap < need)
            cap *= 2;
        char *b = realloc(r->cmd, cap);
        if (!b)
            return 0;
        r->cmd = b;
        r->cmd_cap = cap;
    }
    char *start = r->cmd + r->cmd_len;
    char *p = put_header(start, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        p = put_header(p, '$', len);
        memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    r->cmd_len = (size_t)(p - r->cmd);
    return (size_t)(p - start);
}

/* A command buffer grown past CMD_KEEP_MAX (a large command, a long
 * pipeline) is freed once written, rather than kept for good. */
static void cmd_shrink(vigil_redis *r)
{
    if (r->cmd_cap > CMD_KEEP_MAX) {
        free(r->cmd);
        r->cmd = NULL;
        r->cmd_cap = 0;
    }
}

redisReply *vigil_redis_commandv(vigil_redis *r, int argc, const char **argv,
                                 const size_t *argvlen)
{
    if (!vigil_redis_ensure(r) || !drain_pending(r))
        return NULL;
    size_t len = format_command(r, argc, argv, argvlen);
    if (len == 0) {
        snprintf(r->err, sizeof r->err, "command: out of memory");
        return NULL;
    }
    /* as redisCommandArgv: send, then block for the reply */
    if (!flush_cmds(r, "command"))
        return NULL;
    void *rep = NULL;
    if (redisGetReply(r->c, &rep) != REDIS_OK)
        rep = NULL;
    return screen(r, rep, "command");
}

int vigil_redis_append(vigil_redis *r, int argc, const char **argv, const size_t *argvlen)
{
    if (!vigil_redis_ensure(r))
        return -1;
    size_t len = format_command(r, argc, argv, argvlen);
    if (len == 0) {
        snprintf(r->err, sizeof r->err, "append: out of memory");
        return -1;
    }
    r->pending++; /* written with the first reply asked for */
    return 0;
}

/* Writes the commands appended since the last write, all at once, on the
 * connection's socket. hiredis would copy each into its own output buffer
 * first (sdscatlen, and a realloc as the buffer grows): about 3 % of a
 * service's instructions per input, a commit's record being most of its
 * bytes. The order stays: every path that has hiredis write (a plain
 * command, the connect's AUTH and SELECT) runs after this one, so
 * hiredis's own buffer is empty whenever there is something here, and its
 * blocking read (redisGetReply) then only reads. False (the connection
 * failed, r->err says why) on a write error or the connection's timeout. */
static bool flush_cmds(vigil_redis *r, const char *what)
{
    if (r->cmd_len == 0)
        return r->c != NULL;
    if (!r->c) {
        r->cmd_len = 0;
        return false;
    }
    size_t off = 0;
    while (off < r->cmd_len) {
        ssize_t w = send(r->c->fd, r->cmd + off, r->cmd_len - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            char detail[160];
            snprintf(detail, sizeof detail, "write: %s",
                     w < 0 ? strerror(errno) : "nothing written");
            fail(r, what, detail);
            return false;
        }
    }
    r->cmd_len = 0;
    cmd_shrink(r);
    return true;
}

redisReply *vigil_redis_pipeline_get(vigil_redis *r)
{
    if (!r->c || r->pending <= 0) {
        snprintf(r->err, sizeof r->err, "pipeline: no pending reply");
        return NULL;
    }
    if (!flush_cmds(r, "pipeline"))
        return NULL;
    void *rep = NULL;
    if (redisGetReply(r->c, &rep) != REDIS_OK || !rep) {
        fail_ctx(r, "pipeline");
        return NULL;
    }
    r->pending--;
    return screen(r, rep, "pipeline");
}

/* ---- scripts ----------------------------------------------------------- */

/* SCRIPT LOAD stores the script's SHA1 in s->sha. Returns false on any
 * failure (an error reply is not a connection failure: the script does
 * not compile; r->err says why). */
static bool script_load(vigil_redis *r, vigil_script *s)
{
    const char *argv[] = { "SCRIPT", "LOAD", s->source };
    redisReply *rep = vigil_redis_commandv(r, 3, argv, NULL);
    if (!rep)
        return false;
    bool ok = rep->type == REDIS_REPLY_STRING && rep->len == 40;
    if (ok) {
        memcpy(s->sha, rep->str, 40);
        s->sha[40] = '\0';
    } else {
        snprintf(r->err, sizeof r->err, "SCRIPT LOAD: %s",
                 rep->type == REDIS_REPLY_ERROR && rep->str ? rep->str : "unexpected reply");
        vigil_log(VIGIL_LOG_ERROR, "redis %s", r->err);
    }
    vigil_redis_reply_free(rep);
    return ok;
}

/* Fills av/al (argc + 3 slots) with EVALSHA <sha> <nkeys> <argv...>; nk
 * holds the key count's text. */
static void evalsha_argv(const char **av, size_t *al, const char *sha, char nk[16], int nkeys,
                         int argc, const char **argv, const size_t *argvlen)
{
    vigil_i64_text(nk, nkeys); /* fits: an int has at most 11 characters */
    av[0] = "EVALSHA";
    al[0] = 7;
    av[1] = sha;
    al[1] = 40;
    av[2] = nk;
    al[2] = strlen(nk);
    for (int i = 0; i < argc; i++) {
        av[3 + i] = argv[i];
        al[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
}

int vigil_redis_eval_append(vigil_redis *r, const vigil_script *s, int nkeys, int argc,
                            const char **argv, const size_t *argvlen)
{
    if (s->sha[0] == '\0')
        return -1;
    const char *stack_av[64];
    size_t stack_al[64];
    int n = argc + 3;
    const char **av = n <= 64 ? stack_av : malloc((size_t)n * sizeof *av);
    size_t *al = n <= 64 ? stack_al : malloc((size_t)n * sizeof *al);
    int rc = -1;
    char nk[16];
    if (!av || !al)
        goto cleanup;
    evalsha_argv(av, al, s->sha, nk, nkeys, argc, argv, argvlen);
    rc = vigil_redis_append(r, n, av, al);
cleanup:
    if (av != stack_av)
        free(av);
    if (al != stack_al)
        free(al);
    return rc;
}

void vigil_redis_script_forget(vigil_script *s)
{
    s->sha[0] = '\0';
}

redisReply *vigil_redis_eval(vigil_redis *r, vigil_script *s, int nkeys, int argc,
                             const char **argv, const size_t *argvlen)
{
    redisReply *rep = NULL;
    int n = argc + 3;
    const char **av = malloc((size_t)n * sizeof *av);
    size_t *al = malloc((size_t)n * sizeof *al);
    char nk[16];
    if (!av || !al) {
        snprintf(r->err, sizeof r->err, "eval: out of memory");
        goto cleanup;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (s->sha[0] == '\0' && !script_load(r, s))
            goto cleanup;
        evalsha_argv(av, al, s->sha, nk, nkeys, argc, argv, argvlen);
        rep = vigil_redis_commandv(r, n, av, al);
        if (!rep)
            goto cleanup;
        /* Redis forgets scripts on restart and SCRIPT FLUSH: load again. */
        if (attempt == 0 && rep->type == REDIS_REPLY_ERROR && rep->str &&
            strncmp(rep->str, "NOSCRIPT", 8) == 0) {
            vigil_redis_reply_free(rep);
            rep = NULL;
            s->sha[0] = '\0';
            continue;
        }
        break;
    }
cleanup:
    free(av);
    free(al);
    return rep;
}
