/* wake.h - wake-evaluator's pure decision core (Wake-Up Decision
 * Intelligence, Tiers 1-3, Autopilot, Metadata Flow, token economics).
 *
 * No I/O and no clock: every function gets `now` and talks to the outside
 * only through a wake_sink (publish, enqueue a job, set a timer, note room
 * membership, make an event id) or through a wake_reader (the tolerant
 * model-output readers, which live in libshared). Tests hand in fakes.
 *
 * The state of one room (a wake_room) is what the service keeps in Redis
 * under the room id: each persona's level and metadata, a bounded window of
 * recent messages, per-persona activity, the last human message, the
 * autopilot schedule and the token counters. */
#ifndef WAKE_H
#define WAKE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <vigil/json.h>
#include <vigil/names.h>
#include <vigil/tlist.h>

#define WAKE_ID_MAX 64        /* room, persona ids */
#define WAKE_EVID_MAX 128     /* message / event ids */
#define WAKE_NAME_MAX 128     /* display name, role, model */
#define WAKE_SHORT_MAX 48     /* mood, trigger, one domain name */
#define WAKE_DOMAINS_MAX 16   /* expertise domains / confidence entries kept */
#define WAKE_PMSG_MAX 64      /* a persona's message times kept (last hour) */
#define WAKE_TEXT_KEEP 240    /* bytes of text kept per recent message */
#define WAKE_TEXTS_MAX 20     /* recent messages kept with their text */
#define WAKE_TIMES_MAX 2000   /* recent message times kept (10-minute window) */
#define WAKE_PROMPT_TEXT_MAX 4000 /* bytes of a message text put in a prompt */
#define WAKE_REASON_MAX 512
#define WAKE_ALT_MAX 200
#define WAKE_AP_MAX 256       /* autopilot decisions per run */

#define WAKE_MIN_MS 60000LL
#define WAKE_HOUR_MS 3600000LL
#define WAKE_RECENT_MS (10 * WAKE_MIN_MS) /* the prompts' "last 10min" */
#define WAKE_ACTIVITY_MS (5 * WAKE_MIN_MS) /* the autopilot's "last 5min" */

#define WAKE_TIMER_AUTOPILOT "autopilot"

/* ------------------------------------------------------------------ */
/* Enumerations                                                       */
/* ------------------------------------------------------------------ */

typedef enum { WAKE_TIER_SMART = 0, WAKE_TIER_MID, WAKE_TIER_BASIC } wake_tier;
typedef enum { WAKE_VIA_LLM = 0, WAKE_VIA_RULES, WAKE_VIA_FALLBACK } wake_via;
typedef enum {
    WAKE_LEVEL_UNKNOWN = 0, /* no report from dormancy-monitor: treated as active */
    WAKE_LEVEL_ACTIVE,
    WAKE_LEVEL_MENTION_ONLY,
    WAKE_LEVEL_HUMAN_ONLY,
    WAKE_LEVEL_SLEEP
} wake_level;
typedef enum { WAKE_SENDER_HUMAN = 0, WAKE_SENDER_AI, WAKE_SENDER_SYSTEM } wake_sender;
typedef enum {
    WAKE_AP_SUGGEST_MENTION_ONLY = 0,
    WAKE_AP_AUTO_SLEEP,
    WAKE_AP_WAKE,
    WAKE_AP_KEEP
} wake_ap_action;

const char *wake_tier_name(wake_tier t);
int wake_tier_parse(const char *s, wake_tier *out); /* 0, or -1 if unknown */
const char *wake_via_name(wake_via v);
const char *wake_level_name(wake_level l); /* UNKNOWN reads "active" */
int wake_level_parse(const char *s, wake_level *out);
const char *wake_sender_name(wake_sender s);
int wake_sender_parse(const char *s, wake_sender *out);
const char *wake_ap_action_name(wake_ap_action a);
/* Strict contract names only ("suggest-mention-only", ...). */
int wake_ap_action_parse(const char *s, wake_ap_action *out);
bool wake_level_dormant(wake_level l); /* mention-only, human-only, sleep */
/* The core's level of a contract level (vigil/names.h). */
wake_level wake_level_from(vigil_level l);

/* ------------------------------------------------------------------ */
/* Configuration                                                      */
/* ------------------------------------------------------------------ */

