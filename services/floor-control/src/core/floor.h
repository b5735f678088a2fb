/* floor.h - floor control's pure decision core: who answers a human
 * message, chosen before anyone generates.
 *
 * The core keeps a bounded view of one room (its personas: role, expertise
 * domains and confidence, dormancy level, when each last spoke), learned
 * from persona/{p}/meta, the retained persona/{p}/state and the room's
 * messages, and turns a human message into a floor decision: K personas
 * granted besides the @mentioned ones, who always are (even beyond K).
 * Which dormant personas the message wakes is dormancy-monitor's rule 3,
 * run here with the same code (vigil/human_wake.h) on what
 * persona/{p}/state and persona/{p}/meta say.
 *
 * No I/O: `now` is a parameter, the room travels as JSON between inputs
 * (floor_room_from_json / floor_room_to_json). Links json-c and vigil_text
 * only. */
#ifndef FLOOR_H
#define FLOOR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <vigil/human_wake.h>

#define FLOOR_ID_MAX 64          /* persona and room ids */
#define FLOOR_WORD_MAX 64        /* a domain, a role, a display name */
/* expertise domains kept per persona (expertise_domains, then the other
 * confidence_levels keys) */
#define FLOOR_MAX_DOMAINS 32
#define FLOOR_TRIGGER_MAX 32
#define FLOOR_MAX_WAKE_TRIGGERS 8
/* The fallback triggers of dormancy from human absence: suggestion-default
 * is not among them, as it ends suggestions of either cause. */
#define FLOOR_WAKE_TRIGGERS_DEFAULT "no-human,ai-only"
#define FLOOR_REASON_MAX 256
#define FLOOR_CONFIDENCE_UNSET (-1.0)
#define FLOOR_UNKNOWN (-1)       /* a persona's cause, order or auto-wake not known */
#define FLOOR_CONFIDENCE_DEFAULT 0.5 /* a listed domain without a confidence level */
#define FLOOR_MAX_PENDING 64     /* messages waiting for the LLM per room */
#define FLOOR_TEXT_MAX 4096      /* text of a message that may wait for the LLM (bytes) */
#define FLOOR_MAX_MENTIONS 32    /* `mentions` of a message that may wait for the LLM */
/* Names read from one message's mentions (text and `mentions`) when looking
 * for mentioned personas the view does not know; more are not granted. */
#define FLOOR_MAX_NAMES 64
#define FLOOR_MSG_ID_MAX 128
#define FLOOR_TIMER_NAME_MAX 24
#define FLOOR_NOTE_MAX 512       /* a refusal's detail */
/* Refusals one input can cause in one room: at most 4 (a meta: name, role,
 * domains, and the persona it adds dropping others), tested. */
#define FLOOR_MAX_NOTES 4

typedef enum {
    FLOOR_ACTIVE = 0,
    FLOOR_MENTION_ONLY,
    FLOOR_HUMAN_ONLY,
    FLOOR_SLEEP
} floor_level;

typedef enum { FLOOR_SENDER_HUMAN = 0, FLOOR_SENDER_AI, FLOOR_SENDER_SYSTEM } floor_sender_type;

typedef struct floor_config {
    int k;             /* personas granted per human message besides the mentioned; 0 = off */
    int max_personas;  /* room view bound; the least recently seen persona is dropped */
    /* dormancy-monitor's VIGIL_DORMANCY_AUTO_WAKE, _HUMAN_WAKES, _MIN_AWAKE */
    vigil_human_wake_config wake;
    /* Fallback for a persona state without `cause` (a dormancy-monitor older
     * than that field): a persona dormant for one of these triggers is taken
     * as dormant from human absence, any other as dormant by choice. */
    char wake_triggers[FLOOR_MAX_WAKE_TRIGGERS][FLOOR_TRIGGER_MAX];
    int n_wake_triggers;
    bool on_ai; /* decide AI messages too (default: human messages only) */
    /* LLM relevance: > 0 = ask a model which personas fit the message and
     * wait for it at most this long, then decide by the rules */
    int64_t llm_budget_ms;
} floor_config;

/* Defaults: k 2, max_personas 256, dormancy-monitor's rule 3 defaults
 * (auto-wake on, human wakes absent, min awake 2), fallback wake triggers
 * no-human, ai-only. */
void floor_config_init(floor_config *c);
/* Parses a comma-separated trigger list into c->wake_triggers. Returns 0,
 * or -1 when an entry is empty, too long, or there are too many. */
int floor_config_set_wake_triggers(floor_config *c, const char *csv);

