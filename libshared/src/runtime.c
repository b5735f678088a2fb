/* runtime.c - the I/O shell every service runs in (see runtime.h).
 *
 * Threads:
 *   main      waits for SIGTERM/SIGINT (sigwait), then shuts down in order;
 *   paho      runs on_message: envelope -> route -> per key decide+commit;
 *   timers    claims due timers of this shard and runs on_timer;
 *   outbox    publishes committed output events (outbox.c);
 *   http      health, readiness, metrics (http.c).
 * Each thread that talks to Redis has its own connection. */
#include "vigil/runtime.h"
#include "vigil/redis_raw.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil/clock.h"
#include "vigil/event_id.h"
#include "vigil/handover.h"
#include "vigil/http.h"
#include "vigil/log.h"
#include "vigil/malloc_tune.h"
#include "vigil/metrics.h"
#include "vigil/mqtt.h"
#include "vigil/oom.h"
#include "vigil/outbox.h"
#include "vigil/outbox_process.h"
#include "vigil/redact.h"
#include "vigil/shard_fence.h"
#include "vigil/shard_view.h"
#include "vigil/state_cache.h"
#include "vigil/str.h"
#include "vigil/store.h"
#include "vigil/timers.h"
#include "vigil/topic_prefix.h"
#include "vigil/thread_name.h"

#define CACHE_MAX_ENTRIES 20000
#define TIMER_BATCH 64
/* Shard handover (handover.h): how often a replica refreshes its heartbeat
 * and looks for orphaned shard indexes, and how long the heartbeat lives. */
#define HANDOVER_EVERY_MS 2000
#define HANDOVER_TTL_MS 10000
/* The intake refreshes the shard view itself when the timer thread's copy
 * is older than this (a replica resumed after a pause must not decide on a
 * view from before it). */
#define VIEW_STALE_MS (2 * HANDOVER_EVERY_MS)
/* Adopting a removed index's session: how long to wait for the connection,
 * and the most one adoption may take before the timer thread goes back to
 * its ticks (the rest is taken on the next round). */
#define ADOPT_CONNECT_MS 10000
#define ADOPT_MAX_MS 30000
/* A fence (shard_fence.h) not back after this long is sent again: the
 * broker may have lost it in a crash. A backlog still draining only gets
 * another fence behind it, which costs nothing. */
#define FENCE_RETRY_MS 15000
/* How long a message in hand may keep retrying Redis after shutdown was
 * asked for, before the process exits without acknowledging it. */
#define SHUTDOWN_GRACE_MS 5000

struct vigil_runtime {
    const vigil_service_def *def;
    vigil_common_config cfg;
    vigil_redis_addr raddr;
    vigil_store_config scfg;

    vigil_redis *intake_redis; /* paho callback thread only */
    /* Set while route() runs for an input staged behind commits whose
     * replies are unread (batched intake): route() then gets no Redis. */
    bool intake_in_flight;
    vigil_store *intake_store;
    vigil_redis *timer_redis;  /* timer thread only */
    vigil_store *timer_store;

    vigil_state_cache *cache;
    vigil_mqtt *mqtt;             /* the intake over paho (VIGIL_MQTT_INTAKE=paho), or */
    vigil_mqtt_link *intake_link; /* over Vigil's own client (link, the default) */
    vigil_mqtt_links *outbox_link; /* the outbox's own broker connections (thread mode) */
    vigil_outbox *outbox;
    vigil_outbox_proc *outbox_proc; /* VIGIL_OUTBOX_PROCESS=1: instead of outbox */
    char **argv;
    vigil_http *http;

    pthread_t timer_thread;
    bool timer_started;
    bool started; /* the service's start() ran */

    atomic_int stop;
    volatile int stop_sleep; /* interrupts vigil_sleep_ms in the timer thread */
    atomic_llong stop_at_ms;
    atomic_bool intake_redis_ok;
    atomic_bool timer_redis_ok;
    atomic_bool mqtt_up;        /* mirrors the MQTT state: /readyz never touches rt->mqtt */
    atomic_int exit_code;       /* set before a self-requested stop (VIGIL_EXIT_CONFIG) */

    /* The outbox pointer is read by the paho callback and background
     * threads (kick, error events) and cleared at shutdown before the
     * outbox is freed: a short lock, never held across I/O. */
    pthread_mutex_t outbox_mu;

    /* Held while an input is taken in: intake_redis and intake_store have
     * one user at a time. With the link intake, its thread and paho's
     * callback thread (the sessions adopted from removed shard indexes)
     * both take inputs in; over paho they share paho's one thread anyway.
     * Nothing that holds it waits for paho. */
    pthread_mutex_t intake_mu;
    /* The intake's working memory, kept between inputs (intake_mu): the
     * keys an input routes to (VIGIL_ROUTE_MAX_KEYS of VIGIL_KEY_MAX, 8 KB
     * zeroed on every input was a tenth of chat-router's CPU) and the
     * batched intake's run of staged inputs. */
    char (*route_keys)[VIGIL_KEY_MAX];
    struct staged *run;
    int run_cap;

    /* The shard counts in use (shard_view.h), refreshed by the timer
     * thread every HANDOVER_EVERY_MS and read by the intake: a short lock,
     * never held across I/O. view_at: monotonic ms of the last refresh. */
    pthread_mutex_t view_mu;
    vigil_shard_view view;
    int64_t view_at;
    /* The fence that releases the counts this index's session held from
     * earlier runs (shard_fence.h), and the subscriptions: the service's
     * and the fence's topic. */
    vigil_shard_fence fence;
    const char **subs;

    /* Liveness (/healthz), monotonic ms: when the message in hand arrived
     * (0 = none), the timer loop's last turn, the last time the outbox was
     * empty or published something. */
    atomic_llong intake_busy_since;
    atomic_llong timer_beat;
    atomic_llong outbox_progress;

    char status_topic[VIGIL_TOPIC_MAX];
    char error_topic[VIGIL_TOPIC_MAX];
    char client_id[VIGIL_CLIENT_ID_MAX + 8]; /* and "-out" */
};

typedef enum { STEP_DONE, STEP_DUPLICATE, STEP_REJECT, STEP_GAVE_UP } step_result;

static void intake_view(vigil_runtime *rt, const char *topic, vigil_shard_view *out);
static void fence_arrived(vigil_runtime *rt, const char *topic, const void *payload,
                          size_t len);

/* Wakes the publisher, if it still runs (NULL once shutdown took it). */
static void kick_outbox(vigil_runtime *rt)
{
    pthread_mutex_lock(&rt->outbox_mu);
    vigil_outbox_kick(rt->outbox);
    vigil_outbox_proc_kick(rt->outbox_proc);
    pthread_mutex_unlock(&rt->outbox_mu);
}

vigil_redis *vigil_runtime_redis(vigil_runtime *rt)
{
    return rt->intake_in_flight ? NULL : rt->intake_redis;
}

const vigil_common_config *vigil_runtime_config(const vigil_runtime *rt) { return &rt->cfg; }

void vigil_runtime_key(const vigil_runtime *rt, const char *suffix, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s:%s", rt->cfg.redis_prefix, rt->def->name, suffix);
}

bool vigil_route_has_key(char keys[][VIGIL_KEY_MAX], int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return true;
    return false;
}

int vigil_route_add_key(char keys[][VIGIL_KEY_MAX], int n, int max, const char *key)
{
    if (vigil_route_has_key(keys, n, key))
        return n;
    if (n >= max)
        return n;
    snprintf(keys[n], VIGIL_KEY_MAX, "%s", key);
    return n + 1;
}

int vigil_runtime_route_members(vigil_runtime *rt, const char *cmd, const char *suffix,
                                char keys[][VIGIL_KEY_MAX], int n, int max, bool *more,
                                vigil_error *err)
{
    char key[2 * VIGIL_KEY_MAX];
    vigil_runtime_key(rt, suffix, key, sizeof key);
    if (more)
        *more = false;
    /* NULL covers a lost connection and every transient error reply
     * (LOADING, BUSY, OOM, ...: vigil_redis_error_transient): retried, the
     * input stays unacknowledged. An error reply that gets here concerns
     * the data (the key holds another type): the input is refused. In
     * flight: the batched intake routes the input again after the run. */
    if (rt->intake_in_flight)
        return VIGIL_ROUTE_RETRY;
    redisReply *rep = vigil_redis_command(rt->intake_redis, "%s %s", cmd, key);
    if (!rep) {
        vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "cannot read %s: redis %s", key,
                        vigil_redis_last_error(rt->intake_redis));
        return VIGIL_ROUTE_RETRY;
    }
    if (rep->type != REDIS_REPLY_ARRAY) {
        vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "cannot read %s: %s", key,
                        rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        vigil_redis_reply_free(rep);
        return -1;
    }
    for (size_t i = 0; i < rep->elements; i++) {
        redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_STRING || !vigil_id_valid(e->str, e->len))
            continue;
        if (n >= max && !vigil_route_has_key(keys, n, e->str)) {
            if (more) { /* the caller works in batches and said so */
                *more = true;
                break;
            }
            /* Never a silent cut: an input is applied whole or not at all. */
            vigil_error_set(err, VIGIL_REJECT_TOO_MANY_KEYS,
                            "%s lists more than %d state records for one input", key, max);
            vigil_redis_reply_free(rep);
            return -1;
        }
        n = vigil_route_add_key(keys, n, max, e->str);
    }
    vigil_redis_reply_free(rep);
    return n;
}

/* The status payload published retained on sys/{service}/{instance}/status;
 * NULL when out of memory (json-c asserts on a NULL object, so check it). */
static char *status_payload(const vigil_runtime *rt, const char *state)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", rt->cfg.shard_index, rt->cfg.shard_count);
    json_object_object_add(o, "state", json_object_new_string(state));
    json_object_object_add(o, "service", json_object_new_string(rt->def->name));
    json_object_object_add(o, "instance", json_object_new_string(rt->cfg.instance));
    json_object_object_add(o, "version", json_object_new_string(VIGIL_VERSION));
    json_object_object_add(o, "shard", json_object_new_string(shard));
    json_object_object_add(o, "ts", json_object_new_int64(vigil_now_ms()));
    char *s = vigil_json_dump(o);
    json_object_put(o);
    return s;
}

/* Reports a rejected input: an error event on sys/{service}/error (kept in
 * memory only: a rejected input changes no state), a metric and a log line. */