typedef struct wake_config {
    bool llm_enabled;        /* VIGIL_LLM_URL set */
    bool llm_wake;           /* VIGIL_DORMANCY_LLM_WAKE: 0 = rules decide every tier */
    bool auto_wake;          /* VIGIL_DORMANCY_AUTO_WAKE: a human message wakes by rule */
    bool human_wakes_all;    /* VIGIL_DORMANCY_HUMAN_WAKES=all (else only absence-caused sleep) */
    double wake_confidence;  /* VIGIL_DORMANCY_WAKE_CONFIDENCE, 0.7 */
    bool evaluate_system;    /* VIGIL_WAKE_ON_SYSTEM: evaluate system messages too */
    int max_personas;        /* VIGIL_WAKE_MAX_PERSONAS, 1000 per room */
    int smart_max_tokens;    /* VIGIL_WAKE_SMART_MAX_TOKENS, 200 */
    int mid_max_tokens;      /* VIGIL_WAKE_MID_MAX_TOKENS, 50 */
    int autopilot_max_tokens;/* VIGIL_AUTOPILOT_MAX_TOKENS, 300 */
    bool autopilot;          /* VIGIL_AUTOPILOT, 1 */
    int64_t autopilot_interval_ms; /* VIGIL_AUTOPILOT_INTERVAL_MS, 60000 */
    int64_t autopilot_min_gap_ms;  /* VIGIL_AUTOPILOT_MIN_GAP_MS, 10000: early runs */
    double jump_factor;      /* VIGIL_AUTOPILOT_JUMP_FACTOR, 2.0 */
    double jump_velocity;    /* VIGIL_AUTOPILOT_JUMP_VELOCITY, 5 msg/min */
    double jump_ratio;       /* VIGIL_AUTOPILOT_JUMP_RATIO, 3 */
    int64_t human_present_ms;/* VIGIL_AUTOPILOT_HUMAN_PRESENT_MS, 300000 */
    int dominating_per_hour; /* 10: "more than 10 messages in the last hour" */
    double expert_only;      /* 0.8: "the only confident expert" */
    double expert_keep;      /* 0.7: "keep experts awake" */
} wake_config;

void wake_config_init(wake_config *c);

/* ------------------------------------------------------------------ */
/* Room state                                                         */
/* ------------------------------------------------------------------ */

typedef struct wake_persona {
    char id[WAKE_ID_MAX + 1];
    /* metadata (persona/{p}/meta) */
    bool member;            /* its meta lists this room */
    bool has_meta;
    char name[WAKE_NAME_MAX + 1];
    char role[WAKE_NAME_MAX + 1];
    char model[WAKE_NAME_MAX + 1];
    char mood[WAKE_SHORT_MAX + 1];
    char tier[8];           /* explicit "smart"|"mid"|"basic", or "" */
    int64_t parameters;     /* -1 unknown */
    double availability;    /* -1 unknown */
    int n_domains;
    char domains[WAKE_DOMAINS_MAX][WAKE_SHORT_MAX + 1];
    int n_conf;
    char conf_domain[WAKE_DOMAINS_MAX][WAKE_SHORT_MAX + 1];
    double conf[WAKE_DOMAINS_MAX];
    int auto_wake_ov;       /* -1 none, else 0/1 (meta dormancy.enableAutoWake) */
    int llm_wake_ov;        /* -1 none (enableLLMWakeDecisions) */
    double wake_conf_ov;    /* < 0 none (wakeConfidenceThreshold) */
    /* dormancy level (persona/{p}/state, persona/{p}/dormancy) */
    wake_level level;
    int64_t level_ts;
    char trigger[WAKE_SHORT_MAX + 1];
    /* activity: own messages of the last hour and their response times */
    int n_msgs;
    int64_t msg_ts[WAKE_PMSG_MAX];
    int64_t resp_ms[WAKE_PMSG_MAX]; /* -1: not an answer to anyone */
    /* the record's text of mtd (differences after the first time,
     * vigil/times_text.h) and of mr, kept in step by wake_room_record;
     * a persona owns them: wake_room_remove and wake_room_free free them */
    vigil_tlist msg_text, resp_text;
    /* token economics: the open dormant period */
    int64_t dormant_since;  /* 0 = not dormant */
    double rate_per_hour;   /* own message rate in the hour before it */
    int64_t sent_dormant;   /* own messages sent while dormant */
} wake_persona;

