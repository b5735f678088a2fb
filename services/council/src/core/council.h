/* council.h - council's pure decision core (Autonomous Mode, the Council
 * System).
 *
 * No I/O and no clock: every function gets `now` and reaches the outside
 * only through a council_sink (publish, set a timer, enqueue a loop job,
 * write a durable record). Tests hand in fakes.
 *
 * State is kept per user (a council_user): the user's recent messages (a
 * bounded view learned from room/+/message), the daily session count and
 * auto-start schedule, and the current session with its loop phase,
 * questions, notes and the circuit breaker's action history.
 *
 * One loop: SENSE (context gathered from the record), PLAN (the prompts
 * sent as one durable job: the three advisors' LLM calls run at once, then
 * Sol is asked with their answers), ACT (Sol's answer routed by prefix to
 * a handler, committed with the deliberation). */
#ifndef COUNCIL_H
#define COUNCIL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define COUNCIL_ID_MAX 64
#define COUNCIL_EVID_MAX 128
#define COUNCIL_JOB_MAX 79         /* "<session>.L<loop>" */
#define COUNCIL_TEXT_MAX 1000     /* bytes kept of a question, answer, note, message */
#define COUNCIL_ANSWER_MAX 2000   /* bytes kept of one persona's answer */
#define COUNCIL_RESULT_MAX 4000   /* bytes kept of an A2A artifact */
#define COUNCIL_REASON_MAX 240
#define COUNCIL_MSGS_MAX 20       /* user messages kept (VIGIL_COUNCIL_CONTEXT_MESSAGES caps at this) */
#define COUNCIL_QUESTIONS_MAX 16
#define COUNCIL_NOTES_MAX 16
/* why a pending question ended when a newer one needed its place */
#define COUNCIL_QUESTION_DROPPED_REASON "dropped: more than 16 questions pending"
#define COUNCIL_BREAKER_REPEATS 3 /* MAX_REPEATED_ACTIONS */
#define COUNCIL_PRIORITY_DEFAULT 5
#define COUNCIL_DAY_MS 86400000LL
#define COUNCIL_MIN_MS 60000LL

#define COUNCIL_TIMER_LOOP "loop"   /* next loop (SENSE) of the session */
#define COUNCIL_TIMER_IDLE "idle"   /* the session ends when nothing progressed */
#define COUNCIL_TIMER_AUTO "auto"   /* next automatic start */
#define COUNCIL_TIMER_QEXP "qexp"   /* next question expiry */

/* ------------------------------------------------------------------ */
/* Configuration                                                      */
/* ------------------------------------------------------------------ */

typedef struct council_config {
    bool enabled;               /* VIGIL_COUNCIL_ENABLED: autonomous mode at all (off: no
                                 * session starts, a live one ends at its next loop) */
    bool auto_start;            /* VIGIL_COUNCIL_AUTO_START: a start every interval */
    int64_t interval_ms;        /* VIGIL_COUNCIL_INTERVAL_MIN (60) */
    int max_daily;              /* VIGIL_COUNCIL_MAX_DAILY (10) */
    int64_t idle_timeout_ms;    /* VIGIL_COUNCIL_IDLE_TIMEOUT_MIN (30) */
    int64_t loop_ms;            /* VIGIL_COUNCIL_LOOP_MS (30000) */
    int max_loops;              /* VIGIL_COUNCIL_MAX_LOOPS (20) */
    int64_t question_ttl_ms;    /* VIGIL_COUNCIL_QUESTION_TTL_MS (86400000) */
    int context_messages;       /* VIGIL_COUNCIL_CONTEXT_MESSAGES (10) */
    bool llm_enabled;           /* VIGIL_LLM_URL set */
    bool a2a_enabled;           /* VIGIL_COUNCIL_A2A_URL set */
    int64_t max_sleep_ms;       /* longest `sleep:` honoured (the idle timeout) */
    int64_t presence_active_ms; /* VIGIL_COUNCIL_PRESENCE_ACTIVE_MS (120000): a user reported
                                 * active is available this long after their last activity */
} council_config;

