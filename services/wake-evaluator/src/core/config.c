/* config.c - every default of the core in one place (the specified numbers:
 * confidence 0.7, 200/50/300 max tokens, 0.8 and 0.7 expert confidences,
 * 10 messages an hour). */
#include "wake.h"

void wake_config_init(wake_config *c)
{
    *c = (wake_config){
        .llm_enabled = false,
        .llm_wake = true,
        .auto_wake = true,
        .human_wakes_all = false,
        .wake_confidence = 0.7,
        .evaluate_system = false,
        .max_personas = 1000,
        .smart_max_tokens = 200,
        .mid_max_tokens = 50,
        .autopilot_max_tokens = 300,
        .autopilot = true,
        .autopilot_interval_ms = 60000,
        .autopilot_min_gap_ms = 10000,
        .jump_factor = 2.0,
        .jump_velocity = 5.0,
        .jump_ratio = 3.0,
        .human_present_ms = 300000,
        .dominating_per_hour = 10,
        .expert_only = 0.8,
        .expert_keep = 0.7,
    };
}
