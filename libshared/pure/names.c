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

/* A suggestion answer as its button names it: yes, no or snooze in any
 * case ("Yes" as the button reads), or the snooze button's whole label, the
 * word and a duration ("Snooze 5min", "snooze 30s", the seed's option
 * value): the duration is the persona's snooze in force, which
 * dormancy-monitor applies whatever the label said. */
int vigil_answer_index(const char *s)
{
    int word = index_of(vigil_answer_names, s, strcasecmp);
    if (word >= 0 || !s)
        return word;
    size_t w = strlen("snooze");
    if (strncasecmp(s, "snooze ", w + 1) != 0)
        return -1;
    const char *d = s + w + 1;
    size_t digits = strspn(d, "0123456789");
    if (digits == 0 || digits > 9)
        return -1;
    static const char *const units[] = {"ms", "s", "min", "h"};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(d + digits, units[i]) == 0)
            return VIGIL_ANSWER_SNOOZE;
    return -1;
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
