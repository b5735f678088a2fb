/* stall.h - stall-resumer's pure decision core: which agents are
 * active, with what confidence, in which status category, whether a
 * stalled one is due a resume prompt, which planner task it gets, and the
 * prompt itself. Plain C on json-c; no I/O; `now` is always a parameter.
 *
 * Files: source.c (the ten activity sources and their tiers), noise.c
 * (noise filter, our own prompts, acknowledgements), assess.c (confidence
 * table, recency penalties, validation, is_active, in_tool stretching),
 * category.c, guard.c (should_send_resume, fail open), agent.c (intake of
 * signals and status, the scan), agent_json.c (the agent record and the
 * assessment payload), tasks.c + tasks_json.c (the planner's task pool and
 * the claim order), prompt.c (resume prompt), job.c (the resume job),
 * config.c (defaults), durations.c (ages and windows as text). */
#ifndef STALL_H
#define STALL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <vigil/json.h>

#define STALL_MIN_MS ((int64_t)60000)
#define STALL_HOUR_MS ((int64_t)3600000)
#define STALL_ID_MAX 64
#define STALL_EVENT_ID_MAX 128
#define STALL_MAX_SIGNALS 200            /* newest signals kept per agent */
#define STALL_SIGNAL_MAX_AGE_MS (24 * STALL_HOUR_MS) /* rule 1: 24 h */
#define STALL_DETAIL_MAX 200             /* bytes of a signal's detail kept */
#define STALL_NOISE_MAX 32               /* noise patterns */
#define STALL_NOISE_LEN 64
#define STALL_MAX_REASONS 6
#define STALL_REASON_LEN 160
#define STALL_MAX_STATUS_TASKS 8
#define STALL_TEXT_MAX 200               /* fsm state, mission, task titles */
#define STALL_RECENT_RESUMES 8           /* our resume ids remembered for the noise filter */
#define STALL_ASSESS_SIGNALS_OUT 20      /* counted signals listed in the assessment */
/* The marker every resume prompt starts with; a signal carrying it is never
 * activity, whatever VIGIL_STALL_NOISE says. */
#define STALL_PROMPT_MARKER "[stall-recovery]"

/* ---- sources (source.c) ---------------------------------------------- */

typedef enum {
    STALL_SRC_TELEMETRY_EVENT = 0,
    STALL_SRC_GIT_COMMIT,
    STALL_SRC_CONTRACT_CLAIMED,
    STALL_SRC_TEST_EXECUTION,
    STALL_SRC_STATUS_UPDATE,
    STALL_SRC_FILE_MODIFICATION,
    STALL_SRC_DEVLOG_CREATED,
    STALL_SRC_INBOX_PROCESSING,
    STALL_SRC_MESSAGE_QUEUE,
    STALL_SRC_WORKSPACE_ACCESS,
    STALL_SRC__COUNT
} stall_source;

/* The names, NULL-terminated (for vigil_json_enum). */
extern const char *const STALL_SOURCE_NAMES[];
const char *stall_source_name(int source);
/* Index of name, -1 if unknown. */
int stall_source_parse(const char *name);
/* 1, 2 or 3 (the reliability tiers); 0 for an invalid source. */
int stall_source_tier(int source);

/* ---- configuration (config.c) ------------------------------------------ */

typedef struct stall_config {
    int64_t lookback_ms;        /* VIGIL_STALL_LOOKBACK_MS 3600000 */
    int64_t in_tool_ms;         /* VIGIL_STALL_IN_TOOL_MS 7200000 */
    int64_t warning_ms;         /* VIGIL_STALL_WARNING_MS 7200000 */
    int64_t critical_ms;        /* VIGIL_STALL_CRITICAL_MS 21600000 */
    int64_t autoresume_ms;      /* VIGIL_STALL_AUTORESUME_MS 43200000 */
    int64_t resume_interval_ms; /* VIGIL_STALL_RESUME_INTERVAL_MS 3600000 */
    int64_t scan_ms;            /* VIGIL_STALL_SCAN_MS 60000 */
    int64_t tier_window_ms[3];  /* VIGIL_STALL_TIER{1,2,3}_MS 3600000, 1800000, 900000 */
    int min_confidence_milli;   /* 500: min_confidence_threshold */
    char noise[STALL_NOISE_MAX][STALL_NOISE_LEN]; /* lower-case patterns */
    int n_noise;
} stall_config;

