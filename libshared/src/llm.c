/* llm.c - OpenAI-compatible chat completions over one curl multi handle.
 *
 * Every request is a job. A job lives in exactly one of three lists:
 * `queue` (waiting for a transfer slot, or for its retry's not-before
 * time), `active` (its easy handle is in the multi handle), `done`
 * (finished, its callback not yet delivered). vigil_llm_run moves jobs
 * queue -> active -> (queue again for a retry | done) and delivers `done`.
 * Nothing here sleeps except curl_multi_poll, bounded by the caller's
 * wait, the next retry time, and curl's own timers. The time-budget and
 * retry policy is described in llm.h. */
#include "vigil/llm.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vigil/clock.h"
#include "vigil/json.h"
#include "vigil/log.h"
#include "vigil/redact.h"
#include "vigil/metrics.h"

/* A retry that would be left less than this much of the budget is not
 * worth starting: it could only time out. */
#define MIN_ATTEMPT_MS 50
#define ERROR_MAX 256

/* ------------------------------------------------------------------ */
/* Configuration                                                      */
/* ------------------------------------------------------------------ */

const vigil_config_var VIGIL_LLM_VARS[] = {
    {"VIGIL_LLM_URL", "",
     "OpenAI-compatible base URL ending in /v1 (e.g. http://127.0.0.1:11434/v1); empty = no LLM"},
    {"VIGIL_LLM_API_KEY", "", "sent as Authorization: Bearer <key> when set"},
    {"VIGIL_LLM_API_KEY_FILE", "",
     "file holding the API key (one trailing newline stripped; not with VIGIL_LLM_API_KEY)"},
    {"VIGIL_LLM_MODEL", "", "model name for every tier without its own"},
    {"VIGIL_LLM_MODEL_SMART", "", "model for the smart tier (default VIGIL_LLM_MODEL)"},
    {"VIGIL_LLM_MODEL_MID", "", "model for the mid tier (default VIGIL_LLM_MODEL)"},
    {"VIGIL_LLM_MODEL_FAST", "", "model for the fast/basic tier (default VIGIL_LLM_MODEL)"},
    {"VIGIL_LLM_TIMEOUT_MS", "10000", "timeout of one HTTP attempt"},
    {"VIGIL_LLM_CONCURRENCY", "32", "LLM requests in flight at once per process"},
    {"VIGIL_LLM_RETRIES", "2", "retries on connection errors, timeouts, 408, 409, 429, 5xx"},
    {NULL, NULL, NULL},
};

static const char *const TIER_VARS[VIGIL_LLM_TIER__COUNT] = {
    "VIGIL_LLM_MODEL_SMART", "VIGIL_LLM_MODEL_MID", "VIGIL_LLM_MODEL_FAST"};

void vigil_llm_config_init(vigil_llm_config *c)
{
    memset(c, 0, sizeof *c);
    c->timeout_ms = 10000;
    c->concurrency = 32;
    c->retries = 2;
    c->connect_timeout_ms = 3000;
    c->backoff_base_ms = 500;
    c->backoff_cap_ms = 8000;
    c->total_budget_ms = 0;
    c->max_response_bytes = 4u * 1024u * 1024u;
}

/* Reads one string variable over the current value. The default is copied
 * out first: the getter may write its output while reading its default. */
static int env_str(const char *name, char *field, size_t cap, char *err, size_t errlen)
{
    char def[512];
    snprintf(def, sizeof def, "%s", field);
    return vigil_env_string(name, def, field, cap, err, errlen);
}

/* Like env_str for a secret: VIGIL_X or VIGIL_X_FILE, registered with the
 * redaction so it never reaches a log line (vigil_env_secret). */
static int env_secret(const char *name, char *field, size_t cap, char *err, size_t errlen)
{
    char def[512];
    snprintf(def, sizeof def, "%s", field);
    return vigil_env_secret(name, def, field, cap, err, errlen);
}

