/* session.c - the session lifecycle per user: start (by control or every
 * interval when enabled, at most max_daily a day), pause, resume, end,
 * the idle timeout; answers to questions; the user's messages kept for
 * SENSE; the timers. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include "internal.h"

static bool live(const council_user *u)
{
    return u->has_session && (u->s.status == COUNCIL_ACTIVE || u->s.status == COUNCIL_PAUSED);
}

static void roll_day(council_user *u, int64_t now)
{
    int64_t day = now / COUNCIL_DAY_MS;
    if (day != u->day) {
        u->day = day;
        u->day_count = 0;
    }
}

const char *council_start_blocked(const council_user *u, const council_config *c, int64_t now,
                                  char *why, size_t whylen)
{
    if (!c->enabled)
        snprintf(why, whylen, "%s", COUNCIL_DISABLED_REASON);
    else if (!c->llm_enabled)
        snprintf(why, whylen, "no LLM configured (VIGIL_LLM_URL is empty): the council cannot "
                              "deliberate, so sessions do not start");
    else if (live(u))
        snprintf(why, whylen, "session %s is already %s", u->s.id,
                 council_status_name(u->s.status));
    else if (u->day == now / COUNCIL_DAY_MS && u->day_count >= c->max_daily)
        snprintf(why, whylen, "daily limit reached: %d session%s today (VIGIL_COUNCIL_MAX_DAILY)",
                 u->day_count, u->day_count == 1 ? "" : "s");
    else
        return NULL;
    return why;
}

int council_refuse_start(council_emit *e, const council_user *u, const char *session,
                         const char *reason, int64_t now)
{
    council_user tmp; /* an event about a session that never began */
    memset(&tmp.s, 0, sizeof tmp.s);
    snprintf(tmp.user, sizeof tmp.user, "%s", u->user);
    snprintf(tmp.s.id, sizeof tmp.s.id, "%s", session);
    json_object *ev = council_event(e, &tmp, "session_ended", now);
    if (!ev)
        return -1;
    json_object_object_add(ev, "reason", json_object_new_string(reason));
    json_object_object_add(ev, "started", json_object_new_boolean(0));
    return council_event_send(e, &tmp, ev);
}

int council_session_begin(council_emit *e, council_user *u, const council_config *c,
                          const char *session, const char *room, bool automatic, int64_t now)
{
    roll_day(u, now);
    council_session *s = &u->s;
    memset(s, 0, sizeof *s);
    u->has_session = true;
    snprintf(s->id, sizeof s->id, "%s", session);
    snprintf(s->room, sizeof s->room, "%s", room ? room : "");
    s->status = COUNCIL_ACTIVE;
    s->started_at = now;
    s->last_progress = now;
    s->automatic = automatic;
    u->day_count++;
    u->sessions++;
    u->last_start = now;
    u->enrolled = true;
    if (room && room[0])
        snprintf(u->last_room, sizeof u->last_room, "%s", room);
    json_object *idx = json_object_new_object();
    json_object_object_add(idx, "session", json_object_new_string(s->id));
    json_object_object_add(idx, "user", json_object_new_string(u->user));
    json_object_object_add(idx, "started_at", json_object_new_int64(now));
    int rc = e->sink->append(e->sink->ctx, "sessions", idx, 100000);
    json_object_put(idx);
    return rc | council_loop_begin(e, u, c, now);
}

int council_session_end(council_emit *e, council_user *u, const char *reason, int64_t now)
{
    council_session *s = &u->s;
    s->status = COUNCIL_COMPLETED;
    s->phase = COUNCIL_PHASE_IDLE;
    s->job[0] = '\0';
    s->next_loop_at = 0;
    s->ended_at = now;
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    /* its open questions end with it: nothing would read an answer (and
     * the expiry timer is a live session's only) */
    council_questions_expire_all(&s->questions, now);
    return council_event_reason(e, u, "session_ended", reason, now);
}

