/* state_json.c - the room record as JSON, the form kept in the state store.
 *
 * Zero / default fields are left out so a quiet room's record stays a few
 * hundred bytes. Reading is lenient field by field (a missing or odd field
 * takes its default) but refuses a record that is not an object or belongs
 * to another room: the shell then starts the room afresh and logs it. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/id_index.h>
#include <vigil/json.h>
#include <vigil/jtext.h>
#include <vigil/str.h>
#include <vigil/times_text.h>
#include "step.h"

#define STATE_VERSION 1 /* the record in one text */
#define HEAD_VERSION 2  /* the head of a record in parts */

static const char *const CAUSE_NAMES[] = {NULL, "absence", "choice"};
static const char *const SUGGEST_NAMES[] = {NULL, "no-human", "redundant", "autopilot"};
static const char *const PRESENCE_NAMES[] = {"active", "idle", "away"};

/* ---- writing ---- */

/* ,"k":v unless v is 0 (zero fields are left out) */
VIGIL_JTEXT_INLINE void text_i64(vigil_jtext *b, const char *k, int64_t v)
{
    if (v == 0)
        return;
    vigil_jtext_lit(b, k);
    vigil_jtext_i64(b, v);
}

/* ,"k":"v" unless v is empty */
VIGIL_JTEXT_INLINE void text_str(vigil_jtext *b, const char *k, const char *v)
{
    if (!v || !v[0])
        return;
    vigil_jtext_lit(b, k);
    vigil_jtext_str(b, v);
}

VIGIL_JTEXT_INLINE void text_digest(vigil_jtext *b, const char *k, uint64_t d)
{
    char hex[17];
    if (d == 0)
        return;
    vigil_hex64(hex, d);
    vigil_jtext_lit(b, k);
    vigil_jtext_str(b, hex);
}

/* Removes the comma that opens an object's first member, written at `at`
 * (the members are written each with its comma, some left out). */
static void drop_comma(vigil_jtext *b, size_t at)
{
    if (b->oom || b->n <= at)
        return;
    memmove(b->s + at, b->s + at + 1, b->n - at); /* with the NUL */
    b->n--;
}

/* A persona's part of the record, written as text: the same members, in
 * the same order, as dormancy_persona_record_json, byte for byte what
 * json-c prints for it (a persona changes on most inputs, and building
 * and printing a json-c object cost twice as much). */
char *dormancy_persona_record_text(const dormancy_persona *p)
{
    vigil_jtext b = {0};
    vigil_jtext_put(&b, "{", 1);
    size_t at = b.n;
    text_str(&b, ",\"id\":", p->id);
    text_str(&b, ",\"name\":", p->name);
    vigil_jtext_lit(&b, ",\"level\":");
    vigil_jtext_str(&b, dormancy_level_name(p->level));
    text_i64(&b, ",\"since\":", p->since);
    text_str(&b, ",\"trigger\":", dormancy_trigger_name(p->trigger));
    text_str(&b, ",\"reason\":", p->reason);
    if (p->cause > DORMANCY_CAUSE_NONE && p->cause <= DORMANCY_CAUSE_CHOICE)
        text_str(&b, ",\"cause\":", CAUSE_NAMES[p->cause]);
    text_i64(&b, ",\"until\":", p->until);
    if (p->via_meta)
        vigil_jtext_lit(&b, ",\"meta\":true");
    if (p->joined)
        vigil_jtext_lit(&b, ",\"joined\":true");
    text_i64(&b, ",\"asked\":", p->asked_quiet);
    text_i64(&b, ",\"snoozed_until\":", p->snoozed_until);
    text_i64(&b, ",\"ai_only_done\":", p->ai_only_done);
    text_i64(&b, ",\"answered_human\":", p->answered_human);
    if (p->sugg.kind != DORMANCY_SUGGEST_NONE) {
        vigil_jtext_lit(&b, ",\"sugg\":{");
        size_t s_at = b.n;
        text_str(&b, ",\"kind\":", SUGGEST_NAMES[p->sugg.kind]);
        text_str(&b, ",\"id\":", p->sugg.id);
        text_i64(&b, ",\"at\":", p->sugg.at);
        text_i64(&b, ",\"default_at\":", p->sugg.default_at);
        text_str(&b, ",\"message_id\":", p->sugg.message_id);
        text_str(&b, ",\"reason\":", p->sugg.reason);
        text_str(&b, ",\"text\":", p->sugg.text);
        drop_comma(&b, s_at);
        vigil_jtext_put(&b, "}", 1);
    }
    text_str(&b, ",\"answer_in\":", p->answer_in);
    if (p->ov.has) {
        json_object *c = vigil_dormancy_overrides_to_json(&p->ov);
        const char *ct = c ? json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN |
                                                                  JSON_C_TO_STRING_NOSLASHESCAPE)
                           : NULL;
        if (ct) {
            vigil_jtext_lit(&b, ",\"cfg\":");
            vigil_jtext_lit(&b, ct);
        } else {
            b.oom = true;
        }
        json_object_put(c);
    }
    text_digest(&b, ",\"digest\":", p->snap_digest);
    text_i64(&b, ",\"o\":", p->ord);
    drop_comma(&b, at);
    vigil_jtext_put(&b, "}", 1);
    return vigil_jtext_take(&b);
}

