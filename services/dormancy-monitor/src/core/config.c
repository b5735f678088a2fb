/* config.c - DormancyConfig: defaults, per-persona overrides from
 * persona/{p}/meta `dormancy`, and the config in force for one persona
 * (rule 8: each feature switch can be turned off globally or per persona). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "step.h"

#define MAX_MS (30LL * 24 * 3600 * 1000) /* thresholds above 30 days are mistakes */

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
}

dormancy_config dormancy_config_effective(const dormancy_config *base,
                                          const dormancy_overrides *ov)
{
    dormancy_config c = *base;
    if (!ov)
        return c;
    unsigned h = ov->has;
    if (h & DORMANCY_OV_AUTO_SUGGEST) c.auto_suggest = ov->auto_suggest;
    if (h & DORMANCY_OV_AUTO_SLEEP) c.auto_sleep = ov->auto_sleep;
    if (h & DORMANCY_OV_AUTO_WAKE) c.auto_wake = ov->auto_wake;
    if (h & DORMANCY_OV_NO_HUMAN) c.no_human_ms = ov->no_human_ms;
    if (h & DORMANCY_OV_AI_ONLY) c.ai_only_ms = ov->ai_only_ms;
    if (h & DORMANCY_OV_REDUNDANT_WINDOW) c.redundant_window_ms = ov->redundant_window_ms;
    if (h & DORMANCY_OV_LLM_WAKE) c.llm_wake = ov->llm_wake;
    if (h & DORMANCY_OV_WAKE_CONFIDENCE) c.wake_confidence = ov->wake_confidence;
    if (h & DORMANCY_OV_PRESENCE) c.presence = ov->presence;
    if (h & DORMANCY_OV_ADAPTIVE) c.adaptive = ov->adaptive;
    if (h & DORMANCY_OV_SUGGESTION_TIMEOUT) c.suggestion_timeout_ms = ov->suggestion_timeout_ms;
    if (h & DORMANCY_OV_SNOOZE) c.snooze_ms = ov->snooze_ms;
    if (h & DORMANCY_OV_REDUNDANT_KEEP) c.redundant_keep = ov->redundant_keep;
    return c;
}

typedef enum { K_BOOL, K_MS, K_COUNT, K_RATIO } key_type;

typedef struct key_spec {
    const char *name;
    unsigned bit;
    key_type type;
    int64_t min;
} key_spec;

static const key_spec KEYS[] = {
    {"enableAutoSuggestions", DORMANCY_OV_AUTO_SUGGEST, K_BOOL, 0},
    {"enableAutoSleep", DORMANCY_OV_AUTO_SLEEP, K_BOOL, 0},
    {"enableAutoWake", DORMANCY_OV_AUTO_WAKE, K_BOOL, 0},
    {"noHumanActivityThreshold", DORMANCY_OV_NO_HUMAN, K_MS, 0},
    {"aiOnlyDiscussionThreshold", DORMANCY_OV_AI_ONLY, K_MS, 0},
    {"redundantResponseWindow", DORMANCY_OV_REDUNDANT_WINDOW, K_MS, 0},
    {"enableLLMWakeDecisions", DORMANCY_OV_LLM_WAKE, K_BOOL, 0},
    {"wakeConfidenceThreshold", DORMANCY_OV_WAKE_CONFIDENCE, K_RATIO, 0},
    {"enablePresenceChecking", DORMANCY_OV_PRESENCE, K_BOOL, 0},
    {"enableAdaptiveThresholds", DORMANCY_OV_ADAPTIVE, K_BOOL, 0},
    {"suggestionTimeout", DORMANCY_OV_SUGGESTION_TIMEOUT, K_MS, 0},
    {"snoozeDuration", DORMANCY_OV_SNOOZE, K_MS, 0},
    {"redundantResponseKeep", DORMANCY_OV_REDUNDANT_KEEP, K_COUNT, 0},
};
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

static void store_value(dormancy_overrides *ov, unsigned bit, bool b, int64_t i, double d)
{
    switch (bit) {
    case DORMANCY_OV_AUTO_SUGGEST: ov->auto_suggest = b; break;
    case DORMANCY_OV_AUTO_SLEEP: ov->auto_sleep = b; break;
    case DORMANCY_OV_AUTO_WAKE: ov->auto_wake = b; break;
    case DORMANCY_OV_NO_HUMAN: ov->no_human_ms = i; break;
    case DORMANCY_OV_AI_ONLY: ov->ai_only_ms = i; break;
    case DORMANCY_OV_REDUNDANT_WINDOW: ov->redundant_window_ms = i; break;
    case DORMANCY_OV_LLM_WAKE: ov->llm_wake = b; break;
    case DORMANCY_OV_WAKE_CONFIDENCE: ov->wake_confidence = d; break;
    case DORMANCY_OV_PRESENCE: ov->presence = b; break;
    case DORMANCY_OV_ADAPTIVE: ov->adaptive = b; break;
    case DORMANCY_OV_SUGGESTION_TIMEOUT: ov->suggestion_timeout_ms = i; break;
    case DORMANCY_OV_SNOOZE: ov->snooze_ms = i; break;
    case DORMANCY_OV_REDUNDANT_KEEP: ov->redundant_keep = (int)i; break;
    default: break;
    }
}

