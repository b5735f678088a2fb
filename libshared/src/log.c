/* log.c - structured logging: one JSON object per line on stderr.
 *
 * A line is rendered completely into one buffer and handed to a single
 * write(2), so lines from several threads never interleave (stderr is
 * unbuffered and stdio would split a long line into several writes). Every
 * string is JSON-escaped here, and bytes that are not valid UTF-8 are written
 * as the text \xNN, so a line is valid JSON whatever a message contains. */
#include "vigil/log.h"
#include "vigil/redact.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "vigil/clock.h"
#include "vigil/json.h"
#include "vigil/str.h"

#define LOG_NAME_MAX 128
#define LOG_MAX_KV 32 /* pairs accepted by vigil_log_kv */
#define LOG_STACK_LINE 4096

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_service[LOG_NAME_MAX] = "vigil";
static char g_instance[LOG_NAME_MAX] = "";
static atomic_int g_min_level = VIGIL_LOG_INFO;

static const char *const LEVEL_NAMES[] = {"debug", "info", "warn", "error"};

/* Copies at most cap-1 bytes; names longer than that are cut (they are
 * labels for humans, not keys). */
static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

const char *vigil_log_service(void)
{
    return g_service;
}

void vigil_log_init(const char *service, const char *instance, vigil_log_level min)
{
    pthread_mutex_lock(&g_log_lock);
    copy_name(g_service, sizeof g_service, service && *service ? service : "vigil");
    copy_name(g_instance, sizeof g_instance, instance);
    pthread_mutex_unlock(&g_log_lock);
    if (min < VIGIL_LOG_DEBUG || min > VIGIL_LOG_ERROR)
        min = VIGIL_LOG_INFO;
    atomic_store(&g_min_level, (int)min);
}

int vigil_log_level_parse(const char *name, vigil_log_level *out)
{
    if (!name)
        return -1;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(name, LEVEL_NAMES[i]) == 0) {
            if (out)
                *out = (vigil_log_level)i;
            return 0;
        }
    }
    return -1;
}

/* A small bounded writer: once something does not fit, `ok` drops to 0 and
 * every later append is a no-op, so callers check once at the end. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
    int ok;
} line_buf;

static void lb_put(line_buf *b, const char *s, size_t n)
{
    if (!b->ok)
        return;
    if (n >= b->cap - b->len) { /* keep room for the NUL */
        b->ok = 0;
        return;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void lb_str(line_buf *b, const char *s)
{
    lb_put(b, s, strlen(s));
}

/* Length of the well-formed UTF-8 sequence starting at p (1..4), or 0 when
 * the byte at p does not start one. Reuses the strict validator in json.c so
 * both agree on what "valid" means. */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
    size_t want;
    if (p[0] < 0x80)
        want = 1;
    else if (p[0] >= 0xC2 && p[0] <= 0xDF)
        want = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        want = 3;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        want = 4;
    else
        return 0;
    if (want > avail || !vigil_utf8_valid((const char *)p, want))
        return 0;
    return want;
}

/* Appends s as the inside of a JSON string: quote, backslash and control
 * characters escaped, valid UTF-8 copied, any other byte as the text \xNN
 * (written \\xNN in JSON) so the line stays valid UTF-8 and valid JSON. */
