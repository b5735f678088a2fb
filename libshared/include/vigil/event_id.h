/* event_id.h - the ids of the events a service derives from an input.
 *
 * Every event has an id consumers dedupe on, so an id must be
 *  - deterministic: the same input, redelivered after a crash or decided
 *    again after a conflict, yields the same ids (never the clock, never a
 *    random draw);
 *  - unique: two distinct events never share one. An input id is unique
 *    only where its producer made it so (a message id within its room, a
 *    command id within its persona, a control id within its user), so the
 *    id of an event names that scope as well as the input, and each event
 *    one input makes has its own key.
 *
 * The form is "<input id>:<scope>:<key>", e.g. "msg-7f3a:general:wake:sre".
 * The separator is ':' because an event id may come back as another
 * service's input id, where '/', '+' and '#' are refused; scopes (room,
 * persona, agent, user, session ids) never hold a ':', so the last ':'
 * before a known key splits an id. An id longer than the buffer keeps a
 * prefix and ends in "~<16 hex>", a hash of the whole id: still
 * deterministic, and the excess still counts.
 *
 * Pure (vigil_text): cores use it too. */
#ifndef VIGIL_EVENT_ID_H
#define VIGIL_EVENT_ID_H
#include <stddef.h>

/* "<input_id>:<scope>:<key>" into out (outlen bytes, at most
 * VIGIL_EVENT_ID_MAX + 1 for a contract-sized id), cut and hashed as above
 * when it does not fit. NULL parts are empty. Nothing written when out is
 * NULL or outlen 0. */
void vigil_event_id_in(char *out, size_t outlen, const char *input_id, const char *scope,
                       const char *key);

/* "<input_id>:<key>:<n>": the n-th event (from 0) one input makes under
 * key, where key is, or starts with, the input's scope (a room, a user).
 * Same cut as vigil_event_id_in. */
void vigil_event_id(char *out, size_t outlen, const char *input_id, const char *key, int n);

/* The id of the error event for an input the runtime rejected:
 * "err-<16 hex>", a hash of the service, the topic and the payload's bytes
 * (how an input without a usable id is known, envelope.h). Never the
 * clock: a rejected input redelivered (a crash before its acknowledgement)
 * is the same error and a consumer dedupes it. The service is part of it
 * because every service subscribed to a topic rejects a bad input there at
 * the same instant, each on its own sys/{service}/error, and a consumer of
 * sys/+/error must keep them apart. out: at least 21 bytes. */
void vigil_error_event_id(char *out, size_t outlen, const char *service, const char *topic,
                          const void *payload, size_t len);

#endif