typedef struct wake_msg {
    char id[WAKE_EVID_MAX + 1];
    char sender[WAKE_ID_MAX + 1];
    wake_sender type;
    int64_t ts;
    char text[WAKE_TEXT_KEEP + 1];
} wake_msg;

typedef struct wake_room {
    char id[WAKE_ID_MAX + 1];
    wake_persona *personas;
    int n_personas, cap_personas;
    /* times and kinds of the messages of the last 10 minutes, oldest first */
    int n_times;
    int64_t times[WAKE_TIMES_MAX];
    wake_sender kinds[WAKE_TIMES_MAX];
    /* the last messages with their text (domain detection): a ring, the
     * oldest at texts_head; read them in order with wake_room_text */
    int n_texts, texts_head;
    wake_msg texts[WAKE_TEXTS_MAX];
    /* the record's text of td (the times' differences after the first)
     * and of tx (the recent messages), kept in step by wake_room_record:
     * the record is written on every message and these are most of it */
    vigil_tlist times_text, texts_text;
    bool has_human;
    wake_msg last_human;
    char prev_sender[WAKE_ID_MAX + 1]; /* for response times */
    int64_t prev_ts;
    int64_t prev_other_ts;             /* last message by anyone but prev_sender */
    int64_t msgs_total;
    int64_t ai_msgs, ai_chars;         /* average tokens of an AI message */
    /* token economics */
    int64_t tokens_wake, tokens_autopilot;
    int64_t evaluations, llm_evaluations, autopilot_runs;
    double saved_msgs;                 /* closed dormant periods */
    /* autopilot schedule */
    int64_t ap_due;        /* timer deadline, 0 = not armed */
    int64_t ap_last;       /* last run */
    int64_t ap_seen;       /* msgs_total at the last run */
    double ap_velocity, ap_ratio; /* at the last run */
} wake_room;

wake_room *wake_room_new(const char *id);
void wake_room_free(wake_room *r);
wake_persona *wake_room_find(wake_room *r, const char *persona);
const wake_persona *wake_room_find_const(const wake_room *r, const char *persona);
/* Finds or adds (NULL when full or out of memory). */
wake_persona *wake_room_add(wake_room *r, const char *persona, int max_personas);
void wake_room_remove(wake_room *r, const char *persona);
int wake_room_reserve(wake_room *r, int n); /* capacity for n personas */
/* The i-th of the room's recent messages with text, oldest first
 * (0 <= i < n_texts). */
static inline const wake_msg *wake_room_text(const wake_room *r, int i)
{
    return &r->texts[(r->texts_head + i) % WAKE_TEXTS_MAX];
}
wake_room *wake_room_clone(const wake_room *r); /* deep copy, NULL on OOM */
size_t wake_room_bytes(const wake_room *r);      /* memory r holds */

/* JSON record <-> room. from_json: NULL or "" gives an empty room; a record
 * that does not parse gives an empty room too (state is rebuilt from the
 * retained topics) and sets *corrupt when corrupt is not NULL. */
wake_room *wake_room_from_json(const char *room_id, const char *json, bool *corrupt);
char *wake_room_to_json(const wake_room *r); /* malloc'd, or NULL */
/* texts_text written again from the messages (after a read, or when it
 * could not follow); the newest message appended to it, as the record
 * writes it. (times_text: vigil/times_text.h) */
void wake_room_texts_text(wake_room *r);
void wake_room_texts_text_push(wake_room *r, const wake_msg *m);
/* A persona's msg_text and resp_text written again from its lists; its
 * newest message appended to them; freed. */
void wake_persona_texts(wake_persona *p);
void wake_persona_texts_push(wake_persona *p);
void wake_persona_texts_free(wake_persona *p);

/* ------------------------------------------------------------------ */
/* Outputs: the seam to the shell                                     */
/* ------------------------------------------------------------------ */

struct wake_decision;
typedef struct wake_decision wake_decision;