int vigil_llm_config_load(vigil_llm_config *c, char *err, size_t errlen)
{
    if (env_str("VIGIL_LLM_URL", c->url, sizeof c->url, err, errlen) < 0 ||
        env_secret("VIGIL_LLM_API_KEY", c->api_key, sizeof c->api_key, err, errlen) < 0 ||
        env_str("VIGIL_LLM_MODEL", c->model, sizeof c->model, err, errlen) < 0)
        return -1;
    for (int t = 0; t < VIGIL_LLM_TIER__COUNT; t++) {
        if (env_str(TIER_VARS[t], c->model_tier[t], sizeof c->model_tier[t], err, errlen) < 0)
            return -1;
    }
    if (vigil_env_int64("VIGIL_LLM_TIMEOUT_MS", c->timeout_ms, 1, 3600000, &c->timeout_ms, err,
                        errlen) < 0 ||
        vigil_env_int("VIGIL_LLM_CONCURRENCY", c->concurrency, 1, 4096, &c->concurrency, err,
                      errlen) < 0 ||
        vigil_env_int("VIGIL_LLM_RETRIES", c->retries, 0, 10, &c->retries, err, errlen) < 0)
        return -1;
    size_t n = strlen(c->url);
    while (n > 0 && c->url[n - 1] == '/')
        c->url[--n] = '\0';
    return 0;
}

const char *vigil_llm_config_model(const vigil_llm_config *c, vigil_llm_tier tier)
{
    if ((int)tier >= 0 && tier < VIGIL_LLM_TIER__COUNT && c->model_tier[tier][0])
        return c->model_tier[tier];
    return c->model;
}

/* With no explicit budget: every attempt may use its full timeout, plus the
 * nominal (unjittered) backoff before each retry. Retry-After waits longer
 * than that budget are not honoured by waiting: the request ends. */
int64_t vigil_llm_config_budget_ms(const vigil_llm_config *c)
{
    if (c->total_budget_ms > 0)
        return c->total_budget_ms;
    int retries = c->retries < 0 ? 0 : c->retries;
    int64_t budget = c->timeout_ms * (retries + 1);
    int64_t d = c->backoff_base_ms;
    for (int i = 0; i < retries; i++) {
        int64_t step = d;
        if (c->backoff_cap_ms > 0 && step > c->backoff_cap_ms)
            step = c->backoff_cap_ms;
        budget += step;
        if (d < INT64_MAX / 2)
            d *= 2;
    }
    return budget;
}

static const char *const STATUS_NAMES[VIGIL_LLM_STATUS__COUNT] = {
    "ok", "timeout", "http_error", "rate_limited", "connect_error", "bad_response", "disabled",
};

const char *vigil_llm_status_name(vigil_llm_status s)
{
    if ((int)s < 0 || s >= VIGIL_LLM_STATUS__COUNT)
        return "unknown";
    return STATUS_NAMES[s];
}

/* ------------------------------------------------------------------ */
/* Request body                                                       */
/* ------------------------------------------------------------------ */

static int add_message(json_object *msgs, const char *role, const char *text)
{
    json_object *m = json_object_new_object();
    if (!m)
        return -1;
    json_object_object_add(m, "role", json_object_new_string(role));
    json_object_object_add(m, "content", json_object_new_string(text));
    return json_object_array_add(msgs, m);
}

/* Temperature is written with a short fixed form ("0.2", not json-c's
 * "0.20000000000000001") so bodies stay readable and golden-testable. */
