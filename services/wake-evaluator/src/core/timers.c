/* timers.c - the room's autopilot timer. It is armed by the first message
 * (intake.c), moved to "now" when velocity or the AI-to-human ratio jumps,
 * and re-armed after each run while the room is active; a room without new
 * messages since the last run stops its timer until the next message, so an
 * idle room costs no LLM calls. With an LLM the run is a durable job (the
 * worker asks the model, then commits through wake_on_autopilot); without
 * one the guards alone decide here and now. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include <vigil/event_id.h>

int wake_on_timer(wake_room *r, const wake_config *c, const char *name, int64_t due, int64_t now,
                  const wake_sink *sink)
{
    if (strcmp(name, WAKE_TIMER_AUTOPILOT) != 0)
        return 0;
    r->ap_due = 0;
    if (!c->autopilot || !wake_room_managed(r))
        return 0;
    if (r->msgs_total == r->ap_seen) /* idle since the last run */
        return wake_publish_economics(r, now, sink);
    r->ap_last = now;
    r->ap_seen = r->msgs_total;
    r->ap_velocity = wake_room_velocity(r, now);
    r->ap_ratio = wake_room_ai_ratio(r, now);
    r->ap_due = now + c->autopilot_interval_ms;
    if (sink->timer(sink->ctx, WAKE_TIMER_AUTOPILOT, r->ap_due) != 0)
        return -1;
    /* one run per room and deadline: "<room>:autopilot:<due>" */
    char id[WAKE_EVID_MAX + 1], when[24];
    snprintf(when, sizeof when, "%" PRId64, due);
    vigil_event_id_in(id, sizeof id, r->id, "autopilot", when);
    if (c->llm_enabled) {
        char *job = wake_ap_job_build(r, id, now);
        int rc = job ? sink->enqueue(sink->ctx, job) : -1;
        free(job);
        return rc;
    }
    wake_ap_result res = {id, false, NULL, NULL, -1};
    return wake_on_autopilot(r, c, &res, now, sink);
}
