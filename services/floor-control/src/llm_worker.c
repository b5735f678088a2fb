/* llm_worker.c - the thread that asks the LLM which personas fit a waiting
 * message: it takes jobs from the durable stream, runs their requests on
 * one curl multi handle (never on the MQTT callback), and commits each
 * answer into its room through vigil_runtime_decide. The commit decides
 * only if the message is still waiting: the deadline timer may have
 * decided it by the rules already, and then the answer is dropped.
 *
 * The deadline timer is what makes this safe: a job that is lost, stuck or
 * late never leaves a message undecided. So jobs are acknowledged freely:
 * after their commit, when their deadline has passed, and (this consumer's
 * own after a restart, or another consumer's idle past twice the budget)
 * without asking the model at all. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/jobs.h>
#include <vigil/limits.h>
#include <vigil/log.h>
#include <vigil/json.h>
#include <vigil/metrics.h>
#include <vigil/job_consumer.h>
#include "adapter.h"

#define MAX_SLOTS 64
#define CLAIM_EVERY_MS 5000
#define ANSWER_MAX_TOKENS 100 /* the answer is a short list of ids */

/* What a job's commit did with its message. */
typedef enum { JOB_NOT_WAITING = 0, JOB_BY_LLM, JOB_BY_RULES } job_outcome;

typedef struct slot {
    bool used, done;
    char entry[48];
    char room[FLOOR_ID_MAX + 1];
    char message_id[FLOOR_MSG_ID_MAX + 1];
    int64_t due;
    vigil_llm_status status;
    bool truncated; /* the answer reached ANSWER_MAX_TOKENS and was cut */
    char *content;
    size_t len;
    char error[160];
} slot;

struct floor_worker {
    floor_service *svc;
    vigil_runtime_conn *conn;
    vigil_llm_client *llm;
    char stream[256];
    char consumer[200];
    slot slots[MAX_SLOTS];
    int used;
    bool group_ok, pel_done;
    int64_t next_claim, next_try;
    int errors;
};

static bool stopping(const floor_worker *w)
{
    return atomic_load(&w->svc->stop) || vigil_runtime_stopping(w->svc->rt);
}

static void count(const char *outcome)
{
    char labels[64];
    snprintf(labels, sizeof labels, "outcome=\"%s\"", outcome);
    vigil_counter_add("vigil_floor_llm_jobs_total", "LLM jobs finished by the worker, by outcome",
                      labels, 1);
}

