/* json.h - strict payload parsing and typed field access with precise
 * rejection reasons.
 *
 * Every input is checked in this order: size, UTF-8, JSON syntax (strict,
 * no trailing garbage, truncated input is an error), top-level object. Field
 * getters then say exactly which field is missing or of the wrong type. The
 * reason names (vigil_reject_name) appear on sys/{service}/error and as the
 * `reason` label of vigil_rejected_total. */
#ifndef VIGIL_JSON_H
#define VIGIL_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define VIGIL_ID_MAX 64        /* ids: room, persona, agent, user, session */
#define VIGIL_EVENT_ID_MAX 128 /* event/message ids from producers */

/* An event or message id as producers may send it: 1..VIGIL_EVENT_ID_MAX
 * bytes of printable ASCII without the MQTT wildcard/level characters
 * (/ + #). Ids are never spliced into topics, but they end up in Redis keys
 * and logs. */
bool vigil_event_id_valid(const char *s, size_t n);

typedef enum {
    VIGIL_REJECT_NONE = 0,
    VIGIL_REJECT_OVERSIZE,      /* "oversize" */
    VIGIL_REJECT_UTF8,          /* "invalid_utf8" */
    VIGIL_REJECT_NOT_JSON,      /* "not_json" (includes truncated, trailing garbage) */
    VIGIL_REJECT_NOT_OBJECT,    /* "not_object" */
    VIGIL_REJECT_MISSING_FIELD, /* "missing_field" */
    VIGIL_REJECT_WRONG_TYPE,    /* "wrong_type" */
    VIGIL_REJECT_BAD_ID,        /* "bad_id" (payload field) */
    VIGIL_REJECT_BAD_TOPIC,     /* "bad_topic" (topic segment id invalid, unknown topic) */
    VIGIL_REJECT_TOPIC_MISMATCH,/* "topic_mismatch" (payload id disagrees with topic) */
    VIGIL_REJECT_BAD_VALUE,     /* "bad_value" (enum value unknown, out of range) */
    VIGIL_REJECT_LIMIT,         /* "limit" (a configured bound refused it: vigil/limits.h) */
    VIGIL_REJECT_STORED_DATA,   /* "bad_stored_data" (a Redis key the input needs holds
                                 * another type: refused before anything was written) */
    VIGIL_REJECT_TOO_MANY_KEYS, /* "too_many_keys" (the input would touch more state
                                 * records than VIGIL_ROUTE_MAX_KEYS: refused whole) */
    VIGIL_REJECT_NO_MEMORY,     /* never a refusal, so not in sys-error's reasons (named
                                 * "out_of_memory"): an allocation failed; the runtime
                                 * retries the input and, if memory stays short, exits
                                 * without acknowledging it */
    VIGIL_REJECT__COUNT
} vigil_reject_reason;

typedef struct vigil_error {
    vigil_reject_reason reason;
    char detail[200]; /* human-readable, e.g. "field 'room': expected string, got int" */
} vigil_error;

/* Stable snake_case name of a reason ("oversize", ...). */
const char *vigil_reject_name(vigil_reject_reason r);

/* Sets err->reason and a printf-formatted detail; returns -1 for chaining. */
int vigil_error_set(vigil_error *err, vigil_reject_reason r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF). NUL bytes are rejected too. */
bool vigil_utf8_valid(const char *s, size_t n);

/* Where to cut a text of well-formed UTF-8 at n bytes at the most without
 * splitting a character: the length of the longest well-formed prefix of
 * s[0..n) (n itself when s[n] starts a character or ends the text). A text
 * quoted in part ("%.*s") or a detail cut by its buffer stays valid UTF-8
 * in the JSON it goes into. */
size_t vigil_utf8_cut(const char *s, size_t n);

/* vigil_utf8_cut of the first max bytes of the C string s. */
size_t vigil_utf8_cut_max(const char *s, size_t max);

/* Copies the len bytes at s (NULL reads as "") into dst, cap bytes (cap >
 * 0): the longest well-formed prefix of at most cap - 1 of them
 * (vigil_utf8_cut), NUL-terminated, so a text kept shorter in a fixed
 * field never ends inside a character. Returns the bytes copied. */
size_t vigil_utf8_copy_n(char *dst, size_t cap, const char *s, size_t len);

/* vigil_utf8_copy_n of the C string s. */
size_t vigil_utf8_copy(char *dst, size_t cap, const char *s);

/* snprintf into dst (cap bytes), then, when the text did not fit, cut
 * between characters as vigil_error_set cuts its detail: for a text built
 * around user input in a fixed buffer. Returns snprintf's value. */