static void reject(vigil_runtime *rt, const char *topic, const void *payload, size_t len,
                   const vigil_error *err)
{
    const char *reason = vigil_reject_name(err->reason);
    char labels[96];
    snprintf(labels, sizeof labels, "reason=\"%s\"", reason);
    vigil_counter_add("vigil_rejected_total", "Inputs rejected, by reason", labels, 1);

    char sample[1024];
    vigil_json_sample(payload, len, sample, sizeof sample);
    char topic_safe[VIGIL_TOPIC_MAX * 2];
    vigil_json_sample(topic, strlen(topic), topic_safe, sizeof topic_safe);

    int64_t now = vigil_now_ms();
    /* from the service, topic and bytes, not the clock: the same bad
     * payload on two topics is two errors, redelivered it is one */
    char id[32];
    vigil_error_event_id(id, sizeof id, rt->def->name, topic, payload, len);
    json_object *o = vigil_error_event_new(id, rt->def->name, topic_safe, reason, err->detail,
                                           sample);
    json_object_object_add(o, "ts", json_object_new_int64(now));
    char *s = vigil_json_dump(o);
    json_object_put(o);
    if (s) {
        pthread_mutex_lock(&rt->outbox_mu);
        vigil_outbox_push_ephemeral(rt->outbox, rt->error_topic, s, false);
        vigil_outbox_proc_push_ephemeral(rt->outbox_proc, rt->error_topic, s, false);
        pthread_mutex_unlock(&rt->outbox_mu);
    }
    free(s);
    vigil_log_kv(VIGIL_LOG_WARN, "input rejected", "topic", topic_safe, "reason", reason,
                 "detail", err->detail, NULL);
}

/* Waits before the next attempt at a Redis operation: sleeps, or hands
 * the pause to wait (a background worker's, vigil_runtime_conn_set_wait,
 * which drives its other work meanwhile, or gives up). Returns false when
 * shutdown has been asked for and the grace period is over, or when wait
 * gave up. */
static bool retry_wait_in(vigil_runtime *rt, int attempt, atomic_bool *ok_flag,
                          vigil_conn_wait_fn wait, void *wait_ctx)
{
    atomic_store(ok_flag, false);
    if (atomic_load(&rt->stop)) {
        long long since = vigil_now_ms() - atomic_load(&rt->stop_at_ms);
        if (since > SHUTDOWN_GRACE_MS)
            return false;
    }
    int64_t d = vigil_backoff_ms(attempt, 50, 5000);
    if (attempt == 0 || attempt % 10 == 0)
        vigil_log(VIGIL_LOG_WARN, "redis unavailable, retrying in %lld ms (attempt %d)",
                  (long long)d, attempt + 1);
    if (wait)
        return wait(wait_ctx, attempt, d);
    vigil_sleep_ms(d, NULL);
    return true;
}

static bool retry_wait(vigil_runtime *rt, int attempt, atomic_bool *ok_flag)
{
    return retry_wait_in(rt, attempt, ok_flag, NULL, NULL);
}

/* The uncommitted message in hand must not be acknowledged, and paho
 * acknowledges when the callback returns: so leave without returning. */
static void die_unacknowledged(const char *topic)
{
    vigil_exit_unacknowledged("shutdown while Redis is unreachable: exiting without "
                              "acknowledging the message in hand",
                              topic);
}

/* An allocation failed: err says so (reason out_of_memory), or route()
 * returned VIGIL_ROUTE_OOM. Never a refusal. */
static bool is_oom(int rc, const vigil_error *err)
{
    return rc == VIGIL_ROUTE_OOM || (rc < 0 && err->reason == VIGIL_REJECT_NO_MEMORY);
}

typedef struct decide_args {
    const vigil_input *in; /* NULL for a timer or a background decision */
    const void *parsed;
    const vigil_timer_claim *timer;
    vigil_decide_fn fn;    /* background decision (vigil_runtime_decide) */
    void *fn_arg;
    const char *input_id;  /* dedupe id of a background decision, or NULL */
    int64_t now;
    bool dry_run;          /* decide and check the commit (vigil_store_check), write
                            * nothing: STEP_DONE when it would be accepted */
    vigil_conn_wait_fn wait; /* a background worker's pause (retry_wait_in) */
    void *wait_ctx;
} decide_args;

struct vigil_runtime_conn {
    vigil_redis *redis;
    vigil_store *store;
    atomic_bool ok;
    vigil_conn_wait_fn wait;
    void *wait_ctx;
};

/* The id a commit records for dedupe, if any. */
static const char *args_input_id(const decide_args *a)
{
    if (a->in) /* a clear has no id (vigil_input_parse_cleared) */
        return a->in->id[0] ? a->in->id : NULL;
    return a->input_id;
}

/* Runs the service's decision for one key on the given state. */
static int decide(vigil_runtime *rt, const char *key, const char *state, const decide_args *a,
                  vigil_effects *fx, vigil_error *err)
{
    const vigil_service_def *d = rt->def;
    if (a->fn)
        return a->fn(a->fn_arg, key, state, a->now, fx, err);
    if (a->timer)
        return d->on_timer ? d->on_timer(d->ctx, key, state, a->timer->name, a->timer->due_ms,
                                         a->now, fx)
                           : 0;
    return d->apply(d->ctx, key, state, a->in, a->parsed, a->now, fx, err);
}

static void count_whole_load(void)
{
    vigil_counter_add("vigil_state_whole_loads_total",
                      "Records kept in parts loaded whole again (after a conflict, or when the "
                      "service no longer held the parts of the head it was given)",
                      NULL, 1);
}

/* Decide-then-commit for one key, until the effect is durable, the input
 * is a duplicate, or the decision rejects it. Conflicts retry at once with
 * the record the commit returned; Redis errors retry after a backoff (the
 * message stays unacknowledged meanwhile). Returns STEP_REJECT with err. */
static step_result run_key(vigil_runtime *rt, vigil_store *store, atomic_bool *ok_flag,
                           const char *key, const decide_args *a, vigil_error *err)
{
    vigil_effects fx;
    vigil_effects_init(&fx);
    int64_t version = 0;
    char *state = NULL;
    bool have = vigil_state_cache_get(rt->cache, key, &version, &state);
    /* A record from the cache came without the check of this input's id
     * that a load makes (the commit makes it later). */
    bool unchecked = have && !a->timer && args_input_id(a);
    int errors = 0, oom = 0, wholes = 0;
    step_result result = STEP_DONE;

    for (int attempt = 0;; attempt++) {
        if (!have) {
            int seen = 0;
            /* A timer firing's dedupe is left to the commit, which also
             * completes the lease of a firing already applied. */
            int lr = vigil_store_load(store, key, a->timer ? NULL : args_input_id(a), &seen,
                                      &version, &state);
            if (lr == VIGIL_STORE_BAD_DATA) {
                vigil_error_set(err, VIGIL_REJECT_STORED_DATA,
                                "the stored record of '%s' holds another type", key);
                result = STEP_REJECT;
                goto done;
            }
            if (lr != 0) {
                if (!retry_wait_in(rt, errors++, ok_flag, a->wait, a->wait_ctx)) {
                    if (a->in)
                        die_unacknowledged(a->in->topic);
                    result = STEP_GAVE_UP; /* a timer comes back when its lease ends */
                    goto done;
                }
                continue;
            }
            atomic_store(ok_flag, true);
            have = true;
            vigil_state_cache_put(rt->cache, key, version, state);
            if (seen) {
                vigil_counter_add("vigil_duplicates_total", "Inputs already applied (redelivery)",
                                  NULL, 1);
                result = STEP_DUPLICATE;
                goto done;
            }
        }
        vigil_effects_reset(&fx);
        memset(err, 0, sizeof *err);
        int drc = decide(rt, key, state, a, &fx, err);
        if (drc == VIGIL_NEED_WHOLE) {
            /* the head of a record in parts whose parts the service no
             * longer holds: decide again on the whole record, loaded (which
             * the service can always read, so this happens once) */
            count_whole_load();
            vigil_state_cache_drop(rt->cache, key);
            free(state);
            state = NULL;
            have = false;
            if (wholes++ < 2)
                continue;
            vigil_error_set(err, VIGIL_REJECT_STORED_DATA,
                            "the service cannot read the whole record of '%s'", key);
            result = STEP_REJECT;
            goto done;
        }
        if (drc != 0 && is_oom(drc, err)) {
            /* not a refusal: try again after a pause, then leave */
            if (!vigil_oom_wait(oom++, key)) {
                if (a->in)
                    vigil_exit_unacknowledged("out of memory deciding", a->in->topic);
                result = STEP_GAVE_UP; /* a timer comes back when its lease ends */
                goto done;
            }
            continue;
        }
        if (drc != 0 && unchecked) {
            /* Refused on a cached record: a second copy of an input already
             * applied (a redelivery, the same id sent again) is refused by
             * the very change it made ("already paused"). Load the record
             * with the id check, so such a copy is dropped as a duplicate,
             * as it is after a restart, and any other is decided again. */
            unchecked = false;
            vigil_state_cache_drop(rt->cache, key);
            free(state);
            state = NULL;
            have = false;
            continue;
        }
        if (drc != 0) {
            result = STEP_REJECT;
            goto done;
        }
        vigil_commit c = {
            .key = key,
            .expected_version = version,
            .input_id = args_input_id(a),
            .fx = &fx,
            .now_ms = a->now,
            .leased_timer = a->timer ? a->timer->member : NULL,
            .leased_score = a->timer ? a->timer->lease_score : 0,
        };
        int64_t newv = 0;
        char *cur = NULL;
        vigil_commit_result r = a->dry_run ? vigil_store_check(store, &c, &newv, &cur)
                                           : vigil_store_commit(store, &c, &newv, &cur);
        switch (r) {
        case VIGIL_COMMIT_OK:
            atomic_store(ok_flag, true);
            if (a->dry_run)
                goto done; /* would commit: nothing written */
            vigil_counter_add("vigil_commits_total", "State commits", NULL, 1);
            vigil_state_cache_put(rt->cache, key, newv, fx.new_state ? fx.new_state : state);
            goto done;
        case VIGIL_COMMIT_DUPLICATE:
            atomic_store(ok_flag, true);
            vigil_counter_add("vigil_duplicates_total", "Inputs already applied (redelivery)",
                              NULL, 1);
            result = STEP_DUPLICATE;
            goto done;
        case VIGIL_COMMIT_CONFLICT:
            atomic_store(ok_flag, true);
            vigil_counter_add("vigil_commit_conflicts_total",
                              "Commits retried because the record changed", NULL, 1);
            free(state);
            state = cur;
            version = newv;
            if (attempt > 50) /* a conflict storm: back off, whatever the record's form */
                vigil_sleep_ms(vigil_backoff_ms(attempt - 50, 1, 100), NULL);
            if (!state) {
                /* no text came back (the commit gave up reading a record
                 * that kept changing, or there is none): load it */
                if (version > 0)
                    count_whole_load(); /* a record that exists, loaded whole again */
                vigil_state_cache_drop(rt->cache, key);
                have = false;
                continue;
            }
            vigil_state_cache_put(rt->cache, key, version, state);
            continue;
        case VIGIL_COMMIT_BAD_DATA:
            atomic_store(ok_flag, true);
            vigil_error_set(err, VIGIL_REJECT_STORED_DATA,
                            "a Redis key the commit of '%s' needs holds another type "
                            "(nothing written)", key);
            vigil_state_cache_drop(rt->cache, key);
            free(cur);
            result = STEP_REJECT;
            goto done;
        case VIGIL_COMMIT_ERROR:
        default:
            free(cur);
            vigil_state_cache_drop(rt->cache, key);
            free(state);
            state = NULL;
            have = false;
            if (!retry_wait_in(rt, errors++, ok_flag, a->wait, a->wait_ctx)) {
                if (a->in)
                    die_unacknowledged(a->in->topic);
                result = STEP_GAVE_UP;
                goto done;
            }
            continue;
        }
    }
done:
    free(state);
    vigil_effects_free(&fx);
    return result;
}

