/* dormancy.h - the pure decision core of dormancy-monitor.
 *
 * One record per room (the state key is the room id) holds every member
 * persona's dormancy level and bookkeeping plus the room's activity figures.
 * dormancy_room_apply() takes the record, one input event and `now`, changes
 * the record and appends output actions (change events, suggestions, system
 * messages, timer changes, snapshot updates). dormancy_room_timer() does the
 * same for a deadline that came due. Nothing here reads a clock or does I/O:
 * time is a parameter, so "15 minutes" is tested in microseconds.
 *
 * The rules live one family per file: no_human.c (rule 1), ai_only.c (2),
 * human_reentry.c (3), redundant.c (4), manual.c and directed.c (5),
 * presence.c (6), adaptive.c (7), config.c (8 and per-persona overrides). */
#ifndef DORMANCY_H
#define DORMANCY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <vigil/jtext.h>
#include <vigil/msg_persona.h>
#include <vigil/names.h>
#include <vigil/tlist.h>

#define DORMANCY_ID_MAX 64       /* room, persona, user, session ids */
#define DORMANCY_MSGID_MAX 128   /* message / event / input ids */
#define DORMANCY_EVID_MAX 160    /* ids this core hands out (suggestions, events) */
#define DORMANCY_TIMER_NAME_MAX 63
#define DORMANCY_TEXT_MAX 512
#define DORMANCY_REASON_MAX 256

/* Bounds that keep one room record small whatever the traffic. */
#define DORMANCY_MAX_PERSONAS_LIMIT 100000 /* highest VIGIL_DORMANCY_MAX_PERSONAS */
#define DORMANCY_MAX_RECENT 256    /* message times kept for velocity/ratio */
#define DORMANCY_MAX_HUMAN_MSGS 16 /* human messages tracked for pile-ons */
#define DORMANCY_MAX_RESPONDERS 16 /* responders remembered per human message */
#define DORMANCY_MAX_SESSIONS 32   /* presence sessions per room */

/* The specified fixed texts (real emoji, UTF-8). */
#define DORMANCY_TEXT_AI_ONLY \
    "\xF0\x9F\x92\xA4 Auto-sleeping due to extended AI-only discussion. " \
    "You'll wake when a human sends any message."
/* The same for a persona whose auto-wake is off: a human message does not
 * wake it (rule 8); what still does is said, no more. */
#define DORMANCY_TEXT_AI_ONLY_NO_AUTO_WAKE \
    "\xF0\x9F\x92\xA4 Auto-sleeping due to extended AI-only discussion. " \
    "You'll wake when mentioned or woken by a wake decision or command."
#define DORMANCY_TEXT_HUMAN_WAKE "\xE2\x9C\xA8 Human activity detected. Waking from dormancy."
/* A suggestion's question; suggestion_make() appends its options as the
 * notification shows them (DORMANCY_TEXT_OPTIONS, then for a no-human one
 * DORMANCY_TEXT_SNOOZE_FMT), e.g. "... Switch to mention-only? [Yes] [No]". */
#define DORMANCY_TEXT_REDUNDANT \
    "\xF0\x9F\x92\xA4 Multiple AIs already responded. Switch to mention-only?"
#define DORMANCY_TEXT_AUTOPILOT \
    "\xF0\x9F\x92\xA4 The dormancy autopilot suggests stepping back. Switch to mention-only?"
/* printf format; %s is the threshold in force, e.g. "5min" */
#define DORMANCY_TEXT_NO_HUMAN_FMT \
    "\xF0\x9F\x92\xA4 No human activity for %s. Switch to mention-only?"
#define DORMANCY_TEXT_OPTIONS " [Yes] [No]"
/* printf format; %s is the snooze length in force, e.g. "5min" */
#define DORMANCY_TEXT_SNOOZE_FMT " [Snooze %s]"
/* Room for a suggestion's whole text in the record (suggestions.c checks
 * that the longest one fits: the no-human question and its snooze option,
 * each with the longest duration): 512 bytes per persona would have grown
 * a room of 1,000 personas by half a megabyte for ~90-byte texts. */
