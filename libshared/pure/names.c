/* names.c - the wire names of the contract's enumerations (names.h). */
#include "vigil/names.h"

#include <string.h>
#include <strings.h>

const char *const vigil_level_names[] = {"active", "mention-only", "human-only", "sleep", NULL};
const char *const vigil_sender_type_names[] = {"human", "ai", "system", NULL};
const char *const vigil_tier_names[] = {"smart", "mid", "basic", NULL};
const char *const vigil_presence_status_names[] = {"active", "idle", "away", NULL};
const char *const vigil_control_action_names[] = {"pause", "resume", "delete", "wake", NULL};
const char *const vigil_command_names[] = {"dormant", "awake", "status", "answer", NULL};
const char *const vigil_answer_names[] = {"yes", "no", "snooze", NULL};
const char *const vigil_via_names[] = {"llm", "rules", "fallback", NULL};
const char *const vigil_autopilot_action_names[] = {"suggest-mention-only", "auto-sleep", "wake",
                                                    "keep", NULL};
const char *const vigil_autopilot_source_names[] = {"llm", "rules", NULL};
const char *const vigil_human_wakes_names[] = {"absent", "all", NULL};

static int index_of(const char *const *names, const char *s,
                    int (*same)(const char *, const char *))
{
    if (!s)
        return -1;
    for (int i = 0; names[i]; i++)
        if (same(names[i], s) == 0)
            return i;
    return -1;
}

int vigil_answer_index(const char *s)
{
    return index_of(vigil_answer_names, s, strcasecmp);
}

int vigil_name_index(const char *const *names, const char *s)
{
    return index_of(names, s, strcmp);
}

const char *vigil_level_name(vigil_level l)
{
    return (l >= 0 && l < VIGIL_LEVEL__COUNT) ? vigil_level_names[l] : vigil_level_names[0];
}

int vigil_level_parse(const char *s, vigil_level *out)
{
    int i = vigil_name_index(vigil_level_names, s);
    if (i < 0)
        return -1;
    *out = (vigil_level)i;
    return 0;
}
