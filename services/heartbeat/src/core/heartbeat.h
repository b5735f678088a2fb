/* heartbeat.h - the pure decision core of the heartbeat service:
 * a persona wakes itself now and then, reads the recent context, reasons
 * with a checklist and either stays silent (HEARTBEAT_OK) or sends one
 * proactive message worth the interruption.
 *
 * Plain C, no I/O: `now` is always a parameter, local time comes from time
 * zone rules handed in through a resolver (tz.c reads TZif bytes and POSIX
 * TZ strings the shell loaded), and every decision is returned as an
 * hb_out (new state, messages, the run timer, a job for the LLM) that the
 * shell commits atomically. Files, one rule family each:
 *   config.c     defaults (the specified and the numbers)
 *   interval.c   adaptive interval 2/10/30 min, stretch, idle cap
 *   tz.c         UTC offset at an instant from TZif data / a POSIX TZ rule
 *   localtime.c  civil time from a UTC instant and an offset
 *   quiet.c      quiet hours "HH:MM" windows (across midnight too), the night
 *   skip.c       every skip rule, in order, with its reason
 *   ack.c        HEARTBEAT_OK recognition (and its removal from kept context)
 *   reply.c      the model's answer: JSON {message, priority, category} or text
 *   voi.c        value-of-information table and gate
 *   permission.c the per-user allow list of proactive messages
 *   prompt.c     the specified prompt
 *   cfg_payload.c  heartbeat/{p}/config and the default checklist
 *   checklist.c  a checklist file's text, read again before each run
 *   state.c      the persona record (JSON)
 *   job.c        the job payload of a started run
 *   engine.c     events: config (and its clear), room message, levels, timer,
 *                run result
 *   internal.h   what these files share (skip check, job writer) */
#ifndef HEARTBEAT_CORE_H
#define HEARTBEAT_CORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HB_ID_MAX 64
#define HB_RECENT_MAX 10          /* messages of the room kept (10, as specified) */
#define HB_RECENT_CHARS 100       /* each cut to this many characters (as specified) */
#define HB_LEVELS_MAX 32          /* rooms whose level is remembered per persona */
#define HB_MESSAGE_MAX 4000       /* bytes of a proactive message; a longer one is cut */
#define HB_TOKEN "HEARTBEAT_OK"
#define HB_TZ_NAME_MAX 64
#define HB_MODEL_MAX 128
#define HB_CHECKLIST_MAX 16384
#define HB_IDENTITY_MAX 2048
#define HB_CHECKLIST_FILE_NAME_MAX 200 /* bytes of a checklist_file name */

/* ------------------------------------------------------------------ */
/* Time zones (tz.c, localtime.c)                                     */
/* ------------------------------------------------------------------ */

typedef struct hb_tz hb_tz;

/* Parses a TZif file's bytes (versions 1-4; the v2+ 64-bit block and the
 * POSIX TZ footer, used past the last transition). Returns a new zone, or
 * NULL with err. */
hb_tz *hb_tz_from_tzif(const unsigned char *data, size_t len, char *err, size_t errlen);
/* Parses a POSIX TZ rule ("UTC0", "<+07>-7", "EST5EDT,M3.2.0,M11.1.0",
 * "CET-1CEST,M3.5.0,M10.5.0/3"). Returns a new zone, or NULL with err. */
hb_tz *hb_tz_from_posix(const char *spec, char *err, size_t errlen);
void hb_tz_free(hb_tz *tz);
/* UTC offset (seconds east) in force at utc_s; *dst says whether it is
 * daylight saving time (may be NULL). A NULL zone is UTC. */
int hb_tz_offset(const hb_tz *tz, int64_t utc_s, bool *dst);

typedef struct hb_local {
    int year, month, day;   /* month 1-12 */
    int hour, minute, second;
    int wday;               /* 0 = Sunday */
    int offset_s;           /* east of UTC */
    bool dst;
} hb_local;

