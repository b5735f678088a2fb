/* position.c - log positions (Redis stream ids "ms-seq"): the SSE `id:`
 * a client sends back as Last-Event-ID, the stored log entry format, and
 * the SSE frames (named, or unnamed for onmessage). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gateway.h"

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int gw_pos_parse(const char *s, gw_pos *out)
{
    if (!s)
        return -1;
    const char *dash = strchr(s, '-');
    gw_pos p = {0, 0};
    if (!dash)
        return parse_u64(s, strlen(s), &p.ms) == 0 ? (*out = p, 0) : -1;
    if (parse_u64(s, (size_t)(dash - s), &p.ms) != 0 || parse_u64(dash + 1, strlen(dash + 1), &p.seq) != 0)
        return -1;
    *out = p;
    return 0;
}

int gw_pos_cmp(gw_pos a, gw_pos b)
{
    if (a.ms != b.ms)
        return a.ms < b.ms ? -1 : 1;
    if (a.seq != b.seq)
        return a.seq < b.seq ? -1 : 1;
    return 0;
}

void gw_pos_format(gw_pos p, char *out, size_t outlen)
{
    snprintf(out, outlen, "%" PRIu64 "-%" PRIu64, p.ms, p.seq);
}

char *gw_log_entry(const char *topic, json_object *payload)
{
    char event[96];
    gw_event_name(topic, payload, event, sizeof event);
    json_object *copy = NULL;
    if (json_object_deep_copy(payload, &copy, NULL) != 0 || !copy)
        return NULL;
    json_object_object_add(copy, "topic", json_object_new_string(topic));
    const char *data = json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t n = strlen(topic) + strlen(event) + strlen(data) + 3;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s\n%s\n%s", topic, event, data);
    json_object_put(copy);
    return out;
}

int gw_log_entry_split(const char *e, char *topic, size_t tlen, char *event, size_t elen,
                       const char **data)
{
    const char *a = e ? strchr(e, '\n') : NULL;
    const char *b = a ? strchr(a + 1, '\n') : NULL;
    if (!a || !b || (size_t)(a - e) >= tlen || (size_t)(b - a - 1) >= elen)
        return -1;
    memcpy(topic, e, (size_t)(a - e));
    topic[a - e] = '\0';
    memcpy(event, a + 1, (size_t)(b - a - 1));
    event[b - a - 1] = '\0';
    *data = b + 1;
    return 0;
}

/* One frame; data never holds a newline (compact JSON escapes them), so
 * it is a single data: line. */
char *gw_sse_frame(const char *id, const char *event, const char *data, size_t *len)
{
    size_t n = (id ? strlen(id) + 5 : 0) + (event ? strlen(event) + 8 : 0) + strlen(data) + 10;
    char *out = malloc(n);
    if (!out)
        return NULL;
    int w = snprintf(out, n, "%s%s%s%s%s%sdata: %s\n\n", id ? "id: " : "", id ? id : "",
                     id ? "\n" : "", event ? "event: " : "", event ? event : "", event ? "\n" : "",
                     data);
    if (w < 0 || (size_t)w >= n) {
        free(out);
        return NULL;
    }
    if (len)
        *len = (size_t)w;
    return out;
}

gw_sse_style gw_filters_style(const gw_filter_set *fs)
{
    return fs->council_live ? GW_SSE_UNNAMED : GW_SSE_NAMED;
}

char *gw_sse_entry_frame(gw_sse_style st, const char *id, const char *event, const char *data,
                         size_t *len)
{
    return gw_sse_frame(id, st == GW_SSE_UNNAMED ? NULL : event, data, len);
}

char *gw_sse_notice_frame(gw_sse_style st, const char *event, json_object *o, size_t *len)
{
    if (o && st == GW_SSE_UNNAMED) {
        json_object *typed = json_object_new_object();
        if (typed) {
            json_object_object_add(typed, "type", json_object_new_string(event));
            json_object_object_foreach(o, k, v) json_object_object_add(typed, k, json_object_get(v));
        }
        json_object_put(o);
        o = typed;
    }
    if (!o)
        return NULL;
    const char *data = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE);
    char *f = data ? gw_sse_frame(NULL, st == GW_SSE_UNNAMED ? NULL : event, data, len) : NULL;
    json_object_put(o);
    return f;
}
