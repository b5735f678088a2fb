/* llm_worker.c - the thread that asks the LLM which personas fit a waiting
 * message: libshared's job loop (vigil/job_loop.h) takes jobs from the
 * durable stream, runs their requests on one curl multi handle (never on
 * the MQTT callback), and this file's hooks commit each answer into its
 * room through vigil_runtime_decide. The commit decides only if the
 * message is still waiting: the deadline timer may have decided it by the
 * rules already, and then the answer is dropped.
 *
 * A job taken and not finished (the replica killed while the model
 * thought) is taken again like every job service's: by the same replica
 * at once after its restart, by any replica once idle past the lease
 * (half the budget), and the model is asked again while its deadline is
 * ahead. A live replica renews the leases of the jobs it works on (the
 * job loop), so a call slower than the lease is not made twice. The deadline timer is what makes this safe: a job that is lost,
 * stuck or late never leaves a message undecided. So a job read after its
 * deadline is acknowledged without asking the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/job_loop.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/json.h>
#include <vigil/metrics.h>
#include "adapter.h"

#define MAX_SLOTS 64
#define BLOCK_MS 100
#define ANSWER_MAX_TOKENS 100 /* the answer is a short list of ids */

/* What a job's commit did with its message. */
typedef enum { JOB_NOT_WAITING = 0, JOB_BY_LLM, JOB_BY_RULES } job_outcome;

typedef struct slot {
    bool done;
    bool late; /* read after its deadline: not asked */
    char room[FLOOR_ID_MAX + 1];
    char message_id[FLOOR_MSG_ID_MAX + 1];
    char *prompt;
    int64_t due;
    vigil_llm_status status;
    bool truncated; /* the answer reached ANSWER_MAX_TOKENS and was cut */
    char *content;
    size_t len;
    char error[160];
    const char *outcome; /* vigil_floor_llm_jobs_total's, once committed */
} slot;

/* vigil_job_worker first: the loop's run and wake serve as the worker's. */
typedef struct floor_worker {
    vigil_job_worker jw;
    floor_service *svc;
} floor_worker;

/* The job loop's outcomes in vigil_floor_llm_jobs_total's words: a commit
 * by what it did with the message, a commit Redis refused "not_committed". */
static void count_job(const void *sarg, const char *outcome)
{
    const slot *s = sarg;
    if (strcmp(outcome, "committed") == 0 && s && s->outcome)
        outcome = s->outcome;
    else if (strcmp(outcome, "rejected") == 0)
        outcome = "not_committed";
    char labels[64];
    snprintf(labels, sizeof labels, "outcome=\"%s\"", outcome);
    vigil_counter_add("vigil_floor_llm_jobs_total", "LLM jobs finished by the worker, by outcome",
                      labels, 1);
}

static void on_done(const vigil_llm_result *res, void *user)
{
    slot *s = user;
    s->done = true;
    s->status = res->status;
    s->truncated = res->truncated;
    vigil_utf8_copy(s->error, sizeof s->error, res->error); /* quoted in the decision */
    /* the result lives only during this call; a model's text holds no NUL */
    s->content = res->status == VIGIL_LLM_OK && res->content ? strndup(res->content, res->content_len) : NULL;
    s->len = s->content ? strlen(s->content) : 0;
    vigil_histogram_observe("vigil_floor_llm_seconds", "LLM relevance call, submit to answer", NULL,
                            (double)res->latency_ms / 1000.0);
}

static int parse_job(void *owner, void *sarg, const char *payload, size_t len, char *why,
                     size_t whylen)
{
    (void)owner;
    (void)len;
    slot *s = sarg;
    json_object *o = json_tokener_parse(payload);
    json_object *room, *mid, *prompt, *due;
    bool ok = o && json_object_object_get_ex(o, "room", &room) &&
              json_object_object_get_ex(o, "message_id", &mid) &&
              json_object_object_get_ex(o, "prompt", &prompt) &&
              json_object_object_get_ex(o, "due", &due) && json_object_is_type(prompt, json_type_string);
    if (ok) {
        snprintf(s->room, sizeof s->room, "%s", json_object_get_string(room));
        snprintf(s->message_id, sizeof s->message_id, "%s", json_object_get_string(mid));
        s->due = json_object_get_int64(due);
        s->prompt = strdup(json_object_get_string(prompt));
        ok = s->prompt != NULL;
    }
    json_object_put(o);
    if (!ok)
        snprintf(why, whylen, "not a floor-control LLM job (room, message_id, prompt, due)");
    return ok ? 0 : -1;
}