/* One human message's entry, {"id":...} */
static void put_human(vigil_jtext *b, const dormancy_human_msg *m)
{
    vigil_jtext_lit(b, "{");
    size_t at = b->n;
    text_str(b, ",\"id\":", m->id);
    text_i64(b, ",\"ts\":", m->ts);
    text_i64(b, ",\"n\":", m->n_responders);
    int kept = m->n_responders < DORMANCY_MAX_RESPONDERS ? m->n_responders
                                                         : DORMANCY_MAX_RESPONDERS;
    if (kept > 0) {
        vigil_jtext_lit(b, ",\"responders\":[");
        for (int j = 0; j < kept; j++) {
            if (j > 0)
                vigil_jtext_put(b, ",", 1);
            vigil_jtext_str(b, m->responders[j]);
        }
        vigil_jtext_put(b, "]", 1);
    }
    drop_comma(b, at);
    vigil_jtext_put(b, "}", 1);
}

/* The entries are written from the text each kept when it was last
 * written: an entry changes only when an AI answers it, and the record
 * (up to 16 entries) is written on every input, which wrote them anew
 * for about 4,600 of dormancy-monitor's 95,600 instructions per input.
 * The kept text lives in the entry (the record is written from a const
 * room, whose entries' cache this fills in). Builds with assertions check
 * each kept text against the entry written anew. */
static void put_humans(vigil_jtext *b, const dormancy_room *r)
{
    vigil_jtext_lit(b, ",\"humans\":[");
    for (int i = 0; i < r->n_humans; i++) {
        dormancy_human_msg *m = dormancy_room_human(r, i);
        if (i > 0)
            vigil_jtext_put(b, ",", 1);
        if (m->text_len > 0) {
#ifndef NDEBUG
            vigil_jtext fresh = {0};
            put_human(&fresh, m);
            assert(fresh.oom || (fresh.n == m->text_len && memcmp(fresh.s, m->text, fresh.n) == 0));
            free(fresh.s);
#endif
            vigil_jtext_append(b, m->text, m->text_len);
            continue;
        }
        size_t start = b->n;
        put_human(b, m);
        size_t len = b->n - start;
        if (!b->oom && len <= sizeof m->text) {
            memcpy(m->text, b->s + start, len);
            m->text_len = (uint8_t)len;
        }
    }
    vigil_jtext_put(b, "]", 1);
}

static void put_sessions(vigil_jtext *b, const dormancy_room *r)
{
    vigil_jtext_lit(b, ",\"sessions\":[");
    for (int i = 0; i < r->n_sessions; i++) {
        const dormancy_session *se = &r->sessions[i];
        if (i > 0) /* two literals: each a constant copy */
            vigil_jtext_lit(b, ",{");
        else
            vigil_jtext_lit(b, "{");
        size_t at = b->n;
        text_str(b, ",\"user\":", se->user);
        text_str(b, ",\"session\":", se->session);
        text_str(b, ",\"status\":", PRESENCE_NAMES[se->status]);
        text_i64(b, ",\"last_activity\":", se->last_activity);
        text_i64(b, ",\"heard\":", se->heard);
        drop_comma(b, at);
        vigil_jtext_put(b, "}", 1);
    }
    vigil_jtext_put(b, "]", 1);
}

/* Everything of the record but its personas, the closing brace left open.
 * The room for it is reserved at once from what it holds: grown from
 * nothing, a head of 2 KB was copied through four reallocations. */
