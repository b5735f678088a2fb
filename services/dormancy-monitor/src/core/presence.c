/* presence.c - rule 6: humans reading without writing. Sessions report
 * active/idle/away with their last activity; a session is active while its
 * last activity is younger than presence_active_ms (2 min), idle until
 * presence_away_ms (5 min), away after (so a session that stops sending
 * heartbeats becomes away by itself). While any human is active and
 * presence checking is on, no dormancy suggestion and no auto-sleep
 * happens in the room (step_presence_blocks), and a suggestion pending when
 * a human becomes active is withdrawn rather than defaulted (suggestions.c). */
#include <string.h>
#include "step.h"

dormancy_presence_status dormancy_session_status(const dormancy_session *s,
                                                 const dormancy_config *cfg, int64_t now)
{
    int64_t age = now - s->last_activity;
    if (s->status == DORMANCY_PRESENCE_AWAY || age >= cfg->presence_away_ms)
        return DORMANCY_PRESENCE_AWAY;
    if (s->status == DORMANCY_PRESENCE_IDLE || age >= cfg->presence_active_ms)
        return DORMANCY_PRESENCE_IDLE;
    return DORMANCY_PRESENCE_ACTIVE;
}

bool dormancy_room_human_active(const dormancy_room *r, const dormancy_config *cfg, int64_t now)
{
    for (int i = 0; i < r->n_sessions; i++)
        if (dormancy_session_status(&r->sessions[i], cfg, now) == DORMANCY_PRESENCE_ACTIVE)
            return true;
    return false;
}

/* A heartbeat replaces the session's previous one. Activity claimed in the
 * future is clamped to now (clocks differ); a full table drops the session
 * heard from longest ago. */
void presence_on_event(dormancy_step *s, const dormancy_event *ev)
{
    dormancy_room *r = s->room;
    dormancy_session *sess = NULL;
    for (int i = 0; i < r->n_sessions; i++) {
        if (strcmp(r->sessions[i].user, ev->presence.user) == 0 &&
            strcmp(r->sessions[i].session, ev->presence.session) == 0) {
            sess = &r->sessions[i];
            break;
        }
    }
    if (!sess) {
        if (r->n_sessions == DORMANCY_MAX_SESSIONS) {
            int oldest = 0;
            for (int i = 1; i < r->n_sessions; i++)
                if (r->sessions[i].heard < r->sessions[oldest].heard)
                    oldest = i;
            r->sessions[oldest] = r->sessions[--r->n_sessions];
        }
        sess = &r->sessions[r->n_sessions++];
        memset(sess, 0, sizeof *sess);
        vigil_utf8_copy(sess->user, sizeof sess->user, ev->presence.user);
        vigil_utf8_copy(sess->session, sizeof sess->session, ev->presence.session);
    }
    int64_t la = ev->presence.last_activity ? ev->presence.last_activity : s->now;
    if (la > s->now)
        la = s->now;
    sess->status = ev->presence.status;
    sess->last_activity = la;
    sess->heard = s->now;
}

void presence_prune(dormancy_step *s)
{
    dormancy_room *r = s->room;
    int j = 0;
    for (int i = 0; i < r->n_sessions; i++)
        if (dormancy_session_status(&r->sessions[i], s->cfg, s->now) != DORMANCY_PRESENCE_AWAY)
            r->sessions[j++] = r->sessions[i];
    r->n_sessions = j;
}

/* The next moment a session changes state: active -> idle lifts the
 * presence block (suggestions and auto-sleep due meanwhile happen then);
 * idle -> away changes humans_present. */
void presence_want(const dormancy_step *s, dormancy_want *w)
{
    const dormancy_room *r = s->room;
    for (int i = 0; i < r->n_sessions; i++) {
        const dormancy_session *x = &r->sessions[i];
        dormancy_presence_status st = dormancy_session_status(x, s->cfg, s->now);
        if (st == DORMANCY_PRESENCE_ACTIVE)
            want_add(w, "presence", x->last_activity + s->cfg->presence_active_ms);
        else if (st == DORMANCY_PRESENCE_IDLE)
            want_add(w, "presence", x->last_activity + s->cfg->presence_away_ms);
    }
}