typedef struct floor_persona {
    char id[FLOOR_ID_MAX + 1];
    char name[FLOOR_WORD_MAX + 1]; /* display name from meta ("" = none) */
    char role[FLOOR_WORD_MAX + 1];
    char domains[FLOOR_MAX_DOMAINS][FLOOR_WORD_MAX + 1];
    double confidence[FLOOR_MAX_DOMAINS]; /* FLOOR_CONFIDENCE_UNSET when not given */
    int n_domains;
    floor_level level;
    char trigger[FLOOR_TRIGGER_MAX]; /* why it is at that level ("" = never moved) */
    /* What rule 3 needs (persona/{p}/state; meta): the dormancy's cause
     * (vigil_cause, or FLOOR_UNKNOWN: the state did not say, the trigger
     * list decides), when it last answered a human (0 = never or not said),
     * its arrival order in dormancy-monitor's room (FLOOR_UNKNOWN: after
     * the known ones, in view order), and its meta's dormancy.enableAutoWake
     * (1, 0, or FLOOR_UNKNOWN: VIGIL_DORMANCY_AUTO_WAKE decides). */
    int cause;
    int64_t answered_human;
    int64_t order;
    int auto_wake;
    int64_t last_spoke;              /* 0 = never spoke in the room */
    int64_t seen;                    /* last time anything was learned about it */
    bool in_meta;                    /* its meta lists the room */
} floor_persona;

/* A message whose decision waits for the LLM (until `due`). */
typedef struct floor_pending {
    char id[FLOOR_MSG_ID_MAX + 1];
    char sender[FLOOR_ID_MAX + 1];
    floor_sender_type sender_type;
    char text[FLOOR_TEXT_MAX + 1];
    char mentions[FLOOR_MAX_MENTIONS][FLOOR_ID_MAX + 1];
    int n_mentions;
    int64_t due;
} floor_pending;

/* Something a bound refused of the input being applied: the shell says
 * it on sys/floor-control/error and counts it in
 * vigil_limit_refusals_total{limit}. */
typedef struct floor_note {
    const char *limit; /* the metric label: "personas_per_room", ... */
    char detail[FLOOR_NOTE_MAX];
} floor_note;

typedef struct floor_room {
    char room[FLOOR_ID_MAX + 1];
    floor_persona *personas;
    int n, cap;
    floor_pending *pending;
    int n_pending;
    int64_t last_message; /* receive time of the room's last human or AI message */
    /* What the bounds refused while one input was applied to the room
     * (never stored): the refusals, and the personas the room's bound
     * dropped (so the shell takes them out of their member sets). */
    floor_note notes[FLOOR_MAX_NOTES];
    int n_notes;
    char (*dropped)[FLOOR_ID_MAX + 1];
    int n_dropped;
} floor_room;

floor_room *floor_room_new(const char *room);
void floor_room_free(floor_room *r);
floor_persona *floor_room_find(floor_room *r, const char *id);
/* The persona's entry, added (at level active) if missing; when the room
 * holds max_personas already, the least recently seen one is dropped to
 * make room (listed in r->dropped, and noted: limit "personas_per_room").
 * NULL only on allocation failure. */
floor_persona *floor_room_ensure(floor_room *r, const char *id, int max_personas, int64_t now);
/* A new entry for id at the end of the view (level active, seen now),
 * without looking for one already there nor applying the bound: for a
 * caller that knows id is absent (the record's load). NULL only on
 * allocation failure. */
floor_persona *floor_room_append(floor_room *r, const char *id, int64_t now);
void floor_room_remove(floor_room *r, const char *id);

/* Notes a refusal on r (detail printf-style) and returns the note. The
 * array holds the most one input can cause; were it ever full, the last
 * note would be replaced, so the newest is always returned. */
