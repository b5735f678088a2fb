/* gateway.h - presence-gateway's pure decision core: everything the HTTP
 * door decides, without I/O; `now` is always a parameter.
 *
 *  - presence: browser sessions per user, each user's derived status per
 *    room (active / idle / away) and when it changes next (presence.c);
 *  - access: bearer tokens and the session cookie against the token table,
 *    the per-token rate limit, the limit on failed authentications per
 *    client address, CORS origins (auth.c, rate.c, origin.c);
 *  - the Theater stream: topic families and filters, event names, log
 *    positions (Last-Event-ID) and SSE frames (topics.c, position.c, limits.c);
 *  - request bodies turned into the messages the gateway publishes
 *    (requests.c). */
#ifndef GATEWAY_H
#define GATEWAY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define GW_ID_MAX 64
#define GW_TOPIC_MAX 256
/* Presence: sessions kept per user, rooms one session may be present in. */
#define GW_MAX_SESSIONS 16
#define GW_MAX_ROOMS 32
/* Mentions one posted message may list. */
#define GW_MAX_MENTIONS 32

/* ---- presence ----------------------------------------------------------- */

typedef enum { GW_ACTIVE = 0, GW_IDLE = 1, GW_AWAY = 2 } gw_status;
const char *gw_status_name(gw_status s);
/* "active"/"idle"/"away" -> 0/1/2; -1 otherwise. */
int gw_status_parse(const char *s);

typedef struct gw_presence_cfg {
    int64_t idle_ms;    /* VIGIL_GATEWAY_PRESENCE_IDLE_MS (120000): active until this after activity */
    int64_t away_ms;    /* VIGIL_GATEWAY_PRESENCE_AWAY_MS (300000): idle until this, then away */
    int64_t expire_ms;  /* a session without a heartbeat this long is gone (= idle_ms) */
    int max_sessions;   /* sessions kept per user (GW_MAX_SESSIONS) */
    int max_rooms;      /* rooms per session (GW_MAX_ROOMS) */
} gw_presence_cfg;
void gw_presence_cfg_init(gw_presence_cfg *c);

/* The refresh interval is this fraction of idle_ms (30 s at the default).
 * A consumer ages the last_activity it was sent against its own active
 * threshold (dormancy-monitor's VIGIL_DORMANCY_PRESENCE_ACTIVE_MS, 2 min
 * like idle_ms by default), and the last_activity it holds is at most the
 * refresh interval plus one beat interval (30 s) old while beats with new
 * activity keep coming: 60 s, half the threshold, leaving the other half
 * for a late beat or a slow delivery. At most one refresh per room per
 * interval and user, however many tabs beat. */
#define GW_PRESENCE_REFRESH_PARTS 4
/* How old the published last_activity of a room still active may get
 * before the newer one is published again: idle_ms / 4, at least 1. */
int64_t gw_presence_refresh_ms(const gw_presence_cfg *c);

/* One heartbeat of a browser session. */
typedef struct gw_beat {
    const char *user;
    const char *session;
    const char *const *rooms;
    int nrooms;
    gw_status claimed;     /* what the browser says (it may know it is hidden) */
    int64_t last_activity; /* when the person last did something (<= now) */
} gw_beat;

/* Derived status of one session: the worse of what time since the last
 * activity says and what the browser claimed; away once beats stopped. */
gw_status gw_presence_derive(const gw_presence_cfg *c, int64_t last_activity, int64_t last_beat,
                             gw_status claimed, int64_t now);

/* A status change, or a refresh of an active room's last_activity, to
 * publish on room/{room}/presence. */
typedef struct gw_presence_change {
    char room[GW_ID_MAX + 1];
    char session[GW_ID_MAX + 1];
    gw_status status;
    int64_t last_activity;
} gw_presence_change;

typedef struct gw_presence_out {
    char *new_state;              /* malloc'd JSON (always set on success) */
    gw_presence_change *changes;  /* malloc'd */
    int nchanges;
    int64_t next_due;             /* next moment a status may change; 0 = none */
    /* live sessions a new one pushed out at max_sessions: the caller says
     * so in its answer, since the forgotten tab cannot be told (malloc'd) */
    char (*forgotten)[GW_ID_MAX + 1];
    int nforgotten;
} gw_presence_out;
void gw_presence_out_free(gw_presence_out *o);

