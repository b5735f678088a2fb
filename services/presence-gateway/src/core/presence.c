/* presence.c - human presence from browser heartbeats: a browser beats
 * every 30 s with its rooms and the time of the person's last activity;
 * the status per room is the best over the user's live sessions in that
 * room:
 *   active  activity within idle_ms (2 min),
 *   idle    activity idle_ms..away_ms (2-5 min) ago,
 *   away    activity away_ms (5 min) ago or more, or heartbeats stopped
 *           (no beat for expire_ms: the session is gone).
 * Changes are published, and so is a refresh while a room stays active:
 * consumers (dormancy-monitor) age the last_activity they were sent
 * themselves, so an unchanged "active" would read as idle after idle_ms
 * however many beats came (gw_presence_refresh_ms). The record remembers
 * what was last published per room; a room whose last session went away
 * is forgotten after its "away" is published.
 *
 * Record: {"user", "sessions": {sid: {"rooms": [..], "la": ms, "beat": ms,
 * "claimed": 0..2}}, "published": {room: {"status": 0..2, "session", "la"}}} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/names.h>
#include "gateway.h"

_Static_assert(GW_ACTIVE == (int)VIGIL_PRESENCE_ACTIVE && GW_IDLE == (int)VIGIL_PRESENCE_IDLE &&
                   GW_AWAY == (int)VIGIL_PRESENCE_AWAY,
               "gw_status is the contract's vigil_presence_status");

const char *gw_status_name(gw_status s)
{
    return (s >= GW_ACTIVE && s <= GW_AWAY) ? vigil_presence_status_names[s] : "away";
}

int gw_status_parse(const char *s)
{
    return vigil_name_index(vigil_presence_status_names, s);
}

int64_t gw_presence_refresh_ms(const gw_presence_cfg *c)
{
    int64_t r = c->idle_ms / GW_PRESENCE_REFRESH_PARTS;
    return r > 0 ? r : 1;
}

/* A room published active and still active gets its newer last_activity
 * published again once the one published is refresh_ms old: never sooner
 * (bounded rate, whatever the number of beats and tabs), never without
 * news (a beat without new activity republishes nothing). */
static bool refresh_due(const gw_presence_cfg *c, int64_t published_la, int64_t la, int64_t now)
{
    return la > published_la && now - published_la >= gw_presence_refresh_ms(c);
}

void gw_presence_cfg_init(gw_presence_cfg *c)
{
    c->idle_ms = 120000;
    c->away_ms = 300000;
    c->expire_ms = 300000; /* the away time: a browser beating only while its
                            * user is active still shows idle 2-5 min */
    c->max_sessions = GW_MAX_SESSIONS;
    c->max_rooms = GW_MAX_ROOMS;
}

gw_status gw_presence_derive(const gw_presence_cfg *c, int64_t last_activity, int64_t last_beat,
                             gw_status claimed, int64_t now)
{
    if (now - last_beat >= c->expire_ms)
        return GW_AWAY;
    int64_t quiet = now - last_activity;
    gw_status by_time = quiet < c->idle_ms ? GW_ACTIVE : quiet < c->away_ms ? GW_IDLE : GW_AWAY;
    return claimed > by_time ? claimed : by_time;
}

void gw_presence_out_free(gw_presence_out *o)
{
    free(o->new_state);
    free(o->changes);
    free(o->forgotten);
    memset(o, 0, sizeof *o);
}

static int64_t get_i64(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

/* A time kept in the record (la, beat), read within 0..now: the gateway
 * writes none later than its now, so a later one (a clock stepped back, a
 * damaged record) counts as now, and the sums and differences below
 * (deadlines, ages) stay in range whatever the record holds. */
static int64_t get_time(json_object *o, const char *k, int64_t now)
{
    int64_t v = get_i64(o, k);
    return v < 0 ? 0 : v > now ? now : v;
}

/* A status kept in the record, read as one of the three (away otherwise). */
static gw_status get_status(json_object *o, const char *k)
{
    int64_t v = get_i64(o, k);
    return v >= GW_ACTIVE && v <= GW_AWAY ? (gw_status)v : GW_AWAY;
}

static json_object *get_obj(json_object *o, const char *k)
{
    json_object *v;
    if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_object))
        return v;
    v = json_object_new_object();
    json_object_object_add(o, k, v);
    return v;
}

