/* metrics_backlog.h - what a replica has not done yet, measured at scrape
 * time from its own Redis keys (store.h's layout, read-only):
 *   vigil_outbox_pending             entries of its outbox list
 *   vigil_outbox_oldest_age_seconds  age of the oldest one (its payload's ts)
 *   vigil_timers_pending             members of its timer set
 *   vigil_timers_overdue_seconds     how far past due the most overdue
 *                                    unclaimed timer is (0 when none)
 * All exist from the first scrape (zero until Redis answers). A failed read
 * leaves the previous values and counts vigil_backlog_read_errors_total. */
#ifndef VIGIL_METRICS_BACKLOG_H
#define VIGIL_METRICS_BACKLOG_H

/* Called by the /metrics handler before each render. The first call reads
 * the configuration (VIGIL_REDIS_URL, VIGIL_REDIS_PREFIX, VIGIL_SHARD) and
 * opens a connection of its own, bounded by a 1 s timeout. Thread-safe. */
void vigil_metrics_backlog_collect(void);

#endif