char *vigil_llm_build_body(const vigil_llm_config *cfg, const vigil_llm_request *req)
{
    char *out = NULL;
    json_object *root = NULL;
    if (!cfg || !req || !req->user)
        goto cleanup;
    root = json_object_new_object();
    json_object *msgs = json_object_new_array();
    if (!root || !msgs) {
        json_object_put(msgs);
        goto cleanup;
    }
    const char *model = req->model && req->model[0] ? req->model
                                                    : vigil_llm_config_model(cfg, req->tier);
    if (model[0])
        json_object_object_add(root, "model", json_object_new_string(model));
    json_object_object_add(root, "messages", msgs);
    if (req->system && req->system[0] && add_message(msgs, "system", req->system) < 0)
        goto cleanup;
    if (add_message(msgs, "user", req->user) < 0)
        goto cleanup;
    if (req->max_tokens > 0)
        json_object_object_add(root, "max_tokens", json_object_new_int(req->max_tokens));
    if (req->temperature >= 0) {
        char t[32];
        snprintf(t, sizeof t, "%.3g", req->temperature);
        json_object_object_add(root, "temperature",
                               json_object_new_double_s(req->temperature, t));
    }
    if (req->want_json) {
        json_object *rf = json_object_new_object();
        json_object_object_add(rf, "type", json_object_new_string("json_object"));
        json_object_object_add(root, "response_format", rf);
    }
    json_object_object_add(root, "stream", json_object_new_boolean(0));
    const char *s = json_object_to_json_string_ext(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (s)
        out = strdup(s);
cleanup:
    json_object_put(root);
    return out;
}

/* ------------------------------------------------------------------ */
/* Jobs and the client                                                */
/* ------------------------------------------------------------------ */

typedef struct llm_job {
    struct llm_job *prev, *next;
    void *user;
    char *body;
    char model[128];
    int64_t submitted_ms;  /* monotonic */
    int64_t deadline_ms;   /* monotonic; 0 until first dispatch */
    int64_t not_before_ms; /* monotonic; 0 = ready */
    int attempts;
    CURL *easy;
    char curl_err[CURL_ERROR_SIZE];
    /* The response of the current attempt. */
    char *buf;
    size_t len, bufcap, limit;
    bool overflow;
    /* The outcome so far (of the last attempt). */
    vigil_llm_status status;
    long http_code;
    char *content;
    size_t content_len;
    char finish_reason[32];
    bool truncated;
    int64_t prompt_tokens, completion_tokens, total_tokens;
    char error[ERROR_MAX];
} llm_job;

typedef struct {
    llm_job *head, *tail;
    size_t n;
} job_list;

struct vigil_llm_client {
    vigil_llm_config cfg;
    bool enabled;
    char endpoint[640];
    int64_t budget_ms;
    CURLM *multi;
    struct curl_slist *headers;
    job_list queue, active, done;
};

static void list_push(job_list *l, llm_job *j)
{
    j->next = NULL;
    j->prev = l->tail;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->n++;
}

static void list_push_front(job_list *l, llm_job *j)
{
    j->prev = NULL;
    j->next = l->head;
    if (l->head)
        l->head->prev = j;
    else
        l->tail = j;
    l->head = j;
    l->n++;
}

static void list_unlink(job_list *l, llm_job *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        l->head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        l->tail = j->prev;
    j->prev = j->next = NULL;
    l->n--;
}

static void job_free(llm_job *j)
{
    if (!j)
        return;
    if (j->easy)
        curl_easy_cleanup(j->easy);
    free(j->body);
    free(j->buf);
    free(j->content);
    free(j);
}

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc = CURLE_FAILED_INIT;

/* curl_global_init is not safe to race with other threads' curl use; run
 * it once per process and never clean up (other clients may live on). */
static void curl_init_once(void)
{
    g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The LLM series exist from the start, at zero, in every process that has
 * an endpoint: an alert on the error rate sees the first error. */
static void declare_metrics(void)
{
    char labels[64];
    for (int st = 0; st < VIGIL_LLM_STATUS__COUNT; st++) {
        if (st == VIGIL_LLM_DISABLED)
            continue;
        snprintf(labels, sizeof labels, "status=\"%s\"", vigil_llm_status_name((vigil_llm_status)st));
        vigil_counter_add("vigil_llm_requests_total", "LLM requests by final outcome", labels, 0);
    }
    vigil_counter_add("vigil_llm_retries_total", "LLM attempts retried", NULL, 0);
    vigil_counter_add("vigil_llm_tokens_total", "LLM tokens reported in usage", "kind=\"prompt\"", 0);
    vigil_counter_add("vigil_llm_tokens_total", "LLM tokens reported in usage", "kind=\"completion\"", 0);
    vigil_histogram_declare("vigil_llm_latency_seconds",
                            "LLM request latency, submit to completion, retries included", NULL);
}

vigil_llm_client *vigil_llm_client_new(const vigil_llm_config *cfg)
{
    vigil_llm_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *cfg;
    if (c->cfg.concurrency < 1)
        c->cfg.concurrency = 1;
    if (c->cfg.retries < 0)
        c->cfg.retries = 0;
    if (c->cfg.timeout_ms < 1)
        c->cfg.timeout_ms = 1;
    if (c->cfg.connect_timeout_ms < 1 || c->cfg.connect_timeout_ms > c->cfg.timeout_ms)
        c->cfg.connect_timeout_ms = c->cfg.timeout_ms;
    if (c->cfg.max_response_bytes == 0)
        c->cfg.max_response_bytes = 4u * 1024u * 1024u;
    size_t n = strlen(c->cfg.url);
    while (n > 0 && c->cfg.url[n - 1] == '/')
        c->cfg.url[--n] = '\0';
    c->enabled = n > 0;
    c->budget_ms = vigil_llm_config_budget_ms(&c->cfg);
    if (!c->enabled)
        return c; /* every request ends `disabled`: no curl at all */
    declare_metrics();

    snprintf(c->endpoint, sizeof c->endpoint, "%s/chat/completions", c->cfg.url);
    pthread_once(&g_curl_once, curl_init_once);
    if (g_curl_init_rc != CURLE_OK)
        goto fail;
    c->multi = curl_multi_init();
    if (!c->multi)
        goto fail;
    /* Keep one idle connection per slot so bursts reuse connections. */
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)c->cfg.concurrency);

    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!h)
        goto fail;
    c->headers = h;
    /* No "Expect: 100-continue" round trip before long prompts. */
    if (!(h = curl_slist_append(c->headers, "Expect:")))
        goto fail;
    if (c->cfg.api_key[0]) {
        char auth[600];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", c->cfg.api_key);
        h = curl_slist_append(c->headers, auth);
        memset(auth, 0, sizeof auth);
        if (!h)
            goto fail;
    }
    return c;