/* The specified noise patterns, comma-separated (VIGIL_STALL_NOISE default). */
extern const char STALL_DEFAULT_NOISE[];

void stall_config_init(stall_config *c);
/* The thresholds in order: warning <= critical <= auto-resume. 0, or -1
 * with err naming the rule (the service and `vigil agents status` refuse
 * such a configuration with the same words). */
int stall_config_check(const stall_config *c, char *err, size_t errlen);
/* Replaces the noise patterns with the comma-separated list (trimmed,
 * lower-cased, empty items skipped). Returns 0, or -1 with err when a
 * pattern is too long or there are too many. */
int stall_config_set_noise(stall_config *c, const char *csv, char *err, size_t errlen);

/* ---- noise (noise.c) ----------------------------------------------------- */

/* is_resumer_prompt: text matches a noise pattern (ASCII
 * case-insensitive substring) or carries STALL_PROMPT_MARKER. */
bool stall_is_resumer_prompt(const stall_config *c, const char *text);
/* is_meaningful_progress: text says something beyond an
 * acknowledgement ("ok", "ack", "received", "will do", ...). Empty or
 * NULL text is not progress. */
bool stall_is_meaningful_progress(const char *text);
/* The noise filter also drops acknowledgements: text that has
 * something in it but says nothing beyond one ("ok", "got it", "👍").
 * Empty or NULL text is not one (a signal without a detail is activity). */
bool stall_is_acknowledgement(const char *text);
/* True when text (NULL too) holds nothing but white space: ASCII, and the
 * Unicode spaces a text can look empty with (no-break, ideographic, ...).
 * A blank task title is refused at intake; a blank detail is a signal
 * without a detail (activity, never quoted as progress). */
bool stall_text_blank(const char *text);
/* text (NULL reads as "") without its leading and trailing white space
 * (the spaces stall_text_blank knows): *start is set to its first
 * character and the length is returned, 0 for a blank text. The resume
 * prompt prints texts so ("Mission: x." rather than "Mission: x  ."). */
size_t stall_text_trim(const char *text, const char **start);


/* ---- the agent record ----------------------------------------------------- */

typedef struct stall_signal {
    int source;
    int64_t ts;
    bool in_tool;
    char id[STALL_EVENT_ID_MAX + 1];
    char detail[STALL_DETAIL_MAX + 1];
} stall_signal;

typedef struct stall_status {
    bool present;
    int64_t ts;
    /* the report's own ts when it was after our clock (ts is then the
     * time we took it); 0 otherwise. The broker sends a retained status
     * again on every connect: this tells that copy from a new report. */
    int64_t claimed_ts;
    char fsm_state[STALL_TEXT_MAX + 1];
    char mission[STALL_TEXT_MAX + 1];
    char tasks[STALL_MAX_STATUS_TASKS][STALL_TEXT_MAX + 1];
    int n_tasks;
} stall_status;

typedef struct stall_claimed {
    char id[STALL_EVENT_ID_MAX + 1];
    char title[STALL_TEXT_MAX + 1];
    int64_t priority;
} stall_claimed;

