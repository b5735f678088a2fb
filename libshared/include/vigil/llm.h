/* llm.h - a client for OpenAI-compatible chat completion endpoints, and
 * robust reading of what a model answers.
 *
 * Transport (llm.c). One vigil_llm_client owns one curl multi handle and
 * runs many requests at once on the thread that calls vigil_llm_run (a
 * worker thread, never an MQTT callback). Requests are queued by
 * vigil_llm_submit; at most `concurrency` transfers are in flight, the rest
 * wait in the queue. Retries are scheduled, never slept: a request that
 * must wait (backoff, Retry-After) goes back to the queue with a not-before
 * time and the thread keeps driving the other transfers. Every request ends
 * in exactly one completion callback with a vigil_llm_result whose status is
 * one of the defined outcomes below, so a caller always reaches its
 * fallback: nothing hangs, nothing is dropped silently.
 *
 * Time budget of one request. The clock starts when the request is first
 * dispatched (time spent in the queue behind `concurrency` other transfers
 * is not counted, so a burst does not time out requests that never got a
 * chance). From then, each attempt is capped by timeout_ms and the whole
 * request by total_budget_ms, which by default is
 *     timeout_ms * (retries + 1) + the nominal backoffs between attempts
 * (10 s * 3 + 0.5 s + 1 s = 31.5 s with the defaults). A retry whose wait
 * (backoff, or Retry-After when longer) would end past the budget is not
 * made: the request ends at once with the last error. latency_ms in the
 * result is measured from submit, queue time included.
 *
 * Retried: connection errors (refused, reset, closed without an answer),
 * transfer timeouts, HTTP 408, 409, 429 and 5xx. Not retried: other 4xx, a
 * malformed body, an {"error": ...} object under HTTP 200 (Ollama).
 *
 * Parsing (llm_parse.c). Pure functions that find a JSON object (or array)
 * in free model text -- plain, inside ``` fences, wrapped in prose -- and
 * typed readers that coerce what models actually write ("yes", "85%", "0.9")
 * into bools and confidences. Bounded time and memory on any input. */
#ifndef VIGIL_LLM_H
#define VIGIL_LLM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "vigil/config.h"

/* ------------------------------------------------------------------ */
/* Configuration                                                      */
/* ------------------------------------------------------------------ */

typedef enum {
    VIGIL_LLM_TIER_SMART = 0, /* VIGIL_LLM_MODEL_SMART */
    VIGIL_LLM_TIER_MID = 1,   /* VIGIL_LLM_MODEL_MID */
    VIGIL_LLM_TIER_FAST = 2,  /* VIGIL_LLM_MODEL_FAST (a "basic" model) */
    VIGIL_LLM_TIER__COUNT
} vigil_llm_tier;

typedef struct vigil_llm_config {
    char url[512];         /* VIGIL_LLM_URL, base ending in /v1; "" = no LLM */
    char api_key[512];     /* VIGIL_LLM_API_KEY; "" = no Authorization header */
    char model[128];       /* VIGIL_LLM_MODEL; "" = omit "model" from the body */
    char model_tier[VIGIL_LLM_TIER__COUNT][128]; /* per tier; "" = model */
    int64_t timeout_ms;    /* VIGIL_LLM_TIMEOUT_MS, 10000: one attempt */
    int concurrency;       /* VIGIL_LLM_CONCURRENCY, 32: transfers in flight */
    int retries;           /* VIGIL_LLM_RETRIES, 2: attempts after the first */
    /* Not in the environment (code and tests tune them): */
    int64_t connect_timeout_ms; /* 3000, never above timeout_ms */
    int64_t backoff_base_ms;    /* 500 */
    int64_t backoff_cap_ms;     /* 8000 */
    int64_t total_budget_ms;    /* 0 = derived as described above */
    size_t max_response_bytes;  /* 4 MiB; a longer body is a bad_response */
} vigil_llm_config;

/* The LLM variables with defaults and help, NULL-terminated (for --help). */
extern const vigil_config_var VIGIL_LLM_VARS[];

/* Fills every field with its default (url empty: no LLM). */
void vigil_llm_config_init(vigil_llm_config *c);

/* Reads VIGIL_LLM_* over the defaults. Returns 0, or -1 with a message
 * naming the variable in err. A trailing '/' on the URL is removed. */
int vigil_llm_config_load(vigil_llm_config *c, char *err, size_t errlen);

/* The model for a tier: its own name if set, else `model` (maybe ""). */
const char *vigil_llm_config_model(const vigil_llm_config *c, vigil_llm_tier tier);

/* The total budget actually used for one request (see above). */
int64_t vigil_llm_config_budget_ms(const vigil_llm_config *c);

/* ------------------------------------------------------------------ */
/* Client                                                             */
/* ------------------------------------------------------------------ */