static bool session_has_room(json_object *s, const char *room)
{
    json_object *rooms;
    if (!json_object_object_get_ex(s, "rooms", &rooms) || !json_object_is_type(rooms, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(rooms); i++) {
        const char *r = json_object_get_string(json_object_array_get_idx(rooms, i));
        if (r && strcmp(r, room) == 0)
            return true;
    }
    return false;
}

static int add_change(gw_presence_out *out, int *cap, const char *room, const char *session,
                      gw_status st, int64_t la)
{
    if (out->nchanges == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        gw_presence_change *v = realloc(out->changes, (size_t)nc * sizeof *v);
        if (!v)
            return -1;
        out->changes = v;
        *cap = nc;
    }
    gw_presence_change *ch = &out->changes[out->nchanges++];
    memset(ch, 0, sizeof *ch);
    snprintf(ch->room, sizeof ch->room, "%s", room);
    snprintf(ch->session, sizeof ch->session, "%s", session ? session : "");
    ch->status = st;
    ch->last_activity = la;
    return 0;
}

static void min_future(int64_t *due, int64_t t, int64_t now)
{
    if (t > now && (*due == 0 || t < *due))
        *due = t;
}

/* Drops gone sessions, re-derives every room's status, records and
 * reports the changes, and computes the next deadline. */
static gw_presence_result settle(const gw_presence_cfg *c, json_object *st, int64_t now,
                                 gw_presence_out *out)
{
    json_object *sessions = get_obj(st, "sessions");
    json_object *published = get_obj(st, "published");
    /* 1. sessions whose beats stopped are gone */
    for (;;) {
        const char *gone = NULL;
        json_object_object_foreach(sessions, sid, s)
        {
            if (now - get_time(s, "beat", now) >= c->expire_ms) {
                gone = sid;
                break;
            }
        }
        if (!gone)
            break;
        json_object_object_del(sessions, gone);
    }
    /* 2. the rooms to look at: published ones, then the sessions' rooms */
    json_object *rooms = json_object_new_array();
    if (!rooms)
        return GW_PRESENCE_NOMEM;
    json_object_object_foreach(published, pr, pv)
    {
        (void)pv;
        json_object_array_add(rooms, json_object_new_string(pr));
    }
    json_object_object_foreach(sessions, sid0, s0)
    {
        (void)sid0;
        json_object *sr;
        /* a damaged session is in no room (json-c asserts on a non-array) */
        if (!json_object_object_get_ex(s0, "rooms", &sr) ||
            !json_object_is_type(sr, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(sr); i++) {
            const char *r = json_object_get_string(json_object_array_get_idx(sr, i));
            json_object *dummy;
            if (r && !json_object_object_get_ex(published, r, &dummy)) {
                bool seen = false;
                for (size_t j = 0; j < json_object_array_length(rooms); j++)
                    if (strcmp(json_object_get_string(json_object_array_get_idx(rooms, j)), r) == 0)
                        seen = true;
                if (!seen)
                    json_object_array_add(rooms, json_object_new_string(r));
            }
        }
    }
    int cap = 0;
    gw_presence_result rc = GW_PRESENCE_OK;
    out->next_due = 0;
    for (size_t i = 0; i < json_object_array_length(rooms) && rc == GW_PRESENCE_OK; i++) {
        const char *room = json_object_get_string(json_object_array_get_idx(rooms, i));
        gw_status best = GW_AWAY;
        const char *best_sid = NULL;
        int64_t best_la = -1;
        json_object_object_foreach(sessions, sid, s)
        {
            if (!session_has_room(s, room))
                continue;
            int64_t la = get_time(s, "la", now);
            gw_status d = gw_presence_derive(c, la, get_time(s, "beat", now),
                                             get_status(s, "claimed"), now);
            if (!best_sid || d < best || (d == best && la > best_la)) {
                best = d;
                best_sid = sid;
                best_la = la;
            }
        }
        json_object *prev = NULL;
        bool had = json_object_object_get_ex(published, room, &prev);
        gw_status prev_st = had ? get_status(prev, "status") : GW_AWAY;
        char psid[GW_ID_MAX + 1] = "";
        if (had) {
            json_object *v;
            if (json_object_object_get_ex(prev, "session", &v))
                snprintf(psid, sizeof psid, "%s", json_object_get_string(v));
        }
        if (!best_sid) {
            /* nobody left in the room: away, then forget it */
            if (had && prev_st != GW_AWAY &&
                add_change(out, &cap, room, psid, GW_AWAY, get_time(prev, "la", now)) != 0)
                rc = GW_PRESENCE_NOMEM;
            if (had)
                json_object_object_del(published, room);
            continue;
        }
        bool changed = (!had && best != GW_AWAY) || (had && prev_st != best);
        bool refresh = had && !changed && best == GW_ACTIVE &&
                       refresh_due(c, get_time(prev, "la", now), best_la, now);
        if (!changed && !refresh)
            continue; /* what was published still holds (or nothing was: still away) */
        if (add_change(out, &cap, room, best_sid, best, best_la) != 0)
            rc = GW_PRESENCE_NOMEM;
        json_object *p = json_object_new_object();
        json_object_object_add(p, "status", json_object_new_int(best));
        json_object_object_add(p, "session", json_object_new_string(best_sid));
        json_object_object_add(p, "la", json_object_new_int64(best_la));
        json_object_object_add(published, room, p);
    }
    json_object_put(rooms);
    /* 3. the next moment anything can change */
    json_object_object_foreach(sessions, sid2, s2)
    {
        (void)sid2;
        int64_t la = get_time(s2, "la", now);
        min_future(&out->next_due, la + c->idle_ms, now);
        min_future(&out->next_due, la + c->away_ms, now);
        min_future(&out->next_due, get_time(s2, "beat", now) + c->expire_ms, now);
    }
    if (rc == GW_PRESENCE_OK) {
        out->new_state = strdup(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN));
        if (!out->new_state)
            rc = GW_PRESENCE_NOMEM;
    }
    if (rc != GW_PRESENCE_OK)
        gw_presence_out_free(out);
    return rc;
}

/* Loads a record (NULL or unreadable = a fresh one for user). */
static json_object *load(const char *state_json, const char *user, bool *bad)
{
    json_object *st = state_json ? json_tokener_parse(state_json) : NULL;
    *bad = state_json && (!st || !json_object_is_type(st, json_type_object));
    if (st && !json_object_is_type(st, json_type_object)) {
        json_object_put(st);
        st = NULL;
    }
    if (!st) {
        st = json_object_new_object();
        if (st && user)
            json_object_object_add(st, "user", json_object_new_string(user));
    }
    return st;
}

/* Appends sid to the sessions the beat pushed out. */
static int note_forgotten(gw_presence_out *out, const char *sid)
{
    void *v = realloc(out->forgotten, (size_t)(out->nforgotten + 1) * sizeof *out->forgotten);
    if (!v)
        return -1;
    out->forgotten = v;
    snprintf(out->forgotten[out->nforgotten++], sizeof out->forgotten[0], "%s", sid);
    return 0;
}

/* A new session at max_sessions: the longest silent session is forgotten
 * (most likely a closed tab whose beats stopped but which has not expired
 * yet). A live one forgotten is reported in out->forgotten; an expired one
 * was gone anyway (settle drops it) and is not. More than one only when
 * the record holds more than max_sessions (the limit was lowered). */
static gw_presence_result make_room(const gw_presence_cfg *c, json_object *sessions, int64_t now,
                                    gw_presence_out *out)
{
    while (json_object_object_length(sessions) >= c->max_sessions) {
        const char *oldest = NULL;
        int64_t ob = 0;
        json_object_object_foreach(sessions, sid, sv)
        {
            int64_t beat = get_time(sv, "beat", now);
            if (!oldest || beat < ob) {
                oldest = sid;
                ob = beat;
            }
        }
        if (now - ob < c->expire_ms && note_forgotten(out, oldest) != 0) {
            gw_presence_out_free(out);
            return GW_PRESENCE_NOMEM;
        }
        json_object_object_del(sessions, oldest);
    }
    return GW_PRESENCE_OK;
}

gw_presence_result gw_presence_beat(const gw_presence_cfg *c, const char *state_json,
                                    const gw_beat *b, int64_t now, gw_presence_out *out)
{
    memset(out, 0, sizeof *out);
    bool bad;
    json_object *st = load(state_json, b->user, &bad);
    if (!st)
        return GW_PRESENCE_NOMEM;
    json_object *sessions = get_obj(st, "sessions");
    json_object *s;
    if (!json_object_object_get_ex(sessions, b->session, &s) &&
        make_room(c, sessions, now, out) != GW_PRESENCE_OK) {
        json_object_put(st);
        return GW_PRESENCE_NOMEM;
    }
    s = json_object_new_object();
    json_object *rooms = json_object_new_array();
    for (int i = 0; i < b->nrooms && i < c->max_rooms; i++)
        json_object_array_add(rooms, json_object_new_string(b->rooms[i]));
    json_object_object_add(s, "rooms", rooms);
    int64_t la = b->last_activity > now ? now : b->last_activity;
    json_object_object_add(s, "la", json_object_new_int64(la));
    json_object_object_add(s, "beat", json_object_new_int64(now));
    json_object_object_add(s, "claimed", json_object_new_int(b->claimed));
    json_object_object_add(sessions, b->session, s);
    gw_presence_result rc = settle(c, st, now, out);
    json_object_put(st);
    return rc;
}

gw_presence_result gw_presence_tick(const gw_presence_cfg *c, const char *user,
                                    const char *state_json, int64_t now, gw_presence_out *out)
{
    memset(out, 0, sizeof *out);
    bool bad;
    json_object *st = load(state_json, user, &bad);
    if (!st)
        return GW_PRESENCE_NOMEM;
    gw_presence_result rc = settle(c, st, now, out);
    json_object_put(st);
    return rc;
}

json_object *gw_presence_payload(const char *user, const gw_presence_change *ch, int64_t now)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "user", json_object_new_string(user));
    json_object_object_add(o, "session", json_object_new_string(ch->session[0] ? ch->session : "gateway"));
    json_object_object_add(o, "room", json_object_new_string(ch->room));
    json_object_object_add(o, "status", json_object_new_string(gw_status_name(ch->status)));
    json_object_object_add(o, "last_activity", json_object_new_int64(ch->last_activity < 0 ? 0 : ch->last_activity));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return o;
}