fail:
    vigil_llm_client_free(c);
    return NULL;
}

static void free_list(vigil_llm_client *c, job_list *l, bool in_multi)
{
    llm_job *j = l->head;
    while (j) {
        llm_job *nx = j->next;
        if (in_multi && j->easy && c->multi)
            curl_multi_remove_handle(c->multi, j->easy);
        job_free(j);
        j = nx;
    }
    memset(l, 0, sizeof *l);
}

void vigil_llm_client_free(vigil_llm_client *c)
{
    if (!c)
        return;
    free_list(c, &c->active, true);
    free_list(c, &c->queue, false);
    free_list(c, &c->done, false);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    curl_slist_free_all(c->headers);
    free(c);
}

void vigil_llm_drive_for(vigil_llm_client *c, int64_t ms, vigil_llm_done_fn done)
{
    int64_t end = vigil_mono_ms() + ms;
    for (int64_t left = ms; left > 0; left = end - vigil_mono_ms()) {
        if (!c || vigil_llm_pending(c) == 0) {
            vigil_sleep_ms(left, NULL);
            return;
        }
        if (vigil_llm_run(c, left > 100 ? 100 : (int)left, done) < 0) {
            vigil_sleep_ms(end - vigil_mono_ms(), NULL);
            return;
        }
    }
}

size_t vigil_llm_pending(const vigil_llm_client *c)
{
    return c ? c->queue.n + c->active.n + c->done.n : 0;
}

size_t vigil_llm_in_flight(const vigil_llm_client *c)
{
    return c ? c->active.n : 0;
}

void vigil_llm_wakeup(vigil_llm_client *c)
{
    if (c && c->multi)
        curl_multi_wakeup(c->multi);
}

