/* msg_persona.h - the one reader of each persona/{persona}/... input: meta
 * (with its `dormancy` overrides), state and command. Same conventions as
 * msg_room.h: the payload object in, a typed struct out whose strings point
 * into it, 0 or -1 with a precise reason, *_release() for what is malloc'd.
 * Pure (libshared/pure, library vigil_text): cores may use it.
 *
 * Leniency beside topics/schemas (producers must not rely on it):
 * persona/{p}/meta fields are all optional to a consumer (a persona runner
 * may announce only `rooms`), and a persona/{p}/state room entry may omit
 * `since` (the snapshot's ts is meant) and `trigger`. */
#ifndef VIGIL_MSG_PERSONA_H
#define VIGIL_MSG_PERSONA_H
#include <stdbool.h>
#include <stdint.h>
#include "json.h"
#include "names.h"

#define VIGIL_MSG_MAX_DOMAINS 64 /* expertise_domains, confidence_levels entries */
#define VIGIL_OVERRIDE_MAX_MS (30LL * 24 * 3600 * 1000) /* thresholds above 30 days are mistakes */
#define VIGIL_OVERRIDE_MAX_COUNT 1000
/* A command's suggestion_id as dormancy-monitor reads it: up to 160, so a
 * suggestion made by an earlier version (whose ids reached 160 with a long
 * input id) can still be answered; ids made now are eventIds (128 at most),
 * which is what presence-gateway lets a client send. */
#define VIGIL_MSG_SUGGESTION_ID_MAX 160

/* Per-persona overrides of DormancyConfig (persona/{p}/meta `dormancy`,
 * with the specified camelCase names). `has` says which fields are set. */
enum {
    VIGIL_OV_AUTO_SUGGEST = 1u << 0,        /* enableAutoSuggestions */
    VIGIL_OV_AUTO_SLEEP = 1u << 1,          /* enableAutoSleep */
    VIGIL_OV_AUTO_WAKE = 1u << 2,           /* enableAutoWake */
    VIGIL_OV_NO_HUMAN = 1u << 3,            /* noHumanActivityThreshold */
    VIGIL_OV_AI_ONLY = 1u << 4,             /* aiOnlyDiscussionThreshold */
    VIGIL_OV_REDUNDANT_WINDOW = 1u << 5,    /* redundantResponseWindow */
    VIGIL_OV_LLM_WAKE = 1u << 6,            /* enableLLMWakeDecisions */
    VIGIL_OV_WAKE_CONFIDENCE = 1u << 7,     /* wakeConfidenceThreshold */
    VIGIL_OV_PRESENCE = 1u << 8,            /* enablePresenceChecking */
    VIGIL_OV_ADAPTIVE = 1u << 9,            /* enableAdaptiveThresholds */
    VIGIL_OV_SUGGESTION_TIMEOUT = 1u << 10, /* suggestionTimeout (extension) */
    VIGIL_OV_SNOOZE = 1u << 11,             /* snoozeDuration (extension) */
    VIGIL_OV_REDUNDANT_KEEP = 1u << 12      /* redundantResponseKeep (extension) */
};

typedef struct vigil_dormancy_overrides {
    unsigned has; /* VIGIL_OV_* bits */
    bool auto_suggest, auto_sleep, auto_wake, llm_wake, presence, adaptive;
    int64_t no_human_ms, ai_only_ms, redundant_window_ms, suggestion_timeout_ms, snooze_ms;
    int redundant_keep;
    double wake_confidence;
} vigil_dormancy_overrides;

/* Reads a `dormancy` object (NULL = none: nothing set). Unknown keys are
 * ignored; a known key of the wrong type is wrong_type, out of range
 * (thresholds 1 ms..30 days, as their VIGIL_DORMANCY_* variables, but
 * redundantResponseWindow 0..30 days; counts 0..1000; confidence 0..1) bad_value,
 * both naming "dormancy.<key>". */
