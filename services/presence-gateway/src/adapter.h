/* adapter.h - presence-gateway's shell on libshared's runtime: the
 * intake that logs Vigil's topics for the Theater stream (intake.c), the
 * presence records and their timers (presence_fx.c), the HTTP routes
 * (routes.c, api_*.c, web.c), the live stream hub (hub.c, stream.c) and
 * a pool of Redis connections for request threads (pool.c). */
#ifndef GATEWAY_ADAPTER_H
#define GATEWAY_ADAPTER_H
#include <pthread.h>
#include <stdatomic.h>
#include <vigil/http_api.h>
#include <vigil/jtext.h>
#include <vigil/runtime.h>
#include "gateway.h"

#define GATEWAY_SERVICE "presence-gateway"
#define GATEWAY_HTTP_PORT 8080
#define GATEWAY_LOG_NAME "log"        /* the Theater log stream, below P "presence-gateway:" */
#define GATEWAY_LOG_KEY "log"         /* the intake's state key */
#define GATEWAY_PRESENCE_TIMER "presence"
#define GATEWAY_KEPT_TIMER "kept"     /* a kept record's first expiry (kept.c) */
#define GATEWAY_SNAP_SET "snaps"        /* set of topics with a kept state */
#define GATEWAY_SNAP_PREFIX "snap:"     /* P "presence-gateway:snap:" topic = its latest entry */

typedef struct gw_config {
    char tokens_file[1024];
    int64_t ping_ms;
    char origins[2048];
    int64_t max_body;
    double rate;
    double auth_fail_rate; /* failed authentications a second per address */
    gw_presence_cfg presence;
    int64_t log_maxlen;
    int64_t client_queue;
    int64_t client_stall_ms;
    int64_t max_clients;
    bool cookie_secure;
    int64_t max_text;
    int64_t max_payload; /* VIGIL_MAX_PAYLOAD: what every consumer takes */
} gw_config;

/* Redis connections for request threads, opened on demand and reused. */
typedef struct gw_pool {
    pthread_mutex_t mu;
    vigil_runtime_conn *free[32];
    int nfree;
    bool closed; /* shutting down: connections given back are closed */
} gw_pool;

typedef struct gw_client gw_client;

/* The live fan-out: one thread reads the log stream and hands each entry
 * to every matching client's bounded queue; a client whose queue is full
 * is dropped (it reconnects with Last-Event-ID and catches up from the
 * log), so no client ever waits for another. */
typedef struct gw_hub {
    pthread_mutex_t mu;
    gw_client *head;
    int nclients;
    gw_pos last;      /* position of the last entry handed out */
    bool have_last;   /* last is known (the stream was read once) */
    pthread_cond_t have_last_cond; /* signalled when have_last is set, and at stop */
    atomic_int stop;
    pthread_t thread;
    bool running;
    char key[256];    /* the log stream's Redis key */
    int qcap;
    int max_streams;  /* gw_stream_cap(VIGIL_GATEWAY_MAX_CLIENTS): joins past it are refused */
    int64_t ping_ms;
    int64_t stall_ms; /* VIGIL_GATEWAY_CLIENT_STALL_MS */
    int nbehind;      /* clients catching up from the log */
    gw_log_state seen; /* the log at the reader's last look (gw_log_went_back) */
    bool have_seen;
    unsigned epoch;    /* counts the times the log went back under the reader */
    struct gateway *g; /* for gw_log_catch_up */
    vigil_runtime *rt;
} gw_hub;

typedef struct gateway {
    gw_config cfg;
    gw_tokens tokens;
    gw_bucket *buckets; /* one per token */
    gw_fail_table fails; /* failed authentications per client address */
    pthread_mutex_t rate_mu; /* buckets and fails */
    vigil_runtime *_Atomic rt; /* set by start(); requests before it get 503 */
    gw_pool pool;
    gw_hub hub;
    vigil_http_api api;
    char chat_log_prefix[256]; /* P "chat-router:" */
    char snap_prefix[256];     /* P "presence-gateway:snap:" (set by start()) */
    char snap_set[256];        /* P "presence-gateway:snaps" */
} gateway;

extern const vigil_config_var GATEWAY_CONFIG_VARS[];

int gateway_configure(void *ctx, const vigil_common_config *common, char *err, size_t errlen);
bool gateway_clear_topic(const char *topic);
int gateway_route(void *ctx, vigil_runtime *rt, const vigil_input *in, char keys[][VIGIL_KEY_MAX],
                  int max_keys, void **parsed, vigil_error *err);
int gateway_apply(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                  const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);
int gateway_on_timer(void *ctx, const char *key, const char *state_json, const char *timer_name,
                     int64_t due_ms, int64_t now_ms, vigil_effects *fx);
int gateway_start(void *ctx, vigil_runtime *rt);
void gateway_stop(void *ctx);