typedef struct wake_sink {
    void *ctx;
    int (*publish)(void *ctx, const char *topic, const char *payload, bool retain);
    /* Appends a job (JSON) to the durable job stream. */
    int (*enqueue)(void *ctx, const char *job_json);
    /* Sets the room's timer `name` (due_ms INT64_MIN cancels it). */
    int (*timer)(void *ctx, const char *name, int64_t due_ms);
    /* Notes that persona has (add) or no longer has state in this room. */
    int (*member)(void *ctx, const char *persona, bool add);
    /* Told the economics numbers whenever they are published (metrics);
     * may be NULL. */
    void (*economics)(void *ctx, const char *room, int64_t spent, int64_t saved);
    /* Told each decision made at intake (rules/fallback, no LLM) for
     * metrics; may be NULL. Worker decisions are counted by the worker. */
    void (*decided)(void *ctx, const wake_decision *d);
    /* Told when a limit refused something (limit: a metric label such as
     * "personas_per_room"; detail names the setting, the room and the
     * persona); may be NULL. */
    void (*limit)(void *ctx, const char *limit, const char *detail);
} wake_sink;

/* wake_room_add, and when the room already holds c->max_personas, says so
 * through sink->limit (never silently). NULL when not added. */
wake_persona *wake_room_join(wake_room *r, const wake_config *c, const char *persona,
                             const wake_sink *sink);

/* The tolerant readers of model output (libshared's llm_parse): the core
 * never parses free model text itself. Field readers return 0 ok, 1
 * absent, -1 present but not coercible, -2 a number out of the field's
 * range (a confidence that is neither 0..1 nor a whole percentage 2..100). */
typedef struct wake_reader {
    json_object *(*extract_object)(const char *text, size_t len, char *why, size_t whylen);
    json_object *(*extract_array)(const char *text, size_t len, char *why, size_t whylen);
    int (*read_bool)(json_object *o, const char *name, bool *out);
    int (*read_confidence)(json_object *o, const char *name, double *out);
    int (*read_string)(json_object *o, const char *name, const char **out);
} wake_reader;

/* ------------------------------------------------------------------ */
/* Text: mentions, words, keywords, domains                           */
/* ------------------------------------------------------------------ */

/* "@name" in text, case-insensitive, by libshared's vigil_text rules; a
 * display name that is no id ("Helper AI") matches "@Helper AI" as a whole
 * word. */
bool wake_text_mentions(const char *text, const char *name);
/* An expertise domain named in text: a whole word or phrase,
 * case-insensitive, '-' and '_' also read as spaces ("machine-learning"
 * named by "machine learning"), as floor-control reads it (libshared's
 * vigil_text_has_phrase). */
bool wake_text_has_domain(const char *text, const char *domain);
/* The first of the urgent keywords (list order) the text holds anywhere,
 * case-insensitively, as the specified `includes(kw)`; or NULL. */
const char *wake_urgent_keyword(const char *text);
extern const char *const WAKE_URGENT_KEYWORDS[]; /* NULL-terminated */
/* "just now", "45s ago", "12 min ago", "3 h ago", "2 days ago". */
void wake_format_ago(int64_t ms, char *out, size_t outlen);

/* ------------------------------------------------------------------ */
/* Tiers and the rules tier                                           */
/* ------------------------------------------------------------------ */

/* Explicit tier if valid, else parameters > 70e9 smart, > 7e9 mid, else
 * basic (also when unknown: parameters < 0). */
wake_tier wake_tier_select(const char *tier, int64_t parameters);
wake_tier wake_persona_tier(const wake_persona *p);

/* What the rules look at. */
typedef struct wake_rules_in {
    const char *persona;  /* id */
    const char *name;     /* display name or "" */
    const char *text;
    wake_sender sender_type;
    const char *const *mentions; /* the message's mentions array (ids) */
    int n_mentions;
} wake_rules_in;

/* Tier 3 (rules): own @mention, a human sender, an urgent keyword.
 * Sets *wake and writes why into reason. */
void wake_rules_decide(const wake_rules_in *in, bool *wake, char *reason, size_t reasonlen);
/* True when the message mentions the persona (mentions array, @id, @name). */
bool wake_rules_mentioned(const wake_rules_in *in);

/* ------------------------------------------------------------------ */
/* Activity (recentActivity and room context)                         */
/* ------------------------------------------------------------------ */

