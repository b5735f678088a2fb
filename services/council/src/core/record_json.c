/* record_json.c - a user's state record to and from JSON (what the shell
 * stores under the user key), and the session's outward forms: the
 * durable record the CLI reads and the retained state payload. */
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include "council.h"

const char *council_status_name(council_status s)
{
    switch (s) {
    case COUNCIL_ACTIVE: return "active";
    case COUNCIL_PAUSED: return "paused";
    case COUNCIL_COMPLETED: return "completed";
    case COUNCIL_NONE: break;
    }
    return "none";
}

static council_status status_parse(const char *s)
{
    if (!s)
        return COUNCIL_NONE;
    if (strcmp(s, "active") == 0)
        return COUNCIL_ACTIVE;
    if (strcmp(s, "paused") == 0)
        return COUNCIL_PAUSED;
    if (strcmp(s, "completed") == 0)
        return COUNCIL_COMPLETED;
    return COUNCIL_NONE;
}

void council_user_init(council_user *u, const char *user)
{
    memset(u, 0, sizeof *u);
    vigil_utf8_copy(u->user, COUNCIL_ID_MAX + 1, user);
}

static void add_s(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}
static void add_i(json_object *o, const char *k, int64_t v)
{
    json_object_object_add(o, k, json_object_new_int64(v));
}
static void add_b(json_object *o, const char *k, bool v)
{
    json_object_object_add(o, k, json_object_new_boolean(v));
}

static json_object *question_json(const council_question *q, bool full)
{
    json_object *o = json_object_new_object();
    add_s(o, "id", q->id);
    add_s(o, "question", q->text);
    add_i(o, "priority", q->priority);
    add_s(o, "status", council_qstatus_name(q->status));
    if (q->status == COUNCIL_Q_ANSWERED || full)
        add_s(o, "answer", q->answer);
    add_i(o, "loop", q->loop);
    add_i(o, "created_at", q->created_at);
    add_i(o, "expires_at", q->expires_at);
    if (q->answered_at || full)
        add_i(o, "answered_at", q->answered_at);
    return o;
}

static json_object *notes_json(const council_session *s)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < s->n_notes; i++) {
        json_object *n = json_object_new_object();
        add_s(n, "text", s->notes[i].text);
        add_i(n, "loop", s->notes[i].loop);
        add_i(n, "ts", s->notes[i].ts);
        json_object_array_add(a, n);
    }
    return a;
}

static json_object *questions_json(const council_session *s, bool full)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < s->questions.n; i++)
        json_object_array_add(a, question_json(&s->questions.v[i], full));
    return a;
}

static json_object *session_json(const council_session *s)
{
    json_object *o = json_object_new_object();
    add_s(o, "id", s->id);
    add_s(o, "room", s->room);
    add_s(o, "status", council_status_name(s->status));
    add_i(o, "phase", s->phase);
    add_i(o, "paused_by", s->paused_by);
    add_i(o, "loop", s->loop);
    add_s(o, "job", s->job);
    add_i(o, "started_at", s->started_at);
    add_i(o, "ended_at", s->ended_at);
    add_i(o, "paused_at", s->paused_at);
    add_i(o, "next_loop_at", s->next_loop_at);
    add_i(o, "last_progress", s->last_progress);
    add_i(o, "sensed_at", s->sensed_at);
    add_b(o, "sensed_available", s->sensed_available);
    add_s(o, "sensed_presence", council_presence_name(s->sensed_presence));
    add_s(o, "reason", s->reason);
    add_b(o, "automatic", s->automatic);
    json_object *br = json_object_new_array();
    for (int i = 0; i < s->breaker.n; i++)
        json_object_array_add(br, json_object_new_int(s->breaker.last[i]));
    json_object_object_add(o, "breaker", br);
    json_object_object_add(o, "questions", questions_json(s, true));
    json_object_object_add(o, "notes", notes_json(s));
    add_i(o, "actions", s->actions);
    add_i(o, "event_seq", s->event_seq);
    return o;
}