#define DORMANCY_SUGG_TEXT_MAX 160

typedef enum {
    DORMANCY_ACTIVE = 0,
    DORMANCY_MENTION_ONLY,
    DORMANCY_HUMAN_ONLY,
    DORMANCY_SLEEP,
    DORMANCY_LEVEL__COUNT
} dormancy_level;

typedef enum {
    DORMANCY_TRIGGER_NONE = 0, /* never changed (joined as active) */
    DORMANCY_TRIGGER_MANUAL,
    DORMANCY_TRIGGER_TIMED_END,
    DORMANCY_TRIGGER_MENTION,
    DORMANCY_TRIGGER_NO_HUMAN,
    DORMANCY_TRIGGER_AI_ONLY,
    DORMANCY_TRIGGER_HUMAN_REENTRY,
    DORMANCY_TRIGGER_REDUNDANT,
    DORMANCY_TRIGGER_AUTOPILOT,
    DORMANCY_TRIGGER_WAKE_DECISION,
    DORMANCY_TRIGGER_SUGGESTION_DEFAULT,
    DORMANCY_TRIGGER__COUNT
} dormancy_trigger;

/* Why a persona is dormant: human absence (rules 1 and 2; undone by the next
 * human message) or its own / a coordinator's choice (kept). */
typedef enum {
    DORMANCY_CAUSE_NONE = 0,
    DORMANCY_CAUSE_ABSENCE,
    DORMANCY_CAUSE_CHOICE
} dormancy_cause;

typedef enum {
    DORMANCY_SUGGEST_NONE = 0,
    DORMANCY_SUGGEST_NO_HUMAN,
    DORMANCY_SUGGEST_REDUNDANT,
    DORMANCY_SUGGEST_AUTOPILOT
} dormancy_suggest_kind;

typedef enum {
    DORMANCY_PRESENCE_ACTIVE = 0,
    DORMANCY_PRESENCE_IDLE,
    DORMANCY_PRESENCE_AWAY
} dormancy_presence_status;

/* ---- configuration -------------------------------------------------- */

/* DormancyConfig plus the service-wide knobs. Times in ms. */
typedef struct dormancy_config {
    bool auto_suggest;          /* VIGIL_DORMANCY_AUTO_SUGGEST */
    bool auto_sleep;            /* VIGIL_DORMANCY_AUTO_SLEEP */
    bool auto_wake;             /* VIGIL_DORMANCY_AUTO_WAKE */
    int64_t no_human_ms;        /* VIGIL_DORMANCY_NO_HUMAN_MS */
    int64_t ai_only_ms;         /* VIGIL_DORMANCY_AI_ONLY_MS */
    int64_t redundant_window_ms;/* VIGIL_DORMANCY_REDUNDANT_WINDOW_MS */
    int redundant_keep;         /* VIGIL_DORMANCY_REDUNDANT_KEEP */
    int64_t suggestion_timeout_ms; /* VIGIL_DORMANCY_SUGGESTION_TIMEOUT_MS */
    int64_t snooze_ms;          /* VIGIL_DORMANCY_SNOOZE_MS */
    bool llm_wake;              /* VIGIL_DORMANCY_LLM_WAKE */
    double wake_confidence;     /* VIGIL_DORMANCY_WAKE_CONFIDENCE */
    bool presence;              /* VIGIL_DORMANCY_PRESENCE */
    bool adaptive;              /* VIGIL_DORMANCY_ADAPTIVE */
    bool human_wakes_all;       /* VIGIL_DORMANCY_HUMAN_WAKES=all */
    int min_awake;              /* VIGIL_DORMANCY_MIN_AWAKE */
    /* service-wide extensions (not overridable per persona) */
    int64_t presence_active_ms; /* VIGIL_DORMANCY_PRESENCE_ACTIVE_MS: active -> idle */
    int64_t presence_away_ms;   /* VIGIL_DORMANCY_PRESENCE_AWAY_MS: idle -> away */
    int64_t velocity_window_ms; /* VIGIL_DORMANCY_VELOCITY_WINDOW_MS */
    int tz_offset_min;          /* VIGIL_DORMANCY_TZ_OFFSET_MIN: for "until 17:00" */
    int max_personas;           /* VIGIL_DORMANCY_MAX_PERSONAS: members tracked per room */
    int big_room;               /* VIGIL_DORMANCY_BIG_ROOM: more personas coalesce room/{r}/state */
    int64_t big_room_state_ms;  /* VIGIL_DORMANCY_BIG_ROOM_STATE_MS: ... at most once per this */
} dormancy_config;