typedef enum {
    VIGIL_LLM_OK = 0,           /* "ok": content is the model's answer */
    VIGIL_LLM_TIMEOUT,          /* "timeout": last attempt ran out of time */
    VIGIL_LLM_HTTP_ERROR,       /* "http_error": non-2xx, or {"error":..} under 200 */
    VIGIL_LLM_RATE_LIMITED,     /* "rate_limited": 429 after every retry */
    VIGIL_LLM_CONNECT_ERROR,    /* "connect_error": refused, reset, closed, DNS */
    VIGIL_LLM_BAD_RESPONSE,     /* "bad_response": 200 but not a chat completion */
    VIGIL_LLM_DISABLED,         /* "disabled": no URL configured; no network used */
    VIGIL_LLM_STATUS__COUNT
} vigil_llm_status;

/* Stable snake_case name ("ok", "timeout", ...): the `status` label. */
const char *vigil_llm_status_name(vigil_llm_status s);

typedef struct vigil_llm_request {
    vigil_llm_tier tier;    /* picks the model when model is NULL or "" */
    const char *model;      /* explicit model, overrides the tier */
    const char *system;     /* system prompt; NULL or "" = none */
    const char *user;       /* user prompt; required */
    int max_tokens;         /* <= 0: not sent */
    double temperature;     /* < 0: not sent */
    bool want_json;         /* sends response_format {"type":"json_object"};
                               OpenAI then requires the word "JSON" in a
                               prompt, and no server enforces a schema */
} vigil_llm_request;

/* Defaults for a request: tier smart, max_tokens 0, temperature -1. */
#define VIGIL_LLM_REQUEST_INIT {VIGIL_LLM_TIER_SMART, NULL, NULL, NULL, 0, -1.0, false}

/* What one finished request produced. Strings are NUL-terminated and live
 * only during the completion callback; copy what you keep. */
typedef struct vigil_llm_result {
    vigil_llm_status status;
    long http_code;           /* of the last attempt; 0 when no answer */
    const char *content;      /* choices[0].message.content when ok, else NULL */
    size_t content_len;
    const char *finish_reason;/* "stop", "length", ...; "" if absent */
    bool truncated;           /* finish_reason == "length": output was cut */
    int64_t prompt_tokens;    /* from `usage`, summed over attempts that */
    int64_t completion_tokens;/* got an answer; 0 when not reported */
    int64_t total_tokens;
    int64_t latency_ms;       /* submit -> completion, queue and retries included */
    int attempts;             /* HTTP attempts made (0 for disabled) */
    const char *model;        /* the model asked for ("" if none) */
    const char *error;        /* one line: why it failed; when ok "" or a
                                 note ("output truncated ...") */
} vigil_llm_result;

/* Called once per submitted request, from inside vigil_llm_run on the
 * caller's thread. It may call vigil_llm_submit; it must not call
 * vigil_llm_run or vigil_llm_client_free. */
typedef void (*vigil_llm_done_fn)(const vigil_llm_result *res, void *user);

typedef struct vigil_llm_client vigil_llm_client;

/* Creates a client (copies cfg). Returns NULL only when curl cannot be set
 * up. A config with an empty URL gives a client whose every request ends
 * `disabled` without touching the network. */
vigil_llm_client *vigil_llm_client_new(const vigil_llm_config *cfg);

/* Frees the client. Requests still queued or in flight are abandoned
 * without their callback: drain first (while pending, run). NULL is ok. */
void vigil_llm_client_free(vigil_llm_client *c);

/* Queues a request; user is handed back to the callback. Everything in req
 * is copied. Never calls the callback itself (even when disabled: that
 * completion is delivered by the next vigil_llm_run). Returns 0, or -1 when
 * req->user is NULL or memory runs out (nothing queued). */
int vigil_llm_submit(vigil_llm_client *c, const vigil_llm_request *req, void *user);

/* Drives transfers for at most wait_ms (0 = no waiting: do what is ready
 * and return). Returns as soon as at least one completion has been
 * delivered through done, or when nothing is pending. Returns the number of
 * completions delivered, or -1 on an internal curl error. Not thread-safe:
 * one thread owns the client. */
int vigil_llm_run(vigil_llm_client *c, int wait_ms, vigil_llm_done_fn done);

/* Drives transfers for ms in all, delivering every completion meanwhile
 * (vigil_llm_run returns at the first), and sleeps out what is left once
 * nothing is pending: a pause of the thread that drives the client (a
 * commit waiting out a Redis outage) that does not stall its transfers. */
void vigil_llm_drive_for(vigil_llm_client *c, int64_t ms, vigil_llm_done_fn done);

/* Requests submitted and not yet delivered (queued, waiting to retry, in
 * flight, or finished awaiting delivery). */
size_t vigil_llm_pending(const vigil_llm_client *c);

/* Transfers currently in flight (never above concurrency). */
size_t vigil_llm_in_flight(const vigil_llm_client *c);

/* Makes a vigil_llm_run blocked in poll return early. The one function
 * that may be called from another thread. */
void vigil_llm_wakeup(vigil_llm_client *c);

/* Builds the chat completion body for req (exposed for golden tests of
 * prompts). Returns a malloc'd string the caller frees, or NULL. */