/* Decides an input on every one of its keys before committing any, so an
 * input that one key refuses is refused whole (nothing written). Keys
 * already applied (a redelivery) pass. Returns false with err. */
static bool decide_all(vigil_runtime *rt, char keys[][VIGIL_KEY_MAX], int n,
                       const decide_args *a, vigil_error *err)
{
    decide_args check = *a;
    check.dry_run = true;
    for (int i = 0; i < n; i++) {
        memset(err, 0, sizeof *err);
        if (run_key(rt, rt->intake_store, &rt->intake_redis_ok, keys[i], &check, err) ==
            STEP_REJECT)
            return false;
    }
    return true;
}

/* The kind label of a topic whose first level is first[0..nfirst) and
 * whose last level is last: one form for parsed and skipped inputs. */
static void kind_label_of(const char *first, size_t nfirst, const char *last, char *out,
                          size_t outlen)
{
    /* kind="<first, at most 32>/<last, at most 32>": what snprintf with
     * %.*s/%.32s wrote, without snprintf (once per input) */
    char a[33], b[33];
    size_t nb = strnlen(last, 32);
    nfirst = nfirst < 32 ? nfirst : 32;
    memcpy(a, first, nfirst);
    a[nfirst] = '\0';
    memcpy(b, last, nb);
    b[nb] = '\0';
    vigil_concat(out, outlen, "kind=\"", a, "/", b, "\"", (const char *)NULL);
}

/* A short, bounded label for an input's kind: first and last topic level. */
static void kind_label(const vigil_input *in, char *out, size_t outlen)
{
    kind_label_of(in->parts[0], strlen(in->parts[0]), in->parts[in->nparts - 1], out, outlen);
}

/* True when the topic alone names the input's key (def->topic_key) and a
 * peer owns it: counted like a parsed input of its kind and skipped, so a
 * replica spends on each of its peers' inputs no more than paho's receipt. */
static bool peer_input(vigil_runtime *rt, const char *topic)
{
    char key[VIGIL_KEY_MAX];
    if (!rt->def->topic_key || !rt->def->topic_key(topic, key, sizeof key))
        return false;
    vigil_shard_view view;
    intake_view(rt, topic, &view);
    if (vigil_shard_view_owns(&view, rt->cfg.shard_index, key))
        return false;
    const char *first = strchr(topic, '/'), *last = strrchr(topic, '/');
    char label[96];
    kind_label_of(topic, first ? (size_t)(first - topic) : strlen(topic), last ? last + 1 : topic,
                  label, sizeof label);
    vigil_counter_add("vigil_inputs_total", "Inputs received", label, 1);
    vigil_counter_add("vigil_inputs_other_shard_total", "Keys skipped because another shard owns them",
                      NULL, 1);
    return true;
}

/* paho's message callback: the message is acknowledged when this returns,
 * so everything durable happens before. */
/* One input, from this replica's session or (take_all) from an adopted
 * session of a removed shard index, whose every input is taken whoever
 * owns its keys: the owners under the old count skipped them. */
static void intake(vigil_runtime *rt, const char *topic, const void *payload, size_t len,
                   bool retained, bool take_all)
{
    int64_t t0 = vigil_mono_ms();
    int64_t now = vigil_now_ms();
    atomic_store(&rt->intake_busy_since, t0 ? t0 : 1);
    if (!take_all && peer_input(rt, topic)) {
        atomic_store(&rt->intake_busy_since, 0);
        return;
    }
    vigil_input in;
    vigil_error err = { 0 };
    void *parsed = NULL;
    char (*keys)[VIGIL_KEY_MAX] = NULL;

    bool cleared = len == 0 && rt->def->clear_topic && rt->def->clear_topic(topic);
    for (int attempt = 0;; attempt++) {
        memset(&err, 0, sizeof err);
        int prc = cleared
                      ? vigil_input_parse_cleared(topic, now, &in, &err)
                      : vigil_input_parse(topic, payload, len, rt->cfg.max_payload, now, &in, &err);
        if (prc == 0)
            break;
        if (is_oom(prc, &err)) {
            if (!vigil_oom_wait(attempt, topic))
                vigil_exit_unacknowledged("out of memory parsing an input", topic);
            continue;
        }
        vigil_counter_add("vigil_inputs_total", "Inputs received", "kind=\"invalid\"", 1);
        reject(rt, topic, payload, len, &err);
        atomic_store(&rt->intake_busy_since, 0);
        return;
    }
    in.retained = retained;
    if (rt->def->clear_reapplies && rt->def->clear_topic && !cleared &&
        rt->def->clear_topic(topic))
        vigil_input_id_per_delivery(&in);
    char label[96];
    kind_label(&in, label, sizeof label);
    vigil_counter_add("vigil_inputs_total", "Inputs received", label, 1);

    for (int attempt = 0;
         !rt->route_keys && !(rt->route_keys = calloc(VIGIL_ROUTE_MAX_KEYS, sizeof *keys));
         attempt++)
        if (!vigil_oom_wait(attempt, topic))
            vigil_exit_unacknowledged("out of memory routing an input", topic);
    keys = rt->route_keys;
    int n;
    for (int attempt = 0, oom = 0;;) {
        memset(&err, 0, sizeof err);
        n = rt->def->route(rt->def->ctx, rt, &in, keys, VIGIL_ROUTE_MAX_KEYS, &parsed, &err);
        if (is_oom(n, &err)) {
            if (parsed && rt->def->free_parsed)
                rt->def->free_parsed(rt->def->ctx, parsed);
            parsed = NULL;
            if (!vigil_oom_wait(oom++, topic))
                vigil_exit_unacknowledged("out of memory routing an input", topic);
            continue;
        }
        if (n != VIGIL_ROUTE_RETRY)
            break;
        if (!retry_wait(rt, attempt++, &rt->intake_redis_ok))
            die_unacknowledged(topic);
    }
    if (n < 0) {
        reject(rt, topic, payload, len, &err);
        goto done;
    }
    /* Only this replica's keys (under any shard count still in use:
     * shard_view.h); the others are its peers' business. */
    vigil_shard_view view;
    intake_view(rt, topic, &view);
    int mine = 0;
    for (int i = 0; i < n; i++) {
        if (!take_all && !vigil_shard_view_owns(&view, rt->cfg.shard_index, keys[i])) {
            vigil_counter_add("vigil_inputs_other_shard_total",
                              "Keys skipped because another shard owns them", NULL, 1);
            continue;
        }
        if (mine != i)
            memcpy(keys[mine], keys[i], sizeof keys[i]);
        mine++;
    }
    decide_args a = { .in = &in, .parsed = parsed, .timer = NULL, .now = now };
    if (mine > 1 && !decide_all(rt, keys, mine, &a, &err)) {
        reject(rt, topic, payload, len, &err);
        goto done;
    }
    for (int i = 0; i < mine; i++) {
        memset(&err, 0, sizeof err);
        if (run_key(rt, rt->intake_store, &rt->intake_redis_ok, keys[i], &a, &err) == STEP_REJECT) {
            /* Only when a record changed between the check and the commit
             * and the decision on the new one refuses: the keys before
             * stay committed. Said loudly, counted apart. */
            vigil_counter_add("vigil_inputs_partly_applied_total",
                              "Multi-key inputs refused on a later key after the check passed",
                              NULL, 1);
            reject(rt, topic, payload, len, &err);
            break;
        }
    }
    /* Only after a key of ours ran: an input only peers own committed
     * nothing, and a kick would wake an idle publisher into an empty read
     * of the outbox (with two replicas, one per input each). */
    if (mine > 0)
        kick_outbox(rt);
done:
    if (parsed && rt->def->free_parsed)
        rt->def->free_parsed(rt->def->ctx, parsed);
    vigil_input_clear(&in);
    vigil_histogram_observe("vigil_handler_seconds", "Time from arrival to durable commit",
                            NULL, (double)(vigil_mono_ms() - t0) / 1000.0);
    atomic_store(&rt->intake_busy_since, 0);
}

/* ---- batched intake (VIGIL_MQTT_INTAKE=link, services with batch_intake) --

 * The messages of one read arrive together and are acknowledged together
 * after the last one is durable. An input that names its one key by its
 * topic (def->topic_key), whose route() touches no Redis for it, and whose
 * key's record the cache holds is decided at once on that record and its
 * commit is sent without waiting: the commits of a run of such inputs
 * travel in one Redis round trip (vigil_store_commit_send / _recv). An
 * input whose key is already in the run is decided on the record as the
 * run's last commit of that key leaves it, and its commit follows that one
 * in the same transaction (vigil_commit.follows): it is applied only if
 * that one is. Where it cannot follow (a full batch), the run ends first
 * and the input starts the next one. Anything else (another kind of
 * input, a cache miss, a decision that is not a plain commit) first ends
 * the run, then takes the one-at-a-time path, so inputs on one key stay
 * in order. A commit of the run that did not come back OK or DUPLICATE (a
 * conflict, one that followed a commit that was not applied, a lost
 * connection) is done again one at a time, in order: its input id tells
 * whether it was applied. */

typedef struct staged {
    const vigil_mqtt_msg *m;
    int64_t t0;
    vigil_input in;
    bool have_in;
    void *parsed;
    char key[VIGIL_KEY_MAX];
    char *state; /* the record it was decided on, taken from the cache */
    int64_t version; /* that record's version */
    vigil_effects fx;
    decide_args a;
    vigil_commit c;
    vigil_commit_result res; /* its reply, once read */
    int64_t newv;
} staged;

