/* effects.h - what a decision core asks the shell to do for one input:
 * a new state record, output messages, timer changes and snapshot updates.
 *
 * The core fills a vigil_effects; the runtime commits all of it atomically
 * together with the processed input id (store.h). Strings are copied: the
 * state text into its own allocation (the runtime hands it on), every other
 * string into blocks the effects own, freed together by vigil_effects_free,
 * so nothing outside effects.c may free or replace an op's string, nor
 * an ops array (the first room of each is in the blocks too). */
#ifndef VIGIL_EFFECTS_H
#define VIGIL_EFFECTS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include "event_id.h" /* vigil_event_id: the ids of the events pushed here */

typedef struct vigil_outmsg {
    char *topic;
    char *payload;
    bool retain;
} vigil_outmsg;

typedef struct vigil_timer_op {
    char *name;     /* timer name within the state key, e.g. "nohuman" */
    int64_t due_ms; /* absolute deadline; VIGIL_TIMER_CANCEL to remove */
} vigil_timer_op;
#define VIGIL_TIMER_CANCEL INT64_MIN

/* An aggregate snapshot kept in a Redis hash shared by several state keys
 * (e.g. persona/{p}/state gathers one entry per room, and rooms may live in
 * different shards). The commit sets (or, with value_json NULL, deletes)
 * field in the hash `hash` and then publishes, retained, on topic:
 * envelope_json with member `map_name` set to the whole hash (each value
 * decoded as JSON) and member "ts" set to the commit time. */
typedef struct vigil_snapshot_op {
    char *hash;          /* hash name below the service prefix, e.g. "persona:ann" */
    char *field;         /* e.g. the room */
    char *value_json;    /* JSON text, or NULL to delete the field */
    char *topic;         /* e.g. "persona/ann/state" */
    char *envelope_json; /* e.g. {"persona":"ann"} */
    char *map_name;      /* e.g. "rooms" */
} vigil_snapshot_op;

/* Auxiliary Redis structures a service keeps beside its state records (a
 * room's message log, a durable notification queue, an index set),
 * changed in the same atomic commit, in the order added, after the state
 * and timer changes and before fx->out is appended to the outbox. `name`
 * is below the service prefix: the Redis key is P S ":" name. */
typedef enum {
    VIGIL_AUX_STREAM_ADD,  /* XADD name MAXLEN ~ n1 * m value; with n2 > 0: XADD name MINID
                            * now-n2 (exact) * m value, and XTRIM name MAXLEN ~ n1 on one
                            * append in 16 (the record's version, see store_writes.c) */
    VIGIL_AUX_QUEUE_PUSH,  /* RPUSH name <outbox entry> */
    VIGIL_AUX_QUEUE_FLUSH, /* move every entry of name to the outbox, in order; DEL name */
    VIGIL_AUX_KEY_SET,     /* SET name value */
    VIGIL_AUX_KEY_DELETE,  /* DEL name */
    VIGIL_AUX_SET_ADD,     /* SADD name value */
    VIGIL_AUX_SET_REMOVE,  /* SREM name value */
    VIGIL_AUX_JOB_ADD      /* XADD name MAXLEN ~ n1 * m value, what the cap trimmed counted
                            * under label (vigil_fx_job_add) */
} vigil_aux_kind;

typedef struct vigil_aux_op {
    vigil_aux_kind kind;
    char *name;
    char *value; /* NULL where the kind takes none */
    int64_t n1, n2;
    char *label; /* VIGIL_AUX_JOB_ADD: the stream's configured name; else NULL */
} vigil_aux_op;

/* A part of a state record kept in its own field of the record's Redis
 * hash ("p:" name), written only when it changed, so that a record of
 * many similar entries (a room's personas) costs what changed per commit,
 * not its whole size. See vigil_fx_state_part. */
typedef struct vigil_state_part {
    char *name;
    char *text; /* a JSON object; NULL deletes the part */
} vigil_state_part;

struct vigil_fx_block; /* effects.c: where the ops' strings live */

typedef struct vigil_effects {
    char *new_state; /* NULL = state unchanged; malloc'd, its own allocation */
    vigil_state_part *parts; /* parts set or deleted with new_state */
    size_t n_parts, cap_parts;
    bool parts_reset;        /* every stored part deleted before parts apply */
    vigil_outmsg *out;
    size_t n_out, cap_out;
    vigil_timer_op *timers;
    size_t n_timers, cap_timers;
    vigil_snapshot_op *snaps;
    size_t n_snaps, cap_snaps;
    vigil_aux_op *aux;
    size_t n_aux, cap_aux;
    struct vigil_fx_block *blocks; /* the strings of every op above */
    unsigned arrays_in_block;      /* effects.c: which arrays are still in the blocks */
} vigil_effects;