/* Every default of the README's configuration table in one place. */
void dormancy_config_init(dormancy_config *c);

/* Per-persona overrides from persona/{p}/meta `dormancy` (camelCase keys):
 * libshared's one reader (vigil/msg_persona.h) fills them; `has` holds
 * VIGIL_OV_* bits. */
typedef vigil_dormancy_overrides dormancy_overrides;

/* The config in force for one persona: base with its overrides applied. */
dormancy_config dormancy_config_effective(const dormancy_config *base,
                                          const dormancy_overrides *ov);


/* ---- state ---------------------------------------------------------- */

typedef struct dormancy_suggestion {
    dormancy_suggest_kind kind; /* NONE = nothing pending */
    char id[DORMANCY_EVID_MAX + 1];
    int64_t at;         /* when it was made */
    int64_t default_at; /* when "yes" is applied without an answer */
    char message_id[DORMANCY_MSGID_MAX + 1]; /* human message (redundant) */
    char reason[DORMANCY_REASON_MAX]; /* as in persona/{p}/suggestion */
    /* its text as persona/{p}/suggestion showed it, options included, for
     * persona/{p}/state's pending entry ("" in records written before) */
    char text[DORMANCY_SUGG_TEXT_MAX];
} dormancy_suggestion;

typedef struct dormancy_persona {
    char id[DORMANCY_ID_MAX + 1];
    char name[DORMANCY_ID_MAX + 1]; /* meta.name, also matched as @name */
    dormancy_level level;
    int64_t since;
    dormancy_trigger trigger;
    char reason[DORMANCY_REASON_MAX]; /* of the last change, as in persona/{p}/dormancy */
    dormancy_cause cause;
    int64_t until;        /* timed dormancy end, 0 = none */
    bool via_meta;        /* meta.rooms lists this room */
    bool joined;          /* spoke here or was directed here by a command */
    int64_t asked_quiet;  /* quiet-period start it had its no-human suggestion in */
    int64_t snoozed_until;/* 0 = not snoozed */
    int64_t ai_only_done; /* AI-only stretch start it was put to sleep for */
    int64_t answered_human; /* last time it answered a human message */
    dormancy_suggestion sugg;
    /* input id of the answer applied last: its redelivery is not refused */
    char answer_in[DORMANCY_MSGID_MAX + 1];
    dormancy_overrides ov;
    uint64_t snap_digest; /* digest of the last published persona/{p}/state entry */
    int64_t ord;          /* arrival order in the room (the record keeps it) */
    uint32_t gen;         /* bumped by every change (persona_touch); not in the record */
} dormancy_persona;

/* Every change to a persona's fields goes after this: the record's text of
 * a persona is written again only when its gen moved (persona_texts.c),
 * so a change made without it would not reach the store. Debug builds
 * check, on every write, that an untouched persona is byte for byte the
 * one its text was written from. */
static inline void persona_touch(dormancy_persona *p)
{
    p->gen++;
}

/* Bytes of a human message's entry in the record ({"id":...}) kept with
 * it (state_json.c): most entries, an id, a time and a few responders. */
#define DORMANCY_HUMAN_TEXT_MAX 120
_Static_assert(DORMANCY_HUMAN_TEXT_MAX <= 255, "text_len is a byte");