const floor_note *floor_note_add(floor_room *r, const char *limit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Room record <-> JSON. from_json returns NULL with err on a record that
 * cannot be read. to_json returns a new object (NULL on allocation
 * failure). */
floor_room *floor_room_from_json(const char *json, const char *room, char *err, size_t errlen);
json_object *floor_room_to_json(const floor_room *r);

/* --- learning (each returns true when the view changed) ------------------ */

typedef struct floor_meta {
    const char *persona;
    const char *name;       /* may be NULL */
    const char *role;       /* may be NULL */
    const char *const *rooms;
    int n_rooms;
    const char *const *domains;
    int n_domains;
    /* confidence_levels as parallel arrays (domain, value in 0..1; the
     * caller validated them); a domain not listed has no confidence */
    const char *const *conf_domains;
    const double *conf_values;
    int n_conf;
    /* dormancy.enableAutoWake, when has_auto_wake */
    bool has_auto_wake, auto_wake;
} floor_meta;

/* persona/{p}/meta for room r: a listed room adds or refreshes the persona
 * (name, role, domains, confidence); a room no longer listed drops a
 * persona that is there only because of its meta, and refreshes one that
 * stays (it spoke there): the profile is the persona's, whichever rooms
 * its meta lists. Its domains are its
 * expertise_domains and the confidence_levels keys they do not name.
 * *joined / *left say which happened (either may be NULL). A name or role
 * longer than FLOOR_WORD_MAX is not kept, nor are domains past
 * FLOOR_MAX_DOMAINS: each is noted on r (limits "name_bytes",
 * "role_bytes", "domains_per_persona"). */
bool floor_learn_meta(floor_room *r, const floor_config *c, const floor_meta *m, int64_t now,
                      bool *joined, bool *left);

/* persona/{p}/state's entry for one room. */
typedef struct floor_state_entry {
    floor_level level;
    const char *trigger;    /* may be NULL */
    int cause;              /* vigil_cause, or FLOOR_UNKNOWN (the entry has no `order`) */
    int64_t answered_human; /* 0 when absent */
    int64_t order;          /* FLOOR_UNKNOWN when absent */
} floor_state_entry;

/* persona/{p}/state's entry for room r: the persona's level, why, and what
 * rule 3 needs (a trigger of FLOOR_TRIGGER_MAX bytes or more is not kept:
 * noted on r, limit "trigger_bytes"). */
bool floor_learn_level(floor_room *r, const floor_config *c, const char *persona,
                       const floor_state_entry *e, int64_t now, bool *joined);

/* persona/{p}/state without an entry for room r (the state was cleared, or
 * no longer lists r): r forgets p's level as if no state had been received
 * for it (active, no trigger, cause, order nor last answer to a human). A
 * persona that is in r only through its states (its meta does not list r
 * and it never spoke there) leaves the view (*left, may be NULL). Returns
 * true when the view changed: false when p is not in r, or has no level
 * to forget (so a second clear changes nothing). */
bool floor_forget_level(floor_room *r, const char *persona, bool *left);

/* An AI message in the room: its sender spoke now (and is a member). */
bool floor_learn_spoke(floor_room *r, const floor_config *c, const char *persona, int64_t now,
                       bool *joined);

/* A human or AI message in the room at now (for floor_forget). */
void floor_learn_message(floor_room *r, int64_t now);

/* room/{r}/control `delete` forgets every persona of the room, unless
 * if_inactive_since > 0 and the room had a message at or after it (the
 * cleanup of `vigil chat cleanup` keeps a room that got a message
 * meanwhile, as chat-router and dormancy-monitor do). floor_may_forget
 * says which; floor_forget empties the view. Messages waiting for the LLM
 * stay (their deadline decides them). */
bool floor_may_forget(const floor_room *r, int64_t if_inactive_since);
void floor_forget(floor_room *r);

/* --- the choice ---------------------------------------------------------- */

typedef struct floor_message {
    const char *id;
    const char *sender;
    floor_sender_type sender_type;
    const char *text;
    const char *const *mentions; /* the message's `mentions` array (may be NULL) */
    int n_mentions;
    /* LLM relevance: when `ranked` is set, the personas an LLM named as
     * fitting the message, best first, take the place of the rules'
     * domain/role match (everything else stays: mentions first, dormant
     * never, recency to fill). */
    bool ranked;
    const char *const *relevant;
    int n_relevant;
} floor_message;

typedef enum {
    FLOOR_WHY_MENTION = 0, /* granted: @mentioned */
    FLOOR_WHY_DOMAIN,      /* granted: an expertise domain is in the message */
    FLOOR_WHY_ROLE,        /* granted: its role is in the message */
    FLOOR_WHY_RECENCY,     /* granted: spoke least recently */
    FLOOR_WHY_LLM,         /* granted: named relevant by the LLM */
    FLOOR_HELD_FULL,       /* held: able, but the floor is full */
    FLOOR_HELD_SLEEP,      /* held: asleep */
    FLOOR_HELD_MENTION_ONLY, /* held: mention-only and not mentioned */
    FLOOR_HELD_HUMAN_ONLY  /* held: human-only and the message is an AI's */
} floor_why;

typedef struct floor_pick {
    int index; /* into room->personas; -1: a mentioned persona the view does not know */
    char id[FLOOR_ID_MAX + 1]; /* the persona (lower-cased when outside the view) */
    bool granted;
    floor_why why;
    double score; /* the matched domain's confidence (domain/role picks) */
    char reason[FLOOR_REASON_MAX];
} floor_pick;

typedef struct floor_decision {
    floor_pick *v; /* granted first, in choice order, then held */
    int n, n_granted;
    const char *source;   /* "rules" or "llm" (set by the caller; NULL = rules) */
    const char *fallback; /* why the rules decided although an LLM was asked (or NULL) */
} floor_decision;

typedef enum {
    FLOOR_DECIDED = 0,  /* out filled */
    FLOOR_NO_DECISION,  /* floor control off, or not a human message: nothing to publish */
    FLOOR_NOMEM = -1
} floor_result;

/* The choice, in order: personas the message @mentions (text or `mentions`
 * array, by id or display name; one the view does not know too, as
 * chat-router notifies it) are always granted, even beyond K; then K more:
 * those whose expertise domains or role occur in the text as whole words
 * (higher confidence first), then the ones that spoke least recently in the
 * room (never = longest ago); mentioned personas never count against K.
 * Never granted unless mentioned: a persona asleep, mention-only, or
 * human-only when the sender is an AI. For a human message, the personas
 * dormancy-monitor's rule 3 wakes with it (vigil/human_wake.h: dormancy
 * from absence, and its minimum-awake guarantee) count as active. The
 * sender never gets the floor. Ties fall to the persona id (byte order).
 * Only a human message (an AI one too with cfg->on_ai) with k > 0 is
 * decided. floor_decision_free releases out. */
floor_result floor_choose(const floor_room *r, const floor_config *cfg, const floor_message *m,
                          floor_decision *out);
void floor_decision_free(floor_decision *d);

/* The best whole-word match of persona p in text: returns FLOOR_WHY_DOMAIN
 * (with *domain the domain and *score its confidence), FLOOR_WHY_ROLE, or
 * -1 when nothing matches. */
int floor_match(const floor_persona *p, const char *text, const char **domain, double *score);

/* --- LLM relevance ------------------------------------------------------ */

/* Able personas the message does not mention (the sender excluded): the
 * ones an LLM could rank. Asking is useful only when there are more than K.
 * rankable (may be NULL; r->n entries) says which. -1 when memory runs out. */
int floor_rankable(const floor_room *r, const floor_config *cfg, const floor_message *m,
                   bool *rankable);

/* The prompt asking which of those personas fit the message, quoting its
 * text whole (a message waits for the LLM only when its text fits in
 * FLOOR_TEXT_MAX). malloc'd; NULL on allocation failure. */
char *floor_llm_prompt(const floor_room *r, const floor_config *cfg, const floor_message *m);

/* The persona ids of the model's answer {"relevant": [id, ...]}, in its
 * order, into *out (malloc'd, NULL-terminated, pointing into answer; the
 * caller frees the array only). An element that is not an id is skipped,
 * as an unknown name is: another JSON type, "bad/id", and a string holding
 * a NUL ("ann\u0000x" is not ann: vigil_json_str_check's rule, never cut
 * there). Returns the count, FLOOR_RELEVANT_NONE when answer has no
 * "relevant" array, FLOOR_RELEVANT_NO_MEMORY when memory runs out. */
#define FLOOR_RELEVANT_NONE (-1)
#define FLOOR_RELEVANT_NO_MEMORY (-2)
int floor_llm_relevant(json_object *answer, const char ***out);

/* Keeps message m, whole, waiting for the LLM until due. Returns 0 (also
 * when it waits already); 1 when a bound refuses it (FLOOR_MAX_PENDING
 * messages wait already, its text is longer than FLOOR_TEXT_MAX, or it has
 * more than FLOOR_MAX_MENTIONS `mentions`): noted on r (limits
 * "llm_waiting_per_room", "llm_text_bytes", "llm_mentions_per_message")
 * and *why, when why is not NULL, is the note's detail: decide by the
 * rules now; -1 when memory runs out. */
int floor_pending_add(floor_room *r, const floor_message *m, int64_t due, const char **why);
floor_pending *floor_pending_find(floor_room *r, const char *message_id);
floor_pending *floor_pending_by_timer(floor_room *r, const char *timer_name);
void floor_pending_remove(floor_room *r, const char *message_id);
/* The waiting message as a floor_message; ptrs receives the mention
 * pointers (FLOOR_MAX_MENTIONS entries). */
void floor_pending_message(const floor_pending *p, const char **ptrs, floor_message *m);
/* The deadline timer's name for a message id ("llm." + 16 hex digits). */
void floor_timer_name(const char *message_id, char *out, size_t outlen);

/* --- output payloads (new json objects; NULL on allocation failure) ------ */

/* room/{r}/floor: {id, room, message_id, k, granted, held, reasons, source,
 * fallback?, ts} */
json_object *floor_room_event_json(const floor_room *r, const floor_config *c,
                                   const floor_decision *d, const char *event_id,
                                   const char *message_id, int64_t now);
/* persona/{p}/floor for pick i: {id, persona, room, message_id, has_floor,
 * reason, granted, k, ts} */
json_object *floor_persona_event_json(const floor_room *r, const floor_config *c,
                                      const floor_decision *d, int i, const char *event_id,
                                      const char *message_id, int64_t now);

const char *floor_level_name(floor_level l);
/* -1 for an unknown name. */
int floor_level_parse(const char *s);

#endif