/* Civil time at now_ms in zone tz (NULL = UTC). */
hb_local hb_local_time(const hb_tz *tz, int64_t now_ms);
/* Days since 1970-01-01 of a civil date, and back (proleptic Gregorian). */
int64_t hb_days_from_civil(int64_t y, int m, int d);
void hb_civil_from_days(int64_t z, int *y, int *m, int *d);

/* The shell's seam: a zone by IANA name (NULL when unknown). The core
 * treats the answer as data; a resolver must return the same zone for the
 * same name during one decision. */
typedef struct hb_tz_resolver {
    const hb_tz *(*lookup)(void *arg, const char *name);
    void *arg;
} hb_tz_resolver;

/* ------------------------------------------------------------------ */
/* Configuration (config.c)                                           */
/* ------------------------------------------------------------------ */

typedef struct hb_config {
    int64_t active_interval_ms;   /* VIGIL_HEARTBEAT_ACTIVE_INTERVAL_MS 120000 */
    int64_t normal_interval_ms;   /* VIGIL_HEARTBEAT_NORMAL_INTERVAL_MS 600000 */
    int64_t inactive_interval_ms; /* VIGIL_HEARTBEAT_INACTIVE_INTERVAL_MS 1800000 */
    int64_t recent_ms;            /* VIGIL_HEARTBEAT_RECENT_MS 300000 */
    int64_t inactive_after_ms;    /* VIGIL_HEARTBEAT_INACTIVE_AFTER_MS 3600000 */
    int64_t live_ms;              /* VIGIL_HEARTBEAT_LIVE_MS 120000 */
    int64_t unanswered_ms;        /* VIGIL_HEARTBEAT_UNANSWERED_MS 7200000 */
    int64_t idle_cap_ms;          /* VIGIL_HEARTBEAT_IDLE_CAP_MS 0 (no cap) */
    double skip_stretch;          /* VIGIL_HEARTBEAT_SKIP_STRETCH 1.5 */
    int64_t run_guard_ms;         /* a run not finished after this is given up (shell sets) */
    int64_t guard_late_ms;        /* a guard firing later than this after its due waits once more
                                   * (shell sets: the job lease) */
    int max_tokens;               /* VIGIL_HEARTBEAT_MAX_TOKENS 300 */
    bool llm_enabled;             /* VIGIL_LLM_URL set */
    hb_tz_resolver tz;            /* zones by name */
} hb_config;

void hb_config_init(hb_config *c);

/* ------------------------------------------------------------------ */
/* Rules                                                              */
/* ------------------------------------------------------------------ */

/* interval.c: the next interval after a run, from the user's last activity
 * (active when under recent_ms, inactive past inactive_after_ms, normal
 * otherwise); the normal and inactive ones stretched by
 * skip_stretch^consecutive_ok, capped at the inactive interval (never below
 * the unstretched one), the active one never stretched. */
int64_t hb_interval_ms(const hb_config *c, int64_t now, int64_t last_activity, int consecutive_ok);
/* True when the user has been away at least idle_cap_ms: no runs. Off by
 * default (0): a persona keeps looking in on its inactive interval. */
bool hb_idle(const hb_config *c, int64_t now, int64_t last_activity);

/* quiet.c */
typedef struct hb_quiet {
    bool set;
    int start_min, end_min;          /* minutes of the local day */
} hb_quiet;
/* "HH:MM" -> minutes of the day; -1 when malformed. */
int hb_parse_hhmm(const char *s);
/* Within the window [start, end) of the local day; across midnight when
 * start > end; start == end is an empty window. */
bool hb_quiet_contains(const hb_quiet *q, int minute_of_day);
/* Milliseconds from the local time l until the window ends (0 outside). */
int64_t hb_quiet_remaining_ms(const hb_quiet *q, const hb_local *l);
/* The night, HB_NIGHT_START_MIN to HB_NIGHT_END_MIN local: the window of
 * `quiet_hours: true`. */
#define HB_NIGHT_START_MIN (22 * 60)
#define HB_NIGHT_END_MIN (7 * 60)
const hb_quiet *hb_quiet_night(void);