typedef struct dormancy_human_msg {
    char id[DORMANCY_MSGID_MAX + 1];
    int64_t ts;
    int n_responders; /* counted responders (may exceed the names kept) */
    char responders[DORMANCY_MAX_RESPONDERS][DORMANCY_ID_MAX + 1];
    /* The entry as the record last wrote it, text_len bytes (0: not kept;
     * an entry that did not fit is written anew each time). Whoever
     * changes the fields above sets text_len to 0 (a new entry is zeroed). */
    uint8_t text_len;
    char text[DORMANCY_HUMAN_TEXT_MAX];
} dormancy_human_msg;

typedef struct dormancy_session {
    char user[DORMANCY_ID_MAX + 1];
    char session[DORMANCY_ID_MAX + 1];
    dormancy_presence_status status; /* as reported */
    int64_t last_activity;           /* clamped to the time it was heard */
    int64_t heard;                   /* when the heartbeat arrived */
} dormancy_session;

typedef struct dormancy_timer {
    char name[DORMANCY_TIMER_NAME_MAX + 1];
    int64_t due;
} dormancy_timer;

/* The fields persona/{p}/state shows of one persona and their digest, as
 * last computed (snapshot.c): not part of the record. */
#define DORMANCY_SNAP_FIELDS 8
typedef struct dormancy_snap_memo {
    int64_t v[DORMANCY_SNAP_FIELDS];
    uint64_t digest; /* 0 = none yet */
} dormancy_snap_memo;

/* The JSON texts of a room's personas from the last record written
 * (persona_texts.c): not part of the record. */
typedef struct dormancy_texts dormancy_texts;

typedef struct dormancy_room {
    char room[DORMANCY_ID_MAX + 1];
    int64_t first_seen;    /* first non-system message, 0 = none yet */
    int64_t last_message;  /* latest non-system message, 0 = none yet */
    int64_t last_human;    /* 0 = no human message yet */
    int64_t ai_only_since; /* first AI message since the last human one, 0 = none */
    bool paused;
    int n_recent;
    int64_t recent_ts[DORMANCY_MAX_RECENT]; /* oldest first */
    bool recent_human[DORMANCY_MAX_RECENT];
    /* A ring: the i-th oldest is humans[(human0 + i) % MAX] (dormancy_room_
     * human); a new message replaces the oldest in place rather than
     * moving ~17 KB of older ones on every human message. */
    int n_humans, human0;
    dormancy_human_msg humans[DORMANCY_MAX_HUMAN_MSGS];
    int n_sessions;
    dormancy_session sessions[DORMANCY_MAX_SESSIONS];
    int n_timers, cap_timers;
    dormancy_timer *timers; /* deadlines currently set in the timer store */
    int n_personas, cap_personas;
    dormancy_persona *personas; /* in order of arrival */
    uint64_t room_digest;       /* of the last published room/{r}/state */
    int64_t room_state_at;      /* when a big room last published it, 0 = not since it was small */
    int64_t room_state_due;     /* a big room's change waits until then, 0 = none */
    int64_t next_ord;           /* the next persona's arrival order */
    uint64_t token;             /* names the record version written last (head "c") */
    int n_stored;               /* persona parts in the store as read or written
                                 * last, -1 = not known (write them all again) */
    bool members_changed;       /* a persona joined or left since then */
    dormancy_texts *texts;      /* never NULL; a copy gets empty ones */
    /* Kept between inputs, not part of the record (a copy starts without):
     * the roster's digest (valid while roster_known: a join, a leave or a
     * level change clears it) and each persona's state digest. */
    bool roster_known;
    uint64_t roster_hash;
    int cap_memo;
    dormancy_snap_memo *memo;
    /* The record's recent_dt and recent_kind texts for the list above,
     * edited as the list changes (recent_text.c), not part of the record;
     * rtext_ok false: not kept (a copy starts without). rtext_dt holds the
     * differences after the first time (vigil/times_text.h). */
    bool rtext_ok;
    vigil_tlist rtext_dt;
    vigil_jtext rtext_kind;
} dormancy_room;