int council_session_pause(council_emit *e, council_user *u, council_pause by, const char *reason,
                          int64_t now)
{
    council_session *s = &u->s;
    s->status = COUNCIL_PAUSED;
    s->paused_by = by;
    s->paused_at = now;
    s->phase = COUNCIL_PHASE_IDLE; /* a loop in flight is dropped when it comes back */
    s->job[0] = '\0';
    s->next_loop_at = 0;
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    return council_event_reason(e, u, "session_paused", reason, now);
}

/* Resumes a paused session: the breaker starts over, the next loop at once. */
static int resume(council_emit *e, council_user *u, const council_config *c, int64_t now)
{
    council_session *s = &u->s;
    s->status = COUNCIL_ACTIVE;
    s->paused_by = COUNCIL_PAUSE_NONE;
    s->paused_at = 0;
    s->reason[0] = '\0';
    council_breaker_reset(&s->breaker);
    return council_loop_begin(e, u, c, now);
}

void council_start_session_id(const council_control *in, const char *user, const char *input_id,
                              char *out, size_t cap)
{
    if (in->session) {
        snprintf(out, cap, "%s", in->session);
        return;
    }
    /* "<user>\n<input id>": a user id holds no newline, so no two pairs
     * hash the same text */
    uint64_t h = vigil_hash64_more(VIGIL_HASH64_INIT, user, strlen(user));
    h = vigil_hash64_more(h, "\n", 1);
    h = vigil_hash64_more(h, input_id, strlen(input_id));
    snprintf(out, cap, "s-%016" PRIx64, h);
}

council_rc council_on_control(council_user *u, const council_config *c, const council_control *in,
                              const char *input_id, int64_t now, const council_sink *sink,
                              char *why, size_t whylen)
{
    council_emit e;
    council_emit_init(&e, sink, input_id);
    if (in->action == COUNCIL_CTL_START) {
        char sid[COUNCIL_ID_MAX + 1];
        council_start_session_id(in, u->user, input_id, sid, sizeof sid);
        bool current = u->has_session && strcmp(u->s.id, sid) == 0;
        /* A session id is used once: never a second session (record, index
         * entry) under it, nor a session_ended event on an older session's
         * topic. The current session is in the record; older ones are known
         * by their durable records (in->used, looked up by the shell). */
        if (current && live(u)) {
            snprintf(why, whylen, "session '%s' is already %s", sid,
                     council_status_name(u->s.status));
            return COUNCIL_REFUSED;
        }
        if (current || in->used) {
            snprintf(why, whylen, "session id '%s' was already used (a session id names one "
                                  "session only): start with a new id", sid);
            return COUNCIL_REFUSED;
        }
        char reason[COUNCIL_REASON_MAX];
        if (council_start_blocked(u, c, now, reason, sizeof reason))
            return council_refuse_start(&e, u, sid, reason, now) == 0 ? COUNCIL_OK
                                                                       : COUNCIL_FAILED;
        int rc = council_session_begin(&e, u, c, sid, in->room, false, now);
        rc |= council_sync(&e, u, c, now);
        return rc == 0 ? COUNCIL_OK : COUNCIL_FAILED;
    }
    if (!live(u)) {
        snprintf(why, whylen, "no active or paused session for user '%s'", u->user);
        return COUNCIL_REFUSED;
    }
    if (in->session && strcmp(in->session, u->s.id) != 0) {
        snprintf(why, whylen, "session '%s' is not the user's current session (%s)", in->session,
                 u->s.id);
        return COUNCIL_REFUSED;
    }
    council_session *s = &u->s;
    int rc = 0;
    switch (in->action) {
    case COUNCIL_CTL_PAUSE:
        if (s->status == COUNCIL_PAUSED) {
            snprintf(why, whylen, "session %s is already paused", s->id);
            return COUNCIL_REFUSED;
        }
        rc = council_session_pause(&e, u, COUNCIL_PAUSE_USER, "paused by the user", now);
        break;
    case COUNCIL_CTL_RESUME:
        if (s->status != COUNCIL_PAUSED) {
            snprintf(why, whylen, "session %s is not paused", s->id);
            return COUNCIL_REFUSED;
        }
        rc = resume(&e, u, c, now);
        break;
    case COUNCIL_CTL_END:
        rc = council_session_end(&e, u, "ended by the user", now);
        break;
    case COUNCIL_CTL_START:
        break;
    }
    rc |= council_sync(&e, u, c, now);
    return rc == 0 ? COUNCIL_OK : COUNCIL_FAILED;
}