typedef enum {
    GW_PRESENCE_OK = 0,
    GW_PRESENCE_BAD_STATE = -1, /* the stored record is not ours (treated as empty by callers) */
    GW_PRESENCE_NOMEM = -2
} gw_presence_result;

/* Applies a heartbeat to a user's record (state_json NULL = none yet). */
gw_presence_result gw_presence_beat(const gw_presence_cfg *c, const char *state_json,
                                    const gw_beat *b, int64_t now, gw_presence_out *out);
/* Re-derives every status at now (the timer of the record came due). */
gw_presence_result gw_presence_tick(const gw_presence_cfg *c, const char *user,
                                    const char *state_json, int64_t now, gw_presence_out *out);
/* The presence event payload (without id): {user, session, status,
 * last_activity, ts}. */
json_object *gw_presence_payload(const char *user, const gw_presence_change *ch, int64_t now);

/* ---- access --------------------------------------------------------------- */

typedef struct gw_token {
    char *token;
    char user[GW_ID_MAX + 1];
} gw_token;

typedef struct gw_tokens {
    gw_token *v;
    int n;
} gw_tokens;

/* Longest token (bearer, token file, cookie once decoded). */
#define GW_TOKEN_MAX 256
/* Room for the vigil_session cookie's value: every byte of a token
 * escaped, and the NUL. */
#define GW_COOKIE_VALUE_MAX (3 * GW_TOKEN_MAX + 1)

/* Parses a token file: one "token user" pair a line; blank lines and
 * lines starting with '#' are skipped. Tokens are 8..256 printable ASCII
 * characters without spaces (; , " \ % included), each token on one
 * line only; users are ids.
 * Returns 0, or -1 with err naming the line (or, for a token given twice,
 * its two users). */
int gw_tokens_parse(const char *text, gw_tokens *out, char *err, size_t errlen);
void gw_tokens_free(gw_tokens *t);

typedef enum {
    GW_AUTH_OK = 0,
    GW_AUTH_MISSING,   /* neither header nor cookie */
    GW_AUTH_MALFORMED, /* Authorization is not "Bearer <token>" */
    GW_AUTH_UNKNOWN    /* the token is not in the table */
} gw_auth_result;

/* The vigil_session cookie's value for token: the token itself, but
 * each character a cookie value cannot hold (RFC 6265's cookie-octet:
 * '"' ',' ';' backslash, space, control and non-ASCII bytes) and '%' written
 * as %XX, so a token typed by hand with any of them still logs in (a
 * browser would cut the value at ';' or ',', and the quotes of a value
 * in '"' are no part of it). Tokens without them are their own cookie, as
 * before. gw_auth_decide reads it back. 0, or -1 when out is too small
 * (GW_COOKIE_VALUE_MAX always suffices). */
int gw_cookie_encode(const char *token, char *out, size_t outlen);

/* Index of token in t, or -1 (compares every entry in constant time). */
int gw_tokens_find(const gw_tokens *t, const char *token);

/* Decides a request's identity from its Authorization header and its
 * vigil_session cookie (either may be NULL; the header wins; the cookie
 * as gw_cookie_encode wrote it). *index is
 * the token's entry in t (its user: t->v[*index].user). */
gw_auth_result gw_auth_decide(const gw_tokens *t, const char *authorization, const char *cookie,
                              int *index);
const char *gw_auth_reason(gw_auth_result r);

/* Token bucket: refilled at `rate` a second up to `burst`. */
typedef struct gw_bucket {
    double tokens;
    int64_t last_ms;
    bool init;
} gw_bucket;
/* Takes one from b at now (a new bucket starts full). Returns true when
 * allowed (also when rate <= 0: no limit); otherwise *retry_after_ms says
 * when the next one will be. */
bool gw_bucket_take(gw_bucket *b, double rate, double burst, int64_t now,
                    int64_t *retry_after_ms);
/* The per-token limit: `rate` requests a second, bursts of `rate` (at
 * least one request). */
bool gw_rate_take(gw_bucket *b, double rate, int64_t now, int64_t *retry_after_ms);

