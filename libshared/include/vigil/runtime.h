/* runtime.h - the I/O shell every service runs in.
 *
 * A service gives a table of callbacks (its decision core behind a thin
 * adapter) and calls vigil_runtime_main. The runtime:
 *  - reads config, handles --help/--version, starts logging and HTTP;
 *  - connects to Redis and MQTT (persistent session, client id
 *    "vigil-<service>-<shard index>"), subscribes to def->subscriptions;
 *  - for each message: skips it unparsed when its topic names a key of a
 *    peer's shard (topic_key), else parses the envelope, asks route() which
 *    state keys it touches, keeps only the keys of this replica's shard (VIGIL_SHARD),
 *    decides on every one of them before committing any (an input one key
 *    refuses is refused whole), and for each key runs decide-then-commit: apply() on the current state,
 *    then one atomic commit of state + processed id + outbox + timers,
 *    retried on a version conflict, retried with backoff while Redis is down
 *    (the message is not acknowledged before its effect is durable);
 *  - rejects bad input with an event on sys/{service}/error and a metric;
 *  - runs due timers (claimed with a lease) through on_timer();
 *  - publishes the outbox on its own thread;
 *  - on SIGTERM/SIGINT finishes the message in hand, drains the outbox,
 *    publishes status "disconnected" and disconnects.
 * Cores are pure: apply/on_timer get `now` and must not do I/O. */
#ifndef VIGIL_RUNTIME_H
#define VIGIL_RUNTIME_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "effects.h"
#include "envelope.h"
#include "json.h"
#include "redis.h"

#define VIGIL_KEY_MAX 128
#define VIGIL_ROUTE_MAX_KEYS 64
#define VIGIL_ROUTE_RETRY (-2)
/* route() could not allocate: the input is retried after a pause and, if
 * memory stays short, the process exits without acknowledging it (oom.h).
 * Returning -1 with err->reason VIGIL_REJECT_NO_MEMORY means the same, from
 * route(), apply(), on_timer's callers and vigil_decide_fn alike. */
#define VIGIL_ROUTE_OOM (-3)
/* apply(), on_timer() or a vigil_decide_fn was given the head of a record
 * kept in parts (vigil_fx_state_part) whose parts this process no longer
 * holds: the runtime loads the whole record from Redis and calls again. */
#define VIGIL_NEED_WHOLE (-4)

typedef struct vigil_runtime vigil_runtime;