/* Integers may arrive as JSON doubles with no fraction (JavaScript
 * producers); anything else is a type error naming the key. */
static int read_int(json_object *v, int64_t *out)
{
    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
        return 0;
    }
    if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (isfinite(d) && d == floor(d) && fabs(d) < 9.0e15) {
            *out = (int64_t)d;
            return 0;
        }
    }
    return -1;
}

int dormancy_overrides_parse(json_object *o, dormancy_overrides *ov, char *err, size_t errlen)
{
    memset(ov, 0, sizeof *ov);
    if (!o)
        return 0;
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "field 'dormancy': expected object");
        return -1;
    }
    for (size_t k = 0; k < N_KEYS; k++) {
        json_object *v;
        if (!json_object_object_get_ex(o, KEYS[k].name, &v) || v == NULL)
            continue;
        bool b = false;
        int64_t i = 0;
        double d = 0;
        switch (KEYS[k].type) {
        case K_BOOL:
            if (!json_object_is_type(v, json_type_boolean)) {
                snprintf(err, errlen, "field 'dormancy.%s': expected boolean", KEYS[k].name);
                return -1;
            }
            b = json_object_get_boolean(v);
            break;
        case K_MS:
        case K_COUNT:
            if (read_int(v, &i) != 0) {
                snprintf(err, errlen, "field 'dormancy.%s': expected integer", KEYS[k].name);
                return -1;
            }
            if (i < KEYS[k].min || i > (KEYS[k].type == K_MS ? MAX_MS : 1000)) {
                snprintf(err, errlen, "field 'dormancy.%s': %lld out of range %lld..%lld",
                         KEYS[k].name, (long long)i, (long long)KEYS[k].min,
                         (long long)(KEYS[k].type == K_MS ? MAX_MS : 1000));
                return -2;
            }
            break;
        case K_RATIO:
            if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
                snprintf(err, errlen, "field 'dormancy.%s': expected number", KEYS[k].name);
                return -1;
            }
            d = json_object_get_double(v);
            if (!(d >= 0.0 && d <= 1.0)) {
                snprintf(err, errlen, "field 'dormancy.%s': expected 0..1", KEYS[k].name);
                return -2;
            }
            break;
        }
        ov->has |= KEYS[k].bit;
        store_value(ov, KEYS[k].bit, b, i, d);
    }
    return 0;
}

json_object *dormancy_overrides_to_json(const dormancy_overrides *ov)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    dormancy_config base, c;
    dormancy_config_init(&base);
    c = dormancy_config_effective(&base, ov);
    for (size_t k = 0; k < N_KEYS; k++) {
        if (!(ov->has & KEYS[k].bit))
            continue;
        json_object *v = NULL;
        switch (KEYS[k].bit) {
        case DORMANCY_OV_AUTO_SUGGEST: v = json_object_new_boolean(c.auto_suggest); break;
        case DORMANCY_OV_AUTO_SLEEP: v = json_object_new_boolean(c.auto_sleep); break;
        case DORMANCY_OV_AUTO_WAKE: v = json_object_new_boolean(c.auto_wake); break;
        case DORMANCY_OV_NO_HUMAN: v = json_object_new_int64(c.no_human_ms); break;
        case DORMANCY_OV_AI_ONLY: v = json_object_new_int64(c.ai_only_ms); break;
        case DORMANCY_OV_REDUNDANT_WINDOW: v = json_object_new_int64(c.redundant_window_ms); break;
        case DORMANCY_OV_LLM_WAKE: v = json_object_new_boolean(c.llm_wake); break;
        case DORMANCY_OV_WAKE_CONFIDENCE: v = json_object_new_double(c.wake_confidence); break;
        case DORMANCY_OV_PRESENCE: v = json_object_new_boolean(c.presence); break;
        case DORMANCY_OV_ADAPTIVE: v = json_object_new_boolean(c.adaptive); break;
        case DORMANCY_OV_SUGGESTION_TIMEOUT: v = json_object_new_int64(c.suggestion_timeout_ms); break;
        case DORMANCY_OV_SNOOZE: v = json_object_new_int64(c.snooze_ms); break;
        case DORMANCY_OV_REDUNDANT_KEEP: v = json_object_new_int(c.redundant_keep); break;
        default: break;
        }
        if (v)
            json_object_object_add(o, KEYS[k].name, v);
    }
    return o;
}