/* ack.c: is this reply HEARTBEAT_OK? The specified rule, `response.includes(
 * HEARTBEAT_OK_MARKER)`: the token anywhere in the text, even glued to
 * other characters ("HEARTBEAT_OKAY"), and in any case (the specified test is
 * case-sensitive; a lower-case token is the same answer, and must not reach
 * a room either). Such an answer is a no-action run, whatever else it says.
 * hb_strip_token writes text without any occurrence of the token (trimmed)
 * into out (same size as the text is enough): the context kept from room
 * messages, never a message to send. */
bool hb_is_ack(const char *text, size_t len);
size_t hb_strip_token(const char *text, size_t len, char *out, size_t outlen);

/* voi.c: the value-of-information table (README, "A run"). Values in
 * thousandths so the > 0.3 gate is exact. */
typedef enum { HB_PRIO_URGENT, HB_PRIO_NORMAL, HB_PRIO_LOW, HB_PRIO__COUNT } hb_priority;
typedef enum {
    HB_CAT_REMINDER, HB_CAT_DEADLINE, HB_CAT_ALERT, HB_CAT_NOTIFICATION, HB_CAT_CHECK_IN,
    HB_CAT_UPDATE, HB_CAT_DEFAULT, HB_CAT__COUNT
} hb_category;
typedef enum { HB_DIST_QUIET, HB_DIST_OFF_PEAK, HB_DIST_PEAK } hb_disturbance;
const char *hb_priority_name(hb_priority p);
const char *hb_category_name(hb_category c);
int hb_priority_parse(const char *s);   /* -1 unknown */
int hb_category_parse(const char *s);   /* -1 unknown */
int hb_voi_probability(hb_priority p);  /* 900 / 600 / 300 */
int hb_voi_benefit(hb_category c);      /* 1000 ... 300; default (no category) 1000 */
int hb_voi_disturbance(hb_disturbance d); /* 600 / 200 / 100 */
/* Peak hours: 9-11 and 14-20 local (hour in [9,11) or [14,20)). */
bool hb_is_peak(int hour);
/* VoI in thousandths: P x benefit - disturbance. */
int hb_voi(hb_priority p, hb_category c, hb_disturbance d);
#define HB_VOI_THRESHOLD 300
bool hb_voi_send(int voi_milli);

/* permission.c: the allow list of proactive messages for the persona's
 * user: all, none, or a set of categories (bit per hb_category). */
#define HB_ALLOW_ALL ((unsigned)((1u << HB_CAT__COUNT) - 1))
bool hb_permitted(unsigned allow_mask, hb_category c);

/* reply.c: what the model said. */
typedef enum { HB_REPLY_ACK, HB_REPLY_MESSAGE, HB_REPLY_UNUSABLE } hb_reply_kind;
typedef struct hb_reply {
    hb_reply_kind kind;
    char *message;          /* malloc'd, trimmed, when MESSAGE (never holds the token) */
    size_t cut_from;        /* its bytes before the cut to HB_MESSAGE_MAX; 0 when whole */
    hb_priority priority;
    hb_category category;
    char why[160];          /* when UNUSABLE */
} hb_reply;
/* Reads the answer: any text holding HEARTBEAT_OK (hb_is_ack, also inside
 * a JSON message) -> ACK; a JSON object with a non-blank "message" ->
 * MESSAGE with its priority/category (unknown -> normal/default); JSON that
 * does not parse, lacks a "message" string or has a blank one, and a blank
 * answer -> UNUSABLE; any other text -> MESSAGE, normal, default category
 * (the specified plain-text answer). A message longer than HB_MESSAGE_MAX
 * bytes is cut on a UTF-8 boundary, with cut_from set. */
void hb_reply_read(const char *text, size_t len, hb_reply *out);
void hb_reply_clear(hb_reply *r);

/* ------------------------------------------------------------------ */
/* The persona record (state.c)                                       */
/* ------------------------------------------------------------------ */

