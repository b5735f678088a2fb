/* tier.c - which intelligence tier decides for a persona (the
 * specified getIntelligenceTier): an explicit meta `tier`, else the model size in
 * `parameters` (> 70e9 smart, > 7e9 mid, otherwise basic); basic when
 * nothing is known, because the rules need no model. */
#include <string.h>
#include "wake.h"

#define SMART_ABOVE 70000000000LL
#define MID_ABOVE 7000000000LL

wake_tier wake_tier_select(const char *tier, int64_t parameters)
{
    wake_tier t;
    if (tier && tier[0] && wake_tier_parse(tier, &t) == 0)
        return t;
    if (parameters > SMART_ABOVE)
        return WAKE_TIER_SMART;
    if (parameters > MID_ABOVE)
        return WAKE_TIER_MID;
    return WAKE_TIER_BASIC;
}

wake_tier wake_persona_tier(const wake_persona *p)
{
    return wake_tier_select(p->tier, p->parameters);
}