int wake_messages_last_hour(const wake_persona *p, int64_t now);
/* Mean response time over the last hour (ms), or -1 if none. */
int64_t wake_avg_response_ms(const wake_persona *p, int64_t now);
/* Messages in (now - window, now] of one kind (-1: all kinds). */
int wake_room_count(const wake_room *r, int64_t now, int64_t window_ms, int kind);
double wake_room_velocity(const wake_room *r, int64_t now);  /* msg/min, 5 min */
double wake_room_ai_ratio(const wake_room *r, int64_t now);  /* AI / max(1, human), 5 min */
bool wake_room_human_present(const wake_room *r, const wake_config *c, int64_t now);
/* Average tokens of an AI message (characters / 4, at least 1), 0 if none. */
double wake_room_avg_ai_tokens(const wake_room *r);
/* Records a message in the room's window and the sender's activity. */
void wake_room_record(wake_room *r, const char *id, const char *sender, wake_sender type,
                      const char *text, int64_t now);

/* ------------------------------------------------------------------ */
/* Token economics                                                    */
/* ------------------------------------------------------------------ */

/* AI messages not sent because of dormancy, closed periods plus the open
 * ones up to now (see README: per dormant persona, its own message rate in
 * the hour before it went dormant x dormant time, minus what it sent while
 * dormant). */
double wake_saved_messages(const wake_room *r, int64_t now);
int64_t wake_saved_tokens(const wake_room *r, int64_t now);
int64_t wake_tokens_spent(const wake_room *r);
/* Publishes retained room/{r}/economics. */
int wake_publish_economics(const wake_room *r, int64_t now, const wake_sink *sink);

/* ------------------------------------------------------------------ */
/* Inputs                                                             */
/* ------------------------------------------------------------------ */

typedef struct wake_message {
    const char *id;
    const char *sender;
    wake_sender type;
    const char *text;
    const char *const *mentions;
    int n_mentions;
} wake_message;

/* A room message: decides which sleeping personas to evaluate, decides the
 * basic tier (and every tier without an LLM) at once, enqueues one job per
 * (message, persona) for the others, records the message, and arms or
 * advances the autopilot. Returns 0, or -1 when the sink failed. */
int wake_on_message(wake_room *r, const wake_config *c, const wake_message *m, int64_t now,
                    const wake_sink *sink);

typedef struct wake_meta {
    const char *persona;
    const char *name, *role, *tier, *model, *mood; /* NULL = absent */
    int64_t parameters;  /* -1 absent */
    double availability; /* -1 absent */
    const char *const *domains;
    int n_domains;
    const char *const *conf_domains;
    const double *conf_values;
    int n_conf;
    int auto_wake, llm_wake; /* -1 absent */
    double wake_conf;        /* -1 absent */
} wake_meta;

/* persona/{p}/meta for this room: member says whether the meta lists it.
 * Not listed: the persona leaves unless dormancy-monitor gives it a level
 * here; if it stays, its profile is still refreshed from the meta (the
 * persona's own, whichever rooms it lists). */
int wake_on_meta(wake_room *r, const wake_config *c, const wake_meta *m, bool member, int64_t now,
                 const wake_sink *sink);

/* A level report for (persona, this room). known=false: the report no
 * longer lists the room (or was cleared): the room forgets the persona's
 * level as if none had been reported (a persona not held by its meta
 * leaves). Reports older than what is held are ignored. */
int wake_on_level(wake_room *r, const wake_config *c, const char *persona, bool known,
                  wake_level level, int64_t since, const char *trigger, int64_t now,
                  const wake_sink *sink);

/* A room timer came due (WAKE_TIMER_AUTOPILOT). */
int wake_on_timer(wake_room *r, const wake_config *c, const char *name, int64_t due, int64_t now,
                  const wake_sink *sink);

/* ------------------------------------------------------------------ */
/* Jobs                                                               */
/* ------------------------------------------------------------------ */

