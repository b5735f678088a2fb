/* metrics.c - a tiny process-wide Prometheus registry.
 *
 * Families (one per metric name) in first-use order, each with its series
 * (one per label set), under one mutex. A family is found by its name
 * through a hash index (a linear scan of a few dozen names, several times
 * per message, was about 1 % of a service's CPU); its series, a handful,
 * linearly. Invalid metric names and
 * operations that conflict with a family's type are ignored rather than
 * allowed to produce an exposition Prometheus would refuse to scrape. */
#include "vigil/metrics.h"
#include "vigil/id_index.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum metric_type { M_COUNTER, M_GAUGE, M_HISTOGRAM };

/* Up to 60 s: an LLM call may take its 10 s timeout three times over
 * (two retries) plus backoffs. */
#define NBUCKETS 17
static const double BUCKETS[NBUCKETS] = {.0005, .001, .0025, .005, .01, .025, .05, .1, .25,
                                         .5,    1,    2.5,   5,    10,  20,   30,  60};
static const char *const BUCKET_LABELS[NBUCKETS] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
    "0.5",    "1",     "2.5",    "5",     "10",   "20",    "30",   "60"};

typedef struct series {
    char *labels; /* "" for none */
    double value; /* counter/gauge */
    uint64_t buckets[NBUCKETS]; /* per bucket, not cumulative; +Inf is count */
    uint64_t count;
    double sum;
} series;

typedef struct family {
    char *name;
    char *help;
    enum metric_type type;
    series *series;
    size_t nseries, capseries;
} family;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static family *g_fams;
static size_t g_nfams, g_capfams;
static vigil_id_index g_names; /* name -> family index + 1, sized for g_capfams */