static void lb_escaped(line_buf *b, const char *s)
{
    static const char HEX[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    size_t i = 0;
    while (i < n && b->ok) {
        unsigned char c = p[i];
        char esc[8];
        if (c == '"') {
            lb_put(b, "\\\"", 2);
        } else if (c == '\\') {
            lb_put(b, "\\\\", 2);
        } else if (c == '\n') {
            lb_put(b, "\\n", 2);
        } else if (c == '\r') {
            lb_put(b, "\\r", 2);
        } else if (c == '\t') {
            lb_put(b, "\\t", 2);
        } else if (c < 0x20 || c == 0x7f) {
            memcpy(esc, "\\u00", 4);
            esc[4] = HEX[c >> 4];
            esc[5] = HEX[c & 15];
            lb_put(b, esc, 6);
        } else if (c < 0x80) {
            lb_put(b, (const char *)p + i, 1);
        } else {
            size_t k = utf8_seq_len(p + i, n - i);
            if (k) {
                lb_put(b, (const char *)p + i, k);
                i += k;
                continue;
            }
            memcpy(esc, "\\\\x", 3);
            esc[3] = HEX[c >> 4];
            esc[4] = HEX[c & 15];
            lb_put(b, esc, 5);
        }
        i++;
    }
}

static void lb_field(line_buf *b, const char *key, const char *val)
{
    lb_str(b, ",\"");
    lb_escaped(b, key ? key : "");
    lb_str(b, "\":");
    if (!val) {
        lb_str(b, "null");
        return;
    }
    lb_str(b, "\"");
    lb_escaped(b, val);
    lb_str(b, "\"");
}

/* kv holds nkv key/value PAIRS (2 * nkv pointers); a NULL value becomes JSON
 * null. Returns the length written (excluding the NUL) or -1 if it did not
 * fit in cap bytes. */
int vigil_log_format(char *buf, int cap, long long ts_ms, vigil_log_level lvl,
                     const char *msg, const char *const *kv, int nkv)
{
    if (!buf || cap <= 0)
        return -1;
    if (lvl < VIGIL_LOG_DEBUG || lvl > VIGIL_LOG_ERROR)
        lvl = VIGIL_LOG_ERROR;
    line_buf b = {buf, (size_t)cap, 0, 1};
    buf[0] = '\0';
    char num[32];
    snprintf(num, sizeof num, "%lld", ts_ms);
    lb_str(&b, "{\"ts\":");
    lb_str(&b, num);
    lb_str(&b, ",\"level\":\"");
    lb_str(&b, LEVEL_NAMES[lvl]);
    lb_str(&b, "\"");

    pthread_mutex_lock(&g_log_lock);
    lb_field(&b, "service", g_service);
    lb_field(&b, "instance", g_instance);
    pthread_mutex_unlock(&g_log_lock);

    lb_field(&b, "msg", msg ? msg : "");
    for (int i = 0; kv && i < nkv; i++)
        lb_field(&b, kv[2 * i], kv[2 * i + 1]);
    lb_str(&b, "}");
    if (!b.ok) {
        buf[0] = '\0';
        return -1;
    }
    return (int)b.len;
}

/* Writes the whole line with one write(); loops only on EINTR or a short
 * write (which stderr on a pipe does not do below PIPE_BUF anyway). */
static void write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* nowhere left to report a logging failure */
        }
        s += w;
        n -= (size_t)w;
    }
}

/* Writes line[0..n) and a newline with every credential masked
 * (redact.h): a URL's password or a registered secret never reaches the
 * log, whoever formatted the text. Masking may lengthen a line a little
 * (a 1-byte password becomes "***"), hence the slack. */
static void write_redacted(const char *line, size_t n)
{
    char stack[LOG_STACK_LINE + 512];
    size_t cap = n + n / 2 + 64;
    char *out = cap <= sizeof stack ? stack : malloc(cap);
    if (!out)
        return;
    size_t len = vigil_redact(line, out, cap - 1);
    out[len] = '\n';
    write_all(out, len + 1);
    if (out != stack)
        free(out);
}

/* Renders into a stack buffer, or into a heap buffer sized for the worst
 * case (every byte escaped to 6 characters) when the line is long. */
static void emit(vigil_log_level lvl, const char *msg, const char *const *kv, int nkv)
{
    char stack[LOG_STACK_LINE];
    long long ts = (long long)vigil_now_ms();
    int n = vigil_log_format(stack, (int)sizeof stack - 1, ts, lvl, msg, kv, nkv);
    if (n >= 0) {
        write_redacted(stack, (size_t)n);
        return;
    }
    size_t need = strlen(msg ? msg : "") + 2 * LOG_NAME_MAX;
    for (int i = 0; kv && i < nkv; i++) {
        need += kv[2 * i] ? strlen(kv[2 * i]) : 0;
        need += kv[2 * i + 1] ? strlen(kv[2 * i + 1]) : 4;
        need += 8;
    }
    need = need * 6 + 256;
    if (need > (size_t)0x7fffffff - 1)
        return;
    char *heap = malloc(need + 1);
    if (!heap)
        return;
    n = vigil_log_format(heap, (int)need, ts, lvl, msg, kv, nkv);
    if (n >= 0)
        write_redacted(heap, (size_t)n);
    free(heap);
}

static int enabled(vigil_log_level lvl)
{
    return (int)lvl >= atomic_load(&g_min_level);
}

void vigil_log(vigil_log_level lvl, const char *fmt, ...)
{
    if (!enabled(lvl) || !fmt)
        return;
    char stack[1024], *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vigil_vformat(stack, sizeof stack, &s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    emit(lvl, s ? s : stack, NULL, 0); /* out of memory: truncated beats nothing */
    if (s != stack)
        free(s);
}

void vigil_log_kv(vigil_log_level lvl, const char *msg, ...)
{
    if (!enabled(lvl))
        return;
    const char *kv[2 * LOG_MAX_KV];
    int n = 0;
    va_list ap;
    va_start(ap, msg);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        if (n < LOG_MAX_KV) { /* extra pairs beyond the limit are dropped */
            kv[2 * n] = k;
            kv[2 * n + 1] = v;
            n++;
        }
    }
    va_end(ap);
    emit(lvl, msg, kv, n);
}
