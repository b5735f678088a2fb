/* msg_room.h - the one reader of each room/{room}/... input: message,
 * control, presence. Every service that consumes one of these topics reads
 * it here, so all of them accept and reject exactly the same payloads with
 * the same reason (topics/schemas/room-*.schema.json). Pure (libshared/pure,
 * library vigil_text): cores may use it.
 *
 * Each reader takes the payload object (vigil_input.body: already checked
 * for size, UTF-8, syntax and topic/payload id agreement by the envelope)
 * and fills a typed struct whose strings point into that object (valid as
 * long as it is). Fields marked "malloc'd" are released by the matching
 * *_release(). A reader returns 0, or -1 with err set (reason and a detail
 * naming the field); on -1 nothing needs releasing.
 *
 * Consumers are a little more lenient than the schemas in two documented
 * places (producers must not rely on it): `room/{r}/presence` may omit
 * `last_activity` and `room/{r}/control` may omit `by`. */
#ifndef VIGIL_MSG_ROOM_H
#define VIGIL_MSG_ROOM_H
#include <stdbool.h>
#include <stdint.h>
#include "json.h"
#include "names.h"

/* At most this many entries in `mentions` (more: bad_value). */
#define VIGIL_MSG_MAX_MENTIONS 256

/* room/{room}/message */
typedef struct vigil_room_message {
    const char *sender;            /* id */
    vigil_sender_type sender_type; /* human | ai | system */
    const char *text;
    const char *reply_to;  /* input event id, NULL when absent */
    const char **mentions; /* malloc'd, NULL-terminated ids; NULL when absent */
    int n_mentions;
    bool has_depth;
    int64_t depth;         /* >= 0 when has_depth (schema: minimum 0) */
    bool proactive;        /* false when absent */
    const char *about;     /* id, NULL when absent */
    const char *reason;    /* NULL when absent */
    const char *event;     /* NULL when absent */
} vigil_room_message;

int vigil_room_message_read(json_object *body, vigil_room_message *out, vigil_error *err);
void vigil_room_message_release(vigil_room_message *m);

/* The one writer of room/{room}/message for services that speak in a room
 * (dormancy-monitor's notices, chat-router's chain stop, a heartbeat's
 * proactive message): the fields the schema names, in its order. Strings
 * are copied; NULL (and has_depth false, proactive false) leaves a field
 * out. Returns a new object, or NULL when out of memory. */
typedef struct vigil_room_message_out {
    const char *id, *room, *sender;
    vigil_sender_type sender_type;
    const char *text;
    const char *reply_to, *about, *reason, *event; /* NULL = absent */
    bool has_depth;
    int64_t depth;
    bool proactive;
    int64_t ts;
} vigil_room_message_out;

json_object *vigil_room_message_json(const vigil_room_message_out *m);

/* room/{room}/control. A `wake` must say whom (`all` or `persona`);
 * `delete` concerns one room (`all` is refused). */
typedef struct vigil_room_control {
    vigil_control_action action;
    bool all;                  /* false when absent */
    const char *by;            /* id, NULL when absent */
    const char *persona;       /* id, NULL when absent */
    int64_t if_inactive_since; /* >= 0; 0 when absent */
} vigil_room_control;

int vigil_room_control_read(json_object *body, vigil_room_control *out, vigil_error *err);

/* room/{room}/presence */
typedef struct vigil_room_presence {
    const char *user;    /* id */
    const char *session; /* id */
    vigil_presence_status status;
    bool has_last_activity;
    int64_t last_activity; /* >= 0; 0 when absent */
} vigil_room_presence;

int vigil_room_presence_read(json_object *body, vigil_room_presence *out, vigil_error *err);

#endif