void council_config_init(council_config *c);
/* Loops one worker holds at once with an LLM client of llm_concurrency
 * transfers (config.c): as many as have all their calls in flight at once
 * (a loop's most is its three advisors; Sol is asked alone), at least 1. */
int council_loops_per_worker(int llm_concurrency);

/* ------------------------------------------------------------------ */
/* Actions (router.c)                                                 */
/* ------------------------------------------------------------------ */

typedef enum {
    COUNCIL_ACT_SEARCH = 0,
    COUNCIL_ACT_NOTE,
    COUNCIL_ACT_ASK,
    COUNCIL_ACT_SCHEDULE,
    COUNCIL_ACT_RESEARCH,
    COUNCIL_ACT_SLEEP,
    COUNCIL_ACT_REFLECT,
    COUNCIL_ACT__COUNT,
    COUNCIL_ACT_NONE = -1
} council_action;

/* "search", "note", "ask user", ... (the prefix without its colon). */
const char *council_action_name(council_action a);
/* The prefix with its colon: "ask user:". */
const char *council_action_prefix(council_action a);
council_action council_action_parse(const char *name);

typedef struct council_routed {
    council_action action;
    const char *content;   /* points into the text: after the prefix, spaces skipped */
    size_t content_len;    /* trailing spaces dropped */
    bool unknown;          /* recorded as reflect: no known prefix, nothing after one
                            * that takes an object (search, note, ask user, schedule,
                            * research, sleep), or a sleep: whose duration is not
                            * understood; warning says which */
    council_action refused; /* when unknown: the prefix refused (COUNCIL_ACT_NONE: none
                             * was known, or the proposal was empty) */
    int64_t sleep_ms;      /* sleep: the duration stated (council_parse_duration); -1 else */
    char warning[COUNCIL_REASON_MAX];
} council_routed;

/* The action router: the seven prefixes matched with starts-with on the
 * trimmed, case-folded text (never a keyword found inside the content).
 * Anything else is `reflect` with `unknown` set and a warning naming what
 * was found; so is a prefix that takes an object with nothing after it
 * ("ask user:" with no question, "search:" with no query, "sleep:" with no
 * duration) and a sleep: whose duration council_parse_duration does not
 * read. text may be NULL (no proposal). */
void council_route(const char *text, council_routed *out);

/* "[p8] Should I ...": an optional leading priority marker [pN] (N 1..10,
 * case-insensitive "p"). Returns the priority (default 5) and sets *rest
 * to the text after the marker (spaces skipped). An out-of-range or
 * malformed marker is left in the text and the default used. */
int council_question_priority(const char *text, const char **rest);

/* A `sleep:` duration, read exactly: "10m", "30 seconds", "1.5 h",
 * "5000ms", compound "2h30m" / "1 hour and 30 minutes" (units decreasing),
 * a leading "for", a bare number alone (minutes), words after it ("10m
 * while the user rests"). Returns the milliseconds, or -1 for anything
 * else ("1e3", "2h30", "30m 2h", "5 fortnights", "soon"). */
int64_t council_parse_duration(const char *text);


/* ------------------------------------------------------------------ */
/* Circuit breaker (breaker.c)                                        */
/* ------------------------------------------------------------------ */

typedef struct council_breaker {
    int last[COUNCIL_BREAKER_REPEATS]; /* most recent action types, oldest first */
    int n;
} council_breaker;

void council_breaker_reset(council_breaker *b);
/* Records an action; returns true when the last COUNCIL_BREAKER_REPEATS
 * actions are all of the same type (spinning: the session must pause). */
bool council_breaker_record(council_breaker *b, council_action a);

/* ------------------------------------------------------------------ */
/* Questions (questions.c)                                            */
/* ------------------------------------------------------------------ */

typedef enum { COUNCIL_Q_PENDING = 0, COUNCIL_Q_ANSWERED, COUNCIL_Q_EXPIRED } council_qstatus;
const char *council_qstatus_name(council_qstatus s);