/* [a-zA-Z_:][a-zA-Z0-9_:]* */
static bool name_valid(const char *n)
{
    if (!n || !*n)
        return false;
    for (const char *p = n; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(p != n && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* The index of the family names, rebuilt for g_capfams families; without
 * memory for it, find_family scans. Called with g_lock held. */
static void index_names(void)
{
    vigil_id_index_free(&g_names);
    memset(&g_names, 0, sizeof g_names);
    if (vigil_id_index_init(&g_names, g_capfams) != 0) {
        memset(&g_names, 0, sizeof g_names);
        return;
    }
    for (size_t i = 0; i < g_nfams; i++)
        vigil_id_index_add(&g_names, g_fams[i].name, (int)i + 1);
}

/* The family called name, or NULL. Called with g_lock held. */
static family *find_family(const char *name)
{
    if (g_names.key) {
        int at = vigil_id_index_get(&g_names, name);
        return at > 0 ? &g_fams[at - 1] : NULL;
    }
    for (size_t i = 0; i < g_nfams; i++)
        if (strcmp(g_fams[i].name, name) == 0)
            return &g_fams[i];
    return NULL;
}

/* The series last found for a pair of name and labels pointers, by
 * family and series index (indexes stay valid as the arrays grow; reset
 * clears them). Services count about six times per input, each time with
 * the same literals from the same place: a hit costs two string
 * compares, where the family's hash lookup and the scan of its series
 * cost about 215 instructions. A hit is checked by content, so labels
 * written into a buffer used again for other labels still find their own
 * series. Guarded by g_lock. */
#define HINTS 64
static struct {
    const char *name, *labels;
    size_t fam, ser;
} g_hints[HINTS];

static size_t hint_slot(const char *name, const char *labels)
{
    uintptr_t h = (uintptr_t)name * 31u ^ (uintptr_t)labels;
    return (size_t)(h ^ h >> 7 ^ h >> 13) % HINTS;
}

/* The hinted series for the pointers (name, key) if it is still theirs
 * (labels: key, or "" for NULL), or NULL. */
static series *hinted(size_t slot, const char *name, const char *key, const char *labels)
{
    if (g_hints[slot].name != name || g_hints[slot].labels != key ||
        g_hints[slot].fam >= g_nfams)
        return NULL;
    family *f = &g_fams[g_hints[slot].fam];
    if (g_hints[slot].ser >= f->nseries || strcmp(f->name, name) != 0)
        return NULL;
    series *s = &f->series[g_hints[slot].ser];
    return strcmp(s->labels, labels) == 0 ? s : NULL;
}

static series *lookup_uncached(const char *name, const char *help, const char *labels,
                               enum metric_type t, bool create, family **found);

/* Finds or creates the series for (name, labels) with the given type;
 * NULL when the name is invalid, the family has another type, or memory
 * ran out. Called with g_lock held. */
static series *lookup(const char *name, const char *help, const char *labels, enum metric_type t,
                      bool create)
{
    if (!name)
        return NULL;
    const char *key = labels;
    if (!labels)
        labels = "";
    size_t slot = hint_slot(name, key);
    series *s = hinted(slot, name, key, labels);
    if (s)
        return create && g_fams[g_hints[slot].fam].type != t ? NULL : s;
    family *f = NULL;
    s = lookup_uncached(name, help, labels, t, create, &f);
    if (s) {
        g_hints[slot].name = name;
        g_hints[slot].labels = key;
        g_hints[slot].fam = (size_t)(f - g_fams);
        g_hints[slot].ser = (size_t)(s - f->series);
    }
    return s;
}

/* lookup without the hints; *found is the series' family when one is
 * returned. */
static series *lookup_uncached(const char *name, const char *help, const char *labels,
                               enum metric_type t, bool create, family **found)
{
    family *f = find_family(name);
    if (!f) {
        if (!create || !name_valid(name))
            return NULL;
        if (g_nfams == g_capfams) {
            size_t cap = g_capfams ? g_capfams * 2 : 16;
            family *nf = realloc(g_fams, cap * sizeof *nf);
            if (!nf)
                return NULL;
            g_fams = nf;
            g_capfams = cap;
            index_names();
        }
        family nfam = {dup_or_empty(name), dup_or_empty(help), t, NULL, 0, 0};
        if (!nfam.name || !nfam.help) {
            free(nfam.name);
            free(nfam.help);
            return NULL;
        }
        g_fams[g_nfams] = nfam;
        f = &g_fams[g_nfams++];
        if (g_names.key)
            vigil_id_index_add(&g_names, f->name, (int)g_nfams);
    }
    *found = f;
    if (create && f->type != t)
        return NULL;
    for (size_t i = 0; i < f->nseries; i++)
        if (strcmp(f->series[i].labels, labels) == 0)
            return &f->series[i];
    if (!create)
        return NULL;
    if (f->nseries == f->capseries) {
        size_t cap = f->capseries ? f->capseries * 2 : 4;
        series *ns = realloc(f->series, cap * sizeof *ns);
        if (!ns)
            return NULL;
        f->series = ns;
        f->capseries = cap;
    }
    series *s = &f->series[f->nseries];
    memset(s, 0, sizeof *s);
    s->labels = strdup(labels);
    if (!s->labels)
        return NULL;
    f->nseries++;
    return s;
}

static _Atomic(vigil_metrics_forward_fn) g_forward;

void vigil_metrics_set_forward(vigil_metrics_forward_fn fn) { atomic_store(&g_forward, fn); }

/* Counters only go up: negative or NaN increments are dropped. */
void vigil_counter_add(const char *name, const char *help, const char *labels, double v)
{
    if (!(v >= 0))
        return;
    vigil_metrics_forward_fn fwd = atomic_load(&g_forward);
    if (fwd)
        fwd('c', name, help, labels, v);
    pthread_mutex_lock(&g_lock);
    series *s = lookup(name, help, labels, M_COUNTER, true);
    if (s)
        s->value += v;
    pthread_mutex_unlock(&g_lock);
}

/* A counter kept elsewhere (the kernel's CPU time): never moves back. */
void vigil_counter_set(const char *name, const char *help, const char *labels, double v)
{
    pthread_mutex_lock(&g_lock);
    series *s = lookup(name, help, labels, M_COUNTER, true);
    if (s && v > s->value)
        s->value = v;
    pthread_mutex_unlock(&g_lock);
}

void vigil_gauge_declare(const char *name, const char *help, const char *labels)
{
    pthread_mutex_lock(&g_lock);
    (void)lookup(name, help, labels, M_GAUGE, true);
    pthread_mutex_unlock(&g_lock);
}

void vigil_histogram_declare(const char *name, const char *help, const char *labels)
{
    pthread_mutex_lock(&g_lock);
    (void)lookup(name, help, labels, M_HISTOGRAM, true);
    pthread_mutex_unlock(&g_lock);
}

void vigil_gauge_set(const char *name, const char *help, const char *labels, double v)
{
    vigil_metrics_forward_fn fwd = atomic_load(&g_forward);
    if (fwd)
        fwd('g', name, help, labels, v);
    pthread_mutex_lock(&g_lock);
    series *s = lookup(name, help, labels, M_GAUGE, true);
    if (s)
        s->value = v;
    pthread_mutex_unlock(&g_lock);
}

void vigil_histogram_observe(const char *name, const char *help, const char *labels,
                             double seconds)
{
    if (isnan(seconds))
        return;
    pthread_mutex_lock(&g_lock);
    series *s = lookup(name, help, labels, M_HISTOGRAM, true);
    if (s) {
        for (int i = 0; i < NBUCKETS; i++) {
            if (seconds <= BUCKETS[i]) {
                s->buckets[i]++;
                break;
            }
        }
        s->count++;
        s->sum += seconds;
    }
    pthread_mutex_unlock(&g_lock);
}

/* For a histogram this is its observation count, which tests find handy. */
double vigil_metric_value(const char *name, const char *labels)
{
    double v = 0;
    if (!name)
        return 0;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nfams; i++) {
        if (strcmp(g_fams[i].name, name) != 0)
            continue;
        series *s = lookup(name, NULL, labels, g_fams[i].type, false);
        if (s)
            v = g_fams[i].type == M_HISTOGRAM ? (double)s->count : s->value;
        break;
    }
    pthread_mutex_unlock(&g_lock);
    return v;
}

/* A growing output buffer; `ok` drops to false on allocation failure. */
typedef struct {
    char *buf;
    size_t len, cap;
    bool ok;
} outbuf;

static void ob_printf(outbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ob_printf(outbuf *b, const char *fmt, ...)
{
    if (!b->ok)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->ok = false;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->ok = false;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
}

/* Integral values print as integers; others with the shortest %.Ng that
 * reads back exactly; non-finite values in Prometheus spelling. */
static void format_value(double v, char *out, size_t outlen)
{
    if (isnan(v)) {
        snprintf(out, outlen, "NaN");
    } else if (isinf(v)) {
        snprintf(out, outlen, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(out, outlen, "%lld", (long long)v);
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(out, outlen, "%.*g", prec, v);
            if (strtod(out, NULL) == v)
                break;
        }
    }
}

/* HELP text escaping per the text format: backslash and newline only. */
static void print_help(outbuf *b, const char *name, const char *help)
{
    ob_printf(b, "# HELP %s ", name);
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            ob_printf(b, "\\\\");
        else if (*p == '\n')
            ob_printf(b, "\\n");
        else
            ob_printf(b, "%c", *p);
    }
    ob_printf(b, "\n");
}

static void render_family(outbuf *b, const family *f)
{
    static const char *const TYPES[] = {"counter", "gauge", "histogram"};
    char val[64];
    if (f->help[0])
        print_help(b, f->name, f->help);
    ob_printf(b, "# TYPE %s %s\n", f->name, TYPES[f->type]);
    for (size_t i = 0; i < f->nseries; i++) {
        const series *s = &f->series[i];
        const char *l = s->labels;
        if (f->type != M_HISTOGRAM) {
            format_value(s->value, val, sizeof val);
            if (l[0])
                ob_printf(b, "%s{%s} %s\n", f->name, l, val);
            else
                ob_printf(b, "%s %s\n", f->name, val);
            continue;
        }
        uint64_t cum = 0;
        const char *sep = l[0] ? "," : "";
        for (int k = 0; k < NBUCKETS; k++) {
            cum += s->buckets[k];
            ob_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", f->name, l, sep, BUCKET_LABELS[k],
                      (unsigned long long)cum);
        }
        ob_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", f->name, l, sep,
                  (unsigned long long)s->count);
        format_value(s->sum, val, sizeof val);
        if (l[0]) {
            ob_printf(b, "%s_sum{%s} %s\n", f->name, l, val);
            ob_printf(b, "%s_count{%s} %llu\n", f->name, l, (unsigned long long)s->count);
        } else {
            ob_printf(b, "%s_sum %s\n", f->name, val);
            ob_printf(b, "%s_count %llu\n", f->name, (unsigned long long)s->count);
        }
    }
}