static void put_room(vigil_jtext *b, const dormancy_room *r, int version)
{
    vigil_jtext_reserve(b, 512 + r->rtext_dt.t.n + r->rtext_kind.n + (size_t)r->n_humans * 64 +
                               (size_t)r->n_sessions * 160 + (size_t)r->n_timers * 48);
    vigil_jtext_lit(b, "{\"v\":");
    vigil_jtext_i64(b, version);
    vigil_jtext_lit(b, ",\"room\":");
    vigil_jtext_str(b, r->room);
    text_i64(b, ",\"first_seen\":", r->first_seen);
    text_i64(b, ",\"last_message\":", r->last_message);
    text_i64(b, ",\"last_human\":", r->last_human);
    text_i64(b, ",\"ai_only_since\":", r->ai_only_since);
    text_i64(b, ",\"rsa\":", r->room_state_at);
    text_i64(b, ",\"rsd\":", r->room_state_due);
    if (r->paused)
        vigil_jtext_lit(b, ",\"paused\":true");
    if (r->n_recent > 0)
        recent_text_write(b, r); /* "t0,d1,d2,..." and "haha..." */
    if (r->n_humans > 0)
        put_humans(b, r);
    if (r->n_sessions > 0)
        put_sessions(b, r);
    if (r->n_timers > 0) {
        vigil_jtext_lit(b, ",\"timers\":{");
        for (int i = 0; i < r->n_timers; i++) {
            if (i > 0)
                vigil_jtext_put(b, ",", 1);
            vigil_jtext_str(b, r->timers[i].name);
            vigil_jtext_put(b, ":", 1);
            vigil_jtext_i64(b, r->timers[i].due);
        }
        vigil_jtext_put(b, "}", 1);
    }
    text_digest(b, ",\"digest\":", r->room_digest);
    text_i64(b, ",\"no\":", r->next_ord);
}

/* The record as text, written directly (what json-c wrote for the same
 * fields, in the same order, zero fields left out); each persona's text
 * comes from the room's persona texts (persona_texts.c), written again
 * only for the personas that changed. */
char *dormancy_room_to_json(const dormancy_room *r)
{
    vigil_jtext b = {0};
    put_room(&b, r, STATE_VERSION);
    vigil_jtext_lit(&b, ",\"personas\":[");
    for (int i = 0; i < r->n_personas; i++) {
        size_t len = 0;
        const char *t = dormancy_texts_persona(r->texts, i, &r->personas[i], &len);
        if (!t) {
            b.oom = true;
            break;
        }
        if (i > 0)
            vigil_jtext_put(&b, ",", 1);
        vigil_jtext_put(&b, t, len);
    }
    vigil_jtext_lit(&b, "]}");
    return vigil_jtext_take(&b);
}

/* The head of the record in parts (record_parts.c): the token names this
 * version of the whole record, so a head never stands for two. */
char *dormancy_room_head_json(const dormancy_room *r)
{
    vigil_jtext b = {0};
    char token[17];
    vigil_hex64(token, r->token);
    put_room(&b, r, HEAD_VERSION);
    text_i64(&b, ",\"np\":", r->n_personas);
    vigil_jtext_lit(&b, ",\"c\":");
    vigil_jtext_str(&b, token);
    vigil_jtext_put(&b, "}", 1);
    return vigil_jtext_take(&b);
}

/* A commit that changed the record names it with a new token: writing the
 * token over the old one in the head just written costs less than writing
 * the head again (put_room was a tenth of the intake thread's time, twice
 * per input). The token is the head's last field, 16 hex digits. */
bool dormancy_room_head_retoken(char *head, uint64_t token)
{
    static const char field[] = ",\"c\":\"";
    size_t n = head ? strlen(head) : 0;
    size_t flen = sizeof field - 1;
    if (n < flen + 18)
        return false;
    char *hex = head + n - 18; /* 16 digits, '"', '}' */
    if (memcmp(hex - flen, field, flen) != 0 || hex[16] != '"' || hex[17] != '}')
        return false;
    char digits[17];
    vigil_hex64(digits, token);
    memcpy(hex, digits, 16);
    return true;
}

/* ---- reading ---- */

/* The integers a record holds are times the core took from `now`, counts
 * and arrival orders: one out of range is damage and reads as absent, so
 * that no later sum (a deadline: quiet start + threshold; the next arrival
 * order) can overflow (vigil_record_int). A timed dormancy's end and the
 * deadlines come from inputs (`until` may be any time ahead) and are only
 * compared: get_i64_any. */
static int64_t get_i64_any(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return 0;
    return json_object_get_int64(v);
}