int vigil_utf8_snprintf(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Ids: 1..64 characters of A-Z a-z 0-9 . _ -  (so never '/', '+', '#',
 * '$', or empty). */
bool vigil_id_valid(const char *s, size_t n);

/* JSON's whitespace (RFC 8259): space, tab, line feed, carriage return. */
static inline bool vigil_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* True when buf[0..len) is exactly one strict JSON value (RFC 8259: no
 * NaN, no single quotes, no raw control characters; whitespace around it
 * allowed) in well-formed UTF-8, and an object if want_object. Builds
 * nothing and allocates nothing: for checking text written by Vigil
 * itself before it is spliced into a payload. */
bool vigil_json_valid(const char *buf, size_t len, bool want_object);

/* Parses buf[0..len) (not NUL-terminated) into a JSON object, checking size
 * against max, UTF-8, strict syntax and that the top level is an object.
 * Returns a new reference, or NULL with err filled. */
json_object *vigil_json_parse_object(const char *buf, size_t len, size_t max, vigil_error *err);

/* The value of o's member field, or NULL when o is not an object, has no
 * such member or holds null there: what json_object_object_get_ex finds,
 * found without hashing the name in an object of a payload's size. */
json_object *vigil_json_member(json_object *o, const char *field);

/* A number from a service's own stored record (a time taken from `now`, a
 * count, an arrival order): all far below VIGIL_RECORD_INT_MAX. One larger
 * in magnitude is damage and reads as def, so that no later sum (a
 * deadline: a start plus a threshold) or increment can overflow. v may be
 * any JSON value (json-c's int64 reading: a string's number, 0 for NULL). */
#define VIGIL_RECORD_INT_MAX (INT64_MAX / 4)
int64_t vigil_record_int(json_object *v, int64_t def);

/* A JSON value read as a C string, the one rule behind vigil_json_string:
 * every reader takes a string as a C string, so one holding a NUL (from
 * \u0000) is refused rather than silently read shorter ("a\u0000b" as
 * "a"). For a caller that words its own errors (heartbeat's config parser
 * maps the status to its own hb_cfg_status and texts) and for values that
 * are not an object's field (an array element). v NULL (a field absent,
 * or JSON null) is ABSENT; *out is set only when OK. */
typedef enum {
    VIGIL_JSON_STR_OK = 0,
    VIGIL_JSON_STR_ABSENT,     /* v NULL: absent or JSON null */
    VIGIL_JSON_STR_NOT_STRING, /* another JSON type */
    VIGIL_JSON_STR_HAS_NUL     /* a string holding a NUL */
} vigil_json_str_status;
vigil_json_str_status vigil_json_str_check(json_object *v, const char **out);

/* Typed getters. Each returns 0 and sets *out, or, if the field is absent
 * (or JSON null): returns 1 when !required (out untouched) and -1 with
 * MISSING_FIELD when required. Wrong JSON type: -1 with WRONG_TYPE. The
 * returned strings point into o and live as long as o. */
int vigil_json_string(json_object *o, const char *field, bool required,
                      const char **out, vigil_error *err);
/* A string that must also satisfy vigil_id_valid (else BAD_ID). */
int vigil_json_id(json_object *o, const char *field, bool required,
                  const char **out, vigil_error *err);
/* Integer (JSON int, or a double with no fractional part). */
int vigil_json_int64(json_object *o, const char *field, bool required,
                     int64_t *out, vigil_error *err);
/* Any JSON number. */
int vigil_json_double(json_object *o, const char *field, bool required,
                      double *out, vigil_error *err);
int vigil_json_bool(json_object *o, const char *field, bool required,
                    bool *out, vigil_error *err);
/* String that must equal one of allowed[] (NULL-terminated); *out is its
 * index. Otherwise BAD_VALUE naming the allowed values. */
int vigil_json_enum(json_object *o, const char *field, bool required,
                    const char *const *allowed, int *out, vigil_error *err);
/* Array value (elements unchecked). */
int vigil_json_array(json_object *o, const char *field, bool required,
                     json_object **out, vigil_error *err);
/* A string of 1..max bytes (message ids and the like): BAD_VALUE when
 * empty or longer. Same return convention as the getters above. */
int vigil_json_string_bounded(json_object *o, const char *field, bool required, size_t max,
                              const char **out, vigil_error *err);
/* An array of at most max strings, each satisfying vigil_id_valid when ids
 * is set ("field 'mentions[2]': ..."). On success *out is a malloc'd,
 * NULL-terminated array of pointers into o (the caller frees the array
 * only) and *n its length; when absent, *out is NULL and *n 0 (returns 1
 * unless required). */
int vigil_json_string_array(json_object *o, const char *field, bool required, bool ids, int max,
                            const char ***out, int *n, vigil_error *err);
/* Object value. */
int vigil_json_object(json_object *o, const char *field, bool required,
                      json_object **out, vigil_error *err);

/* The field to read: name, or alias when only the alias is present (a
 * producer that spells the contract's snake_case field in camelCase,
 * {userId, lastActivity}, or by the name a specification gave it,
 * availabilityHeuristic). Read the result with the getters above. */
const char *vigil_json_field_or(json_object *o, const char *name, const char *alias);

/* Writes at most the first 200 bytes of buf as a JSON-safe escaped string
 * (no quotes; invalid UTF-8 bytes as \u00XX-style escapes "\\xNN") into out,
 * always NUL-terminated. For the `sample` field of error events. */
void vigil_json_sample(const char *buf, size_t len, char *out, size_t outlen);

/* The fields every error event on sys/{service}/error starts with, in
 * this order: id (the caller's: vigil_error_event_id for a rejected input),
 * service, topic, reason, detail, sample. The caller adds its own fields,
 * then "ts". NULL when out of memory. One function so that the runtime's
 * rejections, the outbox's dead letters and a service's own refusals keep
 * one shape. */
json_object *vigil_error_event_new(const char *id, const char *service, const char *topic,
                                   const char *reason, const char *detail, const char *sample);

/* Serializes o compactly (JSON_C_TO_STRING_PLAIN | NOSLASHESCAPE) into a
 * malloc'd string the caller frees: json-c's exact text, written directly
 * unless o holds a double (then by json-c). */
char *vigil_json_dump(json_object *o);

/* FNV-1a 64-bit: the one hash of the project (derived input ids, shard
 * selection, the ids services derive from several pieces). */
uint64_t vigil_hash64(const void *data, size_t n);
/* FNV-1a continued over one more piece: vigil_hash64 of a concatenation is
 * vigil_hash64_more(...vigil_hash64_more(VIGIL_HASH64_INIT, a)..., z). */
#define VIGIL_HASH64_INIT 0xcbf29ce484222325ull
uint64_t vigil_hash64_more(uint64_t h, const void *data, size_t n);

/* Shard of a key: vigil_hash64(key) % count. */
int vigil_shard_of(const char *key, int count);

#endif