typedef struct stall_agent {
    char agent[STALL_ID_MAX + 1];
    stall_signal sig[STALL_MAX_SIGNALS]; /* newest first (by ts) */
    int n_sig;
    stall_status status;
    int64_t last_seen;      /* newest signal ts ever accepted (0 = none) */
    char progress[STALL_DETAIL_MAX + 1]; /* last meaningful progress detail */
    int64_t progress_ts;
    int64_t last_resume;    /* when the last resume was sent (0 = never) */
    int64_t resume_seq;     /* resumes decided so far */
    int64_t sent_seq;       /* seq of the last resume sent */
    int64_t pending_seq;    /* a resume job in flight (0 = none) */
    int64_t pending_since;
    char pending_reason[STALL_REASON_LEN];
    char recent[STALL_RECENT_RESUMES][STALL_EVENT_ID_MAX + 1]; /* our resume ids, newest first */
    int n_recent;
    uint64_t published;     /* change key of the last assessment published */
    int64_t next_scan;      /* deadline of the scan timer (0 = none set) */
    bool retired;           /* its retained status was cleared: not scanned, never resumed */
} stall_agent;

void stall_agent_init(stall_agent *a, const char *agent);
/* A fresh record standing in for one that could not be read. The lost
 * record's resume numbers are unknown, and a number is the resume's job
 * id (resume.<a>.<seq>), which is also its claim id in the task pool and
 * the dedupe id of its commit: reusing one would find an earlier resume
 * "already done" and send nothing. So the stand-in numbers its resumes
 * from now (ms), past every number a record counting from 1 has used. */
void stall_agent_replace(stall_agent *a, const char *agent, int64_t now);

/* ---- assessment (assess.c, category.c) ---------------------------------- */

typedef enum {
    STALL_CAT_FRESH = 0,
    STALL_CAT_WARNING,
    STALL_CAT_CRITICAL,
    STALL_CAT_AUTO_RESUME
} stall_category;

const char *stall_category_name(stall_category c);
/* By age: < warning -> fresh; < critical -> warning; <= autoresume ->
 * critical; > autoresume -> auto-resume. */
stall_category stall_category_of_age(const stall_config *c, int64_t age_ms);

typedef struct stall_assessment {
    bool is_active;
    int confidence_milli;     /* confidence x 1000 (exact: every factor is) */
    int base_milli;           /* before the recency penalty */
    int64_t last_activity;    /* newest considered signal ts, else last_seen; 0 = none */
    int64_t newest_counted;   /* ts of the newest counted signal (0 = none) */
    bool validation_passed;
    bool in_tool;             /* windows stretched */
    int n_tier[3];            /* counted signals per tier */
    int n_considered;
    int counted[STALL_MAX_SIGNALS]; /* indexes into agent->sig, newest first */
    int n_counted;
    stall_category category;
    int64_t category_age_ms;  /* age the category came from (status or signal) */
    bool category_from_status;
    bool category_age_known;  /* false: no status and no activity ever seen, no age */
    char reasons[STALL_MAX_REASONS][STALL_REASON_LEN];
    int n_reasons;
} stall_assessment;

/* Assesses a at now (rules 1-6 of the issue, then the category). Returns
 * 0, or -1 with err when the record itself is inconsistent (a signal with
 * an invalid source): the guard then fails open. */
int stall_assess(const stall_agent *a, const stall_config *c, int64_t now, stall_assessment *out,
                 char *err, size_t errlen);
/* How long the agent has been inactive, for the resume prompt: since the
 * assessment's last_activity (what its inactivity_minutes counts), so a
 * status with nothing but a state is no sign of life here either. -1 for
 * an agent never seen active. */
int64_t stall_idle_ms(const stall_agent *a, const stall_config *c, int64_t now);
/* Base confidence (x1000) from counted signals per tier: the specified table. */
int stall_base_confidence(int n1, int n2, int n3);
/* The recency penalty applied to base for the newest counted signal's age:
 * over the tier-1 window (60 min) x 0.7, over the tier-2 window (30 min)
 * x 0.85: the specified hour and half hour, which are those windows. */