static void staged_free(vigil_runtime *rt, staged *s)
{
    if (s->parsed && rt->def->free_parsed)
        rt->def->free_parsed(rt->def->ctx, s->parsed);
    if (s->have_in)
        vigil_input_clear(&s->in);
    vigil_effects_free(&s->fx);
    free(s->state);
    memset(s, 0, sizeof *s);
}

typedef enum {
    STAGE_JOINED, /* decided, its commit sent: it is run[n] now */
    STAGE_REPEAT, /* its key is in the run and it cannot follow: nothing was sent */
    STAGE_SINGLE  /* nothing sent: it goes the one-at-a-time way */
} stage_result;

/* Decides m on the cached record of its key, or on the record as the
 * run's last commit of its key leaves it, and sends its commit, joining
 * the run (run[0..n) holds the inputs already in it). A key in the run
 * whose commit m cannot follow is STAGE_REPEAT: the caller completes the
 * run and stages m again as the first of the next one. */
static stage_result stage(vigil_runtime *rt, const vigil_mqtt_msg *m, staged *run, int n,
                          staged *s)
{
    bool taken = false; /* s->state came out of the cache */
    memset(s, 0, sizeof *s);
    vigil_effects_init(&s->fx);
    s->m = m;
    s->t0 = vigil_mono_ms();
    int64_t now = vigil_now_ms();
    if (!rt->def->topic_key(m->topic, s->key, sizeof s->key))
        goto no;
    /* A key already in the run: decided on the record as the run's last
     * commit of it leaves it, and committed in the same transaction right
     * after that one (vigil_commit.follows), so a busy room's inputs share
     * round trips as different rooms' do. */
    const staged *prev = NULL;
    for (int i = n - 1; i >= 0 && !prev; i--)
        if (strcmp(run[i].key, s->key) == 0)
            prev = &run[i];
    /* One that could not join prev's transaction (a full batch, prev in
     * an earlier one) waits for the run before it is decided: a decision
     * thrown away would also leave the service's cache of decoded records
     * holding a record never committed, and the next one a full read. */
    if (prev && ((!prev->fx.new_state && !prev->state) ||
                 !vigil_store_can_follow(rt->intake_store, s->key))) {
        staged_free(rt, s);
        return STAGE_REPEAT;
    }
    vigil_shard_view view;
    intake_view(rt, m->topic, &view);
    if (!vigil_shard_view_owns(&view, rt->cfg.shard_index, s->key))
        goto no; /* a peer's: intake() skips it unparsed */
    vigil_error err = { 0 };
    if (vigil_input_parse(m->topic, m->payload, m->len, rt->cfg.max_payload, now, &s->in, &err) !=
        0)
        goto no;
    s->have_in = true;
    s->in.retained = m->retained;
    if (rt->def->clear_reapplies && rt->def->clear_topic && rt->def->clear_topic(m->topic))
        vigil_input_id_per_delivery(&s->in);
    char keys[2][VIGIL_KEY_MAX];
    memset(&err, 0, sizeof err);
    rt->intake_in_flight = n > 0; /* run[0..n)'s commits are sent, unread */
    int nk = rt->def->route(rt->def->ctx, rt, &s->in, keys, 2, &s->parsed, &err);
    rt->intake_in_flight = false;
    if (nk != 1 || strcmp(keys[0], s->key) != 0)
        goto no;
    if (prev) {
        /* what the cache will hold once prev's commit is read (flush_run) */
        s->state = strdup(prev->fx.new_state ? prev->fx.new_state : prev->state);
        s->version = prev->version + (prev->fx.new_state ? 1 : 0);
        if (!s->state)
            goto no;
    } else {
        /* the cached text itself, not a copy: it goes back to the cache,
         * or the new text does, when the commit's reply is read */
        taken = vigil_state_cache_take(rt->cache, s->key, &s->version, &s->state);
        if (!taken)
            goto no;
    }
    s->a = (decide_args){ .in = &s->in, .parsed = s->parsed, .now = now };
    memset(&err, 0, sizeof err);
    if (decide(rt, s->key, s->state, &s->a, &s->fx, &err) != 0)
        goto no;
    s->c = (vigil_commit){ .key = s->key, .expected_version = s->version, .input_id = s->in.id,
                           .fx = &s->fx, .now_ms = now, .follows = prev != NULL };
    if (vigil_store_commit_send(rt->intake_store, &s->c) != 0) {
        if (!prev)
            goto no;
        /* not joined (a full batch): after the run, from the cache */
        staged_free(rt, s);
        return STAGE_REPEAT;
    }
    char label[96];
    kind_label(&s->in, label, sizeof label);
    vigil_counter_add("vigil_inputs_total", "Inputs received", label, 1);
    return STAGE_JOINED;
no:
    if (taken) { /* nothing was sent: the cache gets its text back as it was */
        vigil_state_cache_give_back(rt->cache, s->key, s->version, s->state);
        s->state = NULL;
    }
    staged_free(rt, s);
    return STAGE_SINGLE;
}

/* Reads the run's commits back, in order, all of them before anything
 * else uses the connection (a load or commit in between would take a
 * later commit's reply for its own); then a commit that did not come back
 * OK or DUPLICATE is decided and committed again the one-at-a-time way. */
static void flush_run(vigil_runtime *rt, staged *run, int *n)
{
    if (*n == 0)
        return;
    for (int i = 0; i < *n; i++) {
        char *cur = NULL;
        run[i].res = vigil_store_commit_recv(rt->intake_store, &run[i].c, &run[i].newv, &cur);
        free(cur);
    }
    bool committed = false;
    for (int i = 0; i < *n; i++) {
        staged *s = &run[i];
        vigil_commit_result r = s->res;
        atomic_store(&rt->intake_busy_since, s->t0 ? s->t0 : 1);
        if ((r == VIGIL_COMMIT_OK || r == VIGIL_COMMIT_DUPLICATE) && *n > 1)
            vigil_counter_add("vigil_commits_pipelined_total",
                              "Commits that shared one Redis round trip with others (batched "
                              "intake)", NULL, 1);
        if (r == VIGIL_COMMIT_OK) {
            atomic_store(&rt->intake_redis_ok, true);
            vigil_counter_add("vigil_commits_total", "State commits", NULL, 1);
            /* the record's text moves into the cache (s is freed below) */
            char **text = s->fx.new_state ? &s->fx.new_state : &s->state;
            vigil_state_cache_put_owned(rt->cache, s->key, s->newv, *text);
            *text = NULL;
            committed = true;
        } else if (r == VIGIL_COMMIT_DUPLICATE) {
            atomic_store(&rt->intake_redis_ok, true);
            vigil_counter_add("vigil_duplicates_total", "Inputs already applied (redelivery)",
                              NULL, 1);
            /* nothing written: the record it was taken as goes back */
            vigil_state_cache_give_back(rt->cache, s->key, s->version, s->state);
            s->state = NULL;
        } else {
            if (r == VIGIL_COMMIT_CONFLICT)
                vigil_counter_add("vigil_commit_conflicts_total",
                                  "Commits retried because the record changed", NULL, 1);
            vigil_state_cache_drop(rt->cache, s->key);
            vigil_error err = { 0 };
            if (run_key(rt, rt->intake_store, &rt->intake_redis_ok, s->key, &s->a, &err) ==
                STEP_REJECT)
                reject(rt, s->m->topic, s->m->payload, s->m->len, &err);
            committed = true;
        }
        vigil_histogram_observe("vigil_handler_seconds", "Time from arrival to durable commit",
                                NULL, (double)(vigil_mono_ms() - s->t0) / 1000.0);
        staged_free(rt, s);
    }
    *n = 0;
    if (committed)
        kick_outbox(rt);
    atomic_store(&rt->intake_busy_since, 0);
}

/* Room for a run of n staged inputs (stage() clears each one it uses), kept
 * for the next batch; NULL when it cannot grow: the batch is then taken one
 * input at a time. */
static staged *run_room(vigil_runtime *rt, int n)
{
    if (n > rt->run_cap) {
        staged *r = realloc(rt->run, (size_t)n * sizeof *r);
        if (!r)
            return NULL;
        rt->run = r;
        rt->run_cap = n;
    }
    return rt->run;
}

/* The link's batch callback: the messages it returns the count of are
 * durable when it returns (their PUBACKs follow). A shutdown stops it
 * between two messages: a read holds up to the broker's window of inputs
 * (100), which a slow Redis can take longer to commit than an
 * orchestrator's grace period; the rest stay unacknowledged and go to the
 * next process. */
static int on_batch(void *ctx, const vigil_mqtt_msg *msgs, int n)
{
    vigil_runtime *rt = ctx;
    pthread_mutex_lock(&rt->intake_mu);
    staged *run = rt->def->batch_intake && rt->def->topic_key ? run_room(rt, n) : NULL;
    int nrun = 0, handled = n;
    for (int i = 0; i < n; i++) {
        if (atomic_load(&rt->stop)) {
            handled = i; /* the staged run below is committed: all before i */
            break;
        }
        const vigil_mqtt_msg *m = &msgs[i];
        if (strcmp(m->topic, rt->fence.topic) == 0) {
            flush_run(rt, run, &nrun);
            fence_arrived(rt, m->topic, m->payload, m->len);
            continue;
        }
        /* a peer's input touches no Redis: skipped without ending the run */
        if (peer_input(rt, m->topic))
            continue;
        if (run) {
            atomic_store(&rt->intake_busy_since, vigil_mono_ms());
            stage_result sr = stage(rt, m, run, nrun, &run[nrun]);
            if (sr == STAGE_REPEAT) {
                /* an input of a key in the run that cannot follow its
                 * commit waits for the run and starts the next one,
                 * instead of a round trip of its own */
                flush_run(rt, run, &nrun);
                sr = stage(rt, m, run, nrun, &run[nrun]);
            }
            if (sr == STAGE_JOINED) {
                nrun++;
                continue;
            }
            flush_run(rt, run, &nrun);
        }
        intake(rt, m->topic, m->payload, m->len, m->retained, false);
    }
    flush_run(rt, run, &nrun);
    pthread_mutex_unlock(&rt->intake_mu);
    return handled;
}

static void on_message(void *ctx, const char *topic, const void *payload, size_t len, bool retained)
{
    vigil_runtime *rt = ctx;
    pthread_mutex_lock(&rt->intake_mu);
    if (strcmp(topic, rt->fence.topic) == 0)
        fence_arrived(rt, topic, payload, len);
    else
        intake(rt, topic, payload, len, retained, false);
    pthread_mutex_unlock(&rt->intake_mu);
}