typedef struct vigil_service_def {
    const char *name;    /* "dormancy-monitor" */
    const char *summary; /* one line for --help */
    int default_http_port;
    const char *const *subscriptions;    /* NULL-terminated */
    const vigil_config_var *config_vars; /* service variables for --help; may be NULL */

    /* Called once after config is loaded, before connecting: read the
     * service's own variables into ctx. Return 0, or -1 with err (exit 2). */
    int (*configure)(void *ctx, const vigil_common_config *common, char *err, size_t errlen);

    /* Validates the input and names the state keys it touches (at most
     * max_keys). May read Redis through vigil_runtime_redis(rt) (e.g. which
     * rooms a persona is in). *parsed may receive a typed form of the input
     * handed to apply() and released by free_parsed(). Returns the number of
     * keys (0 = nothing to do, acknowledged), -1 to reject with err, or
     * VIGIL_ROUTE_RETRY when a lookup failed for a passing reason (Redis
     * unreachable): the runtime then retries the input after a backoff and
     * does not acknowledge it meanwhile; VIGIL_ROUTE_OOM when an allocation
     * failed (never a refusal). */
    int (*route)(void *ctx, vigil_runtime *rt, const vigil_input *in,
                 char keys[][VIGIL_KEY_MAX], int max_keys, void **parsed, vigil_error *err);

    /* Decides. state_json is the key's current state (NULL if none). Fills
     * fx (vigil_fx_set_state for a new state; outputs; timers). Must be a
     * pure function of its arguments: it may run more than once for one
     * input when a commit conflicts. Return 0, or -1 to reject (nothing is
     * committed for this key). */
    int (*apply)(void *ctx, const char *key, const char *state_json, const vigil_input *in,
                 const void *parsed, int64_t now_ms, vigil_effects *fx, vigil_error *err);

    /* A timer set through fx came due. Same contract as apply. May be NULL
     * if the service sets no timers. */
    int (*on_timer)(void *ctx, const char *key, const char *state_json, const char *timer_name,
                    int64_t due_ms, int64_t now_ms, vigil_effects *fx);

    void (*free_parsed)(void *ctx, void *parsed); /* may be NULL */
    void *ctx;

    /* Optional background work beside intake (e.g. LLM calls pulled from a
     * durable job queue). start() runs once Redis/MQTT connecting has begun;
     * stop() runs at shutdown before the outbox is drained and must join
     * every thread start() made. Either may be NULL. */
    int (*start)(void *ctx, vigil_runtime *rt);
    void (*stop)(void *ctx);

    /* Optional application routes served beside /healthz /readyz /metrics
     * on VIGIL_HTTP_ADDR (http_api.h); they may be called before start(). */
    const struct vigil_http_api *http_api;

    /* Optional: NULL-terminated key suffixes of durable streams the service
     * keeps per shard index (P S suffix i, e.g. a job queue whose jobs must
     * be committed by the shard that queued them). When N shrinks, the
     * stream of a removed index is taken over like its outbox and timers
     * (handover.h), so its jobs are neither stranded nor lost. */
    const char *const *shard_streams;

    /* Optional: true with the one state key an input on `topic` can touch,
     * when the topic alone names it (room/{room}/message: the room;
     * vigil_topic_key_room_message). An input whose key another replica
     * owns is then acknowledged without being parsed, so each replica's
     * cost for its peers' inputs stays small however large they are, and
     * a bad one is reported once, by its owner. route() must name that key
     * or none for such a topic. NULL: every input is parsed first. */
    bool (*topic_key)(const char *topic, char *key, size_t key_size);

    /* Optional, with topic_key: true when route() names that key alone
     * for an input whose topic names its key, and seldom reads Redis for
     * it (a cached flag, say). The intake (VIGIL_MQTT_INTAKE=link) may
     * then decide several such inputs, each on a key of its own, before
     * their commits come back, and send those commits in one Redis round
     * trip. While commits are in flight, route() gets no connection
     * (vigil_runtime_redis is NULL, vigil_runtime_route_members returns
     * VIGIL_ROUTE_RETRY): the runtime then reads their replies and calls
     * route() again for that input with the connection. */
    bool batch_intake;

    /* Optional: true when an empty payload on `topic` is a clear (the
     * MQTT idiom that deletes a retained message) rather than a bad input:
     * route() and apply() then get it with in->cleared set, no body and
     * no id (vigil_input_parse_cleared), so applying it twice must change
     * nothing the second time. NULL: an empty payload is refused as
     * not_json on every topic. */
    bool (*clear_topic)(const char *topic);
    /* With clear_topic: true when the inputs on those topics are snapshots
     * the service applies (a meta, a config), so that the one cleared,
     * published again byte for byte, must be applied again: an id derived
     * from such a payload then carries the receive time
     * (vigil_input_id_per_delivery), and the service must apply an
     * identical snapshot again without changing anything (the broker sends
     * every retained one again on each connect). false (a logger such as
     * presence-gateway): the payload's hash alone recognises a
     * redelivery. */
    bool clear_reapplies;
} vigil_service_def;

/* A Redis connection (and store) for one background thread. */
typedef struct vigil_runtime_conn vigil_runtime_conn;
vigil_runtime_conn *vigil_runtime_conn_open(vigil_runtime *rt);
void vigil_runtime_conn_close(vigil_runtime_conn *conn);
vigil_redis *vigil_runtime_conn_redis(vigil_runtime_conn *conn);
/* How a commit through conn (vigil_runtime_decide) spends the pauses
 * between attempts while Redis is unreachable: wait(ctx, attempt, ms)
 * instead of a sleep of ms. A worker that drives other slow work on the
 * same thread (LLM transfers) keeps driving it there, so an answer that
 * arrives during an outage is taken in rather than timed out by the clock.
 * An HTTP handler that must answer soon gives up instead: wait returns
 * false and the commit ends VIGIL_DECIDE_GAVE_UP (nothing committed, or
 * committed with the reply lost: the input id dedupes a retry). wait must
 * not use conn nor return much later than ms. NULL (the default): sleep
 * and try again until Redis is back. */