static void job_fail(llm_job *j, vigil_llm_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void job_fail(llm_job *j, vigil_llm_status st, const char *fmt, ...)
{
    j->status = st;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(j->error, sizeof j->error, fmt, ap);
    va_end(ap);
    /* a reason longer than the buffer is cut between characters: services
     * publish it (run details, decisions' reasons, council warnings) */
    if (n >= (int)sizeof j->error)
        j->error[vigil_utf8_cut(j->error, strlen(j->error))] = '\0';
}

static void finish(vigil_llm_client *c, llm_job *j);

int vigil_llm_submit(vigil_llm_client *c, const vigil_llm_request *req, void *user)
{
    if (!c || !req || !req->user)
        return -1;
    llm_job *j = calloc(1, sizeof *j);
    if (!j)
        return -1;
    j->user = user;
    j->submitted_ms = vigil_mono_ms();
    const char *model = req->model && req->model[0] ? req->model
                                                    : vigil_llm_config_model(&c->cfg, req->tier);
    snprintf(j->model, sizeof j->model, "%s", model);
    if (!c->enabled) {
        job_fail(j, VIGIL_LLM_DISABLED, "no LLM configured (VIGIL_LLM_URL is empty)");
        finish(c, j); /* counted, and delivered by the next vigil_llm_run */
        return 0;
    }
    j->body = vigil_llm_build_body(&c->cfg, req);
    if (!j->body) {
        job_free(j);
        return -1;
    }
    list_push(&c->queue, j);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Transfers                                                          */
/* ------------------------------------------------------------------ */

/* Collects the body. Past the job's limit it stops the transfer (returning
 * less than given makes curl fail with CURLE_WRITE_ERROR), so a runaway
 * server cannot make us buffer without bound. */
static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
    llm_job *j = ud;
    size_t n = size * nmemb;
    if (n > j->limit - j->len) {
        j->overflow = true;
        return 0;
    }
    if (j->len + n + 1 > j->bufcap) {
        size_t cap = j->bufcap ? j->bufcap : 4096;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *nb = realloc(j->buf, cap);
        if (!nb)
            return 0;
        j->buf = nb;
        j->bufcap = cap;
    }
    memcpy(j->buf + j->len, data, n);
    j->len += n;
    j->buf[j->len] = '\0';
    return n;
}

/* Options that never change between attempts; set once per job. */
static CURL *make_easy(vigil_llm_client *c, llm_job *j)
{
    CURL *e = curl_easy_init();
    if (!e)
        return NULL;
    curl_easy_setopt(e, CURLOPT_URL, c->endpoint);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(j->body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(e, CURLOPT_PRIVATE, j);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->curl_err);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "vigil/" VIGIL_VERSION);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    return e;
}

/* Puts a job on the wire. The first dispatch starts its budget; each
 * attempt gets timeout_ms or what is left of the budget, whichever is
 * less. Returns 0, or -1 after recording why the job must end. */