static void on_mqtt_state(void *ctx, bool connected)
{
    vigil_runtime *rt = ctx;
    atomic_store(&rt->mqtt_up, connected);
    if (connected) {
        pthread_mutex_lock(&rt->outbox_mu);
        vigil_outbox_proc_go(rt->outbox_proc);
        pthread_mutex_unlock(&rt->outbox_mu);
    }
    vigil_gauge_set("vigil_mqtt_connected", "1 while connected to the broker", NULL,
                    connected ? 1 : 0);
    vigil_log_kv(connected ? VIGIL_LOG_INFO : VIGIL_LOG_WARN,
                 connected ? "mqtt connected" : "mqtt connection lost", "client_id",
                 rt->client_id, NULL);
}

/* Liveness of the publisher, sampled from the timer thread (it has a
 * Redis connection of its own and runs every tick): progress is an empty
 * outbox or a publish since the last sample. An unknown length (Redis
 * down) counts as progress: the outage shows in /readyz instead. */
static void sample_outbox(vigil_runtime *rt, unsigned long long *last)
{
    char key[256];
    vigil_store_key(rt->timer_store, "outbox", NULL, key, sizeof key);
    redisReply *rep = vigil_redis_command(rt->timer_redis, "LLEN %s", key);
    long long pending = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    if (rep)
        vigil_redis_reply_free(rep);
    pthread_mutex_lock(&rt->outbox_mu);
    unsigned long long pub = rt->outbox        ? vigil_outbox_published(rt->outbox)
                             : rt->outbox_proc ? vigil_outbox_proc_published(rt->outbox_proc)
                                               : *last;
    pthread_mutex_unlock(&rt->outbox_mu);
    if (pending <= 0 || pub != *last)
        atomic_store(&rt->outbox_progress, vigil_mono_ms());
    *last = pub;
}

/* /healthz: false (with why) when some part has work and has made no
 * progress for VIGIL_LIVENESS_MS, so an orchestrator restarts the process
 * (nothing acknowledged is lost by a restart). */
static bool live(void *ctx, char *why, size_t whylen)
{
    vigil_runtime *rt = ctx;
    if (atomic_load(&rt->stop))
        return true; /* shutdown is bounded by itself */
    int64_t now = vigil_mono_ms(), bound = rt->cfg.liveness_ms;
    int64_t busy = atomic_load(&rt->intake_busy_since);
    if (busy != 0 && now - busy > bound) {
        snprintf(why, whylen, "intake: one input in hand for %lld ms (redis %s)",
                 (long long)(now - busy),
                 atomic_load(&rt->intake_redis_ok) ? "reachable" : "unreachable");
        return false;
    }
    int64_t beat = atomic_load(&rt->timer_beat);
    if (rt->timer_started && beat != 0 && now - beat > bound + rt->cfg.tick_ms) {
        snprintf(why, whylen, "timers: no turn of the timer loop for %lld ms",
                 (long long)(now - beat));
        return false;
    }
    int64_t ob = atomic_load(&rt->outbox_progress);
    if (ob != 0 && now - ob > bound + rt->cfg.tick_ms) {
        bool up = rt->outbox_link ? vigil_mqtt_links_connected(rt->outbox_link)
                                  : atomic_load(&rt->mqtt_up);
        snprintf(why, whylen, "outbox: entries pending and none published for %lld ms (mqtt %s)",
                 (long long)(now - ob), up ? "connected" : "disconnected");
        return false;
    }
    return true;
}

/* How long a replica's heartbeat and advertised shard count live. */
static int64_t handover_ttl(const vigil_runtime *rt)
{
    return HANDOVER_TTL_MS > 3 * rt->cfg.tick_ms ? HANDOVER_TTL_MS : 3 * rt->cfg.tick_ms;
}

/* Refreshes the shard view over store's connection (the caller's thread
 * owns it) and says so when the counts in use change: a change of N has
 * begun or ended. On a Redis error the previous view stays, unrefreshed,
 * so the intake tries again before its next decision. */
static int view_refresh(vigil_runtime *rt, vigil_store *store, vigil_shard_view *held,
                        vigil_shard_sessions *sessions)
{
    vigil_shard_view v, h;
    int64_t session_ms = rt->cfg.mqtt_session_expiry_s * 1000;
    if (vigil_shard_view_refresh(store, rt->cfg.shard_index, rt->cfg.shard_count,
                                 atomic_load(&rt->mqtt_up), vigil_now_ms(), handover_ttl(rt),
                                 session_ms, &v, &h, sessions) != 0)
        return -1;
    if (held)
        *held = h;
    vigil_gauge_set("vigil_shard_counts_held",
                    "Shard counts this replica's session ran under before and may still hold "
                    "input of; 0 once its fence came back",
                    NULL, h.n);
    pthread_mutex_lock(&rt->view_mu);
    bool changed = !vigil_shard_view_equal(&v, &rt->view);
    rt->view = v;
    rt->view_at = vigil_mono_ms();
    pthread_mutex_unlock(&rt->view_mu);
    vigil_gauge_set("vigil_shard_counts_in_use",
                    "Shard counts (VIGIL_SHARD's N) in use by live replicas or not yet settled; "
                    "above 1 while N changes", NULL, v.n);
    if (changed) {
        char counts[64];
        vigil_shard_view_format(&v, counts, sizeof counts);
        vigil_log_kv(VIGIL_LOG_INFO,
                     v.n > 1 ? "shard counts in use: a change of N is in progress, this replica "
                               "takes the keys it owns under any of them"
                             : "shard counts in use: one",
                     "counts", counts, NULL);
    }
    return 0;
}

/* The view the intake decides with: the timer thread's, or a fresh one
 * when that is stale (the timer thread stalled, the process was paused,
 * or it has just started). A stale view is never decided with: it may
 * lack a count the session still holds input of, and a key skipped is
 * acknowledged and gone. So a refresh that fails (Redis down or still
 * loading) is retried like a failed commit. */
static void intake_view(vigil_runtime *rt, const char *topic, vigil_shard_view *out)
{
    for (int attempt = 0;; attempt++) {
        pthread_mutex_lock(&rt->view_mu);
        bool stale = vigil_mono_ms() - rt->view_at > VIEW_STALE_MS;
        pthread_mutex_unlock(&rt->view_mu);
        if (!stale || view_refresh(rt, rt->intake_store, NULL, NULL) == 0)
            break;
        if (!retry_wait(rt, attempt, &rt->intake_redis_ok))
            die_unacknowledged(topic);
    }
    pthread_mutex_lock(&rt->view_mu);
    *out = rt->view;
    pthread_mutex_unlock(&rt->view_mu);
}

/* This replica's fence came back through its session (shard_fence.h):
 * everything queued before it was taken, so the counts it held are
 * released. A failed release is only logged: the counts stay held and
 * the next refresh sends a new fence. Intake thread. */
static void fence_arrived(vigil_runtime *rt, const char *topic, const void *payload, size_t len)
{
    vigil_shard_view release;
    int rc = vigil_shard_fence_arrived(&rt->fence, payload, len, &release);
    if (rc < 0) {
        vigil_error err = { 0 };
        vigil_error_set(&err, VIGIL_REJECT_BAD_VALUE,
                        "not a shard fence (want {shard, nonce of 32 hex digits, seq >= 1})");
        reject(rt, topic, payload, len, &err);
        return;
    }
    if (rc == 0) {
        vigil_log(VIGIL_LOG_DEBUG, "a fence of another process of this index: ignored");
        return;
    }
    char counts[64];
    vigil_shard_view_format(&release, counts, sizeof counts);
    if (vigil_shard_view_release(rt->intake_store, rt->cfg.shard_index, &release) != 0) {
        vigil_log_kv(VIGIL_LOG_WARN, "shard fence came back but the release failed; "
                                     "a new fence follows", "counts", counts, NULL);
        return;
    }
    vigil_counter_add("vigil_shard_fences_total", "Shard fences by outcome (shard_fence.h)",
                      "outcome=\"returned\"", 1);
    vigil_log_kv(VIGIL_LOG_INFO,
                 "this replica's session delivered everything queued before its fence: "
                 "the shard counts it ran under before are no longer held",
                 "released", counts, NULL);
    view_refresh(rt, rt->intake_store, NULL, NULL);
}

/* Sends this replica's fence when its session holds earlier counts and
 * none is on its way (or the last went unanswered). Timer thread. */
static void fence_send(vigil_runtime *rt, const vigil_shard_view *held)
{
    char payload[VIGIL_FENCE_PAYLOAD_MAX];
    if (!atomic_load(&rt->mqtt_up) ||
        !vigil_shard_fence_due(&rt->fence, held, vigil_mono_ms(), FENCE_RETRY_MS, payload,
                               sizeof payload))
        return;
    int rc = rt->intake_link ? vigil_mqtt_link_publish_async(rt->intake_link, rt->fence.topic,
                                                             payload, strlen(payload), false)
                             : vigil_mqtt_publish_async(rt->mqtt, rt->fence.topic, payload,
                                                        strlen(payload), false);
    if (rc != 0)
        return; /* the retry sends another */
    char counts[64];
    vigil_shard_view_format(held, counts, sizeof counts);
    vigil_counter_add("vigil_shard_fences_total", "Shard fences by outcome (shard_fence.h)",
                      "outcome=\"sent\"", 1);
    vigil_log_kv(VIGIL_LOG_INFO,
                 "this replica's session ran under other shard counts before: they stay held "
                 "until its fence comes back behind what the session queued",
                 "held", counts, "topic", rt->fence.topic, NULL);
}

/* An adopted session (adopt_session): its fence, and what it delivered. */
typedef struct adoption {
    vigil_runtime *rt;
    vigil_shard_fence fence;
    atomic_bool fenced; /* our fence came back: the session's queue is drained */
    atomic_llong inputs;
} adoption;

/* paho delivers the adopted session's inputs here; the callbacks of every
 * client of the process run under paho's one lock, so this never runs
 * beside on_message and may use the intake's Redis connection. */
static void on_adopted_message(void *ctx, const char *topic, const void *payload, size_t len,
                               bool retained)
{
    adoption *a = ctx;
    if (!a)
        return; /* the clean start that ends the session subscribes to nothing */
    if (vigil_shard_fence_is_fence_topic(a->rt->def->name, topic)) {
        vigil_shard_view released;
        if (strcmp(topic, a->fence.topic) == 0 &&
            vigil_shard_fence_arrived(&a->fence, payload, len, &released) == 1)
            atomic_store(&a->fenced, true);
        return; /* a fence is never an input */
    }
    pthread_mutex_lock(&a->rt->intake_mu);
    intake(a->rt, topic, payload, len, retained, true);
    pthread_mutex_unlock(&a->rt->intake_mu);
    atomic_fetch_add(&a->inputs, 1);
}

/* While an adoption runs on the timer thread, this replica's heartbeat
 * and advertised count must not lapse: others would take its outbox and
 * timers for a dead replica's, and drop its count from their views. */