int vigil_dormancy_overrides_read(json_object *o, vigil_dormancy_overrides *ov, vigil_error *err);
/* The inverse (camelCase keys, only those set): a new object, NULL when
 * out of memory. Reading it back gives the same overrides. */
json_object *vigil_dormancy_overrides_to_json(const vigil_dormancy_overrides *ov);
/* True when a and b hold the same overrides, field by field (every reader
 * starts from zero, so the fields not set compare equal too). */
bool vigil_dormancy_overrides_equal(const vigil_dormancy_overrides *a,
                                    const vigil_dormancy_overrides *b);

/* persona/{persona}/meta */
typedef struct vigil_persona_meta {
    const char *name, *role, *model, *mood; /* NULL when absent */
    const char **rooms;   /* malloc'd, NULL-terminated ids; NULL when absent */
    int n_rooms;
    const char **domains; /* malloc'd expertise_domains; NULL when absent */
    int n_domains;
    const char **conf_domains; /* malloc'd confidence_levels keys ... */
    double *conf_values;       /* ... and values in 0..1 (malloc'd) */
    int n_conf;
    bool has_tier;
    vigil_tier tier;
    int64_t parameters;  /* >= 0, or -1 when absent */
    double availability; /* 0..1, or -1 when absent */
    vigil_dormancy_overrides dormancy; /* has == 0 when absent */
} vigil_persona_meta;

/* max_rooms bounds `rooms` (more: bad_value naming the limit). */
int vigil_persona_meta_read(json_object *body, int max_rooms, vigil_persona_meta *out,
                            vigil_error *err);
void vigil_persona_meta_release(vigil_persona_meta *m);
/* A meta that says nothing, every field absent: what "{}" reads as, and
 * what a cleared retained persona/{p}/meta means (no rooms, no name, no
 * overrides). Needs no release. */
void vigil_persona_meta_init(vigil_persona_meta *m);

/* persona/{persona}/state: one entry per room the persona is in. */
typedef struct vigil_persona_room_state {
    const char *room; /* id */
    vigil_level level;
    bool has_since;
    int64_t since;         /* >= 0 when has_since */
    const char *trigger;   /* NULL when absent */
    int64_t snoozed_until; /* >= 0; 0 when absent */
    /* what rule 3 (vigil/human_wake.h) needs: why it is dormant (NONE when
     * absent), when it last answered a human (>= 0; 0 when absent) and its
     * arrival order in the room; has_order false = a producer older than
     * these fields (its cause is then unknown, not NONE) */
    int cause; /* vigil_cause */
    int64_t answered_human;
    bool has_order;
    int64_t order; /* >= 0 when has_order */
} vigil_persona_room_state;

typedef struct vigil_persona_state {
    vigil_persona_room_state *rooms; /* malloc'd; NULL when empty */
    int n_rooms;
} vigil_persona_state;

/* max_rooms bounds the `rooms` map (more: bad_value naming the limit). */
int vigil_persona_state_read(json_object *body, int max_rooms, vigil_persona_state *out,
                             vigil_error *err);
void vigil_persona_state_release(vigil_persona_state *s);
/* The entry for room, or NULL. */
const vigil_persona_room_state *vigil_persona_state_room(const vigil_persona_state *s,
                                                         const char *room);

/* persona/{persona}/command. `dormant` needs a dormant `level` and an
 * `until` (if any) after now_ms; `answer` needs `answer`. */
typedef struct vigil_persona_command {
    vigil_command cmd;
    bool has_level;
    vigil_level level;     /* when has_level; never ACTIVE for `dormant` */
    int64_t until;         /* > now for `dormant`; 0 when absent */
    const char *room;      /* id, NULL when absent */
    const char *suggestion_id; /* event id, NULL when absent */
    bool has_answer;
    vigil_answer answer;   /* when has_answer (always for `answer`) */
    const char *by;        /* id, NULL when absent */
} vigil_persona_command;

int vigil_persona_command_read(json_object *body, int64_t now_ms, vigil_persona_command *out,
                               vigil_error *err);

#endif
