/* stream.c - the stream file, its key index, and the results (stream.h). */
#include "stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt_wire.h"

/* FNV-1a: the key index's hash (keys are short ids like "s-12345"). */
static uint64_t key_hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

static int read_all(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            fclose(f);
            errno = ENOMEM;
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Splits one line (NUL-terminated in place) into key, topic and payload. */
static int parse_line(char *line, bl_msg *m)
{
    char *t1 = strchr(line, '\t');
    if (!t1)
        return -1;
    char *t2 = strchr(t1 + 1, '\t');
    if (!t2)
        return -1;
    *t1 = *t2 = '\0';
    m->key = line;
    m->klen = (size_t)(t1 - line);
    m->topic = t1 + 1;
    m->tlen = (size_t)(t2 - t1 - 1);
    m->payload = (const unsigned char *)t2 + 1;
    m->plen = strlen(t2 + 1);
    m->pub_ns = m->recv_ns = -1;
    return m->klen > 0 && vigil_mqtt_topic_name_ok(m->topic, m->tlen) ? 0 : -1;
}

int bl_stream_load(bl_stream *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    size_t len;
    if (read_all(path, &s->text, &len) < 0) {
        snprintf(err, errlen, "cannot read the stream %s: %s", path, strerror(errno));
        return -1;
    }
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += s->text[i] == '\n';
    s->msgs = calloc(lines + 1, sizeof *s->msgs);
    size_t cap = 16;
    while (cap < 2 * (lines + 1))
        cap *= 2;
    s->slots = calloc(cap, sizeof *s->slots);
    s->mask = cap - 1;
    if (!s->msgs || !s->slots) {
        snprintf(err, errlen, "out of memory for %zu messages", lines);
        return -1;
    }
    char *p = s->text, *end = s->text + len;
    size_t lineno = 0;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        *nl = '\0';
        lineno++;
        if (nl > p) { /* an empty line (e.g. the last) is no message */
            bl_msg *m = &s->msgs[s->n];
            if (parse_line(p, m) < 0) {
                snprintf(err, errlen, "%s:%zu: not key<TAB>topic<TAB>payload with a key and a "
                         "valid topic name", path, lineno);
                return -1;
            }
            size_t h = (size_t)key_hash(m->key, m->klen) & s->mask;
            while (s->slots[h]) {
                const bl_msg *o = &s->msgs[s->slots[h] - 1];
                if (o->klen == m->klen && !memcmp(o->key, m->key, m->klen)) {
                    snprintf(err, errlen, "%s:%zu: key %s twice", path, lineno, m->key);
                    return -1;
                }
                h = (h + 1) & s->mask;
            }
            s->slots[h] = (uint32_t)(++s->n);
        }
        p = nl + 1;
    }
    return 0;
}

bl_msg *bl_stream_find(const bl_stream *s, const char *key, size_t klen)
{
    size_t h = (size_t)key_hash(key, klen) & s->mask;
    while (s->slots[h]) {
        bl_msg *m = &s->msgs[s->slots[h] - 1];
        if (m->klen == klen && !memcmp(m->key, key, klen))
            return m;
        h = (h + 1) & s->mask;
    }
    return NULL;
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Each occurrence of "field" is tried until one is followed by optional
 * white space, a colon, optional white space and a quote: the same match as
 * KEY_RE's "field"\s*:\s*"([^"]+)" (no escapes inside the key). */
const char *bl_find_key(const unsigned char *p, size_t n, const char *field, size_t flen,
                        size_t *klen)
{
    const unsigned char *end = p + n;
    while ((size_t)(end - p) >= flen + 2) {
        const unsigned char *q = memchr(p, '"', (size_t)(end - p) - flen - 1);
        if (!q)
            return NULL;
        p = q + 1;
        if (memcmp(p, field, flen) != 0 || p[flen] != '"')
            continue;
        const unsigned char *v = p + flen + 1;
        while (v < end && is_ws(*v))
            v++;
        if (v == end || *v != ':')
            continue;
        v++;
        while (v < end && is_ws(*v))
            v++;
        if (v == end || *v != '"')
            continue;
        const unsigned char *k = ++v;
        while (v < end && *v != '"')
            v++;
        if (v == end || v == k)
            continue;
        *klen = (size_t)(v - k);
        return (const char *)k;
    }
    return NULL;
}

int bl_stream_write_results(const bl_stream *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        const bl_msg *m = &s->msgs[i];
        fprintf(f, "%s\t%lld\t%lld\n", m->key, (long long)m->pub_ns, (long long)m->recv_ns);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return -1;
    return 0;
}

void bl_stream_free(bl_stream *s)
{
    free(s->text);
    free(s->msgs);
    free(s->slots);
    memset(s, 0, sizeof *s);
}