static void ack(floor_worker *w, const char *entry)
{
    const char *ids[1] = {entry};
    if (vigil_jobs_finish(vigil_runtime_conn_redis(w->conn), w->stream, FLOOR_JOBS_GROUP, ids, 1) != 0)
        vigil_log_kv(VIGIL_LOG_WARN, "LLM job not acknowledged (its deadline decides anyway)",
                     "entry", entry, NULL);
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

/* A commit waiting out a Redis outage keeps the other answers coming in
 * (vigil_runtime_conn_set_wait). */
static bool drive_while_waiting(void *arg, int attempt, int64_t ms)
{
    (void)attempt;
    floor_worker *w = arg;
    vigil_llm_drive_for(w->llm, ms, on_done);
    return true;
}

/* Reads a job and asks the model; a job past its deadline, unreadable, or
 * without a free slot is acknowledged at once (the timer decides). */
static void start_job(floor_worker *w, const vigil_job_entry *e)
{
    slot *s = NULL;
    for (int i = 0; i < MAX_SLOTS && !s; i++)
        if (!w->slots[i].used)
            s = &w->slots[i];
    json_object *o = e->payload ? json_tokener_parse(e->payload) : NULL;
    json_object *room, *mid, *prompt, *due;
    bool ok = o && json_object_object_get_ex(o, "room", &room) &&
              json_object_object_get_ex(o, "message_id", &mid) &&
              json_object_object_get_ex(o, "prompt", &prompt) &&
              json_object_object_get_ex(o, "due", &due) && json_object_is_type(prompt, json_type_string);
    if (!ok || !s || json_object_get_int64(due) <= vigil_now_ms()) {
        count(!ok ? "invalid" : !s ? "busy" : "late");
        ack(w, e->id);
        json_object_put(o);
        return;
    }
    memset(s, 0, sizeof *s);
    s->used = true;
    w->used++;
    snprintf(s->entry, sizeof s->entry, "%s", e->id);
    snprintf(s->room, sizeof s->room, "%s", json_object_get_string(room));
    snprintf(s->message_id, sizeof s->message_id, "%s", json_object_get_string(mid));
    s->due = json_object_get_int64(due);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.tier = VIGIL_LLM_TIER_FAST; /* a ranking, not a deliberation */
    req.user = json_object_get_string(prompt);
    req.max_tokens = ANSWER_MAX_TOKENS;
    req.temperature = 0.0;
    req.want_json = true;
    if (vigil_llm_submit(w->llm, &req, s) != 0) {
        s->done = true;
        s->status = VIGIL_LLM_BAD_RESPONSE;
        snprintf(s->error, sizeof s->error, "the LLM client refused the request");
    }
    json_object_put(o);
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

static void finish_slot(floor_worker *w, slot *s)
{
    job_outcome outcome = JOB_NOT_WAITING;
    void *arg[3] = {s, w->svc, &outcome};
    vigil_error err = {0};
    vigil_decide_result r = vigil_runtime_decide(w->svc->rt, w->conn, s->room, NULL, vigil_now_ms(),
                                                 decide_llm, arg, &err);
    if (r == VIGIL_DECIDE_REJECTED)
        vigil_log_kv(VIGIL_LOG_ERROR, "LLM answer not committed", "message_id", s->message_id,
                     "detail", err.detail, NULL);
    if (s->truncated && r == VIGIL_DECIDE_DONE && outcome != JOB_NOT_WAITING)
        note_cut(s, outcome == JOB_BY_LLM);
    /* an answer in after its deadline decided the message (the budget
     * spent, e.g. waiting out a Redis outage) is late, as a job read late */
    count(r != VIGIL_DECIDE_DONE          ? "not_committed"
          : outcome == JOB_NOT_WAITING    ? "late"
          : s->status == VIGIL_LLM_OK     ? "answered"
                                          : "failed");
    ack(w, s->entry);
    free(s->content);
    memset(s, 0, sizeof *s);
    w->used--;
}

/* Jobs nobody will finish: this consumer's own from before a restart, and
 * other consumers' idle past twice the budget. Their deadlines decide. */
static void sweep(floor_worker *w)
{
    vigil_redis *r = vigil_runtime_conn_redis(w->conn);
    vigil_job_entries es = {0};
    if (!w->pel_done) {
        if (vigil_jobs_read(r, w->stream, FLOOR_JOBS_GROUP, w->consumer, "0", MAX_SLOTS, 0, &es) == 0) {
            for (int i = 0; i < es.n; i++) {
                count("abandoned");
                ack(w, es.v[i].id);
            }
            w->pel_done = es.n == 0;
        }
        vigil_job_entries_free(&es);
        return;
    }
    int64_t now = vigil_mono_ms();
    if (now < w->next_claim)
        return;
    w->next_claim = now + CLAIM_EVERY_MS;
    char cursor[48] = "0-0";
    if (vigil_jobs_autoclaim(r, w->stream, FLOOR_JOBS_GROUP, w->consumer, 2 * w->svc->cfg.llm_budget_ms,
                             MAX_SLOTS, cursor, sizeof cursor, &es) == 0)
        for (int i = 0; i < es.n; i++) {
            count("abandoned");
            ack(w, es.v[i].id);
        }
    vigil_job_entries_free(&es);
}

/* Takes new jobs from the stream (and those nobody will finish). */
static void take_jobs(floor_worker *w)
{
    vigil_redis *r = vigil_runtime_conn_redis(w->conn);
    if (!w->group_ok) {
        w->group_ok = vigil_jobs_group_create(r, w->stream, FLOOR_JOBS_GROUP) == 0;
        if (!w->group_ok) {
            w->next_try = vigil_mono_ms() + vigil_job_backoff(&w->errors, r, "XGROUP CREATE");
            return;
        }
    }
    sweep(w);
    if (w->used >= MAX_SLOTS)
        return;
    vigil_job_entries es = {0};
    int rc = vigil_jobs_read(r, w->stream, FLOOR_JOBS_GROUP, w->consumer, ">",
                             MAX_SLOTS - w->used, w->used ? 0 : 100, &es);
    if (rc == VIGIL_JOBS_NOGROUP)
        w->group_ok = false;
    else if (rc != 0)
        w->next_try = vigil_mono_ms() + vigil_job_backoff(&w->errors, r, "XREADGROUP");
    else
        w->errors = 0;
    for (int i = 0; i < es.n; i++)
        start_job(w, &es.v[i]);
    vigil_job_entries_free(&es);
}

/* While Redis backs off, the transfers in flight are still driven: an
 * answer already on its way is taken in, not timed out by the clock. */
static void *worker_main(void *arg)
{
    floor_worker *w = arg;
    while (!stopping(w)) {
        bool backoff = vigil_mono_ms() < w->next_try;
        if (!backoff)
            take_jobs(w);
        if (w->used)
            vigil_llm_run(w->llm, 20, on_done);
        else if (backoff)
            vigil_sleep_ms(20, NULL);
        for (int i = 0; i < MAX_SLOTS; i++)
            if (w->slots[i].used && w->slots[i].done)
                finish_slot(w, &w->slots[i]);
    }
    return NULL;
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
    vigil_runtime_key(rt, FLOOR_JOBS, w->stream, sizeof w->stream);
    snprintf(w->consumer, sizeof w->consumer, "%s-%d", c->instance, c->shard_index);
    w->conn = vigil_runtime_conn_open(rt);
    w->llm = vigil_llm_client_new(&svc->llm);
    if (!w->conn || !w->llm) {
        vigil_llm_client_free(w->llm);
        vigil_runtime_conn_close(w->conn);
        free(w);
        return NULL;
    }
    vigil_runtime_conn_set_wait(w->conn, drive_while_waiting, w);
    return w;
}

static void worker_wake(void *arg)
{
    floor_worker *w = arg;
    vigil_llm_wakeup(w->llm);
}

static void worker_free(void *arg)
{
    floor_worker *w = arg;
    if (!w)
        return;
    for (int i = 0; i < MAX_SLOTS; i++)
        free(w->slots[i].content);
    vigil_llm_client_free(w->llm);
    vigil_runtime_conn_close(w->conn);
    free(w);
}

static const vigil_worker_ops WORKER_OPS = {
    .make = worker_new, .run = worker_main, .wake = worker_wake, .drop = worker_free};

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
    atomic_store(&svc->stop, true);
    vigil_workers_stop(&svc->pool);
}
