/* human_wake_env.c - the dormancy variables rule 3 reads
 * (vigil/human_wake.h), with dormancy-monitor's names, defaults and
 * bounds, for a service that predicts the rule (floor-control). */
#include "vigil/config.h"
#include "vigil/human_wake.h"

const vigil_config_var VIGIL_HUMAN_WAKE_VARS[] = {
    {"VIGIL_DORMANCY_AUTO_WAKE", "1",
     "as dormancy-monitor's: a human message wakes dormant personas (meta dormancy.enableAutoWake "
     "overrides it per persona)"},
    {"VIGIL_DORMANCY_HUMAN_WAKES", "absent",
     "as dormancy-monitor's: 'absent' wakes dormancy from human absence, 'all' every dormancy"},
    {"VIGIL_DORMANCY_MIN_AWAKE", "2",
     "as dormancy-monitor's: a human message meets at least this many personas able to answer"},
    {NULL, NULL, NULL}};

int vigil_human_wake_config_load(vigil_human_wake_config *c, char *err, size_t errlen)
{
    vigil_human_wake_config_init(c);
    int wakes = 0;
    int64_t min_awake = 0;
    if (vigil_env_bool("VIGIL_DORMANCY_AUTO_WAKE", c->auto_wake, &c->auto_wake, err, errlen) ||
        vigil_env_choice("VIGIL_DORMANCY_HUMAN_WAKES", vigil_human_wakes_names, 0, &wakes, err,
                         errlen) ||
        vigil_env_int64("VIGIL_DORMANCY_MIN_AWAKE", c->min_awake, 0, 1000, &min_awake, err, errlen))
        return -1;
    c->human_wakes_all = wakes == 1; /* vigil_human_wakes_names: absent, all */
    c->min_awake = (int)min_awake;
    return 0;
}
