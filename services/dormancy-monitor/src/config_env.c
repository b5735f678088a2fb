/* config_env.c - the VIGIL_DORMANCY_* variables of docs/contract.md (all times
 * in milliseconds, booleans 0/1) into the core's dormancy_config. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <vigil/config.h>
#include <vigil/names.h>
#include "adapter.h"

const vigil_config_var DORMANCY_CONFIG_VARS[] = {
    {"VIGIL_DORMANCY_AUTO_SUGGEST", "1", "rule 1/4: make mention-only suggestions (0 = off)"},
    {"VIGIL_DORMANCY_AUTO_SLEEP", "1", "rule 2: force sleep after AI-only discussion (0 = off)"},
    {"VIGIL_DORMANCY_AUTO_WAKE", "1", "rule 3: wake personas on a human message (0 = off)"},
    {"VIGIL_DORMANCY_NO_HUMAN_MS", "300000", "rule 1: no-human threshold before the suggestion"},
    {"VIGIL_DORMANCY_AI_ONLY_MS", "900000", "rule 2: AI-only duration before the forced sleep"},
    {"VIGIL_DORMANCY_REDUNDANT_WINDOW_MS", "30000", "rule 4: window for answers to one human message"},
    {"VIGIL_DORMANCY_REDUNDANT_KEEP", "2", "rule 4: responders kept before suggesting mention-only"},
    {"VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS", "30000", "a suggestion's default (yes) applies after this"},
    {"VIGIL_DORMANCY_SNOOZE_MS", "300000", "'snooze' asks again after this if still quiet"},
    {"VIGIL_DORMANCY_LLM_WAKE", "1", "honour wake decisions made by an LLM (0 = rules/fallback only)"},
    {"VIGIL_DORMANCY_WAKE_CONFIDENCE", "0.7", "a wake decision needs confidence above this"},
    {"VIGIL_DORMANCY_PRESENCE", "0", "rule 6: an active human blocks suggestions and auto-sleep"},
    {"VIGIL_DORMANCY_ADAPTIVE", "0", "rule 7: no-human threshold x3/5 or x7/5 by velocity"},
    {"VIGIL_DORMANCY_HUMAN_WAKES", "absent",
     "'absent': wake absence-caused dormancy; 'all': a human message wakes every dormant persona"},
    {"VIGIL_DORMANCY_MIN_AWAKE", "2", "a human message meets at least this many personas able to answer"},
    {"VIGIL_DORMANCY_PRESENCE_ACTIVE_MS", "120000", "rule 6: a session is active this long after activity"},
    {"VIGIL_DORMANCY_PRESENCE_AWAY_MS", "300000", "rule 6: ... idle until this, then away"},
    {"VIGIL_DORMANCY_VELOCITY_WINDOW_MS", "300000", "window of velocity_per_min and ai_to_human_ratio"},
    {"VIGIL_DORMANCY_TZ_OFFSET_MIN", "0", "minutes east of UTC for '@self dormant ... until 17:00'"},
    {"VIGIL_DORMANCY_MAX_PERSONAS", "1000", "personas tracked per room; more are refused on sys/dormancy-monitor/error (reason limit)"},
    {"VIGIL_DORMANCY_BIG_ROOM", "100", "a room of more personas coalesces its room/{r}/state ..."},
    {"VIGIL_DORMANCY_BIG_ROOM_STATE_MS", "1000", "... into at most one publish per this (0 = every change)"},
    {NULL, NULL, NULL}};

int dormancy_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen)
{
    (void)common;
    dormancy_service *svc = ctx;
    dormancy_config *c = &svc->cfg;
    dormancy_config_init(c);
    int64_t keep, min_awake, tz, max_personas, big_room;
    int wakes = 0;
    if (vigil_env_bool("VIGIL_DORMANCY_AUTO_SUGGEST", c->auto_suggest, &c->auto_suggest, err, errlen) ||
        vigil_env_bool("VIGIL_DORMANCY_AUTO_SLEEP", c->auto_sleep, &c->auto_sleep, err, errlen) ||
        vigil_env_bool("VIGIL_DORMANCY_AUTO_WAKE", c->auto_wake, &c->auto_wake, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_NO_HUMAN_MS", c->no_human_ms, 1, &c->no_human_ms, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_AI_ONLY_MS", c->ai_only_ms, 1, &c->ai_only_ms, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_REDUNDANT_WINDOW_MS", c->redundant_window_ms, 0,
                     &c->redundant_window_ms, err, errlen) ||
        vigil_env_int64("VIGIL_DORMANCY_REDUNDANT_KEEP", c->redundant_keep, 0, 1000, &keep, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS", c->suggestion_timeout_ms, 1,
                     &c->suggestion_timeout_ms, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_SNOOZE_MS", c->snooze_ms, 1, &c->snooze_ms, err, errlen) ||
        vigil_env_bool("VIGIL_DORMANCY_LLM_WAKE", c->llm_wake, &c->llm_wake, err, errlen) ||
        vigil_env_double("VIGIL_DORMANCY_WAKE_CONFIDENCE", c->wake_confidence, 0.0, 1.0,
                         &c->wake_confidence, err, errlen) ||
        vigil_env_bool("VIGIL_DORMANCY_PRESENCE", c->presence, &c->presence, err, errlen) ||
        vigil_env_bool("VIGIL_DORMANCY_ADAPTIVE", c->adaptive, &c->adaptive, err, errlen) ||
        vigil_env_choice("VIGIL_DORMANCY_HUMAN_WAKES", vigil_human_wakes_names, 0, &wakes, err, errlen) ||
        vigil_env_int64("VIGIL_DORMANCY_MIN_AWAKE", c->min_awake, 0, 1000, &min_awake, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_PRESENCE_ACTIVE_MS", c->presence_active_ms, 1,
                     &c->presence_active_ms, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_PRESENCE_AWAY_MS", c->presence_away_ms, 1, &c->presence_away_ms,
                     err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_VELOCITY_WINDOW_MS", c->velocity_window_ms, 1,
                     &c->velocity_window_ms, err, errlen) ||
        vigil_env_int64("VIGIL_DORMANCY_TZ_OFFSET_MIN", c->tz_offset_min, -720, 840, &tz, err, errlen) ||
        vigil_env_int64("VIGIL_DORMANCY_MAX_PERSONAS", c->max_personas, 1, DORMANCY_MAX_PERSONAS_LIMIT,
                        &max_personas, err, errlen) ||
        vigil_env_int64("VIGIL_DORMANCY_BIG_ROOM", c->big_room, 0, DORMANCY_MAX_PERSONAS_LIMIT,
                        &big_room, err, errlen) ||
        vigil_env_ms("VIGIL_DORMANCY_BIG_ROOM_STATE_MS", c->big_room_state_ms, 0,
                     &c->big_room_state_ms, err, errlen))
        return -1;
    c->human_wakes_all = wakes == 1; /* vigil_human_wakes_names: absent, all */
    if (c->presence_away_ms < c->presence_active_ms) {
        snprintf(err, errlen, "VIGIL_DORMANCY_PRESENCE_AWAY_MS must be >= VIGIL_DORMANCY_PRESENCE_ACTIVE_MS");
        return -1;
    }
    c->redundant_keep = (int)keep;
    c->min_awake = (int)min_awake;
    c->max_personas = (int)max_personas;
    c->big_room = (int)big_room;
    c->tz_offset_min = (int)tz;
    return 0;
}
