/* metrics.h - a tiny process-wide Prometheus registry.
 *
 * Counters and gauges are identified by (name, labels) where labels is a
 * preformatted label set such as `reason="not_json"` (NULL or "" for none;
 * label values must already be escaped, see vigil_metrics_escape). The help
 * text given at first use is kept. Histograms have fixed buckets in seconds:
 * .0005 .001 .0025 .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10 20 30 60 (an LLM
 * call may take 10 s three times). Thread-safe. */
#ifndef VIGIL_METRICS_H
#define VIGIL_METRICS_H
#include <stddef.h>

void vigil_counter_add(const char *name, const char *help, const char *labels, double v);
void vigil_gauge_set(const char *name, const char *help, const char *labels, double v);
void vigil_histogram_observe(const char *name, const char *help, const char *labels, double seconds);
/* Sets a counter whose total is kept elsewhere (e.g. CPU seconds from the
 * kernel); a value below the current one is ignored. */
void vigil_counter_set(const char *name, const char *help, const char *labels, double v);
/* Creates a gauge series at 0 unless it exists (a value set meanwhile is
 * kept). */
void vigil_gauge_declare(const char *name, const char *help, const char *labels);
/* Creates a histogram series with no observation (every bucket 0), so it
 * is exposed before the first event. */
void vigil_histogram_declare(const char *name, const char *help, const char *labels);

/* Current value of a counter or gauge (0 if never touched). For tests. */
double vigil_metric_value(const char *name, const char *labels);

/* Renders the exposition format (# HELP / # TYPE lines, one family per
 * name, histograms with _bucket{le=...}, _sum, _count). Returns a malloc'd
 * NUL-terminated string. */
char *vigil_metrics_render(void);

/* Escapes a label value (backslash, double quote, newline) into out. */
void vigil_metrics_escape(const char *in, char *out, size_t outlen);

/* A process whose metrics another process serves (the outbox publisher
 * child, outbox_process.h) passes every counter increment ('c') and gauge
 * value ('g') to fn as well, from the thread that made it. NULL stops. */
typedef void (*vigil_metrics_forward_fn)(char op, const char *name, const char *help,
                                         const char *labels, double v);
void vigil_metrics_set_forward(vigil_metrics_forward_fn fn);

/* Drops every metric (tests only). */
void vigil_metrics_reset(void);

#endif