char *vigil_metrics_render(void)
{
    outbuf b = {malloc(4096), 0, 4096, true};
    if (!b.buf)
        return NULL;
    b.buf[0] = '\0';
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nfams; i++)
        render_family(&b, &g_fams[i]);
    pthread_mutex_unlock(&g_lock);
    if (!b.ok) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}

void vigil_metrics_escape(const char *in, char *out, size_t outlen)
{
    if (!out || outlen == 0)
        return;
    size_t o = 0;
    for (const char *p = in ? in : ""; *p; p++) {
        char e[2];
        size_t k = 1;
        e[0] = *p;
        if (*p == '\\' || *p == '"') {
            e[0] = '\\';
            e[1] = *p;
            k = 2;
        } else if (*p == '\n') {
            e[0] = '\\';
            e[1] = 'n';
            k = 2;
        }
        if (k >= outlen - o)
            break; /* never split an escape */
        memcpy(out + o, e, k);
        o += k;
    }
    out[o] = '\0';
}

void vigil_metrics_reset(void)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nfams; i++) {
        for (size_t k = 0; k < g_fams[i].nseries; k++)
            free(g_fams[i].series[k].labels);
        free(g_fams[i].series);
        free(g_fams[i].name);
        free(g_fams[i].help);
    }
    free(g_fams);
    g_fams = NULL;
    g_nfams = g_capfams = 0;
    memset(g_hints, 0, sizeof g_hints);
    vigil_id_index_free(&g_names);
    memset(&g_names, 0, sizeof g_names);
    pthread_mutex_unlock(&g_lock);
}
