/* names.c - the wire names of the core's enumerations (topics/schemas). */
#include <string.h>
#include "wake.h"

static const char *const TIERS[] = {"smart", "mid", "basic", NULL};
static const char *const VIAS[] = {"llm", "rules", "fallback", NULL};
static const char *const LEVELS[] = {"active", "active", "mention-only", "human-only", "sleep", NULL};
static const char *const SENDERS[] = {"human", "ai", "system", NULL};
static const char *const AP_ACTIONS[] = {"suggest-mention-only", "auto-sleep", "wake", "keep", NULL};

static int lookup(const char *const *names, const char *s, int first)
{
    if (!s)
        return -1;
    for (int i = first; names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

const char *wake_tier_name(wake_tier t) { return TIERS[t]; }
const char *wake_via_name(wake_via v) { return VIAS[v]; }
const char *wake_level_name(wake_level l) { return LEVELS[l]; }
const char *wake_sender_name(wake_sender s) { return SENDERS[s]; }
const char *wake_ap_action_name(wake_ap_action a) { return AP_ACTIONS[a]; }

int wake_tier_parse(const char *s, wake_tier *out)
{
    int i = lookup(TIERS, s, 0);
    if (i < 0)
        return -1;
    *out = (wake_tier)i;
    return 0;
}

/* "active" maps to ACTIVE (index 1), never to UNKNOWN. */
int wake_level_parse(const char *s, wake_level *out)
{
    int i = lookup(LEVELS, s, 1);
    if (i < 0)
        return -1;
    *out = (wake_level)i;
    return 0;
}

int wake_sender_parse(const char *s, wake_sender *out)
{
    int i = lookup(SENDERS, s, 0);
    if (i < 0)
        return -1;
    *out = (wake_sender)i;
    return 0;
}

int wake_ap_action_parse(const char *s, wake_ap_action *out)
{
    int i = lookup(AP_ACTIONS, s, 0);
    if (i < 0)
        return -1;
    *out = (wake_ap_action)i;
    return 0;
}

bool wake_level_dormant(wake_level l)
{
    return l == WAKE_LEVEL_MENTION_ONLY || l == WAKE_LEVEL_HUMAN_ONLY || l == WAKE_LEVEL_SLEEP;
}