typedef struct council_question {
    char id[COUNCIL_EVID_MAX + 1];
    char text[COUNCIL_TEXT_MAX + 1];
    int priority;              /* 1..10, higher is more urgent */
    council_qstatus status;
    char answer[COUNCIL_TEXT_MAX + 1];
    int loop;                  /* loop that asked it */
    int64_t created_at, expires_at, answered_at;
} council_question;

typedef struct council_questions {
    council_question v[COUNCIL_QUESTIONS_MAX];
    int n;
} council_questions;

/* The question the next add drops: -1 while there is room; when full, the
 * oldest question that is not pending, else the oldest one (a pending
 * question the caller announces as ended: loop.c). */
int council_questions_victim(const council_questions *q);
/* Adds a pending question; when full, drops council_questions_victim's
 * first. Returns the slot. */
council_question *council_questions_add(council_questions *q, const char *id, const char *text,
                                        size_t len, int priority, int loop, int64_t now,
                                        int64_t ttl_ms);
council_question *council_questions_find(council_questions *q, const char *id);
/* Marks pending questions whose expiry is at or before now as expired;
 * returns how many. */
int council_questions_expire(council_questions *q, int64_t now);
/* Marks every pending question expired now, its expires_at brought
 * forward to now (a session that ended: no SENSE would read an answer).
 * Returns how many. */
int council_questions_expire_all(council_questions *q, int64_t now);
/* Earliest expiry among pending questions, or 0 when none. */
int64_t council_questions_next_expiry(const council_questions *q);
/* Indexes of the pending questions, highest priority first (ties: oldest
 * first). Returns the count. */
int council_questions_pending(const council_questions *q, int *idx, int max);
/* Indexes of answered questions, most recently answered first. */
int council_questions_answered(const council_questions *q, int *idx, int max);

/* ------------------------------------------------------------------ */
/* A2A JSON-RPC 2.0 (a2a.c)                                           */
/* ------------------------------------------------------------------ */

typedef enum { COUNCIL_A2A_MESSAGE_SEND = 0, COUNCIL_A2A_SEND_MESSAGE } council_a2a_method;
const char *council_a2a_method_name(council_a2a_method m); /* "message/send", "SendMessage" */
int council_a2a_method_parse(const char *s, council_a2a_method *out);

/* The request body (malloc'd JSON text) for `prompt`: a JSON-RPC 2.0
 * request with id `id`, method message/send (A2A 0.x: role "user", parts
 * [{kind:"text", text}]) or SendMessage (A2A 1.0: role "ROLE_USER",
 * parts [{text}]); messageId is `id` too, so a repeated request can be
 * recognised by the agent. NULL on allocation failure. */
char *council_a2a_request(council_a2a_method m, const char *id, const char *prompt);

typedef struct council_a2a_reply {
    bool ok;
    char task_id[COUNCIL_EVID_MAX + 1];
    char state[48];                     /* "completed", "failed", ... (TASK_STATE_ prefix removed, lower case) */
    char text[COUNCIL_RESULT_MAX + 1];  /* artifacts' text parts, joined by newlines */
    char error[COUNCIL_REASON_MAX];
} council_a2a_reply;

/* Reads a JSON-RPC response of either method to the request with id `id`:
 * result as a Task (0.x: {taskId|id, status:{state}, artifacts:[{parts:
 * [{text}]}]}), wrapped ({task:{...}} or {message:{...}} in 1.0) or a
 * Message ({parts}). Only a completed Task (or a Message) of this request
 * with some text is a success: an `error` object, a JSON-RPC id other than
 * `id`, a task in any other state (failed, input-required, working, ... or
 * none), or a completed task or message without text (no text part, or
 * spaces only) is a failure. Returns 0 (out->ok) or -1 with out->error (out->state kept). */
int council_a2a_parse(const char *body, size_t len, const char *id, council_a2a_reply *out);