typedef bool (*vigil_conn_wait_fn)(void *ctx, int attempt, int64_t ms);
void vigil_runtime_conn_set_wait(vigil_runtime_conn *conn, vigil_conn_wait_fn wait, void *ctx);

/* A decision made outside intake, same contract as apply(): pure, may run
 * more than once on conflicts. Return 0, or -1 to reject with err. */
typedef int (*vigil_decide_fn)(void *arg, const char *key, const char *state_json, int64_t now_ms,
                               vigil_effects *fx, vigil_error *err);

typedef enum {
    VIGIL_DECIDE_DONE = 0,      /* committed */
    VIGIL_DECIDE_DUPLICATE = 1, /* input_id was already applied to key */
    VIGIL_DECIDE_REJECTED = -1, /* fn returned -1 (err filled, nothing committed) */
    VIGIL_DECIDE_GAVE_UP = -2   /* Redis unreachable: shutting down, or the
                                 * connection's wait gave up */
} vigil_decide_result;

/* Decide-then-commit on key from a background thread through conn, with
 * the same atomicity, dedupe (input_id may be NULL), conflict retry and
 * Redis-outage retry as intake; kicks the outbox after committing. The
 * shard filter is the caller's business (vigil_shard_of). */
vigil_decide_result vigil_runtime_decide(vigil_runtime *rt, vigil_runtime_conn *conn,
                                         const char *key, const char *input_id, int64_t now_ms,
                                         vigil_decide_fn fn, void *arg, vigil_error *err);

/* Reads key's record from a background thread through conn, committing
 * nothing: fn gets the record as vigil_store_load gives it (whole; NULL
 * when there is none). For a worker that asks whether a job is still worth
 * its slow work before starting it. One attempt: returns fn's result, or
 * -1 when Redis did not answer or the key holds another type. */
typedef int (*vigil_peek_fn)(void *arg, const char *key, const char *state_json);
int vigil_runtime_peek(vigil_runtime_conn *conn, const char *key, vigil_peek_fn fn, void *arg);

/* True once shutdown has begun: background loops return. */
bool vigil_runtime_stopping(const vigil_runtime *rt);

/* Runs the service until SIGTERM/SIGINT. Returns the process exit code
 * (0 clean stop, 2 bad usage/config, 1 fatal error). */
int vigil_runtime_main(int argc, char **argv, const vigil_service_def *def);

/* For route(): appends key to keys[0..n) unless already there or n == max.
 * Returns the new count. */
int vigil_route_add_key(char keys[][VIGIL_KEY_MAX], int n, int max, const char *key);
/* True when key is among keys[0..n). */
bool vigil_route_has_key(char keys[][VIGIL_KEY_MAX], int n, const char *key);

/* For route(): appends (as vigil_route_add_key) the members of the Redis
 * set, or the fields of the hash, named P S ":" suffix (cmd "SMEMBERS" or
 * "HKEYS"), skipping values that are not ids. Returns the new count;
 * VIGIL_ROUTE_RETRY when Redis is unreachable or answers a transient error
 * (the input is retried, not acknowledged); -1 with err when the key holds
 * another type, or (reason too_many_keys) when more than max keys would
 * result and more is NULL: an input is applied whole or refused, never cut.
 * With more given, *more is set instead and the count stops at max (for a
 * caller that works through the rest in batches). */
int vigil_runtime_route_members(vigil_runtime *rt, const char *cmd, const char *suffix,
                                char keys[][VIGIL_KEY_MAX], int n, int max, bool *more,
                                vigil_error *err);

/* For route(): the Redis connection of the intake thread (NULL while a
 * batched intake has commits in flight on it: see batch_intake; treat it
 * as unreachable and return VIGIL_ROUTE_RETRY), and the prefix names
 * (P S ":" ...) used by this service. */
vigil_redis *vigil_runtime_redis(vigil_runtime *rt);
const vigil_common_config *vigil_runtime_config(const vigil_runtime *rt);
/* Writes P S ":" suffix into out (e.g. suffix "persona:ann"). */
void vigil_runtime_key(const vigil_runtime *rt, const char *suffix, char *out, size_t outlen);

#endif