typedef enum {
    HB_LEVEL_UNKNOWN = 0, HB_LEVEL_ACTIVE, HB_LEVEL_MENTION_ONLY, HB_LEVEL_HUMAN_ONLY,
    HB_LEVEL_SLEEP
} hb_level;
const char *hb_level_name(hb_level l);
int hb_level_parse(const char *s); /* -1 unknown */

typedef struct hb_persona_cfg {
    bool set;
    char persona[HB_ID_MAX + 1], user[HB_ID_MAX + 1], room[HB_ID_MAX + 1];
    char *checklist;        /* malloc'd; "" = empty (no runs call the model) */
    char checklist_file[HB_CHECKLIST_FILE_NAME_MAX + 1]; /* "" none; read again each run */
    char *identity;         /* malloc'd or NULL (a default is used) */
    hb_quiet quiet;
    char tz[HB_TZ_NAME_MAX + 1]; /* "" = UTC */
    bool enabled;
    unsigned allow;         /* hb_permitted mask */
    char model[HB_MODEL_MAX + 1];
} hb_persona_cfg;

typedef struct hb_recent {
    char sender[HB_ID_MAX + 1];
    char text[HB_RECENT_CHARS * 4 + 1];
    bool human;
} hb_recent;

typedef struct hb_room_level {
    char room[HB_ID_MAX + 1];
    hb_level level;
} hb_room_level;

typedef struct hb_state {
    char persona[HB_ID_MAX + 1];
    hb_persona_cfg cfg;
    int64_t last_activity;    /* the user's (or configuration, or a sent message) */
    int64_t last_user_msg;    /* the user's last message in the room; 0 none */
    int64_t last_proactive;   /* the last proactive message sent; 0 none */
    bool answered;            /* the user wrote after it */
    int consecutive_ok;       /* runs in a row that ended `ok` */
    int64_t runs;             /* run counter (run ids) */
    int64_t cfg_gen;          /* configs applied (a change or a clear): the generation */
    char running[HB_ID_MAX + 32]; /* the run waiting for the model, "" none */
    int64_t run_started;
    int64_t run_gen;          /* cfg_gen when the running run started */
    int64_t next_run;         /* 0 = none scheduled */
    hb_recent recent[HB_RECENT_MAX];
    int n_recent;
    hb_room_level levels[HB_LEVELS_MAX];
    int n_levels;
    /* not stored: why the checklist file could not be read for this run
     * (hb_checklist_file_read), "" when it was or there is none */
    char checklist_error[160];
} hb_state;

/* Loads a record (json NULL = new, for persona). 0 or -1 with err. */
int hb_state_load(hb_state *s, const char *persona, const char *json, char *err, size_t errlen);
/* The record as JSON (malloc'd) or NULL on allocation failure. */
char *hb_state_dump(const hb_state *s);
void hb_state_free(hb_state *s);
hb_level hb_state_level(const hb_state *s, const char *room);

/* Reads a heartbeat/{p}/config payload into cfg (fields: user, room,
 * enabled, checklist?, identity?, quiet_hours? as "HH:MM-HH:MM" or {start,
 * end, timezone?}, timezone?, allow_proactive? as a bool or a list of
 * categories, model?). checklist_text, when not NULL, is the checklist
 * (the shell read the file named by checklist_file, whose name is kept to
 * be read again before each run). Time zones are
 * checked through c->tz. Returns HB_CFG_OK or why not, with err. */
typedef enum {
    HB_CFG_OK = 0, HB_CFG_MISSING, HB_CFG_WRONG_TYPE, HB_CFG_BAD_VALUE, HB_CFG_BAD_ID, HB_CFG_NOMEM
} hb_cfg_status;
struct json_object;
hb_cfg_status hb_config_payload(struct json_object *body, const hb_config *c,
                                const char *checklist_text, hb_persona_cfg *cfg, char *err,
                                size_t errlen);
void hb_persona_cfg_clear(hb_persona_cfg *cfg);
/* The specified HEARTBEAT.md, used when a config names no checklist; its title
 * is generic ("# Heartbeat Protocol", the original is "# Orion Heartbeat
 * Protocol"): the persona is not Orion, and its name comes in the prompt's
 * identity line. */