int stall_recency_penalty(const stall_config *c, int base_milli, int64_t age_ms);
/* An age as the status checker shows it ("42s", "17m", "5h59m"): cut
 * down, never rounded up, so an age just under a category limit never
 * reads as the limit itself (durations.c). */
void stall_age_text(int64_t age_ms, char *out, size_t outlen);
/* Sets as->category and the age it came from: active -> fresh; else by
 * status age, or by the age of its newest signal without a status. An
 * agent with neither (the stand-in for an unreadable record) has no age
 * (category_age_known false): it is auto-resume because detection failed
 * and the guard fails open, never because of an age counted from 1970. */
void stall_categorize(const stall_agent *a, const stall_config *c, bool active, int64_t now,
                      stall_assessment *as);

/* ---- guard (guard.c) ------------------------------------------------------- */

typedef struct stall_guard {
    bool send;
    bool failed_open;
    char reason[STALL_REASON_LEN];
} stall_guard;

/* should_send_resume: never for an active agent; allowed for an
 * inactive one or one whose signals failed validation; allowed, saying so,
 * when the assessment itself failed (assess_rc != 0, fail open). */
stall_guard stall_should_send_resume(int assess_rc, const char *assess_err,
                                     const stall_assessment *as);

/* The reason a resume goes out with, at the scan and at the re-check
 * before it is sent: the guard's, and for an agent with no age (nothing
 * known of it) that the category failed open too. */
void stall_resume_reason(const stall_guard *g, const stall_assessment *as, char *out,
                         size_t outlen);

/* ---- intake and scan (agent.c) -------------------------------------------- */

typedef enum {
    STALL_SIGNAL_ADDED = 0,
    STALL_SIGNAL_NOISE,     /* matched the noise filter or is our own prompt */
    STALL_SIGNAL_DUPLICATE, /* same id already kept */
    STALL_SIGNAL_EXPIRED,   /* older than 24 h, or older than every kept one when full */
    STALL_SIGNAL_ACKNOWLEDGEMENT /* its detail is only an acknowledgement: not activity */
} stall_signal_result;

/* Adds a signal (detail may be NULL) keeping the newest STALL_MAX_SIGNALS
 * by ts and dropping those older than 24 h. A ts after now counts as now. */
stall_signal_result stall_agent_add_signal(stall_agent *a, const stall_config *c, const char *id,
                                           int source, const char *detail, bool in_tool,
                                           int64_t ts, int64_t now);
/* Replaces the status unless st is older than the one held (a retained
 * redelivery); a ts after now counts as now. Returns true when it changed.
 * A status with meaningful content is also a STATUS_UPDATE signal (tier 2)
 * at its ts. */
bool stall_agent_set_status(stall_agent *a, const stall_config *c, const stall_status *st,
                            int64_t now);
/* "status.json with meaningful content": a mission that says more than an
 * acknowledgement, or tasks; and neither it nor the state is noise. */
bool stall_status_is_meaningful(const stall_config *c, const stall_status *st);
/* Drops signals older than 24 h. */
void stall_agent_expire(stall_agent *a, int64_t now);

/* Change key of an assessment: what a reader cares about (is_active,
 * confidence, validation, category, last activity, counted signals). */
uint64_t stall_assessment_key(const stall_assessment *as);

typedef struct stall_scan_result {
    stall_assessment as;
    int assess_rc;
    char assess_err[160];
    stall_guard guard;
    bool resume;            /* a resume job is to be enqueued */
    int64_t seq;            /* ... with this seq */
    char why_not[STALL_REASON_LEN]; /* when !resume: why */
} stall_scan_result;

/* One scan of an agent at now: expire, assess, guard, and decide whether a
 * resume is due (not active, category auto-resume, none in flight, none
 * sent within resume_interval). When due, marks it pending on a.
 * internal_error (NULL normally) reports a failure outside the core (the
 * stored record was unreadable): the assessment counts as failed and the
 * guard fails open. */