typedef struct wake_job {
    char job[WAKE_EVID_MAX + 1]; /* also the id of the wake event */
    char room[WAKE_ID_MAX + 1];
    char persona[WAKE_ID_MAX + 1];
    char name[WAKE_NAME_MAX + 1];
    char role[WAKE_NAME_MAX + 1];
    char model[WAKE_NAME_MAX + 1];
    wake_tier tier;
    double threshold;
    /* the new message */
    char message_id[WAKE_EVID_MAX + 1];
    char sender[WAKE_ID_MAX + 1];
    char sender_name[WAKE_NAME_MAX + 1];
    wake_sender sender_type;
    char *text;              /* owned; cut at WAKE_PROMPT_TEXT_MAX for the prompt */
    int n_mentions;
    char (*mentions)[WAKE_ID_MAX + 1]; /* owned */
    /* The rules' verdict on the whole message, made at intake (the job
     * keeps only the cut text, so the fallback could not see the rest).
     * has_rules is false for a job enqueued before jobs carried it: the
     * rules then read the job's text. */
    bool has_rules;
    bool rules_wake;
    char rules_reason[WAKE_REASON_MAX];
    /* context */
    int recent_count;
    bool has_human;
    char *human_text;        /* owned, may be NULL */
    char since_human[48];
    char *active_ais;        /* owned, ", "-joined */
    int64_t enqueued;
} wake_job;

typedef struct wake_ap_persona {
    char id[WAKE_ID_MAX + 1];
    char name[WAKE_NAME_MAX + 1]; /* display name; empty: the id stands for it */
    wake_level level;
} wake_ap_persona;

typedef struct wake_ap_job {
    char job[WAKE_EVID_MAX + 1];
    char room[WAKE_ID_MAX + 1];
    int n_personas;
    wake_ap_persona *personas; /* owned */
    int human_5m, ai_5m;
    char since_human[48];
    double velocity;
    int64_t enqueued;
} wake_ap_job;

typedef enum { WAKE_JOB_WAKE = 0, WAKE_JOB_AUTOPILOT } wake_job_kind;

/* Parses a job from the stream. Returns 0 with *kind and the matching
 * struct filled (free with wake_job_clear / wake_ap_job_clear), or -1 with
 * why (unknown kind, missing fields). */
int wake_job_parse(const char *json, size_t len, wake_job_kind *kind, wake_job *wj,
                   wake_ap_job *aj, char *why, size_t whylen);
void wake_job_clear(wake_job *j);
/* Is job j still worth its model call? Only while its persona sleeps in
 * the room (the level intake evaluated it at): woken since (by an earlier
 * decision on the same burst, a human, a command) or gone from the room,
 * the question is moot. No room record (r NULL): asked, as when the read
 * failed. */
bool wake_job_wanted(const wake_room *r, const wake_job *j);
void wake_ap_job_clear(wake_ap_job *j);

/* ------------------------------------------------------------------ */
/* Prompts (as specified, fields filled in)                           */
/* ------------------------------------------------------------------ */

char *wake_prompt_smart(const wake_job *j); /* malloc'd */
char *wake_prompt_mid(const wake_job *j);
char *wake_prompt_autopilot(const wake_ap_job *j);

/* ------------------------------------------------------------------ */
/* Decisions                                                          */
/* ------------------------------------------------------------------ */

struct wake_decision {
    char id[WAKE_EVID_MAX + 1]; /* event id (= job id) */
    char persona[WAKE_ID_MAX + 1];
    char room[WAKE_ID_MAX + 1];
    char message_id[WAKE_EVID_MAX + 1];
    bool should_wake;
    double confidence;
    char reason[WAKE_REASON_MAX];
    wake_tier tier;
    wake_via via;
    char alternative[WAKE_ALT_MAX + 1]; /* "" = none */
    int64_t latency_ms;
    int64_t llm_latency_ms;  /* -1: no LLM call */
    int64_t tokens;          /* -1: none reported */
    char llm_status[32];     /* "" when no LLM call */
};

/* Interprets a model's answer to a smart or mid prompt. Smart: wakes only
 * when shouldWake and the published confidence (wake_confidence_published)
 * > threshold; mid: shouldWake decides (confidence 1: the mid answer is
 * binary). Returns 0 with d filled (via llm; id/persona/room/...
 * untouched), or -1 with why: nothing usable (no JSON, truncated,
 * shouldWake missing or not a bool, smart confidence missing, not a number
 * or out of range). */
int wake_interpret(const wake_reader *rd, wake_tier tier, const char *content, size_t len,
                   double threshold, wake_decision *d, char *why, size_t whylen);

/* Fills d with the rules' decision for job j: the verdict made at intake
 * on the whole message (j->has_rules), else the rules run on j->text. via
 * is WAKE_VIA_RULES or WAKE_VIA_FALLBACK; note (may be NULL) is prefixed to
 * the reason (why the fallback happened). Confidence is 1: the rules are
 * certain. */