char *council_user_dump(const council_user *u)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    add_s(o, "user", u->user);
    json_object *msgs = json_object_new_array();
    for (int i = 0; i < u->n_msgs; i++) {
        json_object *m = json_object_new_object();
        add_s(m, "room", u->msgs[i].room);
        add_s(m, "text", u->msgs[i].text);
        add_i(m, "ts", u->msgs[i].ts);
        json_object_array_add(msgs, m);
    }
    json_object_object_add(o, "msgs", msgs);
    add_i(o, "day", u->day);
    add_i(o, "day_count", u->day_count);
    add_i(o, "last_start", u->last_start);
    add_b(o, "enrolled", u->enrolled);
    add_s(o, "last_room", u->last_room);
    add_i(o, "sessions", u->sessions);
    if (u->presence != COUNCIL_PRESENCE_UNKNOWN) {
        add_s(o, "presence", council_presence_name(u->presence));
        add_i(o, "presence_ts", u->presence_ts);
        add_i(o, "presence_activity", u->presence_activity);
        add_s(o, "presence_room", u->presence_room);
    }
    if (u->has_session)
        json_object_object_add(o, "session", session_json(&u->s));
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    char *out = s ? strdup(s) : NULL;
    json_object_put(o);
    return out;
}

/* -------- reading back (the record is ours: missing fields default) -- */

static json_object *get(json_object *o, const char *k)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}
static void get_s(json_object *o, const char *k, char *out, size_t max)
{
    json_object *v = get(o, k);
    const char *s = v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    vigil_utf8_copy(out, max + 1, s);
}
static int64_t get_i(json_object *o, const char *k)
{
    json_object *v = get(o, k);
    return v ? json_object_get_int64(v) : 0;
}
static bool get_b(json_object *o, const char *k)
{
    json_object *v = get(o, k);
    return v && json_object_get_boolean(v);
}

static council_qstatus qstatus_parse(const char *s)
{
    if (strcmp(s, "answered") == 0)
        return COUNCIL_Q_ANSWERED;
    if (strcmp(s, "expired") == 0)
        return COUNCIL_Q_EXPIRED;
    return COUNCIL_Q_PENDING;
}

/* "active", "idle", "away"; anything else (absent, "unknown") is unknown. */
static council_presence presence_load(json_object *o, const char *k)
{
    char name[16];
    get_s(o, k, name, sizeof name - 1);
    for (int p = COUNCIL_PRESENCE_ACTIVE; p <= COUNCIL_PRESENCE_AWAY; p++)
        if (strcmp(name, council_presence_name((council_presence)p)) == 0)
            return (council_presence)p;
    return COUNCIL_PRESENCE_UNKNOWN;
}

static void session_load(json_object *o, council_session *s)
{
    char st[32];
    get_s(o, "id", s->id, COUNCIL_ID_MAX);
    get_s(o, "room", s->room, COUNCIL_ID_MAX);
    get_s(o, "status", st, sizeof st - 1);
    s->status = status_parse(st);
    s->phase = get_i(o, "phase") == COUNCIL_PHASE_PLAN ? COUNCIL_PHASE_PLAN : COUNCIL_PHASE_IDLE;
    int64_t pb = get_i(o, "paused_by");
    s->paused_by = pb == COUNCIL_PAUSE_USER ? COUNCIL_PAUSE_USER
                   : pb == COUNCIL_PAUSE_SPINNING ? COUNCIL_PAUSE_SPINNING : COUNCIL_PAUSE_NONE;
    s->loop = (int)get_i(o, "loop");
    get_s(o, "job", s->job, COUNCIL_JOB_MAX);
    s->started_at = get_i(o, "started_at");
    s->ended_at = get_i(o, "ended_at");
    s->paused_at = get_i(o, "paused_at");
    s->next_loop_at = get_i(o, "next_loop_at");
    s->last_progress = get_i(o, "last_progress");
    s->sensed_at = get_i(o, "sensed_at");
    s->sensed_available = get_b(o, "sensed_available");
    s->sensed_presence = presence_load(o, "sensed_presence");
    get_s(o, "reason", s->reason, COUNCIL_REASON_MAX - 1);
    s->automatic = get_b(o, "automatic");
    json_object *br = get(o, "breaker");
    for (size_t i = 0; br && json_object_is_type(br, json_type_array) &&
                       i < json_object_array_length(br) && s->breaker.n < COUNCIL_BREAKER_REPEATS;
         i++)
        s->breaker.last[s->breaker.n++] = json_object_get_int(json_object_array_get_idx(br, i));
    json_object *qs = get(o, "questions");
    for (size_t i = 0; qs && json_object_is_type(qs, json_type_array) &&
                       i < json_object_array_length(qs) && s->questions.n < COUNCIL_QUESTIONS_MAX;
         i++) {
        json_object *q = json_object_array_get_idx(qs, i);
        council_question *x = &s->questions.v[s->questions.n++];
        char qst[32];
        get_s(q, "id", x->id, COUNCIL_EVID_MAX);
        get_s(q, "question", x->text, COUNCIL_TEXT_MAX);
        x->priority = (int)get_i(q, "priority");
        get_s(q, "status", qst, sizeof qst - 1);
        x->status = qstatus_parse(qst);
        get_s(q, "answer", x->answer, COUNCIL_TEXT_MAX);
        x->loop = (int)get_i(q, "loop");
        x->created_at = get_i(q, "created_at");
        x->expires_at = get_i(q, "expires_at");
        x->answered_at = get_i(q, "answered_at");
    }
    json_object *ns = get(o, "notes");
    for (size_t i = 0; ns && json_object_is_type(ns, json_type_array) &&
                       i < json_object_array_length(ns) && s->n_notes < COUNCIL_NOTES_MAX;
         i++) {
        json_object *n = json_object_array_get_idx(ns, i);
        council_note *x = &s->notes[s->n_notes++];
        get_s(n, "text", x->text, COUNCIL_TEXT_MAX);
        x->loop = (int)get_i(n, "loop");
        x->ts = get_i(n, "ts");
    }
    s->actions = (int)get_i(o, "actions");
    s->event_seq = (int)get_i(o, "event_seq");
}