/* Asks the model, unless the job's deadline has passed (the timer has
 * decided its message, or is about to). */
static void submit_job(void *owner, void *sarg)
{
    floor_worker *w = owner;
    slot *s = sarg;
    if (s->due <= vigil_now_ms()) {
        s->late = s->done = true;
        return;
    }
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.tier = VIGIL_LLM_TIER_FAST; /* a ranking, not a deliberation */
    req.user = s->prompt;
    req.max_tokens = ANSWER_MAX_TOKENS;
    req.temperature = 0.0;
    req.want_json = true;
    if (vigil_llm_submit(vigil_job_loop_llm(w->jw.loop), &req, s) != 0) {
        s->done = true;
        s->status = VIGIL_LLM_BAD_RESPONSE;
        snprintf(s->error, sizeof s->error, "the LLM client refused the request");
    }
}

static bool job_ready(void *owner, void *sarg)
{
    (void)owner;
    return ((const slot *)sarg)->done;
}

static void slot_clear(void *sarg)
{
    slot *s = sarg;
    free(s->prompt);
    free(s->content);
}

/* The model's {"relevant": [...]}: its ids (floor_llm_relevant's rule)
 * into *out (malloc'd, pointing into *holder). Returns the count, or -1 with why when
 * the answer is unusable (cut at ANSWER_MAX_TOKENS: why says so) or
 * memory runs out. */
static int read_relevant(const slot *s, json_object **holder, const char ***out, char *why,
                         size_t whylen)
{
    vigil_llm_parse_error perr;
    char head[64] = "LLM answer unusable";
    if (s->truncated)
        snprintf(head, sizeof head, "LLM answer cut at %d tokens", ANSWER_MAX_TOKENS);
    *holder = vigil_llm_extract_object(s->content, s->len, &perr);
    if (!*holder) {
        snprintf(why, whylen, "%s: %s", head, perr.detail);
        return -1;
    }
    int n = floor_llm_relevant(*holder, out);
    if (n == FLOOR_RELEVANT_NONE)
        snprintf(why, whylen, "%s: no \"relevant\" list", head);
    else if (n == FLOOR_RELEVANT_NO_MEMORY)
        snprintf(why, whylen, "out of memory reading the LLM answer");
    return n < 0 ? -1 : n;
}

/* Runs inside vigil_runtime_decide on the room's current record: decides
 * the message if it still waits. */
static int decide_llm(void *arg, const char *key, const char *state_json, int64_t now_ms,
                      vigil_effects *fx, vigil_error *err)
{
    const slot *s = ((void **)arg)[0];
    const floor_service *svc = ((void **)arg)[1];
    job_outcome *outcome = ((void **)arg)[2];
    *outcome = JOB_NOT_WAITING;
    floor_room *r = floor_load_room(key, state_json);
    if (!r)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    floor_pending *p = floor_pending_find(r, s->message_id);
    int rc = 0;
    if (p) {
        const char *ptrs[FLOOR_MAX_MENTIONS], **relevant = NULL;
        char why[200] = "", timer[FLOOR_TIMER_NAME_MAX];
        json_object *holder = NULL;
        floor_message m;
        floor_pending_message(p, ptrs, &m);
        int n = -1;
        if (s->status == VIGIL_LLM_OK && s->content)
            n = read_relevant(s, &holder, &relevant, why, sizeof why);
        else
            snprintf(why, sizeof why, "LLM %s: %.*s", vigil_llm_status_name(s->status),
                     (int)vigil_utf8_cut_max(s->error, 120), s->error);
        if (n >= 0) {
            m.ranked = true;
            m.relevant = relevant;
            m.n_relevant = n;
        }
        rc = floor_publish_decision(svc, r, &m, n >= 0 ? "llm" : "rules", n >= 0 ? NULL : why,
                                    now_ms, fx);
        *outcome = n >= 0 ? JOB_BY_LLM : JOB_BY_RULES;
        free(relevant);
        json_object_put(holder);
        floor_timer_name(s->message_id, timer, sizeof timer);
        floor_pending_remove(r, s->message_id);
        if (rc == 0)
            rc = vigil_fx_timer_cancel(fx, timer);
        if (rc == 0)
            rc = floor_save_room(r, fx);
    }
    floor_room_free(r);
    if (rc != 0)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    return 0;
}

/* An answer cut at ANSWER_MAX_TOKENS that decided its message (one the
 * deadline had decided already changes nothing), said once per job (a
 * commit retried runs decide_llm again): a warning and
 * vigil_limit_refusals_total. No input is at hand for an error event. */
