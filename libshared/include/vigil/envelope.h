/* envelope.h - the common part of every input: topic split and checked,
 * payload parsed, `id` and `ts` found or derived.
 *
 * An input without `ts` gets the receive time; without `id`, one is derived
 * from a hash of the topic and payload ("h-<16 hex>") so a redelivery is
 * still recognised as the same input. */
#ifndef VIGIL_ENVELOPE_H
#define VIGIL_ENVELOPE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "json.h"

#define VIGIL_TOPIC_MAX 256
#define VIGIL_TOPIC_PARTS 8

typedef struct vigil_input {
    char topic[VIGIL_TOPIC_MAX];
    /* topic split on '/', e.g. {"room", "general", "message"}; every part is
     * a NUL-terminated copy of at most VIGIL_TOPIC_MAX-1 bytes */
    char parts[VIGIL_TOPIC_PARTS][VIGIL_TOPIC_MAX];
    int nparts;
    json_object *body;               /* the payload object (owned) */
    char id[VIGIL_EVENT_ID_MAX + 1]; /* payload id or derived */
    int64_t ts;                      /* payload ts or receive time */
    int64_t received_ms;             /* receive time */
    const char *raw;                 /* payload bytes (not owned, not NUL-terminated) */
    size_t raw_len;
    int retained;                    /* delivered as a retained message */
    bool cleared; /* an empty payload the service takes as a clear (vigil_input_parse_cleared) */
    bool id_derived; /* the payload had no id: `id` is derived from topic and payload */
} vigil_input;

/* Splits and checks the topic (at most VIGIL_TOPIC_PARTS levels, no empty
 * level, no wildcard, no leading '$'), then parses the payload with
 * vigil_json_parse_object. `id`, when present, must be a string of 1..128
 * printable ASCII characters without '/', '+', '#' (else BAD_ID); `ts`, when
 * present, an integer >= 0 (else WRONG_TYPE/BAD_VALUE).
 * Returns 0 with *in filled (free with vigil_input_clear) or -1 with err. */
int vigil_input_parse(const char *topic, const void *payload, size_t len,
                      size_t max_payload, int64_t now_ms, vigil_input *in,
                      vigil_error *err);

/* An empty payload on a topic where the service takes it as a clear (the
 * MQTT idiom that deletes a retained message; vigil_service_def.
 * clear_topic): the topic split and checked as vigil_input_parse does, then
 * cleared set, no body, an empty id (nothing to deduplicate it by: a clear
 * applied twice must change nothing the second time), ts the receive time.
 * Returns 0 with *in filled or -1 with err. */
int vigil_input_parse_cleared(const char *topic, int64_t now_ms, vigil_input *in,
                              vigil_error *err);

/* On a topic the service also takes clears on (vigil_service_def.
 * clear_topic: retained snapshots such as a persona's meta), an id derived
 * from the payload is made this delivery's own ("h-<hash>.<receive ms>"):
 * the same snapshot published again after a clear must be applied again,
 * not recognised as a redelivery of the one cleared. The service applies
 * an identical snapshot again without changing anything. An id given in
 * the payload is kept. */
void vigil_input_id_per_delivery(vigil_input *in);

/* Checks that topic part `index` is a valid id (BAD_TOPIC otherwise) and,
 * when the payload has string field `field`, that it equals that part
 * (TOPIC_MISMATCH otherwise; a non-string is WRONG_TYPE). field may be NULL. */
int vigil_input_topic_id(const vigil_input *in, int index, const char *field,
                         const char **out, vigil_error *err);

void vigil_input_clear(vigil_input *in);

/* For a service's topic_key (runtime.h): true with *key the room of a topic
 * "room/{room}/message" whose room is a valid id that fits in key_size;
 * false for any other topic (route() then decides, after parsing). */
bool vigil_topic_key_room_message(const char *topic, char *key, size_t key_size);

/* True when topic is "{head}/{x}/{tail}" with x one non-empty level (not
 * checked as an id: route() does that and says why). For a service's
 * clear_topic: which retained inputs an empty payload clears. */
bool vigil_topic_is_kind(const char *topic, const char *head, const char *tail);

#endif
