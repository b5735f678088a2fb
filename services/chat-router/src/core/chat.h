/* chat.h - chat-router's pure decision core: what one room does with one
 * input (a room message or a room control), given the room's state record
 * and `now`. No I/O: the core returns the new state and a list of actions
 * (log append, publish, queue push/flush, auxiliary keys and sets) that the
 * adapter turns into libshared effects, committed atomically.
 *
 * Rules (README.md has the full story):
 *  - every room message is appended to the room log once (the runtime
 *    dedupes by input id);
 *  - `@name` mentions in the text plus the `mentions` field, never an AI
 *    sender itself, never `@self`, are notified on persona/{p}/notify with the
 *    message's chain depth;
 *  - depth: human 0; AI = max(its `depth` field, depth of `reply_to` + 1);
 *    when the reply_to is not remembered, or its sender was notified since
 *    by a newer message, at least the depth its sender was last notified at
 *    in the room + 1 (until a human message in the room), else its `depth`
 *    field, else 1; system messages are logged, never forwarded;
 *  - a message at depth >= max_depth is not forwarded: a system message in
 *    the room says why;
 *  - while the room (or every room) is paused notifications go to the
 *    room's durable queue; resume flushes it (queued first, then live);
 *  - a deleted room (its tombstone) is started afresh by a human message
 *    or a person's system message only: an AI message, or chat-router's
 *    own stop message, is refused (result.room_deleted), not logged. */
#ifndef CHAT_H
#define CHAT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <vigil/tlist.h>

#define CHAT_SERVICE "chat-router"
#define CHAT_ID_MAX 64     /* room, persona, user ids */
#define CHAT_EVID_MAX 128  /* message / event ids */
#define CHAT_SYSTEM_SENDER "chat-router"
/* The reason on sys/chat-router/error of a message refused because its
 * room was deleted (chat_result.room_deleted). */
#define CHAT_REASON_ROOM_DELETED "room_deleted"

/* Names of the auxiliary Redis structures, below the service prefix
 * (P "chat-router:" name). Shared with the `vigil` CLI. */
#define CHAT_KEY_ROOMS "rooms"           /* set: every live room */
#define CHAT_KEY_PAUSED "paused"         /* set: rooms paused one by one */
#define CHAT_KEY_QUEUED "queued"         /* set: rooms with queued notifications */
#define CHAT_KEY_PAUSED_ALL "paused-all" /* string "1" while the global pause is on */
#define CHAT_LOG_PREFIX "log:"           /* stream per room */
#define CHAT_QUEUE_PREFIX "queue:"       /* list per room (outbox entry format) */
/* The room a CLI uses on room/{room}/control for the global pause/resume
 * (any room works; this one is never created by it). */
#define CHAT_ALL_ROOM "_all"

/* Writes "log:<room>" / "queue:<room>" into out. */
void chat_log_name(const char *room, char *out, size_t outlen);
void chat_queue_name(const char *room, char *out, size_t outlen);

/* ---- configuration ------------------------------------------------------ */

typedef struct chat_config {
    int64_t max_depth;      /* VIGIL_CHAT_MAX_DEPTH (100) */
    int depth_memory;       /* VIGIL_CHAT_DEPTH_MEMORY (256): ids remembered per room */
    int max_mentions;       /* VIGIL_CHAT_MAX_MENTIONS (32): notifications per message */
    int64_t log_maxlen;     /* VIGIL_CHAT_LOG_MAXLEN (10000) */
    int64_t log_max_age_ms; /* VIGIL_CHAT_LOG_MAX_AGE_MS (7 days) */
} chat_config;

#define CHAT_DEFAULT_MAX_DEPTH 100
#define CHAT_DEFAULT_DEPTH_MEMORY 256
#define CHAT_DEFAULT_MAX_MENTIONS 32
#define CHAT_DEFAULT_LOG_MAXLEN 10000
#define CHAT_DEFAULT_LOG_MAX_AGE_MS (7LL * 24 * 3600 * 1000)

void chat_config_init(chat_config *c);

/* ---- inputs ------------------------------------------------------------- */

typedef enum { CHAT_SENDER_HUMAN = 0, CHAT_SENDER_AI, CHAT_SENDER_SYSTEM } chat_sender_type;

typedef struct chat_message {
    const char *id;      /* the message id (payload id or derived) */
    const char *sender;
    chat_sender_type sender_type;
    const char *text;
    int64_t ts;
    const char *reply_to;            /* NULL if absent */
    const char *const *mentions;     /* explicit ids (may be NULL) */
    int n_mentions;
    bool has_depth;
    int64_t depth;                   /* >= 0 when has_depth */
    const char *log_json;            /* the entry logged: chat_log_entry_json() */
} chat_message;

typedef enum {
    CHAT_CTL_PAUSE = 0,
    CHAT_CTL_RESUME,
    CHAT_CTL_DELETE,
    CHAT_CTL_WAKE
} chat_control_action;