/* ------------------------------------------------------------------ */
/* Records                                                            */
/* ------------------------------------------------------------------ */

typedef enum {
    COUNCIL_NONE = 0,      /* no session */
    COUNCIL_ACTIVE,
    COUNCIL_PAUSED,
    COUNCIL_COMPLETED
} council_status;
const char *council_status_name(council_status s);

typedef enum { COUNCIL_PHASE_IDLE = 0, COUNCIL_PHASE_PLAN } council_phase;

typedef struct council_msg {
    char room[COUNCIL_ID_MAX + 1];
    char text[COUNCIL_TEXT_MAX + 1];
    int64_t ts;
} council_msg;

typedef struct council_note {
    char text[COUNCIL_TEXT_MAX + 1];
    int loop;
    int64_t ts;
} council_note;

typedef enum {
    COUNCIL_PAUSE_NONE = 0,
    COUNCIL_PAUSE_USER,     /* `pause` control */
    COUNCIL_PAUSE_SPINNING  /* circuit breaker */
} council_pause;

/* The user's latest presence report (room/+/presence): whether the user is
 * available, which SENSE gives the council and Sol weighs when acting. */
typedef enum {
    COUNCIL_PRESENCE_UNKNOWN = 0, /* never reported */
    COUNCIL_PRESENCE_ACTIVE,
    COUNCIL_PRESENCE_IDLE,
    COUNCIL_PRESENCE_AWAY
} council_presence;
const char *council_presence_name(council_presence p);

typedef struct council_session {
    char id[COUNCIL_ID_MAX + 1];
    char room[COUNCIL_ID_MAX + 1]; /* "" = every room */
    council_status status;
    council_phase phase;
    council_pause paused_by;
    int loop;                      /* loops started */
    char job[COUNCIL_JOB_MAX + 1]; /* the loop job in flight (phase plan) */
    int64_t started_at, ended_at, paused_at;
    int64_t next_loop_at;          /* 0 = none scheduled */
    int64_t last_progress;         /* last loop start, commit of a loop, or user input */
    int64_t sensed_at;             /* the current (or last) loop's SENSE */
    bool sensed_available;         /* the user's availability at that SENSE and the */
    council_presence sensed_presence; /* report it came from: what Sol weighed, which the
                                       * act phase event says */
    char reason[COUNCIL_REASON_MAX];
    bool automatic;                /* started by the interval, not by a control */
    council_breaker breaker;
    council_questions questions;
    council_note notes[COUNCIL_NOTES_MAX];
    int n_notes;
    int actions;                   /* actions taken */
    int event_seq;                 /* events emitted over the session's life */
} council_session;

typedef struct council_user {
    char user[COUNCIL_ID_MAX + 1];
    council_msg msgs[COUNCIL_MSGS_MAX]; /* oldest first */
    int n_msgs;
    int64_t day;                   /* UTC day number of day_count */
    int day_count;                 /* sessions started that day */
    int64_t last_start;
    bool enrolled;                 /* started a session once: automatic starts apply */
    char last_room[COUNCIL_ID_MAX + 1];
    int sessions;                  /* sessions started in total */
    council_presence presence;     /* the latest presence report, any room */
    int64_t presence_ts;           /* its time (orders the reports) */
    int64_t presence_activity;     /* its last_activity (ages an `active`) */
    char presence_room[COUNCIL_ID_MAX + 1];
    bool has_session;              /* s holds the current (or last) session */
    council_session s;
    /* Not in the record: pending questions the decision at hand dropped
     * for a newer one (COUNCIL_QUESTION_DROPPED_REASON), for the shell to
     * count once the decision is committed. */
    int questions_dropped;
} council_user;

void council_user_init(council_user *u, const char *user);
/* State record <-> JSON (record_json.c). Parse returns 0 or -1 (why). */
char *council_user_dump(const council_user *u);
int council_user_load(const char *json, council_user *u, char *why, size_t whylen);
/* The session's durable record (CLI reads it): status, loop count, times,
 * questions, notes. New reference. */
