/* metrics_process.c - process figures and series declared from the start
 * (see metrics_process.h). Names follow Prometheus' conventions for
 * process metrics so standard dashboards read them unchanged. */
#include "vigil/metrics_process.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "vigil/config.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Help texts equal to the ones at the call sites (the first use's text is
 * the one kept, so they must agree). */
static void declare_zero_series(void)
{
    char esc[128], labels[256];
    vigil_metrics_escape(vigil_log_service(), esc, sizeof esc);
    snprintf(labels, sizeof labels, "version=\"%s\",service=\"%s\"", VIGIL_VERSION, esc);
    vigil_gauge_set("vigil_build_info", "Build of this process (always 1): version and service",
                    labels, 1);
    for (int r = VIGIL_REJECT_NONE + 1; r < VIGIL_REJECT__COUNT; r++) {
        snprintf(labels, sizeof labels, "reason=\"%s\"", vigil_reject_name((vigil_reject_reason)r));
        vigil_counter_add("vigil_rejected_total", "Inputs rejected, by reason", labels, 0);
    }
    vigil_counter_add("vigil_mqtt_reconnects_total",
                      "Reconnections to the MQTT broker after the first connect", NULL, 0);
    vigil_counter_add("vigil_mqtt_publish_failures_total",
                      "Messages queued without waiting that the broker did not acknowledge", NULL, 0);
    vigil_counter_add("vigil_mqtt_messages_received_total", "MQTT messages received", NULL, 0);
    vigil_counter_add("vigil_redis_errors_total",
                      "Redis connection and I/O errors (failed connects, dropped connections).",
                      NULL, 0);
    vigil_counter_add("vigil_redis_reconnects_total", "Successful Redis connects after the first one.",
                      NULL, 0);
    vigil_counter_add("vigil_duplicates_total", "Inputs already applied (redelivery)", NULL, 0);
    vigil_counter_add("vigil_commits_total", "State commits", NULL, 0);
    vigil_counter_add("vigil_commit_conflicts_total", "Commits retried because the record changed",
                      NULL, 0);
    vigil_counter_add("vigil_commit_retries_total",
                      "Commit transactions read again because a watched key changed", NULL, 0);
    vigil_counter_add("vigil_commit_replies_lost_total",
                      "Pipelined commits failed unread because their Redis replies were dropped "
                      "first (a lost connection, or another command); each is done again by its "
                      "caller",
                      NULL, 0);
    vigil_counter_add("vigil_state_whole_loads_total",
                      "Records kept in parts loaded whole again (after a conflict, or when the "
                      "service no longer held the parts of the head it was given)",
                      NULL, 0);
    vigil_counter_add("vigil_outputs_total", "Output messages published and acknowledged by the broker",
                      NULL, 0);
    vigil_counter_add("vigil_outbox_publish_failures_total",
                      "Output messages the broker did not acknowledge (published again)", NULL, 0);
    vigil_counter_add("vigil_outbox_refusals_total",
                      "Output messages the broker refused with a reason code (e.g. not authorized)",
                      NULL, 0);
    vigil_counter_add("vigil_outbox_dead_letters_total",
                      "Outbox entries moved to the dead-letter list (undecodable or refused)", NULL, 0);
    vigil_counter_add("vigil_outbox_replayed_total",
                      "Outputs published again after a lost connection (the broker may not have saved them)",
                      NULL, 0);
    vigil_counter_add("vigil_outbox_replay_overflow_total",
                      "Acknowledged outputs not kept for publishing again (more than the bound in the window)",
                      NULL, 0);
    vigil_counter_add("vigil_outbox_superseded_total",
                      "Retained outputs not published: a newer one for the same topic followed "
                      "them in the outbox",
                      NULL, 0);
    vigil_counter_add("vigil_mqtt_sessions_lost_total",
                      "Reconnections on which the broker had kept no session for this replica",
                      NULL, 0);
    vigil_gauge_declare("vigil_outbox_dead_letters", "Entries in the service's dead-letter list", NULL);
    vigil_gauge_declare("vigil_outbox_inflight",
                        "Output messages handed to the broker and not yet acknowledged", NULL);
    vigil_gauge_declare("vigil_inputs_in_flight",
                        "Inputs received and not yet durable (acknowledged when their handler returns)",
                        NULL);
    vigil_histogram_declare("vigil_handler_seconds", "Time from arrival to durable commit", NULL);
}

/* utime, stime (fields 14, 15) and starttime (22) of /proc/self/stat, in
 * clock ticks. The command name (field 2) may hold spaces and ')': skip to
 * the last ')'. */
static int read_stat(unsigned long long *utime, unsigned long long *stime,
                     unsigned long long *start)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* after ") ": field 3 (state) onwards */
    int rc = sscanf(p + 2,
                    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu",
                    utime, stime, start);
    return rc == 3 ? 0 : -1;
}

/* System boot time (btime of /proc/stat), seconds since the epoch. */
static long long boot_time(void)
{
    char line[256];
    long long bt = -1;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &bt) == 1)
            break;
    fclose(f);
    return bt;
}

static long resident_pages(void)
{
    long size = 0, resident = -1;
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident;
}

/* Entries of /proc/self/fd, minus the one opendir holds. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n > 0 ? n - 1 : 0;
}

void vigil_metrics_process_collect(void)
{
    pthread_once(&g_once, declare_zero_series);
    long tick = sysconf(_SC_CLK_TCK);
    unsigned long long ut, st, start;
    if (tick > 0 && read_stat(&ut, &st, &start) == 0) {
        vigil_counter_set("process_cpu_seconds_total", "Total user and system CPU time spent in seconds",
                        NULL, (double)(ut + st) / (double)tick);
        long long bt = boot_time();
        if (bt > 0)
            vigil_gauge_set("process_start_time_seconds",
                            "Start time of the process since unix epoch in seconds", NULL,
                            (double)bt + (double)start / (double)tick);
    }
    long pages = resident_pages(), page = sysconf(_SC_PAGESIZE);
    if (pages >= 0 && page > 0)
        vigil_gauge_set("process_resident_memory_bytes", "Resident memory size in bytes", NULL,
                        (double)pages * (double)page);
    long fds = open_fds();
    if (fds >= 0)
        vigil_gauge_set("process_open_fds", "Number of open file descriptors", NULL, (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        vigil_gauge_set("process_max_fds", "Maximum number of open file descriptors", NULL,
                        (double)rl.rlim_cur);
}