typedef struct chat_control {
    const char *id;
    chat_control_action action;
    bool all;                  /* global pause/resume */
    const char *by;            /* may be NULL */
    int64_t ts;
    /* delete only if no message was logged at or after this time (0 =
     * unconditional): lets `vigil chat cleanup` delete an empty room
     * without racing a message that arrives meanwhile. */
    int64_t if_inactive_since;
    const char *topic_room;    /* the {room} level of the control's topic */
    bool more;                 /* resume-all: more rooms than one input may touch */
} chat_control;

typedef enum { CHAT_IN_MESSAGE = 0, CHAT_IN_CONTROL } chat_input_kind;

typedef struct chat_input {
    chat_input_kind kind;
    bool paused_all; /* the global pause flag, read when the input was routed */
    chat_message msg;
    chat_control ctl;
} chat_input;

/* ---- outputs ------------------------------------------------------------ */

typedef enum {
    CHAT_ACT_LOG_APPEND = 0, /* name = stream, value = entry JSON */
    CHAT_ACT_PUBLISH,        /* topic, value = payload */
    CHAT_ACT_QUEUE_PUSH,     /* name = queue, topic, value = payload */
    CHAT_ACT_QUEUE_FLUSH,    /* name = queue */
    CHAT_ACT_KEY_SET,        /* name, value */
    CHAT_ACT_KEY_DELETE,     /* name */
    CHAT_ACT_SET_ADD,        /* name, value = member */
    CHAT_ACT_SET_REMOVE      /* name, value = member */
} chat_action_kind;

typedef struct chat_action {
    chat_action_kind kind;
    char *name;
    char *topic;
    char *value;
} chat_action;

typedef struct chat_result {
    char *new_state; /* NULL = unchanged */
    chat_action *v;
    size_t n, cap;
    /* what happened, for metrics and logs */
    int64_t depth;     /* depth of the message (messages only) */
    int notified;      /* notifications published live */
    int queued;        /* notifications put in the queue */
    int flushed;       /* queue flushes (0 or 1) */
    bool stopped;      /* forwarding stopped at the depth limit */
    bool mentions_capped; /* more personas mentioned than max_mentions: the rest not notified */
    bool logged;
    bool room_deleted; /* refused: a message that may not start a deleted room again */
} chat_result;

void chat_result_init(chat_result *r);
void chat_result_free(chat_result *r);
/* Appends one action (strings copied; NULL allowed). 0 or -1 (memory). */
int chat_result_add(chat_result *r, chat_action_kind kind, const char *name, const char *topic,
                    const char *value);

/* ---- the decision ------------------------------------------------------- */

/* Decides what room `room` does with `in`. state_json is the room's record
 * (NULL if none). Fills out (initialised by the caller). Returns 0, or -1
 * with err on an allocation failure. An unreadable record is replaced by a
 * fresh one (reported in err with return value 1, decisions still made). */
int chat_apply(const chat_config *cfg, const char *room, const char *state_json,
               const chat_input *in, int64_t now, chat_result *out, char *err, size_t errlen);

/* ---- pieces, exposed for tests and the CLI ------------------------------- */

/* Mentions: `@name` where '@' does not follow a letter, digit or '_' (so
 * not an e-mail address; letters of Latin, Greek, Cyrillic, Armenian,
 * Hebrew and Arabic count as letters, other non-ASCII characters such as
 * CJK, punctuation and emoji are boundaries), name = the longest run of
 * [A-Za-z0-9._-] after it minus trailing '.' and '-' (punctuation),
 * 1..64 characters (a longer run, or one running into a letter no id may
 * hold, is not a mention). Names are lower-cased. `@self` is not a mention.
 * Fills out[] with at most max distinct names (case-insensitive) in order
 * of appearance, each CHAT_ID_MAX+1 bytes. Returns the count. */
int chat_mentions_parse(const char *text, char (*out)[CHAT_ID_MAX + 1], int max);

/* The personas to notify for a message: text mentions, then the `mentions`
 * field, lower-cased, distinct, without "self", at most max; an AI sender
 * never notifies itself (compared case-insensitively), a human may mention
 * a persona of the same name. Returns the count. */
int chat_mentions_collect(const chat_message *m, char (*out)[CHAT_ID_MAX + 1], int max);

/* The room record. */
typedef struct chat_recent {
    char id[CHAT_EVID_MAX + 1];
    int64_t depth;
} chat_recent;

/* Per persona, the depth of the last notification the room sent it and
 * where the message that caused it stands in the id memory (`at`, a
 * position as chat_room_recall_at gives, or -1: unknown, from a record
 * written before positions were kept). An AI message with no remembered
 * reply_to, or whose reply_to is older than that message, continues from
 * there: answering an old message (say the human's that started it all)
 * does not take a persona back up a chain it was pulled further down.
 * At most CHAT_NOTIFIED_MAX personas, the one notified longest ago
 * forgotten first; a human message in the room forgets them all. */
#define CHAT_NOTIFIED_MAX 64
typedef struct chat_notified {
    char persona[CHAT_ID_MAX + 1];
    int64_t depth;
    int64_t at;
} chat_notified;