static void adopt_keep_alive(vigil_runtime *rt, int64_t *next)
{
    int64_t now = vigil_mono_ms();
    if (now < *next)
        return;
    *next = now + HANDOVER_EVERY_MS;
    if (vigil_handover_beat(rt->timer_store, rt->cfg.instance, handover_ttl(rt)) == 0)
        view_refresh(rt, rt->timer_store, NULL, NULL);
}

typedef enum { ADOPT_NOT_CONNECTED, ADOPT_DRAINED, ADOPT_UNFINISHED } adopt_result;

/* Connects as client_id with the runtime's broker settings and waits (at
 * most ADOPT_CONNECT_MS) until connected. With a = NULL that is all (the
 * clean start that ends the session). Otherwise it publishes a fence to
 * the session and waits until it comes back behind everything the
 * session had queued (ADOPT_DRAINED) or ADOPT_MAX_MS pass
 * (ADOPT_UNFINISHED: the session stays, the next round goes on). */
static adopt_result adopt_connect(vigil_runtime *rt, const char *client_id, int session_expiry_s,
                                  const char *const *subs, adoption *a)
{
    vigil_mqtt_config mc = vigil_mqtt_config_of(&rt->cfg);
    mc.client_id = client_id;
    mc.subscriptions = subs;
    mc.session_expiry_s = session_expiry_s;
    mc.on_message = on_adopted_message;
    mc.ctx = a;
    char err[256] = "";
    vigil_mqtt *m = vigil_mqtt_new(&mc, err, sizeof err);
    if (!m) {
        vigil_log_kv(VIGIL_LOG_WARN, "cannot adopt a removed shard's session", "client_id",
                     client_id, "error", err, NULL);
        return ADOPT_NOT_CONNECTED;
    }
    adopt_result res = ADOPT_NOT_CONNECTED;
    if (vigil_mqtt_start(m) == 0) {
        int64_t start = vigil_mono_ms(), next_beat = 0;
        vigil_shard_view own;
        vigil_shard_view_init(&own, rt->cfg.shard_count);
        while (!atomic_load(&rt->stop)) {
            int64_t now = vigil_mono_ms();
            adopt_keep_alive(rt, &next_beat);
            if (res == ADOPT_NOT_CONNECTED) {
                if (vigil_mqtt_connected(m))
                    res = a ? ADOPT_UNFINISHED : ADOPT_DRAINED;
                else if (now - start > ADOPT_CONNECT_MS)
                    break;
            }
            if (res == ADOPT_DRAINED || (a && atomic_load(&a->fenced))) {
                res = ADOPT_DRAINED;
                break;
            }
            if (res == ADOPT_UNFINISHED) {
                if (now - start > ADOPT_MAX_MS)
                    break;
                char payload[VIGIL_FENCE_PAYLOAD_MAX];
                if (vigil_mqtt_connected(m) &&
                    vigil_shard_fence_due(&a->fence, &own, now, FENCE_RETRY_MS, payload,
                                          sizeof payload))
                    vigil_mqtt_publish_async(m, a->fence.topic, payload, strlen(payload), false);
            }
            vigil_sleep_ms(50, &rt->stop_sleep);
        }
    }
    vigil_mqtt_stop(m, NULL, 3000);
    return res;
}

/* Takes over the persistent session of shard index j, whose replica is
 * gone for good (j >= N): a replica killed with a backlog leaves input in
 * it that the others skipped as not theirs, and nobody would ever connect
 * as j again. Connects as j, takes every input the session holds (whoever
 * owns its keys; inputs already applied are recognised by their ids) until
 * a fence it publishes to the session comes back behind them, then ends
 * the session with a clean start that keeps none. Input published between
 * the two connections also reached every other replica's session, whose
 * owners under the current counts take it. A backlog too long for one
 * round (ADOPT_MAX_MS) keeps the session for the next. Runs on the timer
 * thread, between ticks, keeping this replica's heartbeat. */
static void adopt_session(vigil_runtime *rt, int j)
{
    char client_id[VIGIL_CLIENT_ID_MAX];
    vigil_client_id(rt->cfg.topic_prefix, rt->def->name, j, client_id, sizeof client_id);
    adoption *a = calloc(1, sizeof *a);
    size_t nsubs = 0;
    while (rt->def->subscriptions && rt->def->subscriptions[nsubs])
        nsubs++;
    const char **subs = calloc(nsubs + 2, sizeof *subs);
    if (!a || !subs) {
        free(a);
        free(subs);
        return; /* the next round tries again */
    }
    a->rt = rt;
    vigil_shard_fence_init(&a->fence, rt->def->name, j, rt->cfg.shard_count);
    atomic_init(&a->fenced, false);
    atomic_init(&a->inputs, 0);
    for (size_t i = 0; i < nsubs; i++)
        subs[i] = rt->def->subscriptions[i];
    subs[nsubs] = a->fence.topic; /* also for a session from before fences */
    static const char *const none[] = { NULL };
    adopt_result r = adopt_connect(rt, client_id, (int)rt->cfg.mqtt_session_expiry_s, subs, a);
    char js[16], n[24];
    snprintf(js, sizeof js, "%d", j);
    snprintf(n, sizeof n, "%lld", (long long)atomic_load(&a->inputs));
    if (r == ADOPT_UNFINISHED)
        vigil_log_kv(VIGIL_LOG_WARN, "adopting the MQTT session of a removed shard index: its "
                                     "backlog was not drained in one round; the next goes on",
                     "from_shard", js, "inputs", n, NULL);
    if (r == ADOPT_DRAINED && adopt_connect(rt, client_id, -1, none, NULL) == ADOPT_DRAINED) {
        vigil_shard_view_forget_session(rt->timer_store, j);
        /* warn: rare, and an operator should see it at the default filter
         * of a busy deployment */
        vigil_log_kv(VIGIL_LOG_WARN,
                     "adopted the MQTT session of a removed shard index and ended it",
                     "from_shard", js, "inputs", n, NULL);
        vigil_counter_add("vigil_handover_sessions_total",
                          "MQTT sessions of removed shard indexes taken over and ended", NULL, 1);
    }
    vigil_shard_fence_destroy(&a->fence);
    free(subs);
    free(a);
}

/* Adopts the session of every index this replica inherits (j >= N,
 * j % N == own index) whose replica's heartbeat is gone. */
static void adopt_sessions(vigil_runtime *rt, const vigil_shard_sessions *sessions)
{
    int i = rt->cfg.shard_index, n = rt->cfg.shard_count;
    if (i >= n)
        return; /* a draining replica inherits nothing */
    for (int k = 0; k < sessions->n && !atomic_load(&rt->stop); k++) {
        int j = sessions->index[k];
        if (j < n || j % n != i || vigil_shard_view_alive(rt->timer_store, j) != 0)
            continue;
        adopt_session(rt, j);
    }
}

/* Keeps this replica's heartbeat and takes over the outbox, timers and
 * per-shard streams of shard indexes beyond VIGIL_SHARD's N whose replica is gone (handover.h),
 * so shrinking N strands nothing. */
static void handover(vigil_runtime *rt)
{
    if (vigil_handover_beat(rt->timer_store, rt->cfg.instance, handover_ttl(rt)) != 0)
        return;
    static vigil_shard_sessions sessions; /* timer thread only */
    vigil_shard_view held;
    if (view_refresh(rt, rt->timer_store, &held, &sessions) == 0) {
        fence_send(rt, &held);
        if (atomic_load(&rt->mqtt_up))
            adopt_sessions(rt, &sessions);
    }
    if (vigil_handover_adopt(rt->timer_store, rt->cfg.shard_count, rt->def->shard_streams) > 0)
        kick_outbox(rt);
}

/* The timer thread: each tick, claim what is due in this shard and act. */
static void *timer_main(void *arg)
{
    vigil_runtime *rt = arg;
    vigil_thread_name("vigil-timers");
    vigil_timer_claim *claims = calloc(TIMER_BATCH, sizeof *claims);
    int errors = 0;
    if (!claims)
        return NULL;
    unsigned long long last_published = 0;
    int64_t next_handover = 0;
    while (!atomic_load(&rt->stop)) {
        atomic_store(&rt->timer_beat, vigil_mono_ms());
        sample_outbox(rt, &last_published);
        if (vigil_mono_ms() >= next_handover) {
            handover(rt);
            next_handover = vigil_mono_ms() + HANDOVER_EVERY_MS;
        }
        int64_t now = vigil_now_ms();
        int n = vigil_timers_claim(rt->timer_store, now, rt->cfg.timer_lease_ms, TIMER_BATCH,
                                   claims);
        if (n < 0) {
            atomic_store(&rt->timer_redis_ok, false);
            vigil_sleep_ms(vigil_backoff_ms(errors++, 100, 5000), &rt->stop_sleep);
            continue;
        }
        errors = 0;
        atomic_store(&rt->timer_redis_ok, true);
        for (int i = 0; i < n && !atomic_load(&rt->stop); i++) {
            /* The firing's id comes from the timer's original deadline, so
             * a firing retried after a lost commit reply, or claimed again
             * after its lease ran out, is recognised as applied. */
            char firing[sizeof claims[i].name + 40];
            snprintf(firing, sizeof firing, "timer:%s:%lld", claims[i].name,
                     (long long)claims[i].due_ms);
            decide_args a = { .in = NULL, .parsed = NULL, .timer = &claims[i], .now = now,
                              .input_id = firing };
            vigil_error err = { 0 };
            run_key(rt, rt->timer_store, &rt->timer_redis_ok, claims[i].key, &a, &err);
            vigil_counter_add("vigil_timers_fired_total", "Timers that came due and were handled",
                              NULL, 1);
        }
        if (n > 0)
            kick_outbox(rt);
        if (n < TIMER_BATCH)
            vigil_sleep_ms(rt->cfg.tick_ms, &rt->stop_sleep);
    }
    free(claims);
    return NULL;
}

vigil_runtime_conn *vigil_runtime_conn_open(vigil_runtime *rt)
{
    vigil_runtime_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->redis = vigil_redis_new(&rt->raddr, 2000);
    c->store = c->redis ? vigil_store_new(c->redis, &rt->scfg) : NULL;
    if (!c->store) {
        vigil_runtime_conn_close(c);
        return NULL;
    }
    atomic_store(&c->ok, true);
    return c;
}

void vigil_runtime_conn_close(vigil_runtime_conn *conn)
{
    if (!conn)
        return;
    vigil_store_free(conn->store);
    vigil_redis_free(conn->redis);
    free(conn);
}

vigil_redis *vigil_runtime_conn_redis(vigil_runtime_conn *conn) { return conn->redis; }