static void note_cut(const slot *s, bool by_llm)
{
    char detail[400];
    snprintf(detail, sizeof detail,
             "the LLM's answer on message '%s' in room '%s' reached %d tokens, the most "
             "floor-control asks for (compile time), and was cut: %s",
             s->message_id, s->room, ANSWER_MAX_TOKENS,
             by_llm ? "its complete part was used" : "the rules decided");
    vigil_limit_note("llm_answer_tokens", detail);
}

/* Commits the answer if its message still waits; a late job commits
 * nothing. */
static vigil_decide_result commit_job(void *owner, void *sarg)
{
    floor_worker *w = owner;
    slot *s = sarg;
    if (s->late) {
        s->outcome = "late";
        return VIGIL_DECIDE_DONE;
    }
    job_outcome outcome = JOB_NOT_WAITING;
    void *arg[3] = {s, w->svc, &outcome};
    vigil_error err = {0};
    vigil_decide_result r = vigil_runtime_decide(w->svc->rt, w->jw.conn, s->room, NULL,
                                                 vigil_now_ms(), decide_llm, arg, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "LLM answer not committed", "message_id", s->message_id,
                     "detail", err.detail, NULL);
    if (s->truncated && r == VIGIL_DECIDE_DONE && outcome != JOB_NOT_WAITING)
        note_cut(s, outcome == JOB_BY_LLM);
    /* an answer in after its deadline decided the message (the budget
     * spent, e.g. waiting out a Redis outage) is late, as a job read late */
    s->outcome = outcome == JOB_NOT_WAITING ? "late"
                 : s->status == VIGIL_LLM_OK ? "answered"
                                             : "failed";
    return r;
}

/* No ids hook: the commit itself knows whether the job is still wanted
 * (its message still waits), so a job taken again is always worked. */
static const vigil_job_loop_ops LOOP_OPS = {
    .slot_size = sizeof(slot),
    .parse = parse_job,
    .submit = submit_job,
    .ready = job_ready,
    .commit = commit_job,
    .clear = slot_clear,
    .count = count_job,
    .on_done = on_done,
    .done_outcome = "committed",
    .resumed_metric = "vigil_floor_llm_jobs_resumed_total",
    .resumed_help = "Own LLM jobs taken again after a restart",
    .reclaimed_metric = "vigil_floor_llm_jobs_reclaimed_total",
    .reclaimed_help = "LLM jobs taken over from a consumer idle past the lease",
};

/* The lease: half the budget, so that a job whose replica died is taken
 * over while its deadline is still ahead. A live replica's jobs keep
 * their lease (the job loop renews it), however slow the model; one taken
 * over all the same (the replica stalled past the lease) is committed
 * once: the first answer in decides the message, the other finds it no
 * longer waiting. */
static int64_t lease_ms(const floor_service *svc)
{
    int64_t lease = svc->cfg.llm_budget_ms / 2;
    return lease < 1 ? 1 : lease;
}

static void *worker_new(void *ctx, vigil_runtime *rt, int index)
{
    (void)index; /* one worker per instance and shard */
    floor_service *svc = ctx;
    floor_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->svc = svc;
    const vigil_common_config *c = vigil_runtime_config(rt);
    char consumer[200];
    snprintf(consumer, sizeof consumer, "%s-%d", c->instance, c->shard_index);
    vigil_job_loop_config lc = {.stop = &svc->stop, .llm = &svc->llm, .group = FLOOR_JOBS_GROUP,
                                .consumer = consumer, .lease_ms = lease_ms(svc), .cap = MAX_SLOTS,
                                .block_ms = BLOCK_MS, .index = 0};
    if (vigil_job_worker_open(&w->jw, rt, &LOOP_OPS, w, FLOOR_JOBS, &lc) != 0) {
        vigil_job_worker_drop(w);
        return NULL;
    }
    return w;
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = vigil_job_worker_run, .wake = vigil_job_worker_wake,
    .drop = vigil_job_worker_drop};

int floor_worker_start(void *ctx, vigil_runtime *rt)
{
    floor_service *svc = ctx;
    svc->rt = rt;
    if (!svc->llm_on)
        return 0;
    vigil_stream_trim_declare(FLOOR_JOBS);
    return vigil_workers_start(&svc->pool, &WORKER_OPS, 1, svc, rt);
}

void floor_worker_stop(void *ctx)
{
    floor_service *svc = ctx;
    atomic_store(&svc->stop, 1);
    vigil_workers_stop(&svc->pool);
}