/* The i-th oldest human message of r (0 <= i < r->n_humans). */
static inline dormancy_human_msg *dormancy_room_human(const dormancy_room *r, int i)
{
    return (dormancy_human_msg *)&r->humans[(r->human0 + i) % DORMANCY_MAX_HUMAN_MSGS];
}

dormancy_room *dormancy_room_new(const char *room_id);
void dormancy_room_free(dormancy_room *r);
/* A deep copy; NULL when out of memory. */
dormancy_room *dormancy_room_clone(const dormancy_room *r);
/* Memory a room holds (its struct, personas, timers, persona texts). */
size_t dormancy_room_bytes(const dormancy_room *r);

/* Nothing known about the room: no member, no message, no presence. */
bool dormancy_room_blank(const dormancy_room *r);

/* Start of the current quiet period (last human message, else the first
 * message seen), 0 when the room has seen no message. */
int64_t dormancy_quiet_since(const dormancy_room *r);
dormancy_persona *dormancy_persona_find(dormancy_room *r, const char *id);

/* State record <-> JSON. from_json returns NULL with err on a record it
 * cannot read (not JSON, not an object, wrong room). It reads the record
 * whole in either form: one text with a "personas" array (to_json, and
 * records written before parts), or a head with a "parts" object of one
 * persona each (how the store hands back a record kept in parts). */
char *dormancy_room_to_json(const dormancy_room *r);
dormancy_room *dormancy_room_from_json(const char *json, const char *room_id,
                                       char *err, size_t errlen);
/* As from_json; *head_only is set when json is the head of a record in
 * parts without its parts (then NULL is returned: load it whole). */
dormancy_room *dormancy_room_read(const char *json, const char *room_id, bool *head_only,
                                  char *err, size_t errlen);

/* ---- the record in parts (record_parts.c) ------------------------------
 * The store keeps a room as a head (everything but the personas: small)
 * and a part per persona, so a commit writes what changed: an input that
 * changes one persona of 1,000 writes that persona and the head, not the
 * whole record. */

/* What a commit writes of r's personas. */
typedef struct dormancy_parts_diff {
    bool whole;          /* the stored parts are not known: delete them all
                          * and write every persona */
    int n_set;
    int *set;            /* persona indexes whose part is written */
    const char **text;   /* their texts (held by r's persona texts) */
    int n_removed;
    char (*removed)[DORMANCY_ID_MAX + 1]; /* personas whose part is deleted */
} dormancy_parts_diff;

/* The personas changed, added and removed since r was read or written
 * last; updates r's persona texts. 0, or -1 when out of memory. */
int dormancy_parts_diff_make(dormancy_room *r, dormancy_parts_diff *d);
void dormancy_parts_diff_free(dormancy_parts_diff *d);
/* r as written: its parts are now what the store holds. */
void dormancy_parts_written(dormancy_room *r);
/* The head: the record without its personas, with their count ("np"),
 * the next arrival order ("no") and r->token ("c"). */
char *dormancy_room_head_json(const dormancy_room *r);
/* Rewrites the token of a head dormancy_room_head_json wrote, in place, as
 * if written with token; false (head unchanged) for any other text. */
bool dormancy_room_head_retoken(char *head, uint64_t token);

/* ---- input events ---------------------------------------------------- */

typedef enum {
    DORMANCY_EV_MESSAGE = 0,
    DORMANCY_EV_PRESENCE,
    DORMANCY_EV_CONTROL,
    DORMANCY_EV_AUTOPILOT,
    DORMANCY_EV_COMMAND,
    DORMANCY_EV_META,
    DORMANCY_EV_WAKE
} dormancy_event_kind;