void vigil_runtime_conn_set_wait(vigil_runtime_conn *conn, vigil_conn_wait_fn wait, void *ctx)
{
    conn->wait = wait;
    conn->wait_ctx = ctx;
}

bool vigil_runtime_stopping(const vigil_runtime *rt) { return atomic_load(&rt->stop) != 0; }

vigil_decide_result vigil_runtime_decide(vigil_runtime *rt, vigil_runtime_conn *conn,
                                         const char *key, const char *input_id, int64_t now_ms,
                                         vigil_decide_fn fn, void *arg, vigil_error *err)
{
    decide_args a = { .fn = fn, .fn_arg = arg, .input_id = input_id, .now = now_ms,
                      .wait = conn->wait, .wait_ctx = conn->wait_ctx };
    step_result r = run_key(rt, conn->store, &conn->ok, key, &a, err);
    if (r == STEP_DONE)
        kick_outbox(rt);
    switch (r) {
    case STEP_DONE:
        return VIGIL_DECIDE_DONE;
    case STEP_DUPLICATE:
        return VIGIL_DECIDE_DUPLICATE;
    case STEP_REJECT:
        return VIGIL_DECIDE_REJECTED;
    case STEP_GAVE_UP:
    default:
        return VIGIL_DECIDE_GAVE_UP;
    }
}

int vigil_runtime_peek(vigil_runtime_conn *conn, const char *key, vigil_peek_fn fn, void *arg)
{
    int seen = 0;
    int64_t version = 0;
    char *state = NULL;
    if (vigil_store_load(conn->store, key, NULL, &seen, &version, &state) != 0)
        return -1;
    atomic_store(&conn->ok, true);
    int rc = fn(arg, key, state);
    free(state);
    return rc;
}

static bool ready(void *ctx, char *why, size_t whylen)
{
    vigil_runtime *rt = ctx;
    bool mq = atomic_load(&rt->mqtt_up);
    bool rd = atomic_load(&rt->intake_redis_ok) && atomic_load(&rt->timer_redis_ok);
    bool stopping = atomic_load(&rt->stop);
    vigil_gauge_set("vigil_ready", "1 when connected to the broker and Redis", NULL,
                    (mq && rd && !stopping) ? 1 : 0);
    if (stopping)
        snprintf(why, whylen, "shutting down");
    else if (!mq && !rd)
        snprintf(why, whylen, "mqtt and redis not connected");
    else if (!mq)
        snprintf(why, whylen, "mqtt not connected");
    else if (!rd)
        snprintf(why, whylen, "redis not connected");
    return mq && rd && !stopping;
}

/* A Redis ACL user whose key patterns do not cover P S ":*" (a
 * VIGIL_REDIS_PREFIX other than the one its users.acl was made for) would
 * be refused every key of every commit, retrying for ever: one read of a
 * key under the prefix finds that at start, as a refused password is. */
static int probe_keys(vigil_runtime *rt, char *err, size_t errlen)
{
    char key[VIGIL_KEY_MAX], why[400];
    vigil_runtime_key(rt, "acl-probe", key, sizeof key);
    if (vigil_redis_probe_key(rt->intake_redis, key, why, sizeof why) >= 0)
        return 0; /* allowed, or gone again: the retries report that */
    snprintf(err, errlen, "%s; VIGIL_REDIS_PREFIX must be the prefix the Redis user's ACL "
             "grants (scripts/secrets --redis-prefix)", why);
    return -1;
}

/* Checks Redis once at start so readiness reflects reality before the first
 * input or tick. Redis being away is not fatal (the service waits for it);
 * Redis refusing our credentials is (returns -1 with err): a PING after
 * AUTH also catches a password that is missing altogether (NOAUTH). */
static int probe_redis(vigil_runtime *rt, char *err, size_t errlen)
{
    int probe = vigil_redis_probe(rt->intake_redis, err, errlen);
    if (probe < 0 || (probe > 0 && probe_keys(rt, err, errlen) != 0))
        return -1;
    bool ok = probe > 0;
    atomic_store(&rt->intake_redis_ok, ok);
    if (!ok)
    {
        char url[sizeof rt->cfg.redis_url + 8];
        vigil_redact_url(rt->cfg.redis_url, url, sizeof url);
        vigil_log_kv(VIGIL_LOG_WARN, "redis not reachable yet; will keep trying", "url", url,
                     "error", vigil_redis_last_error(rt->intake_redis), NULL);
    }
    return 0;
}

/* The broker refused our first connect (credentials, authorization, TLS;
 * mqtt.c logged why): stop the way a signal does and exit with
 * VIGIL_EXIT_CONFIG. Runs on the MQTT connector thread, which the
 * shutdown joins, so it only flags and signals. */
static void on_mqtt_refused(void *ctx, const char *why)
{
    vigil_runtime *rt = ctx;
    (void)why;
    atomic_store(&rt->exit_code, VIGIL_EXIT_CONFIG);
    kill(getpid(), SIGTERM);
}

static void runtime_free(vigil_runtime *rt)
{
    if (rt->http)
        vigil_http_stop(rt->http);
    /* After the HTTP server, whose liveness check reads its state; the
     * outbox that used it stopped in shutdown_io. */
    vigil_mqtt_links_stop(rt->outbox_link, 1000);
    rt->outbox_link = NULL;
    vigil_store_free(rt->intake_store);
    vigil_store_free(rt->timer_store);
    vigil_redis_free(rt->intake_redis);
    vigil_redis_free(rt->timer_redis);
    vigil_state_cache_free(rt->cache);
    pthread_mutex_destroy(&rt->outbox_mu);
    pthread_mutex_destroy(&rt->intake_mu);
    free(rt->route_keys);
    free(rt->run);
    pthread_mutex_destroy(&rt->view_mu);
    vigil_shard_fence_destroy(&rt->fence);
    free(rt->subs);
    free(rt);
}

static vigil_store_config store_config_of(const vigil_runtime *rt)
{
    return (vigil_store_config){ .prefix = rt->cfg.redis_prefix, .service = rt->def->name,
                                 .shard_index = rt->cfg.shard_index, .dedupe_keep = 0,
                                 .dedupe_ttl_ms = rt->cfg.dedupe_ttl_s * 1000 };
}

/* The Redis address from the configuration, and both credentials
 * registered so that they never reach a log line, whoever writes it
 * (redact.h). */
static int redis_and_secrets(vigil_runtime *rt, char *err, size_t errlen)
{
    if (vigil_redis_url_parse(rt->cfg.redis_url, &rt->raddr, err, errlen) != 0)
        return -1;
    vigil_redact_add_secret(rt->raddr.password);
    vigil_redact_add_secret(rt->cfg.mqtt_password);
    return 0;
}

static int setup(vigil_runtime *rt, char *err, size_t errlen)
{
    const vigil_service_def *d = rt->def;
    vigil_shard_fence_init(&rt->fence, d->name, rt->cfg.shard_index, rt->cfg.shard_count);
    if (redis_and_secrets(rt, err, errlen) != 0)
        return -1;
    vigil_shard_view_init(&rt->view, rt->cfg.shard_count);
    if (rt->cfg.shard_index >= rt->cfg.shard_count)
        vigil_log(VIGIL_LOG_WARN,
                  "VIGIL_SHARD %d/%d: the index is at or beyond the count, so this replica "
                  "owns no key under it and only drains (it takes the keys it owns under "
                  "other shard counts still in use): intended for the surplus replicas "
                  "while N shrinks",
                  rt->cfg.shard_index, rt->cfg.shard_count);
    if (rt->cfg.dedupe_ttl_s > 0 && rt->cfg.dedupe_ttl_s < rt->cfg.mqtt_session_expiry_s)
        vigil_log(VIGIL_LOG_WARN,
                  "VIGIL_DEDUPE_TTL_S %lld is below VIGIL_MQTT_SESSION_EXPIRY_S %lld: input the "
                  "broker redelivers after a longer outage may be applied twice",
                  (long long)rt->cfg.dedupe_ttl_s, (long long)rt->cfg.mqtt_session_expiry_s);
    rt->scfg = store_config_of(rt);
    int timeout = 2000;
    rt->intake_redis = vigil_redis_new(&rt->raddr, timeout);
    rt->timer_redis = vigil_redis_new(&rt->raddr, timeout);
    rt->cache = vigil_state_cache_new(CACHE_MAX_ENTRIES);
    if (!rt->intake_redis || !rt->timer_redis || !rt->cache) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rt->intake_store = vigil_store_new(rt->intake_redis, &rt->scfg);
    rt->timer_store = vigil_store_new(rt->timer_redis, &rt->scfg);
    if (!rt->intake_store || !rt->timer_store) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(rt->status_topic, sizeof rt->status_topic, "sys/%s/%s/status", d->name,
             rt->cfg.instance);
    snprintf(rt->error_topic, sizeof rt->error_topic, "sys/%s/error", d->name);
    vigil_client_id(rt->cfg.topic_prefix, d->name, rt->cfg.shard_index, rt->client_id,
                    sizeof rt->client_id);
    size_t nsubs = 0;
    while (d->subscriptions && d->subscriptions[nsubs])
        nsubs++;
    rt->subs = calloc(nsubs + 2, sizeof *rt->subs);
    if (!rt->subs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nsubs; i++)
        rt->subs[i] = d->subscriptions[i];
    rt->subs[nsubs] = rt->fence.topic;
    rt->http = vigil_http_start_api(rt->cfg.http_addr, ready, rt, d->http_api, err, errlen);
    if (!rt->http)
        return -1;
    vigil_http_set_live(rt->http, live, rt);
    return 0;
}