/* Failed authentications per client address (VIGIL_GATEWAY_AUTH_FAIL_RATE
 * a second, bursts of GW_FAIL_BURST). The table holds at most `cap`
 * addresses; a new one past that takes the place of the least recently
 * seen, so many addresses cannot grow memory. */
#define GW_FAIL_BURST 10
#define GW_FAIL_ADDRS 4096
typedef struct gw_fail_entry {
    unsigned char addr[16];
    gw_bucket b;
    int64_t seen;
} gw_fail_entry;
typedef struct gw_fail_table {
    gw_fail_entry *v;
    int n, cap;
} gw_fail_table;
/* Returns 0, or -1 out of memory. */
int gw_fail_table_init(gw_fail_table *t, int cap);
void gw_fail_table_free(gw_fail_table *t);
/* Counts one failed authentication from addr at now. Returns true when
 * it may be answered 401; false when addr's bucket is empty (429, with
 * *retry_after_ms). rate <= 0: always true, nothing kept. */
bool gw_fail_take(gw_fail_table *t, const unsigned char addr[16], double rate, int64_t now,
                  int64_t *retry_after_ms);

/* CORS. allow: comma-separated origins ("" = same origin only; "*" any).
 * origin NULL (not a cross-origin browser request) is allowed; an origin
 * equal to "http://" host or "https://" host is same-origin. */
bool gw_origin_allowed(const char *allow, const char *origin, const char *host);

/* ---- the Theater stream --------------------------------------------------- */

/* Every topic filter the gateway logs (NULL-terminated). */
extern const char *const GATEWAY_SUBSCRIPTIONS[];

#define GW_FILTERS_MAX 16
typedef struct gw_filter_set {
    char f[GW_FILTERS_MAX][GW_TOPIC_MAX];
    int n;
    bool council_live; /* only the Theater event types of council/+/event */
} gw_filter_set;

/* Parses ?topics=: comma-separated family names (rooms, personas, wake,
 * floor, heartbeat, agents, council, sys, all) or MQTT topic filters. Returns 0,
 * or -1 with err; *limit names the limit that refused it ("topic_filters",
 * "topic_filter_bytes"), NULL for a malformed spec. */
int gw_filters_parse(const char *spec, gw_filter_set *out, const char **limit, char *err,
                     size_t errlen);
/* The filter of /api/autonomous/deliberations/live. */
void gw_filters_council_live(gw_filter_set *out);
bool gw_topic_match(const char *filter, const char *topic);
bool gw_filters_match(const gw_filter_set *fs, const char *topic, const char *event);

/* The SSE event name of a logged message: the council event's `type` for
 * council/{s}/event (deliberation, phase, action, question, session_paused,
 * session_ended), otherwise "<first level>.<last level>" (room.message,
 * persona.dormancy, sys.status, ...). Writes into out. */
void gw_event_name(const char *topic, json_object *payload, char *out, size_t outlen);
bool gw_council_live_type(const char *event);
/* True for the topics whose retained message is a current state (room,
 * persona, agent, council states, persona meta, service status): the
 * gateway keeps the latest of each, so a new client starts from them
 * (?snapshot=1) instead of replaying the whole log. */
bool gw_topic_is_snapshot(const char *topic);

/* The payload field that must equal level `level` (0 = the first) of a
 * logged topic, because it names the same thing ("room" for level 1 of
 * room/{room}/message, "instance" for level 2 of
 * sys/{service}/{instance}/status); NULL for a level that is no parameter. */
const char *gw_topic_param_field(const char *topic, int level);

/* ---- kept beside the states for ?snapshot=1 (kept.c) --------------------- */

/* Pending questions kept per council session, users kept per room. */
#define GW_KEPT_QUESTIONS_MAX 64
/* A council question without a priority is of this one (1..10, higher more
 * urgent). */
#define GW_QUESTION_PRIORITY_DEFAULT 5
#define GW_KEPT_HUMANS_MAX 256

/* The record beside the log that an input changes, in key: "questions:{s}"
 * for council/{s}/event of type question or session_ended,
 * council/{s}/answer and council/{s}/state; "humans:{r}" for
 * room/{r}/presence. false for any other input. */
