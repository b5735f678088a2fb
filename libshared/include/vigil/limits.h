/* limits.h - limits that speak. A service bounds what one key may hold
 * (personas per room, ...) with a setting; when the bound refuses part of an
 * input that is otherwise applied, the service says so instead of dropping
 * it silently: an error event on sys/{service}/error with reason "limit"
 * and a detail naming the limit, its setting, the key and what was refused,
 * committed with the input's other effects (so it goes out exactly when
 * they do), and a count in vigil_limit_refusals_total{limit}.
 *
 * Every limit of a service is listed in its README's limits table (limit,
 * setting, refusal, measured cost). */
#ifndef VIGIL_LIMITS_H
#define VIGIL_LIMITS_H
#include <stdint.h>
#include "effects.h"
#include "envelope.h"
#include "json.h"

/* Adds the error event to fx and counts the refusal. service: the
 * service's name; event_id: a deterministic id (vigil_event_id of the
 * input); in: the input (may be NULL for a timer: topic "timer"); limit: a
 * metric label value ("personas_per_room"); detail: the human-readable
 * refusal. Returns 0, or -1 when fx is out of memory. The counter is
 * incremented once per call, so a decision retried after a version
 * conflict may count twice. */
int vigil_fx_limit_refusal(vigil_effects *fx, const char *service, const char *event_id,
                           const vigil_input *in, const char *limit, const char *detail,
                           int64_t now);

/* A limit refused something where no error event can go out (route(),
 * which commits nothing, or a sink without the input at hand): a warning
 * log line with the detail and the same vigil_limit_refusals_total{limit}
 * count. */
void vigil_limit_note(const char *limit, const char *detail);

/* A job stream's cap (vigil_fx_job_add) trimmed `dropped` jobs no worker
 * had finished, in a commit just made: counted in
 * vigil_stream_trimmed_total{stream=label}, and said by a warning naming
 * the stream (label and Redis key), the cap and how many were dropped
 * since the last warning, at most once a minute per label (a stream past
 * its cap trims at every few commits). Thread-safe. */
void vigil_stream_trim_note(const char *label, const char *key, int64_t cap, int64_t dropped);
/* Declares vigil_stream_trimmed_total{stream=label} at zero, so the first
 * trim is an increase an alert sees: called by a service that adds jobs
 * under label, at its start. */
void vigil_stream_trim_declare(const char *label);

/* For route(): vigil_runtime_route_members (cmd "SMEMBERS" or "HKEYS" on
 * P S ":" suffix) that refuses the input whole (-1, reason too_many_keys)
 * when the members do not all fit in keys[n..max), and says so in the
 * limit's own terms: err's detail (so the error event) and a `limit
 * reached` warning read "<what> more than <max> <members>: the input is
 * refused whole", counted in vigil_limit_refusals_total{limit}.
 * limit: the metric label ("rooms_per_input"); what: the subject with its
 * verb ("persona 'ann' is in"); members: what max counts ("rooms").
 * Same return values as vigil_runtime_route_members. */
#define VIGIL_LIMIT_ROOMS_PER_INPUT "rooms_per_input" /* a persona's rooms, one input */
struct vigil_runtime;
int vigil_route_members_noted(struct vigil_runtime *rt, const char *cmd, const char *suffix,
                              const char *limit, const char *what, const char *members,
                              char keys[][128], int n, int max, vigil_error *err);

#endif