static int start_io(vigil_runtime *rt, char *err, size_t errlen)
{
    char *ready_payload = status_payload(rt, "ready");
    char *lost_payload = status_payload(rt, "lost");
    if (!ready_payload || !lost_payload) {
        free(ready_payload);
        free(lost_payload);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    vigil_mqtt_config mc = vigil_mqtt_config_of(&rt->cfg);
    mc.client_id = rt->client_id;
    mc.subscriptions = rt->subs;
    mc.session_expiry_s = (int)rt->cfg.mqtt_session_expiry_s;
    mc.status_topic = rt->status_topic;
    mc.ready_payload = ready_payload;
    mc.lost_payload = lost_payload;
    mc.on_message = on_message;
    if (rt->cfg.mqtt_intake_link)
        mc.on_batch = on_batch; /* paho's intake has no batches */
    mc.on_state = on_mqtt_state;
    mc.ctx = rt;
    mc.on_refused = on_mqtt_refused;
    if (rt->cfg.mqtt_intake_link)
        rt->intake_link = vigil_mqtt_link_new(&mc, err, errlen);
    else
        rt->mqtt = vigil_mqtt_new(&mc, err, errlen);
    free(ready_payload);
    free(lost_payload);
    if (!rt->mqtt && !rt->intake_link)
        return -1;
    if (rt->cfg.outbox_process) {
        rt->outbox_proc = vigil_outbox_proc_start(rt->argv, err, errlen);
        if (!rt->outbox_proc)
            return -1;
    } else {
        /* Outputs leave on their own connection, so they never wait for
         * paho's library lock, which the intake holds (mqtt_link.h). */
        char link_id[VIGIL_CLIENT_ID_MAX + 16];
        snprintf(link_id, sizeof link_id, "%s-out", rt->client_id);
        vigil_mqtt_config lc = vigil_mqtt_config_of(&rt->cfg);
        lc.client_id = link_id;
        rt->outbox_link = vigil_mqtt_links_new(&lc, (int)rt->cfg.outbox_connections, err, errlen);
        if (!rt->outbox_link)
            return -1;
        rt->outbox = vigil_outbox_start_on_links(&rt->raddr, &rt->scfg, rt->outbox_link);
        if (!rt->outbox || vigil_mqtt_links_start(rt->outbox_link) != 0) {
            snprintf(err, errlen, "cannot start the outbox publisher");
            return -1;
        }
    }
    if (pthread_create(&rt->timer_thread, NULL, timer_main, rt) != 0) {
        snprintf(err, errlen, "cannot start the timer thread");
        return -1;
    }
    rt->timer_started = true;
    if (rt->intake_link ? vigil_mqtt_link_start(rt->intake_link) != 0
                        : vigil_mqtt_start(rt->mqtt) != 0) {
        snprintf(err, errlen, "cannot start the MQTT client");
        return -1;
    }
    if (rt->def->start && rt->def->start(rt->def->ctx, rt) != 0) {
        snprintf(err, errlen, "the service's background work did not start");
        return -1;
    }
    rt->started = true;
    return 0;
}

/* Shutdown order: stop claiming timers; drain the outbox; publish
 * "disconnected" and disconnect (the broker keeps our session and queues
 * what arrives meanwhile); then free. */
static void shutdown_io(vigil_runtime *rt)
{
    atomic_store(&rt->stop_at_ms, vigil_now_ms());
    atomic_store(&rt->stop, 1);
    rt->stop_sleep = 1;
    if (rt->timer_started)
        pthread_join(rt->timer_thread, NULL);
    if (rt->started && rt->def->stop)
        rt->def->stop(rt->def->ctx);
    /* Take the outbox away from the paho callback (which may still run
     * until the client is destroyed below) before freeing it: a message
     * committed from now on stays in the Redis outbox for the next start. */
    pthread_mutex_lock(&rt->outbox_mu);
    vigil_outbox *ob = rt->outbox;
    vigil_outbox_proc *op = rt->outbox_proc;
    rt->outbox = NULL;
    rt->outbox_proc = NULL;
    pthread_mutex_unlock(&rt->outbox_mu);
    if (ob)
        vigil_outbox_stop(ob, 3000);
    if (op)
        vigil_outbox_proc_stop(op, 3000);
    if (rt->mqtt) {
        char *bye = status_payload(rt, "disconnected");
        vigil_mqtt_stop(rt->mqtt, bye, 3000);
        free(bye);
        rt->mqtt = NULL;
    }
    if (rt->intake_link) {
        /* The status first, acknowledged, then a clean DISCONNECT: the
         * broker keeps the session and does not publish the will. */
        char *bye = status_payload(rt, "disconnected");
        if (bye) {
            vigil_pubmsg m = { .topic = rt->status_topic, .payload = bye, .len = strlen(bye),
                               .retain = true };
            (void)vigil_mqtt_link_publish_batch(rt->intake_link, &m, 1, 3000);
        }
        free(bye);
        vigil_mqtt_link_stop(rt->intake_link, 3000);
        rt->intake_link = NULL;
    }
}

/* The child's broker connection refused what the parent's accepted (a
 * connection limit, an ACL on client ids): the connector has logged why;
 * end, and let the parent start another one later with a backoff. */
static void outbox_child_refused(void *ctx, const char *why)
{
    (void)ctx;
    (void)why;
    _exit(VIGIL_EXIT_CONFIG);
}

/* The outbox publisher child (VIGIL_OUTBOX_PROCESS=1, outbox_process.h):
 * the same configuration, but only a broker connection of its own (no
 * subscription, no session kept, no status), the Redis outbox and the link
 * to the service process; no HTTP, timers or intake. SIGTERM and SIGINT
 * stay blocked (as the parent left them): the child stops when the parent
 * says so, after the parent's own drain, or dies with the parent. */
static int run_outbox_child(vigil_runtime *rt)
{
    char err[512] = "";
    /* Started from /proc/self/exe (the parent's own binary, even if the
     * file was replaced since), the kernel named it "exe": take the
     * service's name back for ps, top and pkill. */
    vigil_thread_name(rt->def->name);
    char instance[sizeof rt->cfg.instance + 8];
    snprintf(instance, sizeof instance, "%s-outbox", rt->cfg.instance);
    vigil_log_level lvl = VIGIL_LOG_INFO;
    vigil_log_level_parse(rt->cfg.log_level, &lvl);
    vigil_log_init(rt->def->name, instance, lvl);
    if (vigil_outbox_proc_child_init(err, sizeof err) != 0 ||
        redis_and_secrets(rt, err, sizeof err) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "outbox publisher process: cannot start", "error", err,
                     NULL);
        return 2;
    }
    rt->scfg = store_config_of(rt);
    char base[VIGIL_CLIENT_ID_MAX];
    vigil_client_id(rt->cfg.topic_prefix, rt->def->name, rt->cfg.shard_index, base, sizeof base);
    snprintf(rt->client_id, sizeof rt->client_id, "%s-out", base);
    static const char *const no_subscriptions[] = {NULL};
    vigil_mqtt_config mc = vigil_mqtt_config_of(&rt->cfg);
    mc.client_id = rt->client_id;
    mc.subscriptions = no_subscriptions;
    mc.session_expiry_s = -1;
    mc.on_refused = outbox_child_refused;
    rt->mqtt = vigil_mqtt_new(&mc, err, sizeof err);
    vigil_outbox *ob = rt->mqtt ? vigil_outbox_start(&rt->raddr, &rt->scfg, rt->mqtt) : NULL;
    if (!ob || vigil_mqtt_start(rt->mqtt) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "outbox publisher process: cannot start", "error",
                     err[0] ? err : "cannot start the outbox or the MQTT client", NULL);
        vigil_outbox_stop(ob, 0);
        if (rt->mqtt)
            vigil_mqtt_stop(rt->mqtt, NULL, 0);
        rt->mqtt = NULL;
        return 1;
    }
    vigil_log_kv(VIGIL_LOG_INFO, "outbox publisher process started", "client_id", rt->client_id,
                 NULL);
    int drain = vigil_outbox_proc_child_serve(ob);
    vigil_outbox_stop(ob, drain);
    vigil_mqtt_stop(rt->mqtt, NULL, drain > 0 ? 1000 : 0);
    rt->mqtt = NULL;
    return 0;
}

int vigil_runtime_main(int argc, char **argv, const vigil_service_def *def)
{
    vigil_cli_set_http_port(def->default_http_port);
    int cli = vigil_cli_handle(argc, argv, def->name, def->summary, def->config_vars);
    if (cli != 0)
        return cli > 0 ? 0 : 2;
    vigil_malloc_tune(argv); /* may start the program again, with the same arguments */

    vigil_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) {
        fprintf(stderr, "%s: out of memory\n", def->name);
        return 1;
    }
    rt->def = def;
    rt->argv = argv;
    pthread_mutex_init(&rt->outbox_mu, NULL);
    pthread_mutex_init(&rt->intake_mu, NULL);
    pthread_mutex_init(&rt->view_mu, NULL);
    char err[512] = "";
    vigil_common_config_init(&rt->cfg, def->default_http_port);
    if (vigil_common_config_load(&rt->cfg, err, sizeof err) != 0 ||
        (def->configure && def->configure(def->ctx, &rt->cfg, err, sizeof err) != 0)) {
        fprintf(stderr, "%s: configuration error: %s\n", def->name, err);
        free(rt);
        return 2;
    }
    vigil_log_level lvl = VIGIL_LOG_INFO;
    vigil_log_level_parse(rt->cfg.log_level, &lvl);
    vigil_log_init(def->name, rt->cfg.instance, lvl);

    /* Signals are taken synchronously by the main thread only: block them
     * before any thread starts so every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (vigil_outbox_proc_is_child()) {
        int rc = run_outbox_child(rt);
        runtime_free(rt);
        return rc;
    }
    if (setup(rt, err, sizeof err) != 0) {
        fprintf(stderr, "%s: configuration error: %s\n", def->name, err);
        vigil_log_kv(VIGIL_LOG_ERROR, "startup failed", "error", err, NULL);
        runtime_free(rt);
        return 2;
    }
    if (probe_redis(rt, err, sizeof err) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, err, NULL);
        runtime_free(rt);
        return VIGIL_EXIT_CONFIG;
    }
    atomic_store(&rt->timer_redis_ok, atomic_load(&rt->intake_redis_ok));
    char shard[32];
    snprintf(shard, sizeof shard, "%d/%d", rt->cfg.shard_index, rt->cfg.shard_count);
    char port[16];
    snprintf(port, sizeof port, "%d", vigil_http_port(rt->http));
    char mqtt_url[sizeof rt->cfg.mqtt_url + 8], redis_url[sizeof rt->cfg.redis_url + 8];
    vigil_redact_url(rt->cfg.mqtt_url, mqtt_url, sizeof mqtt_url);
    vigil_redact_url(rt->cfg.redis_url, redis_url, sizeof redis_url);
    vigil_log_kv(VIGIL_LOG_INFO, "starting", "version", VIGIL_VERSION, "mqtt", mqtt_url,
                 "redis", redis_url, "shard", shard, "http_port", port, NULL);

    int code = 0;
    if (start_io(rt, err, sizeof err) != 0) {
        vigil_log_kv(VIGIL_LOG_ERROR, "startup failed", "error", err, NULL);
        code = 1;
    } else {
        int sig = 0;
        while (sigwait(&set, &sig) != 0)
            ;
        code = atomic_load(&rt->exit_code);
        if (code == 0)
            vigil_log(VIGIL_LOG_INFO, "signal %d received: shutting down", sig);
        else
            vigil_log(VIGIL_LOG_INFO, "stopping: the broker refused this configuration (exit %d)",
                      code);
    }
    shutdown_io(rt);
    runtime_free(rt);
    vigil_log(VIGIL_LOG_INFO, "stopped");
    return code;
}
