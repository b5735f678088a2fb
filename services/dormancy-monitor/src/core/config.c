/* config.c - DormancyConfig: defaults, and the config in force for one
 * persona with its overrides from persona/{p}/meta `dormancy` (read by
 * libshared's vigil_dormancy_overrides_read)
 * (rule 8: each feature switch can be turned off globally or per persona). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "step.h"

void dormancy_config_init(dormancy_config *c)
{
    memset(c, 0, sizeof *c);
    c->auto_suggest = true;
    c->auto_sleep = true;
    c->auto_wake = true;
    c->no_human_ms = 300000;
    c->ai_only_ms = 900000;
    c->redundant_window_ms = 30000;
    c->redundant_keep = 2;
    c->suggestion_timeout_ms = 30000;
    c->snooze_ms = 300000;
    c->llm_wake = true;
    c->wake_confidence = 0.7;
    c->presence = false;
    c->adaptive = false;
    c->human_wakes_all = false;
    c->min_awake = 2;
    c->presence_active_ms = 120000;
    c->presence_away_ms = 300000;
    c->velocity_window_ms = 300000;
    c->tz_offset_min = 0;
    c->max_personas = 1000;
    c->big_room = 100;
    c->big_room_state_ms = 1000;
}

dormancy_config dormancy_config_effective(const dormancy_config *base,
                                          const dormancy_overrides *ov)
{
    dormancy_config c = *base;
    if (!ov)
        return c;
    unsigned h = ov->has;
    if (h & VIGIL_OV_AUTO_SUGGEST) c.auto_suggest = ov->auto_suggest;
    if (h & VIGIL_OV_AUTO_SLEEP) c.auto_sleep = ov->auto_sleep;
    if (h & VIGIL_OV_AUTO_WAKE) c.auto_wake = ov->auto_wake;
    if (h & VIGIL_OV_NO_HUMAN) c.no_human_ms = ov->no_human_ms;
    if (h & VIGIL_OV_AI_ONLY) c.ai_only_ms = ov->ai_only_ms;
    if (h & VIGIL_OV_REDUNDANT_WINDOW) c.redundant_window_ms = ov->redundant_window_ms;
    if (h & VIGIL_OV_LLM_WAKE) c.llm_wake = ov->llm_wake;
    if (h & VIGIL_OV_WAKE_CONFIDENCE) c.wake_confidence = ov->wake_confidence;
    if (h & VIGIL_OV_PRESENCE) c.presence = ov->presence;
    if (h & VIGIL_OV_ADAPTIVE) c.adaptive = ov->adaptive;
    if (h & VIGIL_OV_SUGGESTION_TIMEOUT) c.suggestion_timeout_ms = ov->suggestion_timeout_ms;
    if (h & VIGIL_OV_SNOOZE) c.snooze_ms = ov->snooze_ms;
    if (h & VIGIL_OV_REDUNDANT_KEEP) c.redundant_keep = ov->redundant_keep;
    return c;
}