/* A question id quoted in a refusal: its first 80 bytes, cut between
 * characters (the refusal is an error event's detail, JSON text). */
#define Q80(id) (int)vigil_utf8_cut_max((id), 80), (id)

council_rc council_on_answer(council_user *u, const council_config *c, const char *session,
                             const char *question_id, const char *answer, const char *input_id,
                             int64_t now, const council_sink *sink, char *why, size_t whylen)
{
    if (!u->has_session || strcmp(u->s.id, session) != 0) {
        snprintf(why, whylen, "session '%s' is not the user's current session", session);
        return COUNCIL_REFUSED;
    }
    council_session *s = &u->s;
    council_question *q = council_questions_find(&s->questions, question_id);
    if (!q) {
        snprintf(why, whylen, "no question '%.*s' in session %s", Q80(question_id), s->id);
        return COUNCIL_REFUSED;
    }
    if (!live(u)) { /* no SENSE will ever read it */
        snprintf(why, whylen, "question '%.*s' belongs to session %s, which has ended (%s)",
                 Q80(question_id), s->id, council_status_name(s->status));
        return COUNCIL_REFUSED;
    }
    if (q->status == COUNCIL_Q_PENDING && q->expires_at <= now)
        q->status = COUNCIL_Q_EXPIRED;
    if (q->status != COUNCIL_Q_PENDING) {
        snprintf(why, whylen, "question '%.*s' is already %s", Q80(question_id),
                 council_qstatus_name(q->status));
        return COUNCIL_REFUSED;
    }
    council_emit e;
    council_emit_init(&e, sink, input_id);
    q->status = COUNCIL_Q_ANSWERED;
    vigil_utf8_copy(q->answer, COUNCIL_TEXT_MAX + 1, answer);
    q->answered_at = now;
    s->last_progress = now;
    int rc = 0;
    /* An answer wakes the loop at once: the next SENSE carries it. A
     * session the user paused stays paused; one paused by the breaker is
     * resumed (the answer is the intervention it waited for). */
    if (s->status == COUNCIL_ACTIVE && s->phase == COUNCIL_PHASE_IDLE)
        rc = council_loop_begin(&e, u, c, now);
    else if (s->status == COUNCIL_PAUSED && s->paused_by != COUNCIL_PAUSE_USER)
        rc = resume(&e, u, c, now);
    rc |= council_sync(&e, u, c, now);
    return rc == 0 ? COUNCIL_OK : COUNCIL_FAILED;
}

council_rc council_on_message(council_user *u, const council_config *c, const char *room,
                              const char *text, int64_t ts)
{
    (void)c;
    if (u->n_msgs == COUNCIL_MSGS_MAX) {
        memmove(u->msgs, u->msgs + 1, sizeof u->msgs[0] * (COUNCIL_MSGS_MAX - 1));
        u->n_msgs--;
    }
    council_msg *m = &u->msgs[u->n_msgs++];
    vigil_utf8_copy(m->room, COUNCIL_ID_MAX + 1, room);
    vigil_utf8_copy(m->text, COUNCIL_TEXT_MAX + 1, text);
    m->ts = ts;
    return COUNCIL_OK;
}

const char *council_presence_name(council_presence p)
{
    switch (p) {
    case COUNCIL_PRESENCE_ACTIVE: return "active";
    case COUNCIL_PRESENCE_IDLE: return "idle";
    case COUNCIL_PRESENCE_AWAY: return "away";
    case COUNCIL_PRESENCE_UNKNOWN: break;
    }
    return "unknown";
}