void stall_agent_scan(stall_agent *a, const stall_config *c, int64_t now,
                      const char *internal_error, stall_scan_result *r);

/* Is a resume due now (given the guard's verdict and the category)? why
 * says why not. Never to a retired agent. */
bool stall_resume_due(const stall_agent *a, const stall_config *c, const stall_guard *g,
                      stall_category cat, int64_t now, char *why, size_t whylen);

/* Activity is validated again right before a resume prompt is
 * written. A resume job may wait (a restart, a job lease, a retry) between
 * the scan that queued it and the worker: is resume seq still due at now?
 * Only the agent's pending resume can be: a job for another seq was
 * queued before the agent retired and came back, or before its record was
 * replaced, and its scans have decided afresh since. Assesses a again
 * (failing open as the scan does) and checks the category. When not, says
 * why and clears seq's pending mark on a (the caller saves a), so that a
 * later scan decides afresh. A seq already sent is "due": the send step
 * sends it only once. */
bool stall_resume_still_due(stall_agent *a, const stall_config *c, int64_t seq, int64_t now,
                            char *why, size_t whylen);

/* The agent's retained status was cleared (an empty agent/{a}/status):
 * it has gone away. Forgets its signals, status, progress, pending resume
 * and scan, and marks it retired: no scan, no resume. What tells our own
 * resumes apart stays (their sequence numbers and ids), so an agent that
 * comes back (an added signal or a status, stall_agent_return) is resumed
 * under new numbers. Returns false when it was retired already (nothing
 * changes). */
bool stall_agent_retire(stall_agent *a);
/* A retired agent that reports again (a signal added or a status taken)
 * is an agent like any other. */
void stall_agent_return(stall_agent *a);

/* Records a sent resume (seq, event id, claimed task or NULL). Returns
 * false when seq was already sent (nothing changes). */
bool stall_agent_resume_sent(stall_agent *a, int64_t seq, const char *event_id, int64_t now);

/* ---- JSON (agent_json.c) ----------------------------------------------------- */

/* Record <-> JSON. from_json returns NULL with err on an unreadable record. */
char *stall_agent_to_json(const stall_agent *a);
stall_agent *stall_agent_from_json(const char *json, const char *agent, char *err, size_t errlen);
/* The agent/{a}/assessment payload (new reference). On an assessment that
 * failed (assess_rc != 0), the reasons say so and confidence is 0. */
json_object *stall_assessment_json(const stall_agent *a, const stall_scan_result *r, int64_t now);

/* ---- tasks (tasks.c, tasks_json.c) -------------------------------------- */

#define STALL_MAX_OPEN_TASKS 1000
#define STALL_MAX_CLAIMED_TASKS 1000

typedef struct stall_task {
    char id[STALL_EVENT_ID_MAX + 1];
    char title[STALL_TEXT_MAX + 1];
    int64_t priority;
    char agent[STALL_ID_MAX + 1]; /* "" = any agent */
    int64_t ts;
} stall_task;

typedef struct stall_claim {
    char id[STALL_EVENT_ID_MAX + 1];    /* task id */
    char title[STALL_TEXT_MAX + 1];
    int64_t priority;
    char agent[STALL_ID_MAX + 1];       /* claimed for */
    char claim[STALL_EVENT_ID_MAX + 1]; /* the resume job that claimed it */
    int64_t at;
    /* the task as offered, to put it back (stall_tasks_release) */
    char task_agent[STALL_ID_MAX + 1]; /* its own `agent`: "" = any agent */
    int64_t ts;
} stall_claim;

typedef struct stall_tasks {
    stall_task *open; /* STALL_MAX_OPEN_TASKS */
    int n_open;
    stall_claim *claimed; /* newest last, STALL_MAX_CLAIMED_TASKS */
    int n_claimed;
} stall_tasks;

stall_tasks *stall_tasks_new(void);
void stall_tasks_free(stall_tasks *t);