static int64_t get_i64(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !v ||
        (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)))
        return 0;
    return vigil_record_int(v, 0);
}

static bool get_bool(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && v && json_object_get_boolean(v);
}

static const char *get_str(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !v || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (names[i] && strcmp(s, names[i]) == 0)
            return i;
    return 0;
}

static uint64_t get_digest(json_object *o, const char *k)
{
    const char *s = get_str(o, k);
    return s ? (uint64_t)strtoull(s, NULL, 16) : 0;
}

static void persona_from_json(dormancy_persona *p, json_object *o)
{
    memset(p, 0, sizeof *p);
    vigil_utf8_copy(p->id, sizeof p->id, get_str(o, "id"));
    vigil_utf8_copy(p->name, sizeof p->name, get_str(o, "name"));
    if (dormancy_level_parse(get_str(o, "level"), &p->level) != 0)
        p->level = DORMANCY_ACTIVE;
    p->since = get_i64(o, "since");
    if (dormancy_trigger_parse(get_str(o, "trigger"), &p->trigger) != 0)
        p->trigger = DORMANCY_TRIGGER_NONE;
    vigil_utf8_copy(p->reason, sizeof p->reason, get_str(o, "reason"));
    p->cause = (dormancy_cause)name_index(get_str(o, "cause"), CAUSE_NAMES, 3);
    p->until = get_i64_any(o, "until");
    p->via_meta = get_bool(o, "meta");
    p->joined = get_bool(o, "joined");
    p->asked_quiet = get_i64(o, "asked");
    p->snoozed_until = get_i64(o, "snoozed_until");
    p->ai_only_done = get_i64(o, "ai_only_done");
    p->answered_human = get_i64(o, "answered_human");
    json_object *s;
    if (json_object_object_get_ex(o, "sugg", &s) && s && json_object_is_type(s, json_type_object)) {
        p->sugg.kind = (dormancy_suggest_kind)name_index(get_str(s, "kind"), SUGGEST_NAMES, 4);
        vigil_utf8_copy(p->sugg.id, sizeof p->sugg.id, get_str(s, "id"));
        p->sugg.at = get_i64(s, "at");
        p->sugg.default_at = get_i64(s, "default_at");
        vigil_utf8_copy(p->sugg.message_id, sizeof p->sugg.message_id, get_str(s, "message_id"));
        vigil_utf8_copy(p->sugg.reason, sizeof p->sugg.reason, get_str(s, "reason"));
        /* absent in records written before suggestions kept it: "" */
        vigil_utf8_copy(p->sugg.text, sizeof p->sugg.text, get_str(s, "text"));
    }
    vigil_utf8_copy(p->answer_in, sizeof p->answer_in, get_str(o, "answer_in"));
    json_object *c;
    if (json_object_object_get_ex(o, "cfg", &c) && c) {
        vigil_error err = {0};
        if (vigil_dormancy_overrides_read(c, &p->ov, &err) != 0)
            memset(&p->ov, 0, sizeof p->ov);
    }
    p->snap_digest = get_digest(o, "digest");
    p->ord = get_i64(o, "o");
}