council_rc council_on_presence(council_user *u, const char *room, council_presence p, int64_t ts,
                               int64_t last_activity, int64_t now)
{
    if (ts > now) /* clocks differ: never a report from the future */
        ts = now;
    if (last_activity > now)
        last_activity = now;
    if (u->presence != COUNCIL_PRESENCE_UNKNOWN && ts < u->presence_ts)
        return COUNCIL_OK; /* older than the report kept (redelivered late, reordered) */
    u->presence = p;
    u->presence_ts = ts;
    u->presence_activity = last_activity;
    vigil_utf8_copy(u->presence_room, COUNCIL_ID_MAX + 1, room);
    return COUNCIL_OK;
}

/* Only an active user is taken as available: idle or away, a question
 * would wait, so the council should prefer what needs no answer. An
 * `active` ages like every consumer's: producers repeat it while the user
 * stays active. */
bool council_user_available(const council_user *u, const council_config *c, int64_t now)
{
    return u->presence == COUNCIL_PRESENCE_ACTIVE &&
           now - u->presence_activity < c->presence_active_ms;
}

/* Why an idle session ends. One still in PLAN never got its loop back: the
 * job waited past the timeout, or the stream's cap trimmed it before a
 * worker took it (nothing else would ever end that session). */
static const char *idle_reason(const council_user *u, char *buf, size_t cap)
{
    const council_session *s = &u->s;
    if (s->status != COUNCIL_ACTIVE || s->phase != COUNCIL_PHASE_PLAN)
        return "idle timeout (VIGIL_COUNCIL_IDLE_TIMEOUT_MIN)";
    snprintf(buf, cap, "idle timeout (VIGIL_COUNCIL_IDLE_TIMEOUT_MIN): loop %d never came back "
                       "(its job not done in time, or dropped past VIGIL_COUNCIL_JOBS_MAXLEN)",
             s->loop);
    return buf;
}

council_rc council_on_timer(council_user *u, const council_config *c, const char *name,
                            int64_t due, int64_t now, const council_sink *sink)
{
    char input[COUNCIL_EVID_MAX + 1], reason[COUNCIL_REASON_MAX];
    snprintf(input, sizeof input, "%s:%s:%" PRId64, u->user, name, due);
    council_emit e;
    council_emit_init(&e, sink, input);
    council_session *s = &u->s;
    int rc = 0;
    bool changed = true; /* false: the session's state is republished only when it changed */
    if (strcmp(name, COUNCIL_TIMER_AUTO) == 0) {
        char why[COUNCIL_REASON_MAX];
        if (c->auto_start && u->enrolled && !council_start_blocked(u, c, now, why, sizeof why)) {
            char sid[COUNCIL_ID_MAX + 1];
            snprintf(sid, sizeof sid, "a-%016" PRIx64, vigil_hash64(input, strlen(input)));
            rc = council_session_begin(&e, u, c, sid, u->last_room, true, now);
        } else {
            u->last_start = now; /* try again one interval later */
            changed = false;
        }
    } else if (!live(u)) {
        changed = false; /* a stale timer of an ended session: nothing to do */
    } else if (strcmp(name, COUNCIL_TIMER_LOOP) == 0) {
        if (s->status == COUNCIL_ACTIVE && s->phase == COUNCIL_PHASE_IDLE && s->next_loop_at &&
            s->next_loop_at <= now)
            rc = council_loop_begin(&e, u, c, now);
        else
            changed = false; /* paused, in a loop, or moved later meanwhile */
    } else if (strcmp(name, COUNCIL_TIMER_IDLE) == 0) {
        if (council_idle_due(u, c) <= now)
            rc = council_session_end(&e, u, idle_reason(u, reason, sizeof reason), now);
        else
            changed = false; /* progress since it was armed: re-armed later */
    } else if (strcmp(name, COUNCIL_TIMER_QEXP) == 0) {
        changed = council_questions_expire(&s->questions, now) > 0;
    } else {
        changed = false;
    }
    /* an auto-start refused (daily limit, a live session), a stale timer or
     * one with nothing due changes no session: its retained state is not
     * sent again with a new ts (only the timers are armed again) */
    rc |= changed ? council_sync(&e, u, c, now) : council_sync_timers(&e, u, c);
    return rc == 0 ? COUNCIL_OK : COUNCIL_FAILED;
}