static int start_attempt(vigil_llm_client *c, llm_job *j, int64_t now)
{
    if (j->deadline_ms == 0)
        j->deadline_ms = now + c->budget_ms;
    int64_t left = j->deadline_ms - now;
    if (left < MIN_ATTEMPT_MS) {
        if (j->attempts == 0)
            job_fail(j, VIGIL_LLM_TIMEOUT, "time budget of %lld ms too small",
                     (long long)c->budget_ms);
        return -1; /* keeps the last attempt's status and error */
    }
    if (!j->easy && !(j->easy = make_easy(c, j))) {
        job_fail(j, VIGIL_LLM_CONNECT_ERROR, "curl_easy_init failed");
        return -1;
    }
    long tmo = (long)(left < c->cfg.timeout_ms ? left : c->cfg.timeout_ms);
    long ctmo = (long)c->cfg.connect_timeout_ms;
    if (ctmo > tmo)
        ctmo = tmo;
    curl_easy_setopt(j->easy, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(j->easy, CURLOPT_CONNECTTIMEOUT_MS, ctmo);
    j->len = 0;
    j->overflow = false;
    j->limit = c->cfg.max_response_bytes;
    j->curl_err[0] = '\0';
    CURLMcode mc = curl_multi_add_handle(c->multi, j->easy);
    if (mc != CURLM_OK) {
        job_fail(j, VIGIL_LLM_CONNECT_ERROR, "curl_multi_add_handle: %s", curl_multi_strerror(mc));
        return -1;
    }
    j->attempts++;
    return 0;
}

/* Ends a job: records metrics and moves it to `done` for delivery. */
static void finish(vigil_llm_client *c, llm_job *j)
{
    char labels[64];
    snprintf(labels, sizeof labels, "status=\"%s\"", vigil_llm_status_name(j->status));
    vigil_counter_add("vigil_llm_requests_total", "LLM requests by final outcome", labels, 1);
    if (j->prompt_tokens > 0)
        vigil_counter_add("vigil_llm_tokens_total", "LLM tokens reported in usage",
                          "kind=\"prompt\"", (double)j->prompt_tokens);
    if (j->completion_tokens > 0)
        vigil_counter_add("vigil_llm_tokens_total", "LLM tokens reported in usage",
                          "kind=\"completion\"", (double)j->completion_tokens);
    if (j->status != VIGIL_LLM_DISABLED)
        vigil_histogram_observe("vigil_llm_latency_seconds",
                                "LLM request latency, submit to completion, retries included",
                                NULL, (double)(vigil_mono_ms() - j->submitted_ms) / 1000.0);
    if (j->status != VIGIL_LLM_OK && j->status != VIGIL_LLM_DISABLED) {
        char attempts[16];
        snprintf(attempts, sizeof attempts, "%d", j->attempts);
        vigil_log_kv(VIGIL_LOG_WARN, "llm request failed", "status",
                     vigil_llm_status_name(j->status), "attempts", attempts, "error", j->error,
                     NULL);
    }
    list_push(&c->done, j);
}

/* Moves queued jobs whose not-before time has come onto the wire while
 * slots are free, in queue order: retries first (their budget is already
 * running, see attempt_done), then new requests in submission order. */
static void dispatch_ready(vigil_llm_client *c, int64_t now)
{
    llm_job *j = c->queue.head;
    while (j && c->active.n < (size_t)c->cfg.concurrency) {
        llm_job *nx = j->next;
        if (j->not_before_ms <= now) {
            list_unlink(&c->queue, j);
            if (start_attempt(c, j, now) == 0)
                list_push(&c->active, j);
            else
                finish(c, j);
        }
        j = nx;
    }
}

/* The message of an {"error": ...} value: a string, or an object's
 * "message", else the compact JSON. */
static void error_text(json_object *e, char *out, size_t cap)
{
    json_object *m = NULL;
    if (json_object_is_type(e, json_type_string))
        vigil_utf8_copy(out, cap, json_object_get_string(e));
    else if (json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, "message", &m) &&
             json_object_is_type(m, json_type_string))
        vigil_utf8_copy(out, cap, json_object_get_string(m));
    else
        vigil_utf8_copy(out, cap, json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
}

/* A usage count as the endpoint said it, within 0..LLM_USAGE_MAX: a
 * count is summed over retries here and over a room's life by the
 * services (wake-evaluator's tokens per decision kind), so an endpoint
 * that says 9e18 must not overflow those sums. No single call uses a
 * billion tokens. */
#define LLM_USAGE_MAX 1000000000LL
static int64_t usage_int(json_object *usage, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(usage, key, &v) ||
        !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return 0;
    int64_t n = json_object_get_int64(v);
    return n <= 0 ? 0 : n > LLM_USAGE_MAX ? LLM_USAGE_MAX : n;
}

/* Reads a 2xx body as a chat completion: choices[0].message.content,
 * finish_reason and usage. An {"error":...} object is an error even under
 * 200 (Ollama reports mid-stream failures that way). */
static void read_completion(llm_job *j, size_t max)
{
    vigil_error jerr;
    json_object *root = vigil_json_parse_object(j->buf ? j->buf : "", j->len, max, &jerr);
    if (!root) {
        char sample[256];
        vigil_json_sample(j->buf ? j->buf : "", j->len, sample, sizeof sample);
        job_fail(j, VIGIL_LLM_BAD_RESPONSE, "HTTP %ld body is not a JSON object (%s): %.*s",
                 j->http_code, jerr.detail, (int)vigil_utf8_cut_max(sample, 120), sample);
        return;
    }
    json_object *v = NULL;
    if (json_object_object_get_ex(root, "error", &v) && v) {
        char msg[200];
        error_text(v, msg, sizeof msg);
        job_fail(j, VIGIL_LLM_HTTP_ERROR, "error under HTTP %ld: %s", j->http_code, msg);
        goto cleanup;
    }
    json_object *usage = NULL;
    if (json_object_object_get_ex(root, "usage", &usage) &&
        json_object_is_type(usage, json_type_object)) {
        int64_t p = usage_int(usage, "prompt_tokens");
        int64_t q = usage_int(usage, "completion_tokens");
        int64_t t = usage_int(usage, "total_tokens");
        j->prompt_tokens += p;
        j->completion_tokens += q;
        j->total_tokens += t > 0 ? t : p + q;
    }
    json_object *choices = NULL, *c0, *msg = NULL, *content = NULL, *fr = NULL;
    if (!json_object_object_get_ex(root, "choices", &choices) ||
        !json_object_is_type(choices, json_type_array) || json_object_array_length(choices) == 0) {
        job_fail(j, VIGIL_LLM_BAD_RESPONSE, "no choices in the response");
        goto cleanup;
    }
    c0 = json_object_array_get_idx(choices, 0);
    if (json_object_object_get_ex(c0, "finish_reason", &fr) &&
        json_object_is_type(fr, json_type_string))
        snprintf(j->finish_reason, sizeof j->finish_reason, "%s", json_object_get_string(fr));
    if (!json_object_object_get_ex(c0, "message", &msg) ||
        !json_object_object_get_ex(msg, "content", &content) ||
        !json_object_is_type(content, json_type_string)) {
        job_fail(j, VIGIL_LLM_BAD_RESPONSE, "choices[0].message.content missing or not a string");
        goto cleanup;
    }
    /* Every consumer reads the answer as a C string: one holding a NUL
     * (\u0000) would be read cut short at it (a council note, a heartbeat
     * message), so it is no usable answer (vigil_json_str_check's rule). */
    if (vigil_json_str_check(content, NULL) == VIGIL_JSON_STR_HAS_NUL) {
        job_fail(j, VIGIL_LLM_BAD_RESPONSE, "choices[0].message.content holds a NUL (\\u0000)");
        goto cleanup;
    }
    size_t n = (size_t)json_object_get_string_len(content);
    free(j->content);
    j->content = malloc(n + 1);
    if (!j->content) {
        job_fail(j, VIGIL_LLM_BAD_RESPONSE, "out of memory for %zu bytes of content", n);
        goto cleanup;
    }
    memcpy(j->content, json_object_get_string(content), n);
    j->content[n] = '\0';
    j->content_len = n;
    j->truncated = strcmp(j->finish_reason, "length") == 0;
    j->status = VIGIL_LLM_OK;
    if (j->truncated)
        snprintf(j->error, sizeof j->error, "output truncated (finish_reason=length)");
    else
        j->error[0] = '\0';
cleanup:
    json_object_put(root);
}

static bool is_connection_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

/* Classifies one finished attempt into the job's status and error, and
 * says whether it may be retried. *retry_after_ms is the server's
 * Retry-After (0 if none). */
static bool classify_attempt(vigil_llm_client *c, llm_job *j, CURLcode rc,
                             int64_t *retry_after_ms)
{
    *retry_after_ms = 0;
    j->http_code = 0;
    curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &j->http_code);
    const char *why = j->curl_err[0] ? j->curl_err : curl_easy_strerror(rc);
    if (rc != CURLE_OK) {
        if (rc == CURLE_OPERATION_TIMEDOUT) {
            job_fail(j, VIGIL_LLM_TIMEOUT, "attempt %d: %s", j->attempts, why);
            return true;
        }
        if (rc == CURLE_WRITE_ERROR && j->overflow) {
            job_fail(j, VIGIL_LLM_BAD_RESPONSE, "response larger than %zu bytes", j->limit);
            return false;
        }
        job_fail(j, VIGIL_LLM_CONNECT_ERROR, "attempt %d: %s", j->attempts, why);
        return is_connection_error(rc);
    }
    long code = j->http_code;
    if (code >= 200 && code < 300) {
        read_completion(j, c->cfg.max_response_bytes);
        return false;
    }
    curl_off_t ra = 0;
    if (curl_easy_getinfo(j->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        *retry_after_ms = ra > 86400 ? 86400000 : (int64_t)ra * 1000;
    char sample[128];
    vigil_json_sample(j->buf ? j->buf : "", j->len, sample, sizeof sample);
    job_fail(j, code == 429 ? VIGIL_LLM_RATE_LIMITED : VIGIL_LLM_HTTP_ERROR, "HTTP %ld: %.*s",
             code, (int)vigil_utf8_cut_max(sample, 100), sample);
    return code == 408 || code == 409 || code == 429 || (code >= 500 && code <= 599);
}

/* Handles a transfer curl reports finished: the job is retried (back to
 * the queue with a not-before time) or finished. */
static void attempt_done(vigil_llm_client *c, llm_job *j, CURLcode rc)
{
    curl_multi_remove_handle(c->multi, j->easy);
    list_unlink(&c->active, j);
    int64_t retry_after = 0;
    bool retryable = classify_attempt(c, j, rc, &retry_after);
    if (retryable && j->attempts <= c->cfg.retries) {
        int64_t now = vigil_mono_ms();
        int64_t wait = vigil_backoff_ms(j->attempts - 1, c->cfg.backoff_base_ms,
                                        c->cfg.backoff_cap_ms);
        if (retry_after > wait)
            wait = retry_after;
        if (now + wait + MIN_ATTEMPT_MS <= j->deadline_ms) {
            j->not_before_ms = now + wait;
            vigil_counter_add("vigil_llm_retries_total", "LLM attempts retried", NULL, 1);
            vigil_log_kv(VIGIL_LOG_DEBUG, "llm retry scheduled", "status",
                         vigil_llm_status_name(j->status), "error", j->error, NULL);
            list_push_front(&c->queue, j); /* ahead of requests not yet started */
            return;
        }
        size_t n = strlen(j->error);
        snprintf(j->error + n, sizeof j->error - n, "; no retry: a %lld ms wait exceeds the budget",
                 (long long)wait);
    }
    finish(c, j);
}

static void collect_finished(vigil_llm_client *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        char *priv = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        CURLcode rc = m->data.result; /* m is invalid after remove_handle */
        if (priv)
            attempt_done(c, (llm_job *)(void *)priv, rc);
    }
}

/* Hands every finished job to its callback. The job is unlinked first so a
 * callback that submits more work only touches the queue. */
static int deliver(vigil_llm_client *c, vigil_llm_done_fn done)
{
    int n = 0;
    llm_job *j;
    while ((j = c->done.head)) {
        list_unlink(&c->done, j);
        vigil_llm_result r = {
            .status = j->status,
            .http_code = j->http_code,
            .content = j->status == VIGIL_LLM_OK ? j->content : NULL,
            .content_len = j->status == VIGIL_LLM_OK ? j->content_len : 0,
            .finish_reason = j->finish_reason,
            .truncated = j->truncated,
            .prompt_tokens = j->prompt_tokens,
            .completion_tokens = j->completion_tokens,
            .total_tokens = j->total_tokens,
            .latency_ms = vigil_mono_ms() - j->submitted_ms,
            .attempts = j->attempts,
            .model = j->model,
            .error = j->error,
        };
        if (done)
            done(&r, j->user);
        job_free(j);
        n++;
    }
    return n;
}

/* Earliest not-before among queued jobs, or -1 when the queue is empty or
 * no slot is free (then only curl's sockets and timers matter). */
static int64_t next_ready(const vigil_llm_client *c)
{
    if (c->active.n >= (size_t)c->cfg.concurrency)
        return -1;
    int64_t best = -1;
    for (const llm_job *j = c->queue.head; j; j = j->next)
        if (best < 0 || j->not_before_ms < best)
            best = j->not_before_ms;
    return best;
}

int vigil_llm_run(vigil_llm_client *c, int wait_ms, vigil_llm_done_fn done)
{
    if (!c)
        return -1;
    int64_t start = vigil_mono_ms();
    int delivered = 0;
    for (;;) {
        if (c->multi) {
            dispatch_ready(c, vigil_mono_ms());
            int running = 0;
            CURLMcode mc = curl_multi_perform(c->multi, &running);
            if (mc != CURLM_OK) {
                vigil_log(VIGIL_LOG_ERROR, "curl_multi_perform: %s", curl_multi_strerror(mc));
                return -1;
            }
            collect_finished(c);
        }
        delivered += deliver(c, done);
        if (delivered > 0 || vigil_llm_pending(c) == 0 || !c->multi)
            return delivered;
        int64_t now = vigil_mono_ms();
        int64_t left = (int64_t)wait_ms - (now - start);
        if (left <= 0)
            return 0;
        int64_t ready = next_ready(c);
        if (ready >= 0 && ready - now < left)
            left = ready - now > 0 ? ready - now : 0;
        CURLMcode mc = curl_multi_poll(c->multi, NULL, 0, (int)left, NULL);
        if (mc != CURLM_OK) {
            vigil_log(VIGIL_LOG_ERROR, "curl_multi_poll: %s", curl_multi_strerror(mc));
            return -1;
        }
    }
}
