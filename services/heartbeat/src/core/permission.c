/* permission.c - the sandbox check before a proactive message: the
 * persona's user allows all proactive messages, none, or some categories
 * (heartbeat/{p}/config `allow_proactive`: true, false or a list). */
#include "heartbeat.h"

bool hb_permitted(unsigned allow_mask, hb_category c)
{
    if (c < 0 || c >= HB_CAT__COUNT)
        return false;
    return (allow_mask & (1u << c)) != 0;
}