typedef struct chat_room {
    char room[CHAT_ID_MAX + 1];
    bool exists;            /* false: no record or a deleted one */
    bool deleted;           /* the record is a delete's tombstone */
    int64_t created;
    int64_t count;          /* messages logged since the room was created */
    int64_t last_activity;  /* when the last message was logged (0 = none) */
    char last_sender[CHAT_ID_MAX + 1];
    bool paused;
    char paused_by[CHAT_ID_MAX + 1];
    int64_t paused_at;
    int64_t queued;         /* notifications waiting in the room's queue */
    int64_t stopped;        /* chains stopped at the depth limit */
    /* a ring of cap_recent entries, the oldest at recent_head (chat_room_
     * remember drops the oldest and appends without moving the others) */
    chat_recent *recent;
    int n_recent, cap_recent, recent_head;
    /* recent as the record writes it, kept in step by chat_room_remember:
     * the record is written on every message and this list is most of it */
    vigil_tlist recent_text;
    /* ids the memory has taken since the room was created: the position
     * the next one takes. Entry i (0 the oldest) is at remembered -
     * n_recent + i, so positions order messages even after the ring drops
     * some. A record without it counts from n_recent. */
    int64_t remembered;
    chat_notified notified[CHAT_NOTIFIED_MAX]; /* oldest notification first */
    int n_notified;
} chat_room;

/* Reads a record (NULL -> a room that does not exist yet). Returns NULL
 * with err on unreadable JSON. A deleted room's tombstone reads as a room
 * that does not exist. */
chat_room *chat_room_from_json(const char *room, const char *json, char *err, size_t errlen);
chat_room *chat_room_new(const char *room);
void chat_room_free(chat_room *r);
chat_room *chat_room_clone(const chat_room *r); /* deep copy, NULL on OOM */
size_t chat_room_bytes(const chat_room *r);      /* memory r holds */
/* The record as JSON text (malloc'd). */
char *chat_room_to_json(const chat_room *r);
/* The tombstone left by delete: {"deleted": now, "by": by}. */
char *chat_tombstone_json(int64_t now, const char *by);
/* chat_apply on a room the caller read (or kept from its last decision):
 * r is changed in place into the room out->new_state holds, unless
 * *deleted (then the record is a tombstone r does not describe). Returns 0,
 * or -1 with err on an allocation failure. */
int chat_decide(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t now,
                chat_result *out, bool *deleted, char *err, size_t errlen);

/* Depth of a message in the room (see the rules at the top). */
int64_t chat_depth_of(const chat_room *r, const chat_message *m);
/* Remembers id -> depth, forgetting the oldest beyond memory entries. */
int chat_room_remember(chat_room *r, const char *id, int64_t depth, int memory);
/* Depth remembered for id, or -1. */
int64_t chat_room_recall(const chat_room *r, const char *id);
/* The same, and *at = id's position in the memory (later messages have
 * larger ones; untouched when id is not remembered). */
int64_t chat_room_recall_at(const chat_room *r, const char *id, int64_t *at);
/* Remembers that persona was notified at depth by the message at position
 * at (r->remembered before that message was remembered, whether or not
 * it could be; -1 unknown). It becomes the newest. */
void chat_room_note_notified(chat_room *r, const char *persona, int64_t depth, int64_t at);
/* Persona's last notification (case-insensitive), or NULL. */
const chat_notified *chat_room_notified(const chat_room *r, const char *persona);
/* The depth persona was last notified at (case-insensitive), or -1. */
int64_t chat_room_notified_depth(const chat_room *r, const char *persona);

/* A room log id as `vigil chat view --since` takes it: "MS" or "MS-SEQ",
 * decimal, each part at most UINT64_MAX (a Redis stream id). */
bool chat_log_id_valid(const char *s);

/* What `vigil chat view --since X` was given: a log id (digits and '-'
 * only, valid as above), a message id (the `id` a message was sent with,
 * what `vigil chat send` prints: 1-128 printable ASCII without / + #,
 * not shaped like a log id), or neither. */
typedef enum { CHAT_SINCE_BAD, CHAT_SINCE_LOG_ID, CHAT_SINCE_MESSAGE_ID } chat_since_kind;
chat_since_kind chat_since_kind_of(const char *s);

/* JSON builders (malloc'd text). */
char *chat_notify_json(const char *id, const char *persona, const char *room,
                       const chat_message *m, int64_t depth, int64_t now);
char *chat_stop_message_json(const char *id, const char *room, const chat_message *m,
                             int64_t depth, int64_t max_depth, char (*who)[CHAT_ID_MAX + 1],
                             int n_who, int64_t now);
/* The logged entry: the message object as received with `id` and `ts` set
 * when it lacked them. raw (raw_len bytes, not NUL-terminated; may be
 * NULL) is the payload body was parsed from: a message with both is raw
 * itself. Does not modify body. */
char *chat_log_entry_json(json_object *body, const char *raw, size_t raw_len, const char *id,
                          int64_t ts);

/* Deterministic ids usable as input ids (no '/'): "<tag>-<16 hex>" of a
 * hash of the parts. */
void chat_derived_id(char *out, size_t outlen, const char *tag, const char *a, const char *b);

#endif
