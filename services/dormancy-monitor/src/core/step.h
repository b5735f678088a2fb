/* step.h - internal to the core: the context of one decision step, shared
 * by the rule files, and the entry points each rule file offers the engine.
 *
 * A step is: handle one input (or a fired deadline), evaluate every deadline
 * that is due at `now`, then derive the timer changes and the snapshot
 * updates from the resulting record. Rule files only change the record and
 * emit change events / suggestions / system messages through the helpers
 * here, so every change is announced the same way. */
#ifndef DORMANCY_STEP_H
#define DORMANCY_STEP_H
#include "dormancy.h"

typedef struct dormancy_step {
    dormancy_room *room;
    const dormancy_config *cfg; /* service-wide */
    int64_t now;
    const dormancy_ids *ids;
    dormancy_actions *out;
    int n_events; /* ids handed out so far */
    bool failed;  /* allocation failure somewhere */
    bool room_cleared; /* room deleted in this step: no room/{r}/state republish */
    uint64_t room_digest; /* of room/{r}/state as the step leaves it */
    dormancy_metrics room_metrics; /* the room's activity at now, for room_digest */
    bool room_state_now;  /* room/{r}/state is published by this step */
    bool rejected;        /* the input is refused (step_reject) */
} dormancy_step;

/* Wanted deadlines, collected by the rule files after a step. */
typedef struct dormancy_want {
    int64_t now; /* deadlines at or before now are not wanted (already handled) */
    dormancy_timer *v;
    int n, cap;
    bool failed;
} dormancy_want;

/* ---- step helpers (engine.c) ---- */

/* Appends a zeroed action of kind for persona (may be NULL); NULL on
 * allocation failure (step->failed set). */
dormancy_action *step_push(dormancy_step *s, dormancy_action_kind kind, const char *persona);
/* Same, and gives it the next event id. */
dormancy_action *step_event(dormancy_step *s, dormancy_action_kind kind, const char *persona);
/* The config in force for p: s->cfg itself when p has no overrides, else
 * written to buf. */
const dormancy_config *step_cfg(const dormancy_step *s, const dormancy_persona *p,
                                dormancy_config *buf);
/* Refuses the input: out holds only a DORMANCY_OUT_REJECTED naming persona
 * (may be NULL) with detail as its reason. Call before changing anything. */
void step_reject(dormancy_step *s, const char *persona, const char *detail);
/* True when presence checking is on for p and a human is active now. */
bool step_presence_blocks(const dormancy_step *s, const dormancy_persona *p);

/* ---- levels (levels.c) ---- */

/* Moves p to level and announces it (persona/{p}/dormancy). No-op (false)
 * when p is already there. Drops a pending suggestion and any timed end;
 * message_id (may be NULL) names the message that caused it. */
bool step_set_level(dormancy_step *s, dormancy_persona *p, dormancy_level level,
                    dormancy_trigger trigger, dormancy_cause cause, const char *reason,
                    const char *text, const char *message_id);
/* Same, but also announces a change of trigger/cause/timed end at the same
 * level (a manual "@self dormant sleep for 1h" while already asleep, or
 * without an end while asleep until a time); until is the new timed end
 * (0 = none), which the caller sets. */
bool step_set_level_forced(dormancy_step *s, dormancy_persona *p, dormancy_level level,
                           dormancy_trigger trigger, dormancy_cause cause, const char *reason,
                           const char *text, const char *message_id, int64_t until);
/* Able to answer a human message: active or human-only. */
bool persona_can_answer(const dormancy_persona *p);

/* ---- membership (membership.c) ---- */

/* p, made a member of the room if it is not one yet, unless the room
 * already tracks cfg->max_personas: then NULL, and a DORMANCY_OUT_LIMIT
 * action names the room and the persona (never silent). NULL also on
 * allocation failure (step->failed). */
dormancy_persona *step_persona_ensure(dormancy_step *s, const char *id);

/* ---- membership (state.c) ---- */

/* Finds or adds p (active, trigger none). NULL when the room is full or on
 * allocation failure. */
dormancy_persona *room_persona_ensure(dormancy_room *r, const char *id, int64_t now);
/* Appends p without looking for it first (the caller knows it is new).
 * NULL when the room is full or on allocation failure. */
dormancy_persona *room_persona_append(dormancy_room *r, const char *id, int64_t now);
void room_persona_remove(dormancy_room *r, int index);

/* ---- suggestions (suggestions.c) ---- */

/* Makes a suggestion to p unless one is pending. Returns true if made. */
bool suggestion_make(dormancy_step *s, dormancy_persona *p, dormancy_suggest_kind kind,
                     const char *text, const char *reason, const char *message_id);
/* Applies an answer to p's pending suggestion (any, when suggestion_id is
 * NULL) and remembers input_id as the answer applied last. False, and
 * nothing changed, when no such suggestion is pending. */
bool suggestion_answer(dormancy_step *s, dormancy_persona *p, dormancy_answer answer,
                       const char *suggestion_id, const char *input_id);
void suggestion_cancel_all(dormancy_step *s); /* human message: pending + snoozes */
/* Defaults due; withdraws those presence blocks (an active human reader
 * is no absence: no default yes under their eyes). */
