/* limits.c - the refusal of a limit as an error event and a metric
 * (limits.h). */
#include "vigil/limits.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vigil/clock.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/metrics.h"
#include "vigil/runtime.h"

static void count(const char *limit)
{
    char labels[128];
    snprintf(labels, sizeof labels, "limit=\"%s\"", limit);
    vigil_counter_add("vigil_limit_refusals_total",
                      "Parts of inputs a configured limit refused (each also logged or on "
                      "sys/{service}/error)",
                      labels, 1);
}

void vigil_limit_note(const char *limit, const char *detail)
{
    count(limit);
    vigil_log_kv(VIGIL_LOG_WARN, "limit reached", "limit", limit, "detail", detail, NULL);
}

int vigil_fx_limit_refusal(vigil_effects *fx, const char *service, const char *event_id,
                           const vigil_input *in, const char *limit, const char *detail,
                           int64_t now)
{
    char topic[VIGIL_TOPIC_MAX], sample[1024], in_topic[VIGIL_TOPIC_MAX * 2];
    count(limit);
    snprintf(topic, sizeof topic, "sys/%s/error", service);
    const char *t = in ? in->topic : "timer";
    vigil_json_sample(t, strlen(t), in_topic, sizeof in_topic);
    if (in && in->raw)
        vigil_json_sample(in->raw, in->raw_len, sample, sizeof sample);
    else
        sample[0] = '\0';
    json_object *o = vigil_error_event_new(event_id, service, in_topic,
                                           vigil_reject_name(VIGIL_REJECT_LIMIT), detail, sample);
    if (!o)
        return -1;
    json_object_object_add(o, "ts", json_object_new_int64(now));
    int rc = vigil_fx_publish_json(fx, topic, o, false);
    json_object_put(o);
    return rc;
}

#define TRIMMED_METRIC "vigil_stream_trimmed_total"
#define TRIMMED_HELP                                                                           \
    "Jobs a job stream's cap (XADD MAXLEN ~) dropped before any worker finished them (each " \
    "also in a warning, at most one a minute per stream)"
#define TRIM_WARN_EVERY_MS 60000
#define TRIM_LABELS 16 /* streams with a warning clock; past it, every trim warns */

/* Per label: when its last warning went out and what was dropped since. */
static struct trim_clock {
    char label[65];
    bool warned;
    int64_t last_ms;
    int64_t unsaid;
} trim_clocks[TRIM_LABELS];
static pthread_mutex_t trim_mu = PTHREAD_MUTEX_INITIALIZER;

static void trim_labels(const char *label, char *out, size_t len)
{
    char esc[140];
    vigil_metrics_escape(label ? label : "", esc, sizeof esc);
    snprintf(out, len, "stream=\"%s\"", esc);
}

void vigil_stream_trim_declare(const char *label)
{
    char labels[160];
    trim_labels(label, labels, sizeof labels);
    vigil_counter_add(TRIMMED_METRIC, TRIMMED_HELP, labels, 0);
}

/* Adds dropped to label's unsaid count; returns the count to say now (and
 * resets it) when label's last warning is a minute old or there was none,
 * else 0. A label without a clock (more than TRIM_LABELS) says each. */
static int64_t trim_due(const char *label, int64_t dropped)
{
    int64_t now = vigil_mono_ms(), say = 0;
    pthread_mutex_lock(&trim_mu);
    struct trim_clock *t = NULL;
    for (int i = 0; i < TRIM_LABELS && !t; i++) {
        struct trim_clock *x = &trim_clocks[i];
        if (!x->label[0]) {
            snprintf(x->label, sizeof x->label, "%s", label);
            t = x;
        } else if (strcmp(x->label, label) == 0) {
            t = x;
        }
    }
    if (!t) {
        say = dropped;
    } else {
        t->unsaid += dropped;
        if (!t->warned || now - t->last_ms >= TRIM_WARN_EVERY_MS) {
            say = t->unsaid;
            t->unsaid = 0;
            t->warned = true;
            t->last_ms = now;
        }
    }
    pthread_mutex_unlock(&trim_mu);
    return say;
}

void vigil_stream_trim_note(const char *label, const char *key, int64_t cap, int64_t dropped)
{
    if (!label || dropped <= 0)
        return;
    char labels[160];
    trim_labels(label, labels, sizeof labels);
    vigil_counter_add(TRIMMED_METRIC, TRIMMED_HELP, labels, (double)dropped);
    int64_t say = trim_due(label, dropped);
    if (say <= 0)
        return;
    char c[24], d[24];
    snprintf(c, sizeof c, "%" PRId64, cap);
    snprintf(d, sizeof d, "%" PRId64, say);
    vigil_log_kv(VIGIL_LOG_WARN,
                 "job stream at its cap: unfinished jobs dropped, never to run (raise the cap or "
                 "add workers)",
                 "stream", label, "key", key ? key : "", "cap", c, "dropped", d, NULL);
}

_Static_assert(VIGIL_KEY_MAX == 128, "limits.h spells the key width");

int vigil_route_members_noted(vigil_runtime *rt, const char *cmd, const char *suffix,
                              const char *limit, const char *what, const char *members,
                              char keys[][VIGIL_KEY_MAX], int n, int max, vigil_error *err)
{
    /* No `more`: an input that reaches past max records is refused whole
     * (too_many_keys, with an error event), never applied to the first max. */
    int rc = vigil_runtime_route_members(rt, cmd, suffix, keys, n, max, NULL, err);
    if (rc == -1 && err->reason == VIGIL_REJECT_TOO_MANY_KEYS) {
        char detail[256]; /* the error event's detail keeps its first 199 bytes */
        snprintf(detail, sizeof detail, "%.100s more than %d %.80s: the input is refused whole", what,
                 max, members);
        vigil_limit_note(limit, detail);
        vigil_error_set(err, VIGIL_REJECT_TOO_MANY_KEYS, "%s", detail);
    }
    return rc;
}
