/* names.c - the core's enumerations and their wire names, which are
 * libshared's (vigil/names.h): the same order, so values convert by cast;
 * wake_level has one more value in front (UNKNOWN: no report yet). */
#include <vigil/names.h>
#include "wake.h"

_Static_assert(WAKE_TIER_BASIC == (int)VIGIL_TIER_BASIC && WAKE_TIER_MID == (int)VIGIL_TIER_MID,
               "tiers");
_Static_assert(WAKE_VIA_FALLBACK == (int)VIGIL_VIA_FALLBACK && WAKE_VIA_RULES == (int)VIGIL_VIA_RULES,
               "vias");
_Static_assert(WAKE_SENDER_SYSTEM == (int)VIGIL_SENDER_SYSTEM && WAKE_SENDER_AI == (int)VIGIL_SENDER_AI,
               "senders");
_Static_assert(WAKE_AP_KEEP == (int)VIGIL_AP_KEEP && WAKE_AP_WAKE == (int)VIGIL_AP_WAKE &&
                   WAKE_AP_AUTO_SLEEP == (int)VIGIL_AP_AUTO_SLEEP,
               "autopilot actions");
_Static_assert(WAKE_LEVEL_SLEEP == (int)VIGIL_LEVEL_SLEEP + 1 &&
                   WAKE_LEVEL_HUMAN_ONLY == (int)VIGIL_LEVEL_HUMAN_ONLY + 1 &&
                   WAKE_LEVEL_MENTION_ONLY == (int)VIGIL_LEVEL_MENTION_ONLY + 1 &&
                   WAKE_LEVEL_ACTIVE == (int)VIGIL_LEVEL_ACTIVE + 1,
               "levels: libshared's, after UNKNOWN");

const char *wake_tier_name(wake_tier t) { return vigil_tier_names[t]; }
const char *wake_via_name(wake_via v) { return vigil_via_names[v]; }
const char *wake_sender_name(wake_sender s) { return vigil_sender_type_names[s]; }
const char *wake_ap_action_name(wake_ap_action a) { return vigil_autopilot_action_names[a]; }

const char *wake_level_name(wake_level l)
{
    return l == WAKE_LEVEL_UNKNOWN ? vigil_level_name(VIGIL_LEVEL_ACTIVE)
                                   : vigil_level_name((vigil_level)(l - 1));
}

wake_level wake_level_from(vigil_level l)
{
    return (wake_level)(l + 1);
}

int wake_tier_parse(const char *s, wake_tier *out)
{
    int i = vigil_name_index(vigil_tier_names, s);
    if (i < 0)
        return -1;
    *out = (wake_tier)i;
    return 0;
}

/* "active" maps to ACTIVE, never to UNKNOWN. */
int wake_level_parse(const char *s, wake_level *out)
{
    vigil_level l;
    if (vigil_level_parse(s, &l) != 0)
        return -1;
    *out = wake_level_from(l);
    return 0;
}

int wake_sender_parse(const char *s, wake_sender *out)
{
    int i = vigil_name_index(vigil_sender_type_names, s);
    if (i < 0)
        return -1;
    *out = (wake_sender)i;
    return 0;
}

int wake_ap_action_parse(const char *s, wake_ap_action *out)
{
    int i = vigil_name_index(vigil_autopilot_action_names, s);
    if (i < 0)
        return -1;
    *out = (wake_ap_action)i;
    return 0;
}

bool wake_level_dormant(wake_level l)
{
    return l == WAKE_LEVEL_MENTION_ONLY || l == WAKE_LEVEL_HUMAN_ONLY || l == WAKE_LEVEL_SLEEP;
}