void suggestion_evaluate(dormancy_step *s);
void suggestion_want(const dormancy_step *s, dormancy_want *w);

/* ---- rules ---- */
void no_human_evaluate(dormancy_step *s);                       /* no_human.c */
void no_human_want(const dormancy_step *s, dormancy_want *w);
void ai_only_on_ai_message(dormancy_step *s);                   /* ai_only.c */
void ai_only_evaluate(dormancy_step *s);
void ai_only_want(const dormancy_step *s, dormancy_want *w);
void human_reentry_on_message(dormancy_step *s, const dormancy_event *ev, /* human_reentry.c */
                              const bool *mentioned);
void redundant_on_human(dormancy_step *s, const dormancy_event *ev);      /* redundant.c */
void redundant_on_ai(dormancy_step *s, const dormancy_event *ev, dormancy_persona *p);
void redundant_prune(dormancy_step *s);
void manual_on_command(dormancy_step *s, const dormancy_event *ev);       /* manual.c */
void manual_on_self(dormancy_step *s, dormancy_persona *p, const dormancy_event *ev);
void manual_on_control(dormancy_step *s, const dormancy_event *ev);
void manual_evaluate(dormancy_step *s);
void manual_want(const dormancy_step *s, dormancy_want *w);
/* directed.c: who the message mentions (mentioned[i]), then waking the
 * mentioned sleepers (apart, so rule 3 can decide in between). */
void directed_find_mentions(dormancy_step *s, const dormancy_event *ev, bool *mentioned);
void directed_wake_mentioned(dormancy_step *s, const dormancy_event *ev, const bool *mentioned);
void directed_on_wake(dormancy_step *s, const dormancy_event *ev);
void directed_on_autopilot(dormancy_step *s, const dormancy_event *ev);
void presence_on_event(dormancy_step *s, const dormancy_event *ev);       /* presence.c */
void presence_prune(dormancy_step *s);
void presence_want(const dormancy_step *s, dormancy_want *w);
void activity_record(dormancy_step *s, bool human);                       /* adaptive.c */
void activity_prune(dormancy_step *s);
/* recent_text.c: keeping the record's recent_dt/recent_kind texts in step
 * with recent_ts/recent_human: after a message was appended, after k were
 * dropped from the front, after any other change (forget); writing them
 * (,"recent_dt":"...","recent_kind":"..."). */
void recent_text_appended(dormancy_room *r);
void recent_text_dropped(dormancy_room *r, int k);
void recent_text_forget(dormancy_room *r);
void recent_text_write(vigil_jtext *b, const dormancy_room *r);
void membership_on_meta(dormancy_step *s, const dormancy_event *ev);      /* membership.c */

/* ---- timers (timers.c) and snapshots (snapshot.c) ---- */
void want_add(dormancy_want *w, const char *name, int64_t due);
/* Timer names "<kind>:<persona>", hashed when the persona id is too long. */
void timer_name(char *out, size_t outlen, const char *kind, const char *persona);
void timers_forget(dormancy_room *r, const char *name);
void timers_sync(dormancy_step *s);
void snapshot_sync(dormancy_step *s);
/* Before the deadlines: whether room/{r}/state is published now or later. */
void snapshot_room_decide(dormancy_step *s);
void snapshot_want(const dormancy_step *s, dormancy_want *w);
/* Persona id at level joins (sign 1) or leaves (-1) the roster room/{r}/state
 * lists; a level change is a leave at the old level and a join at the new. */
void snapshot_roster_update(dormancy_room *r, const char *id, dormancy_level level, int sign);


/* "2025-06-01T17:00:00Z" (UTC) for texts (render.c). */
void format_iso(int64_t ms, char *out, size_t outlen);


/* persona_texts.c: the cached text of persona i of a record (p), written
 * again when p differs from the persona it was written for. NULL when out
 * of memory. */
dormancy_texts *dormancy_texts_new(void);
void dormancy_texts_free(dormancy_texts *t);
size_t dormancy_texts_bytes(const dormancy_texts *t); /* memory held */
const char *dormancy_texts_persona(dormancy_texts *t, int i, const dormancy_persona *p,
                                   size_t *len);
/* As dormancy_texts_persona; *fresh says the text was written again (p is
 * not what index i held). */
const char *dormancy_texts_persona_fresh(dormancy_texts *t, int i, const dormancy_persona *p,
                                         size_t *len, bool *fresh);
/* How many indexes hold a text, the id index i was written for, and
 * forgetting every index from n on (the record has n personas now). */
int dormancy_texts_count(const dormancy_texts *t);
const char *dormancy_texts_id(const dormancy_texts *t, int i);
void dormancy_texts_truncate(dormancy_texts *t, int n);
/* state_json.c: one persona as the record holds it, as text (malloc'd),
 * byte for byte as json-c would print it; NULL when out of memory. */
char *dormancy_persona_record_text(const dormancy_persona *p);

/* render.c: whether session i's user is listed in room/{r}/state's
 * humans_present (active, and the first active session of that user), and
 * a figure as room/{r}/state writes it (two decimals). */
bool room_session_listed(const dormancy_room *r, int i, const dormancy_config *cfg, int64_t now);
void room_rounded(double v, char *out, size_t outlen);

#endif