void wake_decide_rules(const wake_job *j, wake_via via, const char *note, wake_decision *d);

/* What a worker got back for a wake job's LLM call. */
typedef struct wake_llm_answer {
    bool ok;              /* the call returned a completion */
    const char *status;   /* the call's status name: "ok", "timeout", "http_error", ... */
    const char *error;    /* what went wrong when !ok (may be NULL) */
    const char *content;  /* the model's text when ok (may be NULL) */
    size_t len;
    bool truncated;       /* finish_reason "length" */
    int64_t tokens;       /* usage tokens, <= 0 when not reported */
    int64_t latency_ms;   /* the call alone */
} wake_llm_answer;

/* The decision for job j once its LLM call is over: the model's when its
 * answer reads as one (wake_interpret), otherwise the rules' with via
 * fallback and a reason saying why the model's answer was not used
 * ("LLM timeout: ...", "LLM answer unusable (output truncated): ...").
 * latency_ms runs from the job's enqueue time when known (else the call's),
 * tokens is -1 when the call failed without usage. */
void wake_decide_after_llm(const wake_reader *rd, const wake_job *j, const wake_llm_answer *a,
                           int64_t now, wake_decision *d);

/* The confidence as persona/{p}/wake publishes it: clamped to 0..1 and
 * rounded to WAKE_CONFIDENCE_DECIMALS; its text goes to text (at least 64
 * bytes) and its value is returned. A smart decision compares this value
 * with the threshold, so should_wake true always comes with a published
 * confidence above it (a consumer checking the number agrees). */
#define WAKE_CONFIDENCE_DECIMALS 3
double wake_confidence_published(double conf, char *text, size_t len);

/* Renders the persona/{p}/wake payload (malloc'd). */
char *wake_decision_json(const wake_decision *d, int64_t now);

/* Commits a decision made by the worker into the room: counters, the wake
 * event, the economics. */
int wake_on_decision(wake_room *r, const wake_config *c, const wake_decision *d, int64_t now,
                     const wake_sink *sink);

/* ------------------------------------------------------------------ */
/* Autopilot                                                          */
/* ------------------------------------------------------------------ */

typedef struct wake_ap_decision {
    char persona[WAKE_ID_MAX + 1];
    wake_ap_action action;
    char reason[WAKE_REASON_MAX];
} wake_ap_decision;

typedef struct wake_ap_list {
    int n;
    wake_ap_decision v[WAKE_AP_MAX];
} wake_ap_list;

/* Reads the model's array of actions. Entries naming a persona not in the
 * room (by id or display name, case-insensitive), with an unknown action
 * (a few spellings are accepted: "suggest_mention_only", "mention-only",
 * "sleep", "awake"...) or repeating a persona are dropped. Returns 0, or -1
 * with why when no array could be read at all. */
int wake_autopilot_parse(const wake_reader *rd, const wake_room *r, const char *content,
                         size_t len, wake_ap_list *out, char *why, size_t whylen);

/* Applies the specified guards to proposals (may be empty), in place:
 *  A never auto-sleep the only expert with confidence > 0.8 in a domain
 *    being discussed (a domain word in the recent messages);
 *  B keep experts > 0.7 in the last human message's domain awake (no
 *    auto-sleep, no mention-only; wake them if asleep);
 *  C suggest mention-only to an active persona with more than 10 messages
 *    in the last hour (unless B protects it);
 *  D never leave every persona asleep while a human is present: the best
 *    candidate (most confident in the human's domain, then most available,
 *    then most recent talker) is kept or woken. */
void wake_autopilot_guard(const wake_room *r, const wake_config *c, int64_t now,
                          wake_ap_list *list);

/* Commits an autopilot run: guards on the current room, publishes
 * room/{r}/autopilot {room, decisions, source, ts} (+ id, fallback when the
 * LLM failed), counts tokens, publishes economics. */
typedef struct wake_ap_result {
    const char *id;
    bool from_llm;           /* proposals came from the model */
    const wake_ap_list *proposals; /* may be NULL */
    const char *fallback;    /* why the LLM was not used, or NULL */
    int64_t tokens;          /* -1 none */
} wake_ap_result;

int wake_on_autopilot(wake_room *r, const wake_config *c, const wake_ap_result *res, int64_t now,
                      const wake_sink *sink);

#endif
