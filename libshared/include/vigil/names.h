/* names.h - the wire names of the contract's enumerations, defined once.
 * Pure (libshared/pure, library vigil_text): cores may use it.
 *
 * Each *_names array is indexed by its enum and NULL-terminated, so it can
 * be handed to vigil_json_enum() as the allowed values. Services keep their
 * own enums only where they need more values (a core's "unknown"); they
 * convert through these names, never spell them again. */
#ifndef VIGIL_NAMES_H
#define VIGIL_NAMES_H

/* Dormancy levels (persona/{p}/state, persona/{p}/dormancy, commands). */
typedef enum {
    VIGIL_LEVEL_ACTIVE = 0,
    VIGIL_LEVEL_MENTION_ONLY,
    VIGIL_LEVEL_HUMAN_ONLY,
    VIGIL_LEVEL_SLEEP,
    VIGIL_LEVEL__COUNT
} vigil_level;
extern const char *const vigil_level_names[];
/* The name of l; "active" for a value out of range. */
const char *vigil_level_name(vigil_level l);
/* 0 and *out set, or -1 for an unknown name (or NULL). */
int vigil_level_parse(const char *s, vigil_level *out);

/* room/{r}/message sender_type. */
typedef enum { VIGIL_SENDER_HUMAN = 0, VIGIL_SENDER_AI, VIGIL_SENDER_SYSTEM } vigil_sender_type;
extern const char *const vigil_sender_type_names[];

/* Model tiers (persona/{p}/meta tier, persona/{p}/wake tier). */
typedef enum { VIGIL_TIER_SMART = 0, VIGIL_TIER_MID, VIGIL_TIER_BASIC } vigil_tier;
extern const char *const vigil_tier_names[];

/* room/{r}/presence status. */
typedef enum { VIGIL_PRESENCE_ACTIVE = 0, VIGIL_PRESENCE_IDLE, VIGIL_PRESENCE_AWAY } vigil_presence_status;
extern const char *const vigil_presence_status_names[];

/* room/{r}/control action. */
typedef enum {
    VIGIL_CONTROL_PAUSE = 0,
    VIGIL_CONTROL_RESUME,
    VIGIL_CONTROL_DELETE,
    VIGIL_CONTROL_WAKE
} vigil_control_action;
extern const char *const vigil_control_action_names[];

/* persona/{p}/command cmd and answer. */
typedef enum {
    VIGIL_COMMAND_DORMANT = 0,
    VIGIL_COMMAND_AWAKE,
    VIGIL_COMMAND_STATUS,
    VIGIL_COMMAND_ANSWER
} vigil_command;
extern const char *const vigil_command_names[];
typedef enum { VIGIL_ANSWER_YES = 0, VIGIL_ANSWER_NO, VIGIL_ANSWER_SNOOZE } vigil_answer;
extern const char *const vigil_answer_names[];

/* persona/{p}/wake via. */
typedef enum { VIGIL_VIA_LLM = 0, VIGIL_VIA_RULES, VIGIL_VIA_FALLBACK } vigil_via;
extern const char *const vigil_via_names[];

/* room/{r}/autopilot decisions[].action and source. */
typedef enum {
    VIGIL_AP_SUGGEST_MENTION_ONLY = 0,
    VIGIL_AP_AUTO_SLEEP,
    VIGIL_AP_WAKE,
    VIGIL_AP_KEEP
} vigil_autopilot_action;
extern const char *const vigil_autopilot_action_names[];
extern const char *const vigil_autopilot_source_names[]; /* "llm", "rules" */

/* VIGIL_DORMANCY_HUMAN_WAKES: "absent" (index 0) or "all" (index 1). */
extern const char *const vigil_human_wakes_names[];

/* Index of s in names (NULL-terminated), or -1 (also for s == NULL). */
int vigil_name_index(const char *const *names, const char *s);
/* A suggestion's answer (vigil_answer_names) in any case ("Yes" as its
 * button reads), or the snooze button's label ("Snooze 5min": snooze, for
 * the persona's own snooze length): the index, or -1. */
int vigil_answer_index(const char *s);

#endif