extern const char HB_DEFAULT_CHECKLIST[];

/* prompt.c: the specified prompt for one run (malloc'd), its last line
 * extended to ask for the message as JSON with a priority and a category. */
char *hb_prompt(const hb_state *s, const hb_local *now_local, const char *tz_name, int64_t now);

/* ------------------------------------------------------------------ */
/* Events (engine.c)                                                  */
/* ------------------------------------------------------------------ */

#define HB_OUT_MAX 4
#define HB_LIMIT_DETAIL_MAX 384
#define HB_TIMER_KEEP INT64_MAX
#define HB_TIMER_CANCEL INT64_MIN

/* What the run event of a decision said (a decision ends at most one
 * run), so the shell counts and logs it without reading the payload back. */
typedef struct hb_run_note {
    const char *outcome;       /* NULL: no run ended in this decision */
    const char *reason;        /* NULL none */
    char run[HB_ID_MAX + 32];
    int consecutive_skips;
    char voi[16];              /* the score as published ("0.4"), "" none */
    size_t message_bytes;      /* the proactive message's, when sent */
    char detail[200];
} hb_run_note;

typedef struct hb_out {
    bool changed;              /* state changed: store hb_state_dump */
    struct {
        char topic[160];
        char *payload;         /* malloc'd */
    } msg[HB_OUT_MAX];
    int n_msg;
    int64_t timer;             /* HB_TIMER_KEEP, HB_TIMER_CANCEL or a due time */
    char *job;                 /* malloc'd job payload for the LLM, or NULL */
    char index_add[HB_ID_MAX + 1];    /* room index changes: add persona to room */
    char index_remove[HB_ID_MAX + 1]; /* ... remove it from room */
    /* A bound of the core refused or cut part of this decision's input
     * (at most one per decision): the limit's metric label, NULL none, and
     * what it refused. The shell says so (vigil/limits.h). */
    const char *limit;
    char limit_detail[HB_LIMIT_DETAIL_MAX];
    hb_run_note run;           /* the run event's gist (run.outcome NULL: none) */
} hb_out;

void hb_out_init(hb_out *o);
void hb_out_clear(hb_out *o);

typedef enum { HB_OK = 0, HB_ERR_NOMEM = -1, HB_ERR_STATE = -2 } hb_result;

/* A new configuration (replacing any). Counts as activity: the first run
 * comes after the active interval. The same configuration again changes
 * nothing. cfg is moved into the state (cleared in the caller). */
hb_result hb_on_config(hb_state *s, const hb_config *c, hb_persona_cfg *cfg, int64_t now,
                       hb_out *out);

/* The persona's retained config cleared (an empty heartbeat/{p}/config):
 * its heartbeat is deleted. The record becomes what a persona never
 * configured has (no config, schedule, context or user activity), the run
 * timer is cancelled and the persona leaves its room's index (a place under the
 * room's limit freed). Kept: the levels (persona/{p}/state's, not the
 * config's) and the run counter, so a later config, a new heartbeat,
 * numbers its runs and messages after the old ones and never repeats an
 * id. A run in flight stays marked, with its guard timer, until its answer
 * (dropped, unreported) or its guard (given up, unreported): a config
 * published again meanwhile starts no run beside it, runs never overlap.
 * A persona without a config changes nothing (a clear applied twice). */
hb_result hb_on_config_cleared(hb_state *s, hb_out *out);

typedef struct hb_message {
    const char *id, *room, *sender, *text;
    bool human, proactive;
    int64_t ts;
} hb_message;
/* A message in a room the persona serves: kept as context; from the user
 * (a human), activity and a new schedule. */
hb_result hb_on_message(hb_state *s, const hb_config *c, const hb_message *m, int64_t now,
                        hb_out *out);

/* Limit labels (vigil_limit_refusals_total{limit}) of the core's bounds. */
#define HB_LIMIT_LEVELS "levels_per_persona"       /* HB_LEVELS_MAX */
#define HB_LIMIT_MESSAGE "proactive_message_bytes" /* HB_MESSAGE_MAX */