json_object *council_session_record(const council_user *u);
/* The retained council/{session}/state payload. New reference. */
json_object *council_state_payload(const council_user *u, int64_t now);

/* ------------------------------------------------------------------ */
/* Outputs                                                            */
/* ------------------------------------------------------------------ */

typedef struct council_sink {
    void *ctx;
    /* Publishes payload (not taken) on topic. */
    int (*publish)(void *ctx, const char *topic, json_object *payload, bool retain);
    /* Sets (due > 0) or cancels (due == INT64_MIN) a timer of this user. */
    int (*timer)(void *ctx, const char *name, int64_t due);
    /* Enqueues a loop job (payload not taken). */
    int (*job)(void *ctx, json_object *job);
    /* Writes the durable record `name` (e.g. "rec:<session>"). */
    int (*record)(void *ctx, const char *name, json_object *value);
    /* Appends to the durable list `name` (deliberations, session index),
     * keeping about maxlen entries. */
    int (*append)(void *ctx, const char *name, json_object *value, int64_t maxlen);
} council_sink;

#define COUNCIL_TIMER_CANCEL INT64_MIN

/* Event ids are "<input id>:<n>", n counted per decision, so a decision run
 * again for the same input yields the same ids. */
typedef struct council_emit {
    const council_sink *sink;
    char input[104]; /* at most 100 characters (longer inputs are hashed) */
    int n;
} council_emit;

/* ------------------------------------------------------------------ */
/* Inputs (session.c, loop.c)                                         */
/* ------------------------------------------------------------------ */

typedef enum { COUNCIL_CTL_START = 0, COUNCIL_CTL_PAUSE, COUNCIL_CTL_RESUME, COUNCIL_CTL_END } council_ctl;

typedef struct council_control {
    council_ctl action;
    const char *session;  /* may be NULL */
    const char *room;     /* may be NULL */
    bool used;            /* start: its session id already names a session (the shell found
                           * its durable record rec:<id>), so it is refused */
} council_control;

/* The session id a start names: its `session`, else one derived from the
 * user and the input id ("s-<hash>": a redelivered start names the same
 * session, and two users' starts of one id, which is unique only within
 * its user's control topic, name two). The shell uses it too, to look the
 * id's record up before deciding. */
void council_start_session_id(const council_control *in, const char *user, const char *input_id,
                              char *out, size_t cap);

/* Results of an input: applied, or refused with a reason (the input is
 * rejected: nothing is committed, the shell reports it). */
typedef enum { COUNCIL_OK = 0, COUNCIL_REFUSED = 1, COUNCIL_FAILED = -1 } council_rc;

council_rc council_on_control(council_user *u, const council_config *c, const council_control *in,
                              const char *input_id, int64_t now, const council_sink *sink,
                              char *why, size_t whylen);
council_rc council_on_answer(council_user *u, const council_config *c, const char *session,
                             const char *question_id, const char *answer, const char *input_id,
                             int64_t now, const council_sink *sink, char *why, size_t whylen);
/* A message of this user in room `room`: kept in the bounded view. */
council_rc council_on_message(council_user *u, const council_config *c, const char *room,
                              const char *text, int64_t ts);
/* A presence report of this user (room/+/presence): the latest one, by
 * its time, says whether the user is available (an older one arriving
 * late changes nothing). A time or last_activity after `now` (the
 * producer's clock ahead, or a mistyped date) is taken as `now`: a report
 * dated in the future would otherwise outrank every later one and keep
 * an `active` young for ever. */
council_rc council_on_presence(council_user *u, const char *room, council_presence p, int64_t ts,
                               int64_t last_activity, int64_t now);
/* The user is available: the latest presence report says active, and its
 * last activity is younger than c->presence_active_ms (a tab closed
 * without a word stops counting). */
bool council_user_available(const council_user *u, const council_config *c, int64_t now);
council_rc council_on_timer(council_user *u, const council_config *c, const char *name,
                            int64_t due, int64_t now, const council_sink *sink);

