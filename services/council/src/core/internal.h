/* internal.h - what the core's files share: event building, the
 * after-every-decision sync of state, record and timers, and the loop
 * steps. Not part of the core's interface. */
#ifndef COUNCIL_INTERNAL_H
#define COUNCIL_INTERNAL_H
#include "council.h"

/* Why nothing starts while autonomous mode is off (and why a live session
 * ends at its next loop then). */
#define COUNCIL_DISABLED_REASON                                                                    \
    "autonomous mode is disabled (VIGIL_COUNCIL_ENABLED=0): sessions do not start or run"

/* Starts an emitter for one decision on input `input` (ids
 * "<input>:<user>:<n>", council_emit_id). */
void council_emit_init(council_emit *e, const council_sink *sink, const char *input);
/* The next event id of this decision: "<input>:<user>:<n>". An input id is
 * unique only within its topic (a control id within its user, an answer id
 * within its session), so the user names the scope: two users' inputs of
 * one id make events of two ids. Deterministic: a redelivered input makes
 * the same ids. */
void council_emit_id(council_emit *e, const council_user *u, char *out, size_t cap);

/* A new event of the current session: id, session, user, type, loop, ts. */
json_object *council_event(council_emit *e, const council_user *u, const char *type,
                           int64_t now);
/* Publishes ev on council/{session}/event and releases it. */
int council_event_send(council_emit *e, const council_user *u, json_object *ev);
/* A `phase` event (sense / plan / act) with a line of text. */
int council_event_phase(council_emit *e, const council_user *u, const char *phase,
                        const char *text, json_object *extra, int64_t now);
/* An event carrying only a reason (session_paused, session_ended). */
int council_event_reason(council_emit *e, const council_user *u, const char *type,
                         const char *reason, int64_t now);

/* After a decision that changed the session: retained state, durable
 * record, and every timer re-derived from the record. */
int council_sync(council_emit *e, council_user *u, const council_config *c, int64_t now);
/* Timers only (automatic start). */
int council_sync_timers(council_emit *e, const council_user *u, const council_config *c);

/* Starts a session for u (checks done by the caller). */
int council_session_begin(council_emit *e, council_user *u, const council_config *c,
                          const char *session, const char *room, bool automatic, int64_t now);
/* Ends the current session with reason. */
int council_session_end(council_emit *e, council_user *u, const char *reason, int64_t now);
/* Pauses with reason; by says who. */
int council_session_pause(council_emit *e, council_user *u, council_pause by, const char *reason,
                          int64_t now);
/* SENSE + PLAN: starts the next loop now (or ends the session at the loop
 * limit). */
int council_loop_begin(council_emit *e, council_user *u, const council_config *c, int64_t now);

/* Refuses a start: a session_ended event on the session id that would
 * have been used, with the reason. */
int council_refuse_start(council_emit *e, const council_user *u, const char *session,
                         const char *reason, int64_t now);

/* Why the user may not start a session now, or NULL. */
const char *council_start_blocked(const council_user *u, const council_config *c, int64_t now,
                                  char *why, size_t whylen);

/* When a live session counts as idle: paused that long, or that long past
 * its last progress (or its next scheduled loop). */
int64_t council_idle_due(const council_user *u, const council_config *c);


#endif