static int add_timer(dormancy_room *r, const char *name, int64_t due)
{
    if (r->n_timers == r->cap_timers) {
        int cap = r->cap_timers ? r->cap_timers * 2 : 8;
        dormancy_timer *v = realloc(r->timers, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        r->timers = v;
        r->cap_timers = cap;
    }
    vigil_utf8_copy(r->timers[r->n_timers].name, sizeof r->timers[0].name, name);
    r->timers[r->n_timers].due = due;
    r->n_timers++;
    return 0;
}

/* recent_dt (written since the compact form) or recent_ts (an array, as
 * records written before hold it), with recent_kind. */
static void read_recent(dormancy_room *r, json_object *o)
{
    json_object *ts;
    const char *kind = get_str(o, "recent_kind");
    const char *dt = get_str(o, "recent_dt");
    if (dt && kind) {
        size_t nk = strlen(kind);
        size_t n = (size_t)vigil_times_parse(dt, r->recent_ts,
                                             nk < DORMANCY_MAX_RECENT ? (int)nk
                                                                      : DORMANCY_MAX_RECENT);
        for (size_t i = 0; i < n; i++)
            r->recent_human[i] = kind[i] == 'h';
        r->n_recent = (int)n;
        return;
    }
    if (!json_object_object_get_ex(o, "recent_ts", &ts) || !ts ||
        !json_object_is_type(ts, json_type_array) || !kind)
        return;
    size_t n = json_object_array_length(ts);
    size_t nk = strlen(kind);
    if (n > nk)
        n = nk;
    if (n > DORMANCY_MAX_RECENT)
        n = DORMANCY_MAX_RECENT;
    for (size_t i = 0; i < n; i++) {
        r->recent_ts[i] = vigil_record_int(json_object_array_get_idx(ts, i), 0);
        r->recent_human[i] = kind[i] == 'h';
    }
    r->n_recent = (int)n;
}

static void read_humans(dormancy_room *r, json_object *o)
{
    json_object *a;
    if (!json_object_object_get_ex(o, "humans", &a) || !a || !json_object_is_type(a, json_type_array))
        return;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; i < n && r->n_humans < DORMANCY_MAX_HUMAN_MSGS; i++) {
        json_object *e = json_object_array_get_idx(a, i);
        if (!e || !json_object_is_type(e, json_type_object))
            continue;
        dormancy_human_msg *m = dormancy_room_human(r, r->n_humans++);
        memset(m, 0, sizeof *m);
        vigil_utf8_copy(m->id, sizeof m->id, get_str(e, "id"));
        m->ts = get_i64(e, "ts");
        m->n_responders = (int)get_i64(e, "n");
        json_object *rs;
        if (json_object_object_get_ex(e, "responders", &rs) && rs &&
            json_object_is_type(rs, json_type_array)) {
            size_t k = json_object_array_length(rs);
            for (size_t j = 0; j < k && j < DORMANCY_MAX_RESPONDERS; j++)
                vigil_utf8_copy(m->responders[j], sizeof m->responders[j],
                        json_object_get_string(json_object_array_get_idx(rs, j)));
        }
    }
}

static void read_sessions(dormancy_room *r, json_object *o)
{
    json_object *a;
    if (!json_object_object_get_ex(o, "sessions", &a) || !a ||
        !json_object_is_type(a, json_type_array))
        return;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; i < n && r->n_sessions < DORMANCY_MAX_SESSIONS; i++) {
        json_object *e = json_object_array_get_idx(a, i);
        if (!e || !json_object_is_type(e, json_type_object))
            continue;
        dormancy_session *s = &r->sessions[r->n_sessions++];
        memset(s, 0, sizeof *s);
        vigil_utf8_copy(s->user, sizeof s->user, get_str(e, "user"));
        vigil_utf8_copy(s->session, sizeof s->session, get_str(e, "session"));
        s->status = (dormancy_presence_status)name_index(get_str(e, "status"), PRESENCE_NAMES, 3);
        s->last_activity = get_i64(e, "last_activity");
        s->heard = get_i64(e, "heard");
    }
}

/* One persona entry of either form, unless its id is missing or was read
 * already (the first one counts). 0, or -1 when out of memory. */
static int read_persona(dormancy_room *r, vigil_id_index *seen, json_object *e)
{
    const char *id = e && json_object_is_type(e, json_type_object) ? get_str(e, "id") : NULL;
    if (!id || r->n_personas >= DORMANCY_MAX_PERSONAS_LIMIT || vigil_id_index_add(seen, id, 1) != 0)
        return 0;
    dormancy_persona *p = room_persona_append(r, id, 0);
    if (!p)
        return -1;
    persona_from_json(p, e); /* a room being read has no roster digest yet */
    return 0;
}

static int by_ord(const void *a, const void *b)
{
    int64_t x = ((const dormancy_persona *)a)->ord, y = ((const dormancy_persona *)b)->ord;
    return x < y ? -1 : x > y;
}

/* Personas in arrival order ("o"), and the next one's. A record written
 * before the order was kept has none: its array order is the order. */
static void settle_order(dormancy_room *r, int64_t next_ord)
{
    bool any = false;
    for (int i = 0; i < r->n_personas && !any; i++)
        any = r->personas[i].ord != 0;
    if (!any)
        for (int i = 0; i < r->n_personas; i++)
            r->personas[i].ord = i;
    else
        qsort(r->personas, (size_t)r->n_personas, sizeof *r->personas, by_ord);
    r->next_ord = next_ord;
    for (int i = 0; i < r->n_personas; i++)
        if (r->personas[i].ord >= r->next_ord)
            r->next_ord = r->personas[i].ord + 1;
}

