/* internal.h - what the core's files share and the shell need not see. */
#ifndef HEARTBEAT_INTERNAL_H
#define HEARTBEAT_INTERNAL_H
#include "heartbeat.h"

/* skip.c: why a due run does not call the model, or false to run. */
typedef struct hb_skip {
    const char *reason;   /* "quiet-hours", "live-exchange", ... */
    char detail[200];
    int64_t next_in_ms;   /* when to look again */
    bool stop;            /* no next run (idle cap) */
} hb_skip;
bool hb_skip_check(const hb_state *s, const hb_config *c, const hb_tz *tz, int64_t now,
                   hb_skip *out);

/* skip.c: the live-exchange rule (the user wrote under live_ms before now),
 * with its detail. One rule checked twice: when a run starts, and when its
 * answer comes back, since a slow model can answer after the user spoke. */
#define HB_REASON_LIVE "live-exchange"
bool hb_live_exchange(const hb_state *s, const hb_config *c, int64_t now, char *detail,
                      size_t len);

/* The zone of the persona's config (NULL = UTC). */
const hb_tz *hb_state_tz(const hb_state *s, const hb_config *c);

/* job.c: the job payload for a run. */
char *hb_job_make(const hb_state *s, const hb_config *c, const char *run, const char *prompt);

#endif