bool gw_kept_key(const char *topic, json_object *payload, char *key, size_t keylen);

typedef struct gw_kept_out {
    bool changed;             /* new_state and the kept entry are to be written */
    char *new_state;          /* malloc'd when changed */
    char topic[GW_TOPIC_MAX]; /* the kept entry's own topic: council/{s}/questions or
                                 room/{r}/humans (never published, only kept) */
    char *entry;              /* malloc'd log entry {session, questions: [question
                                 events]} or {room, humans: [presence events]};
                                 NULL when changed and nothing is left (delete it) */
    int64_t next_due;         /* when the first kept item expires; 0 = none */
} gw_kept_out;
void gw_kept_out_free(gw_kept_out *o);

/* Applies an input (payload; NULL = the record's timer) on the record of
 * key at now. Questions stay until their expires_at, an answer naming
 * them, a session_ended event or the state `completed`; a user's presence
 * stays while active or idle, until last_activity + c->away_ms, and goes
 * at `away`. Past the bounds above, what would expire first goes (of
 * questions, the lowest priority first). The entry lists questions the
 * most urgent first (priority, then the order asked). 0, or
 * -1 (a key of no record, out of memory). */
int gw_kept_apply(const gw_presence_cfg *c, const char *key, const char *state_json,
                  const char *topic, json_object *payload, int64_t now, gw_kept_out *out);

/* A log position: a Redis stream id "ms-seq". */
typedef struct gw_pos {
    uint64_t ms, seq;
} gw_pos;
/* Parses "ms-seq" or "ms" (seq 0). Returns 0 or -1. */
int gw_pos_parse(const char *s, gw_pos *out);
int gw_pos_cmp(gw_pos a, gw_pos b);
void gw_pos_format(gw_pos p, char *out, size_t outlen);

/* What the gateway knows of its log beyond its entries (XINFO STREAM,
 * read by the shell): a log that never dropped an entry holds all it was
 * ever given (added == length), and the greatest id it ever gave never
 * goes down while the log lives, so a log whose top is below a position
 * read from it is another log (flushed, deleted, Redis restarted without
 * it). */
typedef struct gw_log_state {
    gw_pos first;    /* the oldest entry held; 0-0 when empty */
    gw_pos top;      /* the greatest id the log ever gave; 0-0 when there is no log */
    uint64_t length; /* entries held */
    int64_t added;   /* entries ever added; -1 unknown (Redis before 7.0) */
} gw_log_state;

/* A log entry as stored: "topic\nevent\ndata" (data: the payload with
 * `topic` set, compact JSON). Returns malloc'd text or NULL. */
char *gw_log_entry(const char *topic, json_object *payload);
/* Splits a stored entry (pointers into e; data runs to the end). Returns 0/-1. */
int gw_log_entry_split(const char *e, char *topic, size_t tlen, char *event, size_t elen,
                       const char **data);

/* An SSE frame "id: ..\nevent: ..\ndata: ..\n\n" (id may be NULL: no id
 * line; event NULL: no event line). data must be one line (compact JSON
 * is). malloc'd, *len its length. */
char *gw_sse_frame(const char *id, const char *event, const char *data, size_t *len);

/* How a stream writes its frames. EventSource hands a frame without an
 * event: line to onmessage (its type is "message"), a named one only to
 * addEventListener(name).
 *  - GW_SSE_NAMED (/api/events): "event: <name>" on every frame;
 *  - GW_SSE_UNNAMED (/api/autonomous/deliberations/live, whose specified
 *    client has only onmessage and switches on data.type): no event:
 *    line; the name travels in the JSON data as `type`. */
typedef enum { GW_SSE_NAMED = 0, GW_SSE_UNNAMED = 1 } gw_sse_style;
/* UNNAMED for the council_live filter set, NAMED for any other. */
gw_sse_style gw_filters_style(const gw_filter_set *fs);
/* The frame of a log entry (its position id, NULL for a kept state) on a
 * stream of style st. UNNAMED writes no event: line: the data of every
 * entry a council_live stream carries holds its event name as `type`
 * already (gw_event_name names a council event by its `type`, and
 * gw_filters_match lets only those six through). */