/* presence_fx.c: a presence outcome into effects (state, events, timer). */
int gateway_presence_fx(const char *user, const gw_presence_out *po, const char *id_base,
                        int64_t now, vigil_effects *fx);

/* routes.c */
void gateway_handle(void *ctx, vigil_http_req *req);
/* Answers {"error": name, "detail": detail} with status. */
void gateway_error(vigil_http_req *req, unsigned status, const char *detail);
/* A limit refused the request: the error above (its detail naming the
 * limit and its setting) and a count in
 * vigil_gateway_limit_refusals_total{limit}. limit NULL = a plain
 * gateway_error (the request was malformed, not over a limit). */
void gateway_refuse(vigil_http_req *req, unsigned status, const char *limit, const char *detail);
/* Counts a limit that cut something without an HTTP error to answer (an
 * SSE stream told in a frame, a presence session forgotten). */
void gateway_limit_count(const char *limit);
/* A request failed authentication (reason says how): 401, or 429 when
 * its client address failed too often (VIGIL_GATEWAY_AUTH_FAIL_RATE). */
void gateway_auth_failed(gateway *g, vigil_http_req *req, const char *reason);
/* A fresh unique id "gw-<hex>" for an event the gateway originates. */
void gateway_fresh_id(char *out, size_t outlen);

/* api_*.c: each answers the request. user: the caller. */
void gateway_api_presence(gateway *g, vigil_http_req *req, const char *user);
void gateway_api_messages_get(gateway *g, vigil_http_req *req, const char *room);
void gateway_api_messages_post(gateway *g, vigil_http_req *req, const char *room, const char *user);
void gateway_api_answer(gateway *g, vigil_http_req *req, const char *session, const char *user);
/* POST /api/personas/{persona}/suggestion: the user's answer to a dormancy
 * suggestion, published as persona/{persona}/command cmd "answer". */
void gateway_api_suggestion(gateway *g, vigil_http_req *req, const char *persona,
                            const char *user);
/* stream.c: council_live for /api/autonomous/deliberations/live. */
void gateway_api_stream(gateway *g, vigil_http_req *req, bool council_live);
/* web.c */
void gateway_web(gateway *g, vigil_http_req *req);
void gateway_login(gateway *g, vigil_http_req *req);

/* Publishes payload on topic through the outbox, atomically, deduped by
 * input_id on key. Returns the vigil_decide_result, or 1 when the runtime
 * is not up yet. */
int gateway_publish(gateway *g, const char *key, const char *input_id, const char *topic,
                     json_object *payload, vigil_error *err);

/* pool.c */
vigil_runtime_conn *gw_pool_take(gateway *g);
void gw_pool_put(gateway *g, vigil_runtime_conn *c);
void gw_pool_close(gw_pool *p);

/* stream.c: the newest entry of the Redis stream key (0-0 when it is
 * empty or missing). 0, or -1 (Redis unreachable). */
int gw_log_newest(vigil_redis *r, const char *key, gw_pos *out);
/* stream.c: what the log stream key is beyond its entries (XINFO
 * STREAM; a missing key is no log: all 0). 0, or -1 (Redis unreachable,
 * a key of another type). */
int gw_log_state_read(vigil_redis *r, const char *key, gw_log_state *out);
/* stream.c: appends to b the frames of the log entries in (since, upto]
 * that match fs, reading at most max_entries entries (after a `trimmed`
 * frame when some are no longer kept); *reached = the last position read
 * (upto when all were). 0, or -1 (Redis unreachable, out of memory). */
int gw_log_catch_up(struct gateway *g, gw_pos since, gw_pos upto, size_t max_entries,
                    const gw_filter_set *fs, vigil_jtext *b, gw_pos *reached);

/* hub.c */
int gw_hub_start(gw_hub *h, struct gateway *g, vigil_runtime *rt, const char *key, int qcap,
                 int max_streams, int64_t ping_ms, int64_t stall_ms);
void gw_hub_stop(gw_hub *h);
/* Registers a client reading entries after since (NULL = from now) that
 * match fs; *from receives the position live delivery starts after, so
 * the caller reads the backlog (since, *from] itself. Before the hub has
 * read the log's end once (just after start) it waits up to
 * GW_JOIN_WAIT_MS for it. NULL when stopping or still not ready, or
 * (*full set) when max_streams clients are connected. */
gw_client *gw_hub_join(gw_hub *h, const gw_filter_set *fs, const gw_pos *since, gw_pos *from,
                       bool *full);
/* Hands the client its first bytes (connected frame and backlog; taken). */
void gw_client_set_backlog(gw_client *c, char *buf, size_t len);
ssize_t gw_client_read(void *cls, char *buf, size_t max);
void gw_client_leave(void *cls);

#endif