/* The persona's levels per room (retained persona/{p}/state, any number
 * of rooms). At most HB_LEVELS_MAX are remembered: the configured room's
 * first (the one runs read), then the others in the order given; the rest
 * are not kept, and out->limit says so. None (n 0: {"rooms":{}}, or the
 * retained state cleared) forgets every level, as if no state had come:
 * no run is then skipped for a level (persona-asleep, -mention-only). */
hb_result hb_on_levels(hb_state *s, const hb_room_level *levels, int n, int64_t now, hb_out *out);

/* Whether cfg would take the persona into a room it does not serve yet
 * while that room already has max heartbeats (members: the room index's
 * size, anything above max when it holds more). One room message reaches
 * at most max personas, so such a config is refused; a persona already
 * serving the room (a config republished, switched off) always passes. */
bool hb_config_joins_full_room(const hb_state *s, const hb_persona_cfg *cfg, int members, int max);

/* The run timer, due at due, handled at now: a skip (with its reason), or
 * a run started (state.running set, a job for the LLM). Also gives up a
 * run that did not finish within run_guard_ms, unless the guard fires
 * more than guard_late_ms after its due: then nothing could act for that
 * long (Redis away, the shard's replica down), the run's worker included,
 * which may hold the answer and wait for Redis as the timer did, so the
 * guard waits run_guard_ms more from now. */
hb_result hb_on_timer(hb_state *s, const hb_config *c, int64_t due, int64_t now, hb_out *out);

/* checklist.c: a config's checklist file, read again by the shell just
 * before the timer decision, so that an edit takes effect at the next run
 * (as HEARTBEAT.md is read at every run): text is its content, or NULL
 * with error saying why it could not be read, and then the run is skipped
 * (`checklist-unreadable`, no model call). Changes nothing for a config
 * without a file. HB_OK or HB_ERR_NOMEM. */
hb_result hb_checklist_file_read(hb_state *s, const char *text, const char *error, hb_out *out);

typedef struct hb_run_result {
    const char *run;          /* the run id of the job */
    bool llm_ok;
    const char *content;      /* the answer when llm_ok */
    size_t len;
    const char *error;        /* why the call failed (llm_ok false) */
    int64_t tokens;
} hb_run_result;
/* The model answered (or failed) for a run: ok / sent / voi-blocked /
 * permission-blocked / error, then the next run. A run whose heartbeat was
 * switched off or configured anew while the model answered is cancelled
 * first (hb_run_wanted): `skipped`, nothing sent. Any answer but
 * HEARTBEAT_OK resets consecutive_ok before the gate (the specified order). A
 * message that passes the gate while the user wrote under live_ms ago (a
 * slow model answering after the user spoke) is not sent: `skipped`,
 * `live-exchange`, as at a run's start. A result for a run that is no
 * longer running changes nothing (it was given up or already done). */
hb_result hb_on_result(hb_state *s, const hb_config *c, const hb_run_result *r, int64_t now,
                       hb_out *out);
/* Whether the model's answer to run would be used: the run is still the
 * one in flight, the heartbeat is configured and switched on, and no
 * config was applied since the run started (cfg_gen == run_gen). When it
 * is not, hb_on_result ignores the answer (stale) or cancels the run,
 * `skipped` with reason `disabled` (switched off) or `reconfigured`
 * (configured anew: off and on again, another room...), whatever it says,
 * so the worker need not ask the model at all (no tokens spent on a
 * deleted, switched-off or replaced heartbeat). */
bool hb_run_wanted(const hb_state *s, const char *run);

/* The job payload's fields (engine.c writes them, the shell's worker reads
 * them with hb_job_parse). */
typedef struct hb_job {
    char run[HB_ID_MAX + 32];
    char persona[HB_ID_MAX + 1];
    char model[HB_MODEL_MAX + 1];
    int max_tokens;
    char *prompt;            /* malloc'd */
} hb_job;
int hb_job_parse(const char *json, size_t len, hb_job *j, char *err, size_t errlen);
void hb_job_clear(hb_job *j);

#endif