char *gw_sse_entry_frame(gw_sse_style st, const char *id, const char *event, const char *data,
                         size_t *len);
/* A frame the gateway writes itself (connected, ping, trimmed, dropped):
 * no id (it is no log position; stream.c puts one before `connected`),
 * data o compact (o is taken). UNNAMED
 * puts event as `type` first in the data, so whatever reaches onmessage
 * is JSON with a type. malloc'd, *len; NULL when out of memory. */
char *gw_sse_notice_frame(gw_sse_style st, const char *event, json_object *o, size_t *len);

/* ---- request bodies ------------------------------------------------------- */

typedef enum { GW_REQ_OK = 0, GW_REQ_BAD = -1, GW_REQ_FORBIDDEN = -2 } gw_req_result;

/* Each of these answers BAD with err naming the field; when a limit (not
 * a malformed field) refused the body, *limit names it for the metric
 * ("rooms_per_session", "text_bytes", "mentions_per_message"), else NULL. */

/* POST /api/presence body -> a beat for user (from auth). rooms storage
 * lives in *body (a parsed object the caller keeps). A body naming another
 * user is FORBIDDEN. The last activity is now - idle_ms (the client's
 * "how long ago"), or last_activity as given (the gateway's clock), or
 * now; both given is BAD. Every string field (and array item) holding a
 * NUL is BAD, in every body below too. */
gw_req_result gw_req_presence(json_object *body, const char *user, const gw_presence_cfg *c,
                              int64_t now, gw_beat *b, const char **rooms, int maxrooms,
                              const char **limit, char *err, size_t errlen);
/* POST /api/rooms/{room}/messages body {text, id?, reply_to?, mentions?} ->
 * the room/{room}/message payload from a human. *msg_id gets the id
 * (given or made from fresh_id). */
gw_req_result gw_req_message(json_object *body, const char *room, const char *user,
                             const char *fresh_id, int64_t now, size_t max_text,
                             json_object **payload, const char **limit, char *err,
                             size_t errlen);
/* POST /api/council/{session}/answers body {question_id, answer, id?} ->
 * the council/{session}/answer payload. */
gw_req_result gw_req_answer(json_object *body, const char *user, const char *fresh_id,
                            int64_t now, size_t max_text, json_object **payload,
                            const char **limit, char *err, size_t errlen);
/* GW_REQ_OK when payload, as published (vigil_json_dump), is at most
 * max_payload bytes (VIGIL_MAX_PAYLOAD, what every consumer takes; the
 * gateway's own log too), else GW_REQ_BAD with *limit "payload_bytes":
 * a text within max_text can still escape past it (each newline, quote,
 * backslash or control character is longer in JSON), and a message
 * answered 202 would then be refused as oversize by everyone. */
gw_req_result gw_req_fits(json_object *payload, size_t max_payload, const char **limit, char *err,
                          size_t errlen);

/* POST /api/personas/{persona}/suggestion body {room, suggestion_id?,
 * answer: yes|no|snooze (vigil_answer_index), id?} -> the
 * persona/{persona}/command payload
 * {id, cmd: "answer", room, suggestion_id?, answer, by: user, ts}.
 * Without suggestion_id the command answers whichever suggestion is
 * pending for the persona in the room (a page that only saw the pending
 * suggestion in the persona's state has no id). */
gw_req_result gw_req_suggestion(json_object *body, const char *user, const char *fresh_id,
                                int64_t now, json_object **payload, char *err, size_t errlen);

/* Ids as everywhere in Vigil: 1..64 of A-Z a-z 0-9 . _ - */
bool gw_id_valid(const char *s);

/* ---- limits that cut a stream (limits.c) ---------------------------------- */

/* SSE streams one gateway serves: VIGIL_GATEWAY_MAX_CLIENTS less an eighth
 * (at least 4) kept for requests and health checks, because the listener
 * resets a connection past max_clients without an HTTP answer; at least 1. */
int gw_stream_cap(int64_t max_clients);