typedef enum { DORMANCY_SENDER_HUMAN = 0, DORMANCY_SENDER_AI, DORMANCY_SENDER_SYSTEM } dormancy_sender_type;
typedef enum { DORMANCY_CTL_PAUSE = 0, DORMANCY_CTL_RESUME, DORMANCY_CTL_DELETE, DORMANCY_CTL_WAKE } dormancy_control_action;
typedef enum { DORMANCY_CMD_DORMANT = 0, DORMANCY_CMD_AWAKE, DORMANCY_CMD_STATUS, DORMANCY_CMD_ANSWER } dormancy_cmd;
typedef enum { DORMANCY_ANSWER_YES = 0, DORMANCY_ANSWER_NO, DORMANCY_ANSWER_SNOOZE } dormancy_answer;
typedef enum {
    DORMANCY_AP_SUGGEST_MENTION_ONLY = 0,
    DORMANCY_AP_AUTO_SLEEP,
    DORMANCY_AP_WAKE,
    DORMANCY_AP_KEEP
} dormancy_autopilot_action;
typedef enum { DORMANCY_VIA_LLM = 0, DORMANCY_VIA_RULES, DORMANCY_VIA_FALLBACK } dormancy_via;

typedef struct dormancy_ap_decision {
    const char *persona;
    dormancy_autopilot_action action;
    const char *reason; /* may be NULL */
} dormancy_ap_decision;

/* Strings are borrowed from the caller for the duration of one call; NULL
 * means absent. The caller (route) has validated every field. */
typedef struct dormancy_event {
    dormancy_event_kind kind;
    const char *id; /* the input id (message id for room messages) */
    int64_t ts;     /* the input's ts (informational; rules use `now`) */
    struct {
        const char *sender;
        dormancy_sender_type sender_type;
        const char *text;
        const char *reply_to;
        const char *const *mentions;
        int n_mentions;
    } msg;
    struct {
        const char *user, *session;
        dormancy_presence_status status;
        int64_t last_activity; /* 0 = absent */
    } presence;
    struct {
        dormancy_control_action action;
        bool all;
        const char *by;
        const char *persona; /* wake one persona (extension) */
        int64_t if_inactive_since; /* delete only if no message since (0 = always) */
    } control;
    struct {
        const dormancy_ap_decision *decisions;
        int n;
        const char *source;
    } autopilot;
    struct {
        const char *persona;
        dormancy_cmd cmd;
        bool has_level;
        dormancy_level level;
        int64_t until;  /* 0 = none */
        const char *room; /* NULL = every room of the persona */
        const char *suggestion_id;
        dormancy_answer answer;
        const char *by;
    } command;
    struct {
        const char *persona;
        const char *name;
        const char *const *rooms;
        int n_rooms;
        dormancy_overrides ov;
    } meta;
    struct {
        const char *persona;
        const char *message_id;
        bool should_wake;
        double confidence;
        const char *reason;
        dormancy_via via;
    } wake;
} dormancy_event;

/* ---- output actions -------------------------------------------------- */

typedef enum {
    DORMANCY_OUT_CHANGE = 0,     /* persona/{p}/dormancy */
    DORMANCY_OUT_SUGGESTION,     /* persona/{p}/suggestion */
    DORMANCY_OUT_SYSTEM_MESSAGE, /* room/{r}/message, sender_type system */
    DORMANCY_OUT_TIMER_SET,
    DORMANCY_OUT_TIMER_CANCEL,
    DORMANCY_OUT_PERSONA_STATE,  /* entry of persona/{p}/state for this room */
    DORMANCY_OUT_PERSONA_REMOVED,/* drop this room from persona/{p}/state */
    DORMANCY_OUT_ROOM_STATE,     /* room/{r}/state changed: render the room */
    DORMANCY_OUT_ROOM_CLEARED,   /* room deleted: clear the retained room/{r}/state */
    DORMANCY_OUT_LIMIT,          /* a limit refused persona: reason says which (an error event) */
    DORMANCY_OUT_REJECTED        /* the input is refused, reason says why: the step's only
                                  * action, nothing changed (an error event, bad_value) */
} dormancy_action_kind;