/* The personas of a record in parts, in arrival order. The parts read are
 * what the store holds, so their texts are kept (persona_texts.c) and the
 * next commit writes only the personas that change; a part that could not
 * be read makes the next commit write them all again. 0, or -1 (memory). */
static int read_parts(dormancy_room *r, json_object *parts, int64_t next_ord)
{
    vigil_id_index seen;
    size_t n = (size_t)json_object_object_length(parts);
    if (vigil_id_index_init(&seen, n) != 0)
        return -1;
    size_t read = 0;
    json_object_object_foreach(parts, name, e) {
        (void)name;
        int before = r->n_personas;
        if (read_persona(r, &seen, e) != 0) {
            vigil_id_index_free(&seen);
            return -1;
        }
        read += r->n_personas > before;
    }
    vigil_id_index_free(&seen);
    settle_order(r, next_ord);
    for (int i = 0; i < r->n_personas; i++) {
        size_t len;
        if (!dormancy_texts_persona(r->texts, i, &r->personas[i], &len))
            return -1;
    }
    r->n_stored = read == n ? r->n_personas : -1;
    r->members_changed = false; /* the parts read are the members stored */
    return 0;
}

dormancy_room *dormancy_room_from_json(const char *json, const char *room_id,
                                       char *err, size_t errlen)
{
    bool head_only = false;
    dormancy_room *r = dormancy_room_read(json, room_id, &head_only, err, errlen);
    if (!r && head_only)
        snprintf(err, errlen, "the head of a record in parts, without its parts");
    return r;
}

dormancy_room *dormancy_room_read(const char *json, const char *room_id, bool *head_only,
                                  char *err, size_t errlen)
{
    *head_only = false;
    json_object *o = json ? json_tokener_parse(json) : NULL;
    if (!o || !json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "state record is not a JSON object");
        json_object_put(o);
        return NULL;
    }
    const char *room = get_str(o, "room");
    if (!room || strcmp(room, room_id) != 0) {
        snprintf(err, errlen, "state record belongs to room '%s', not '%s'",
                 room ? room : "(none)", room_id);
        json_object_put(o);
        return NULL;
    }
    dormancy_room *r = dormancy_room_new(room_id);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        json_object_put(o);
        return NULL;
    }
    r->first_seen = get_i64(o, "first_seen");
    r->last_message = get_i64(o, "last_message");
    r->last_human = get_i64(o, "last_human");
    r->ai_only_since = get_i64(o, "ai_only_since");
    r->room_state_at = get_i64(o, "rsa");
    r->room_state_due = get_i64(o, "rsd");
    r->paused = get_bool(o, "paused");
    r->room_digest = get_digest(o, "digest");
    r->token = get_digest(o, "c");
    read_recent(r, o);
    read_humans(r, o);
    read_sessions(r, o);
    json_object *t;
    if (json_object_object_get_ex(o, "timers", &t) && t && json_object_is_type(t, json_type_object)) {
        json_object_object_foreach(t, name, due) {
            if (add_timer(r, name, json_object_get_int64(due)) != 0)
                goto oom;
        }
    }
    json_object *ps, *parts;
    if (json_object_object_get_ex(o, "parts", &parts) && parts &&
        json_object_is_type(parts, json_type_object)) {
        if (read_parts(r, parts, get_i64(o, "no")) != 0)
            goto oom;
    } else if (json_object_object_get_ex(o, "personas", &ps) && ps &&
               json_object_is_type(ps, json_type_array)) {
        /* one text (records written before parts): every persona is
         * written as a part by the next commit */
        size_t n = json_object_array_length(ps);
        vigil_id_index seen; /* the ids read so far: a record loads in O(n) */
        if (vigil_id_index_init(&seen, n) != 0)
            goto oom;
        for (size_t i = 0; i < n; i++) {
            if (read_persona(r, &seen, json_object_array_get_idx(ps, i)) != 0) {
                vigil_id_index_free(&seen);
                goto oom;
            }
        }
        vigil_id_index_free(&seen);
        settle_order(r, get_i64(o, "no"));
        r->n_stored = -1;
    } else if (get_i64(o, "np") > 0) {
        *head_only = true;
        snprintf(err, errlen, "the head of a record in parts, without its parts");
        json_object_put(o);
        dormancy_room_free(r);
        return NULL;
    }
    json_object_put(o);
    return r;
oom:
    snprintf(err, errlen, "out of memory");
    json_object_put(o);
    dormancy_room_free(r);
    return NULL;
}