/* True when a client resuming after `since` asks for entries the log no
 * longer keeps: since is older than the oldest kept entry and the log
 * dropped entries (it was given more than it holds; when the server does
 * not say, taken as dropped). A log that never dropped one (a fresh log,
 * one recreated after a reset) holds everything after any since, however
 * old (an id from before the log existed, 0-1): nothing is missing, and
 * the whole log is the backlog. since 0 (the whole log, whatever is kept)
 * never is. Not told apart: a since at or after the last entry trimmed
 * (Redis records no trimmed id), which is still told. */
bool gw_log_trimmed(gw_pos since, const gw_log_state *log);

/* True when the log the fan-out reads went back under it: `read` is the
 * position it had read up to, `seen` what the log was at the previous
 * look (NULL: none), `now` what it is. Either the greatest id the log
 * ever gave is now below read (the log was replaced and, the clock of the
 * Redis host having gone back or its ids restarting lower, its entries
 * are all before read: reading after read would wait, silent, until the
 * log got back there), or the log was replaced (fewer entries ever added
 * than at the previous look) and its oldest entry is at or before read,
 * so the entries of the new log up to read were never read. A log
 * replaced whose entries all come after read needs nothing: reading
 * after read gets them all. */
bool gw_log_went_back(gw_pos read, const gw_log_state *seen, const gw_log_state *now);

/* The `trimmed` frame sent before the backlog when gw_log_trimmed: the
 * position asked for, the oldest kept, the setting; written in the
 * stream's style st (gw_sse_notice_frame). malloc'd, *len. */
char *gw_sse_trimmed_frame(gw_sse_style st, gw_pos since, gw_pos oldest, int64_t log_maxlen,
                           size_t *len);

/* True when a client resuming after `since` names a position past the
 * newest entry of the log (`newest`; 0-0 for an empty log): no entry it
 * could have been sent is there. The log lost its latest entries or was
 * replaced (Redis restarted without them, flushed, restored from an older
 * copy, a failover to a replica behind), or the id was never this log's
 * (typed by hand, another deployment's). Waiting for the log to reach
 * since would starve the client (after a reset on a host whose clock went
 * back, for as long as the clock takes to get there): it is served from
 * the log's head instead, and told (gw_ahead_notice). */
bool gw_log_ahead(gw_pos since, gw_pos newest);

/* Where a position past the log's newest entry was found, which the
 * `ahead` notice's detail says:
 *  - GW_AHEAD_RESUME: a stream resuming from it (it goes on after newest);
 *  - GW_AHEAD_PAGE: a page of the room log (`next` is newest);
 *  - GW_AHEAD_LIVE: an open stream that had reached it when the log went
 *    back under it (gw_log_went_back; it goes on from the new log's
 *    start). */
typedef enum { GW_AHEAD_RESUME, GW_AHEAD_PAGE, GW_AHEAD_LIVE } gw_ahead_kind;

/* What a client past the log's newest entry is told:
 * {since, newest, limit: "log_position", detail}. New object, NULL when
 * out of memory. */
json_object *gw_ahead_notice(gw_pos since, gw_pos newest, gw_ahead_kind kind);

/* The `ahead` frame of a stream (kind GW_AHEAD_RESUME before the backlog
 * when gw_log_ahead, GW_AHEAD_LIVE before the new log's entries), in the
 * stream's style st (gw_sse_notice_frame). malloc'd, *len. */
char *gw_sse_ahead_frame(gw_sse_style st, gw_pos since, gw_pos newest, gw_ahead_kind kind,
                         size_t *len);

/* The `dropped` frame, the last a client gets when `queue` frames waited
 * for it (VIGIL_GATEWAY_CLIENT_QUEUE) and it took nothing for stall_ms
 * (VIGIL_GATEWAY_CLIENT_STALL_MS), in the stream's style st.
 * malloc'd, *len. */
char *gw_sse_dropped_frame(gw_sse_style st, int64_t queue, int64_t stall_ms, size_t *len);

/* Whether a client whose queue filled at full_since (monotonic ms), and
 * that last took bytes at progress_ms, has stalled by now: it took nothing
 * for stall_ms since the later of the two. A client whose queue fills in
 * a burst is not stalled; it catches up from the log (hub.c). */
bool gw_client_stalled(int64_t now, int64_t full_since, int64_t progress_ms, int64_t stall_ms);

#endif