/* Activity over the velocity window ending at now. */
typedef struct dormancy_metrics {
    int humans, ais;          /* messages in the window */
    double velocity_per_min;
    double ai_to_human_ratio; /* meaningful only when humans > 0 */
} dormancy_metrics;

typedef struct dormancy_action {
    dormancy_action_kind kind;
    char id[DORMANCY_EVID_MAX + 1]; /* events only */
    char persona[DORMANCY_ID_MAX + 1];
    /* change / persona state */
    dormancy_level level, previous;
    dormancy_trigger trigger;
    char reason[DORMANCY_REASON_MAX];
    /* change, suggestion, system message; persona state: the pending
     * suggestion's text ("" = not known: a record written before) */
    char text[DORMANCY_TEXT_MAX];
    char message_id[DORMANCY_MSGID_MAX + 1]; /* change: the cause; system: reply_to */
    int64_t since, snoozed_until;
    int64_t until; /* persona state: timed dormancy end, 0 = none */
    /* suggestion; persona state: the pending one (suggest NONE = none) */
    dormancy_suggest_kind suggest;
    int64_t default_after_ms;
    int64_t snooze_ms; /* suggestion with a snooze option: its length, else 0 */
    char pending_reason[DORMANCY_REASON_MAX]; /* persona state */
    int64_t pending_expires;                  /* persona state: when "yes" applies */
    /* persona state of a dormant persona (dormant): why it is dormant, when
     * it last answered a human (0 = never, or it can answer) and its arrival
     * order: what floor-control needs to predict rule 3 (vigil/human_wake.h) */
    bool dormant;
    dormancy_cause cause;
    int64_t answered_human, order;
    /* timers */
    char timer[DORMANCY_TIMER_NAME_MAX + 1];
    int64_t due;
    /* room state: the room's activity at metrics_at, as the step measured
     * it for the state's digest (has_metrics), so that rendering the state
     * at that time need not count the window again */
    bool has_metrics;
    int64_t metrics_at;
    dormancy_metrics metrics;
} dormancy_action;

typedef struct dormancy_actions {
    dormancy_action *v;
    size_t n, cap;
    dormancy_action *fixed; /* the caller's storage v starts in (never freed here), or NULL */
} dormancy_actions;

void dormancy_actions_init(dormancy_actions *a);
/* Starts in the caller's storage of cap actions (an input makes about
 * five; more move to the heap): each action is over 1 KB, and a fresh
 * heap vector per input was an allocation large enough to make malloc
 * sort its free lists every time. */
void dormancy_actions_init_in(dormancy_actions *a, dormancy_action *storage, size_t cap);
void dormancy_actions_free(dormancy_actions *a);

/* Seam for output event ids: n counts the events of one step from 0, so a
 * shell can make them deterministic per input (vigil_event_id). */
typedef struct dormancy_ids {
    void (*make)(void *ctx, int n, char *out, size_t outlen);
    void *ctx;
} dormancy_ids;

/* A persona/{p}/command as libshared's reader left it (c: a
 * vigil_persona_command) into ev's command (kind, cmd, room, suggestion,
 * by, level, until, answer; persona is the caller's). Its strings point
 * into c's payload. */
struct vigil_persona_command;
void dormancy_command_event(const struct vigil_persona_command *c, dormancy_event *ev);

/* ---- the decision ---------------------------------------------------- */

/* Applies one input to the room at `now`. Appends actions to out. Returns 0,
 * or -1 on allocation failure (room and out are then unspecified). */
int dormancy_room_apply(dormancy_room *r, const dormancy_event *ev, const dormancy_config *cfg,
                        int64_t now, const dormancy_ids *ids, dormancy_actions *out);

/* A deadline set through DORMANCY_OUT_TIMER_SET came due (possibly late, or
 * after the situation changed: everything is re-checked against `now`). */
int dormancy_room_timer(dormancy_room *r, const char *timer_name, int64_t due,
                        const dormancy_config *cfg, int64_t now, const dormancy_ids *ids,
                        dormancy_actions *out);