char *vigil_llm_build_body(const vigil_llm_config *cfg, const vigil_llm_request *req);

/* ------------------------------------------------------------------ */
/* Reading model output (llm_parse.c)                                 */
/* ------------------------------------------------------------------ */

/* Input longer than this is refused outright (bounded work per answer). */
#define VIGIL_LLM_PARSE_MAX_INPUT (4u * 1024u * 1024u)
/* Deepest nesting accepted inside the JSON found (json-c's default). */
#define VIGIL_LLM_PARSE_MAX_DEPTH 32

typedef enum {
    VIGIL_LLM_PARSE_OK = 0,
    VIGIL_LLM_PARSE_EMPTY,       /* "empty": NULL, zero length or whitespace only */
    VIGIL_LLM_PARSE_TOO_LARGE,   /* "too_large": above VIGIL_LLM_PARSE_MAX_INPUT */
    VIGIL_LLM_PARSE_NOT_FOUND,   /* "not_found": no '{' / '[' at all */
    VIGIL_LLM_PARSE_UNBALANCED,  /* "unbalanced": opened, never closed (truncated) */
    VIGIL_LLM_PARSE_INVALID,     /* "invalid_json": balanced but not JSON */
    VIGIL_LLM_PARSE_TOO_DEEP,    /* "too_deep": nesting above the limit */
    VIGIL_LLM_PARSE_BAD_UTF8,    /* "invalid_utf8": candidate not UTF-8 (or has NUL) */
    VIGIL_LLM_PARSE_WRONG_TYPE,  /* "wrong_type": JSON found, but not the kind asked */
    VIGIL_LLM_PARSE__COUNT
} vigil_llm_parse_status;

typedef struct vigil_llm_parse_error {
    vigil_llm_parse_status status;
    size_t offset;    /* byte offset in the text the failure refers to */
    char detail[160]; /* one line for logs and error events */
} vigil_llm_parse_error;

const char *vigil_llm_parse_status_name(vigil_llm_parse_status s);

/* Finds the JSON object a model meant in text[0..len) (need not be
 * NUL-terminated; may contain NUL bytes and invalid UTF-8 outside the
 * object). Tried in order: the whole text; each ``` fenced block (any
 * language tag); then the first balanced {...} in the text that parses
 * (strings and escapes respected while balancing; prose, stray braces and
 * arrays before it are skipped). Returns a new reference, or NULL with err
 * (may be NULL) saying why: the first candidate's failure, else unbalanced,
 * else not_found. Linear time in len (a bounded number of rescans). */
json_object *vigil_llm_extract_object(const char *text, size_t len, vigil_llm_parse_error *err);

/* Same for a JSON array (the autopilot's list of actions). If the first
 * JSON value found is an object instead (JSON mode forces objects), the
 * array under one of wrap_keys (NULL-terminated, matched like the field
 * readers below; NULL = any key) is returned, provided the object holds
 * exactly one array when wrap_keys is NULL. Returns a new reference. */
json_object *vigil_llm_extract_array(const char *text, size_t len, const char *const *wrap_keys,
                                     vigil_llm_parse_error *err);

typedef enum {
    VIGIL_LLM_FIELD_OK = 0,  /* present and coerced */
    VIGIL_LLM_FIELD_ABSENT,  /* missing or JSON null: *out = default */
    VIGIL_LLM_FIELD_BAD,     /* present but not coercible: *out = default */
    VIGIL_LLM_FIELD_RANGE,   /* a number, outside what the field allows: *out = default */
} vigil_llm_field;

/* Field lookup for all readers: the exact name first, then a name that is
 * equal ignoring case, '_' and '-' (so "should_wake" finds shouldWake). */
json_object *vigil_llm_field_get(json_object *o, const char *name);

/* Bool: JSON true/false; 1/0; strings "true"/"yes"/"1", "false"/"no"/"0"
 * (case-insensitive, surrounding spaces ignored). */
vigil_llm_field vigil_llm_read_bool(json_object *o, const char *name, bool def, bool *out);

/* Confidence in 0..1, from a number or a numeric string:
 * - 0..1 is the confidence itself (1 is 1, not 1 %);
 * - a whole number from 2 to 100 is a percentage (85 -> 0.85);
 * - with a '%' sign, 0..100 is a percentage ("85%" -> 0.85, "0.5%" -> 0.005);
 * - any other number (1.5, 1.0001, 150, -0.3, "150%") is RANGE: a scale that
 *   cannot be told from a mistake, never guessed nor clamped.
 * NaN, infinities, bools and words are BAD. */
vigil_llm_field vigil_llm_read_confidence(json_object *o, const char *name, double def,
                                          double *out);

/* String: JSON string only (points into o). Other types are BAD, and so is
 * a string holding a NUL ("a\u0000b"), which a C string would read as "a"
 * (vigil_json_str_check's rule): a model's text is taken whole or not at
 * all. */
vigil_llm_field vigil_llm_read_string(json_object *o, const char *name, const char *def,
                                      const char **out);

#endif
