/* config.c - the core's defaults: the specified intervals (2/10/30 min, 5 min
 * "recent", 1 h "inactive") and the skip rules (live 2 min, unanswered
 * 2 h, stretch x1.5). No idle cap: a user away for days is still looked in
 * on every 30 min (the inactive interval), as a heartbeat keeps waking. */
#include "heartbeat.h"

void hb_config_init(hb_config *c)
{
    c->active_interval_ms = 2 * 60 * 1000;
    c->normal_interval_ms = 10 * 60 * 1000;
    c->inactive_interval_ms = 30 * 60 * 1000;
    c->recent_ms = 5 * 60 * 1000;
    c->inactive_after_ms = 60 * 60 * 1000;
    c->live_ms = 2 * 60 * 1000;
    c->unanswered_ms = 2 * 60 * 60 * 1000;
    c->idle_cap_ms = 0;
    c->skip_stretch = 1.5;
    c->run_guard_ms = 5 * 60 * 1000;
    c->guard_late_ms = 60 * 1000;
    c->max_tokens = 300;
    c->llm_enabled = false;
    c->tz.lookup = NULL;
    c->tz.arg = NULL;
}