/* ---- rendering (payloads of topics/schemas; new json-c objects) ---------- */

json_object *dormancy_change_json(const dormancy_action *a, const char *room, int64_t now);
/* The same as text (malloc'd; NULL when out of memory): what the service
 * publishes. */
char *dormancy_change_text(const dormancy_action *a, const char *room, int64_t now);
json_object *dormancy_suggestion_json(const dormancy_action *a, const char *room, int64_t now);
json_object *dormancy_system_message_json(const dormancy_action *a, const char *room,
                                          const char *sender, int64_t now);
/* {"level","since","trigger","reason"?,"snoozed_until"?,"until"?,
 *  "pending"?: {"level","trigger","reason","text"?,"expires","snooze_ms"?}}
 * for persona/{p}/state. */
json_object *dormancy_persona_entry_json(const dormancy_action *a);
/* The same as text (malloc'd; NULL when out of memory). */
char *dormancy_persona_entry_text(const dormancy_action *a);
/* room/{r}/state's payload as text (malloc'd; NULL when out of memory);
 * dormancy_room_state_json is the same, parsed. */
char *dormancy_room_state_text(const dormancy_room *r, const dormancy_config *cfg, int64_t now);
/* The same, with the room's activity at now already measured (m: what
 * dormancy_room_metrics(r, cfg, now) returns; NULL measures it). */
char *dormancy_room_state_text_m(const dormancy_room *r, const dormancy_config *cfg, int64_t now,
                                 const dormancy_metrics *m);
json_object *dormancy_room_state_json(const dormancy_room *r, const dormancy_config *cfg,
                                      int64_t now);

/* ---- names and small helpers ------------------------------------------ */

const char *dormancy_level_name(dormancy_level l);
int dormancy_level_parse(const char *s, dormancy_level *out); /* 0 or -1 */
const char *dormancy_trigger_name(dormancy_trigger t);        /* NULL for NONE */
int dormancy_trigger_parse(const char *s, dormancy_trigger *out);
const char *dormancy_suggest_trigger_name(dormancy_suggest_kind k);

/* True when text mentions `name` as @name (case-insensitive, bounded by
 * non-id characters; "@ann." and "@ann," mention ann, "@ann-bot" does not). */
bool dormancy_text_mentions(const char *text, const char *name);

/* An @self command found in a persona's own message. */
typedef enum { DORMANCY_SELF_NONE = 0, DORMANCY_SELF_BAD, DORMANCY_SELF_DORMANT,
               DORMANCY_SELF_AWAKE, DORMANCY_SELF_STATUS } dormancy_self_kind;
typedef struct dormancy_self_cmd {
    dormancy_self_kind kind;
    dormancy_level level;
    int64_t until; /* absolute ms, 0 = no end */
} dormancy_self_cmd;
/* Parses the first "@self ..." of text at `now` ("for 1h", "for 90s",
 * "for 1h30m", "until 17:00" = next 17:00 at tz_offset_min east of UTC). */
dormancy_self_cmd dormancy_self_parse(const char *text, int64_t now, int tz_offset_min);

/* "5min", "90s", "250ms": how a threshold is written in texts. */
void dormancy_format_duration(int64_t ms, char *out, size_t outlen);

dormancy_metrics dormancy_room_metrics(const dormancy_room *r, const dormancy_config *cfg,
                                       int64_t now);
/* The no-human threshold in force for a persona config (adaptive bands). */
int64_t dormancy_no_human_threshold(const dormancy_room *r, const dormancy_config *eff,
                                    const dormancy_config *base, int64_t now);
/* Effective presence of a session at `now`. */
dormancy_presence_status dormancy_session_status(const dormancy_session *s,
                                                 const dormancy_config *cfg, int64_t now);
/* Any human in the room active at now (whatever the presence switch). */
bool dormancy_room_human_active(const dormancy_room *r, const dormancy_config *cfg, int64_t now);

#endif