int council_user_load(const char *json, council_user *u, char *why, size_t whylen)
{
    json_object *o = json ? json_tokener_parse(json) : NULL;
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        snprintf(why, whylen, "state record is not a JSON object");
        return -1;
    }
    char user[COUNCIL_ID_MAX + 1];
    get_s(o, "user", user, COUNCIL_ID_MAX);
    if (user[0] == '\0') {
        /* every job and payload names the user: a record without one is not ours */
        json_object_put(o);
        snprintf(why, whylen, "state record names no user");
        return -1;
    }
    council_user_init(u, user);
    json_object *msgs = get(o, "msgs");
    for (size_t i = 0; msgs && json_object_is_type(msgs, json_type_array) &&
                       i < json_object_array_length(msgs) && u->n_msgs < COUNCIL_MSGS_MAX;
         i++) {
        json_object *m = json_object_array_get_idx(msgs, i);
        council_msg *x = &u->msgs[u->n_msgs++];
        get_s(m, "room", x->room, COUNCIL_ID_MAX);
        get_s(m, "text", x->text, COUNCIL_TEXT_MAX);
        x->ts = get_i(m, "ts");
    }
    u->day = get_i(o, "day");
    u->day_count = (int)get_i(o, "day_count");
    u->last_start = get_i(o, "last_start");
    u->enrolled = get_b(o, "enrolled");
    get_s(o, "last_room", u->last_room, COUNCIL_ID_MAX);
    u->sessions = (int)get_i(o, "sessions");
    u->presence = presence_load(o, "presence");
    u->presence_ts = get_i(o, "presence_ts");
    u->presence_activity = get_i(o, "presence_activity");
    get_s(o, "presence_room", u->presence_room, COUNCIL_ID_MAX);
    json_object *s = get(o, "session");
    if (s && json_object_is_type(s, json_type_object)) {
        u->has_session = true;
        session_load(s, &u->s);
    }
    json_object_put(o);
    return 0;
}

json_object *council_state_payload(const council_user *u, int64_t now)
{
    const council_session *s = &u->s;
    json_object *o = json_object_new_object();
    add_s(o, "session", s->id);
    add_s(o, "user", u->user);
    if (s->room[0])
        add_s(o, "room", s->room);
    add_s(o, "status", council_status_name(s->status));
    add_i(o, "loop_count", s->loop);
    add_i(o, "started_at", s->started_at);
    if (s->ended_at)
        add_i(o, "ended_at", s->ended_at);
    if (s->reason[0])
        add_s(o, "reason", s->reason);
    add_b(o, "automatic", s->automatic);
    add_i(o, "ts", now);
    return o;
}

json_object *council_session_record(const council_user *u)
{
    const council_session *s = &u->s;
    json_object *o = json_object_new_object();
    add_s(o, "session", s->id);
    add_s(o, "user", u->user);
    add_s(o, "room", s->room);
    add_s(o, "status", council_status_name(s->status));
    add_i(o, "loop_count", s->loop);
    add_i(o, "actions", s->actions);
    add_i(o, "started_at", s->started_at);
    add_i(o, "ended_at", s->ended_at);
    add_s(o, "reason", s->reason);
    add_b(o, "automatic", s->automatic);
    json_object_object_add(o, "questions", questions_json(s, false));
    json_object_object_add(o, "notes", notes_json(s));
    return o;
}
