/* metrics_process.h - the series every daemon's /metrics carries whatever
 * happened so far: vigil_build_info{version,service}, the process figures
 * Prometheus' client libraries call process_* (CPU seconds, resident
 * memory, open and maximum file descriptors, start time), and a zero for
 * each libshared counter an alert watches (rejections per reason,
 * reconnects, publish failures, duplicates, commit conflicts), so the
 * first event is an increase `rate()` and `increase()` can see. */
#ifndef VIGIL_METRICS_PROCESS_H
#define VIGIL_METRICS_PROCESS_H

/* Declares the zero series once (the service name is the one given to
 * vigil_log_init) and refreshes the process_* gauges from /proc/self.
 * Called by the /metrics handler before each render; cheap (a few small
 * /proc reads). Thread-safe. */
void vigil_metrics_process_collect(void);

#endif