/* ------------------------------------------------------------------ */
/* Personas and the loop job (prompt.c, job.c)                        */
/* ------------------------------------------------------------------ */

typedef enum {
    COUNCIL_POLARIS = 0,
    COUNCIL_AURORA,
    COUNCIL_VEGA,
    COUNCIL_SOL,
    COUNCIL_PERSONAS
} council_persona;

typedef struct council_persona_def {
    const char *key;      /* "polaris" */
    const char *name;     /* "Polaris" */
    const char *title;    /* "the Navigator" */
    const char *role;
    const char *focus;
    const char *question; /* its guiding question */
} council_persona_def;

extern const council_persona_def COUNCIL_PERSONA_DEFS[COUNCIL_PERSONAS];

/* The user's messages SENSE shows: the last c->context_messages (at most
 * max) of the current session's room, of every room when it has none.
 * Fills idx with their indexes in u->msgs, oldest first; returns the
 * count. Both the prompts and the `sense` event's count come from it. */
int council_sense_messages(const council_user *u, const council_config *c, int *idx, int max);
/* The SENSE context of the current session as text: the user's recent
 * messages (council_sense_messages), open questions by priority, answered
 * questions with their answers quoted, notes. malloc'd. */
char *council_sense_context(const council_user *u, const council_config *c, int64_t now);
/* One persona's prompt: names it, gives its role and its question,
 * carries the context. malloc'd. An advisor's (Polaris, Aurora, Vega) is
 * whole; Sol's is only its first part (the job's): council_sol_prompt
 * completes it once the advisors answered. */
char *council_prompt(council_persona p, const char *context);
/* A persona's answer as the council shows it: the answer, or for a failed
 * call "(no answer: <why>)" written into buf. */
const char *council_answer_text(const char *answer, const char *error, char *buf, size_t cap);
/* ACT: Sol's whole prompt (malloc'd): `base` (the job's Sol prompt: its
 * persona and the SENSE context), then the three advisors' answers
 * (answers[p] NULL: a failed call, shown with errors[p]), whether the user
 * is available (available 1 / 0 with the presence name; -1: not known,
 * no line) and the seven prefixes to answer with. */
char *council_sol_prompt(const char *base, const char *const answers[COUNCIL_PERSONAS],
                         const char *const errors[COUNCIL_PERSONAS], int available,
                         const char *presence);

typedef struct council_job {
    char job[COUNCIL_JOB_MAX + 1];
    char user[COUNCIL_ID_MAX + 1];
    char session[COUNCIL_ID_MAX + 1];
    int loop;
    char *prompts[COUNCIL_PERSONAS]; /* owned; Sol's is completed by council_sol_prompt */
    int available;                   /* the user's availability at SENSE: 1, 0, or -1 (a job
                                      * written before the job said it) */
    char presence[16];               /* the presence it came from ("" when not said) */
} council_job;

int council_job_parse(const char *json, size_t len, council_job *out, char *why, size_t whylen);
void council_job_clear(council_job *j);

/* What the worker brings back for a loop job. */
typedef struct council_outcome {
    const char *job;
    const char *session;
    int loop;
    const char *answers[COUNCIL_PERSONAS]; /* NULL when the call failed */
    const char *errors[COUNCIL_PERSONAS];  /* why, when answers[i] is NULL */
    bool a2a_tried;
    const council_a2a_reply *a2a;          /* when a2a_tried */
} council_outcome;

/* Whether o is the loop the user's session waits for (active, in PLAN,
 * the same job): only then does council_on_outcome act on it. */
bool council_outcome_current(const council_user *u, const council_outcome *o);

/* ACT: commits a finished loop job into the user's record. A job that is
 * not the session's current one (paused, ended, superseded) changes
 * nothing. */
council_rc council_on_outcome(council_user *u, const council_config *c, const council_outcome *o,
                              int64_t now, const council_sink *sink);

#endif