void vigil_effects_init(vigil_effects *fx);
/* Frees everything and re-initialises (used before a retry). */
void vigil_effects_reset(vigil_effects *fx);
void vigil_effects_free(vigil_effects *fx);

/* All return 0, or -1 on allocation failure. */
int vigil_fx_set_state(vigil_effects *fx, const char *state_json);
/* A record in parts: the state text (vigil_fx_set_state, a JSON object,
 * here called the head) plus named parts, each a JSON object kept in its
 * own field of the record's hash. A commit writes the head and only the
 * parts given (text NULL deletes one); parts must come with a new head.
 * vigil_store_load hands the service the whole record: the head with a
 * member "parts" added, an object of every stored part by name. After a
 * commit the runtime keeps only the head it wrote: a service that no
 * longer holds the parts that head stands for returns
 * VIGIL_NEED_WHOLE (runtime.h) and is called again with the whole record.
 * name: 1-64 bytes, no NUL; text: a JSON object. Returns 0 or -1. */
int vigil_fx_state_part(vigil_effects *fx, const char *name, const char *text);
/* Deletes every stored part before this commit's parts apply (a record
 * written whole again: read in an older form, or replaced). */
void vigil_fx_state_parts_reset(vigil_effects *fx);
int vigil_fx_publish(vigil_effects *fx, const char *topic, const char *payload, bool retain);
/* Serializes obj (vigil_json_dump); does not take ownership. */
int vigil_fx_publish_json(vigil_effects *fx, const char *topic, json_object *obj, bool retain);
int vigil_fx_timer_set(vigil_effects *fx, const char *name, int64_t due_ms);
int vigil_fx_timer_cancel(vigil_effects *fx, const char *name);
int vigil_fx_snapshot(vigil_effects *fx, const char *hash, const char *field,
                      const char *value_json, const char *topic,
                      const char *envelope_json, const char *map_name);
/* vigil_fx_snapshot for texts the caller's own renderer made (vigil_jtext,
 * escaped by construction, its output parsed by the caller's unit tests):
 * checked as there in debug builds only (NDEBUG unset), which the tests
 * run, so a renderer's bug still fails them. Input a service did not
 * render goes through vigil_fx_snapshot. */
int vigil_fx_snapshot_rendered(vigil_effects *fx, const char *hash, const char *field,
                               const char *value_json, const char *topic,
                               const char *envelope_json, const char *map_name);

/* Auxiliary operations (see vigil_aux_kind). All return 0 or -1 (bad
 * argument or allocation failure). */
/* Appends value to the stream `name` (entry field "m"); keeps at most about
 * maxlen entries (0 = unbounded) and, when max_age_ms > 0, drops entries
 * older than now - max_age_ms. The entry id (ms-seq) is assigned by Redis. */
int vigil_fx_stream_add(vigil_effects *fx, const char *name, const char *value, int64_t maxlen,
                        int64_t max_age_ms);
/* Appends a job to the durable job stream `name` (entry field "m"),
 * keeping about maxlen entries (0 = unbounded). A worker deletes a job
 * from its stream once it is done (vigil_jobs_finish: XACK + XDEL), so the
 * stream holds only jobs not finished yet, and whatever the cap trims is
 * work that never runs: the commit counts it in
 * vigil_stream_trimmed_total{stream=label} and logs a warning naming the
 * stream, the cap and how many were dropped (vigil_stream_trim_note).
 * label: the stream's configured name, the same for every key and shard
 * ("jobs"), so the metric's series stay few; 1-64 characters of
 * A-Z a-z 0-9 _ . : -. A log whose trims are its retention (a room's
 * messages) is vigil_fx_stream_add instead. */
int vigil_fx_job_add(vigil_effects *fx, const char *name, const char *label, const char *value,
                     int64_t maxlen);
/* Pushes an output message onto the durable queue `name`. */
int vigil_fx_queue_push(vigil_effects *fx, const char *name, const char *topic,
                        const char *payload, bool retain);
/* Moves the queue's messages, in order, to the outbox (before fx->out). */
int vigil_fx_queue_flush(vigil_effects *fx, const char *name);
/* SET name value; value NULL deletes the key. */
int vigil_fx_key_set(vigil_effects *fx, const char *name, const char *value);
int vigil_fx_key_delete(vigil_effects *fx, const char *name);
int vigil_fx_set_add(vigil_effects *fx, const char *name, const char *member);
int vigil_fx_set_remove(vigil_effects *fx, const char *name, const char *member);

#endif