typedef enum {
    STALL_TASK_ADDED = 0,
    STALL_TASK_UPDATED,        /* same id, newer ts: title/priority/agent replaced */
    STALL_TASK_UNCHANGED,      /* same id, not newer */
    STALL_TASK_ALREADY_CLAIMED,/* a claimed task is never offered again */
    STALL_TASK_FULL            /* STALL_MAX_OPEN_TASKS open already and this one ranks last */
} stall_task_result;

stall_task_result stall_tasks_offer(stall_tasks *t, const stall_task *task);
/* Claim order for agent: tasks meant for it first, then tasks for any
 * agent (never another agent's); within each, higher priority first, then
 * older ts, then id. Returns <0 when a should come before b. */
int stall_task_order(const stall_task *a, const stall_task *b, const char *agent);
/* Claims the next task for agent under claim id `claim`. Idempotent: when
 * a task was already claimed under `claim`, that claim is returned again.
 * Returns the claim (owned by t), or NULL when no task fits; *changed says
 * whether t changed. */
const stall_claim *stall_tasks_claim(stall_tasks *t, const char *agent, const char *claim,
                                     int64_t now, bool *changed);
/* Puts the task claimed under claim id `claim` back in the pool, as it
 * was offered: its resume was never sent (the agent retired between the
 * claim and the send), and a claimed task is otherwise never offered
 * again. True when t changed; false when nothing was claimed under it
 * (released already: applying it twice changes nothing) or when the pool
 * is full and the task ranks last (it is then dropped, as an offer would
 * be). */
bool stall_tasks_release(stall_tasks *t, const char *claim);
/* Up to max open tasks in claim order for agent (the project priorities). */
int stall_tasks_top(const stall_tasks *t, const char *agent, const stall_task **out, int max);

char *stall_tasks_to_json(const stall_tasks *t);
stall_tasks *stall_tasks_from_json(const char *json, char *err, size_t errlen);

/* ---- prompt (prompt.c) ------------------------------------------------------- */

/* The actions advised for an FSM state (known states case-insensitively,
 * a general fallback otherwise), worded for a resume that claimed a task
 * for the agent (claimed) or one that has none to give it. */
const char *stall_fsm_actions(const char *fsm_state, bool claimed);
/* The agent's FSM state as a resume names it, in the prompt and in the
 * event's fsm_state alike: its status' fsm_state trimmed (stall_text_trim),
 * or "UNKNOWN" without a status or when blank. *start is set, the length
 * returned (never 0; not NUL-terminated when trimmed). */
size_t stall_resume_state(const stall_agent *a, const char **start);
/* The resume prompt (malloc'd): marker, idle time (stall_idle_ms; < 0:
 * "no activity seen"), state and its actions,
 * last progress, the claimed task (or none), the priorities, the agent's
 * own tasks. */
char *stall_resume_prompt(const stall_agent *a, int64_t idle_ms, const stall_claimed *task,
                          const stall_task *const *priorities, int n_priorities);

/* ---- the resume job (job.c) --------------------------------------------------- */

typedef struct stall_job {
    char id[STALL_EVENT_ID_MAX + 1]; /* "resume.<agent>.<seq>": the claim id and input id */
    char agent[STALL_ID_MAX + 1];
    int64_t seq;
    int64_t decided;                 /* when the scan decided it */
    char reason[STALL_REASON_LEN];
} stall_job;

void stall_job_make(stall_job *j, const char *agent, int64_t seq, int64_t decided,
                    const char *reason);
char *stall_job_to_json(const stall_job *j);
int stall_job_parse(const char *buf, size_t len, stall_job *j, char *err, size_t errlen);

/* The agent/{a}/resume payload (new reference). */
json_object *stall_resume_json(const char *event_id, const stall_agent *a, const char *prompt,
                               const stall_claimed *task, const char *reason, int64_t now);

#endif
