/* room.c - the room record as JSON, and its bounded memory of recent
 * message ids and their chain depths.
 *
 *   {"room", "created", "count", "last_activity", "last_sender",
 *    "paused", "paused_by", "paused_at", "queued", "stopped",
 *    "recent": "<message id> <depth> <message id> <depth> ...",
 *    "remembered": <ids the memory has taken>,
 *    "notified": {"<persona>": <depth>, ...},
 *    "notified_at": {"<persona>": <position>, ...}}
 *
 * `recent` is one string, oldest first, rather than a JSON object: parsing
 * and writing hundreds of small JSON members on every message was most of
 * the router's CPU time; message ids never contain a space. `notified`
 * (at most CHAT_NOTIFIED_MAX members, oldest notification first) is left
 * out while empty; a record without it (an earlier version's) has none.
 * `notified_at` holds the memory position of the message behind each
 * notification (chat.h) apart from `notified`, so a reader that predates
 * it still reads the depths; a persona missing from it (or a record
 * without `remembered`, whose positions count from the ids it holds) has
 * an unknown position.
 *
 * A deleted room leaves a tombstone {"deleted": ts, "by": user}: the state
 * record itself stays (with the room's processed input ids beside it) so
 * that a late redelivery of an old message is still recognised. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/json.h>
#include <vigil/jtext.h>
#include <vigil/text.h>
#include "chat.h"
#include <vigil/str.h>

chat_room *chat_room_new(const char *room)
{
    chat_room *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->room, sizeof r->room, "%s", room ? room : "");
    vigil_tlist_init(&r->recent_text, ' ');
    return r;
}

void chat_room_free(chat_room *r)
{
    if (!r)
        return;
    free(r->recent);
    vigil_tlist_free(&r->recent_text);
    free(r);
}

/* Entry i of the ring, 0 the oldest. */
static chat_recent *recent_at(const chat_room *r, int i)
{
    int k = r->recent_head + i;
    return &r->recent[k < r->cap_recent ? k : k - r->cap_recent];
}

/* The ring's entries, oldest first, in a new array of cap >= n_recent
 * entries (malloc'd; NULL without memory). */
static chat_recent *recent_linear(const chat_room *r, int cap)
{
    chat_recent *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return NULL;
    int first = r->cap_recent - r->recent_head; /* entries before the wrap */
    if (first > r->n_recent)
        first = r->n_recent;
    if (first > 0)
        memcpy(v, r->recent + r->recent_head, (size_t)first * sizeof *v);
    if (r->n_recent > first)
        memcpy(v + first, r->recent, (size_t)(r->n_recent - first) * sizeof *v);
    return v;
}

chat_room *chat_room_clone(const chat_room *src)
{
    chat_room *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    *r = *src;
    r->recent = NULL;
    r->cap_recent = 0;
    vigil_tlist_init(&r->recent_text, ' ');
    vigil_tlist_copy(&r->recent_text, &src->recent_text); /* stale when short of memory */
    r->recent_head = 0;
    if (src->n_recent > 0) {
        r->recent = recent_linear(src, src->n_recent);
        if (!r->recent) {
            vigil_tlist_free(&r->recent_text);
            free(r);
            return NULL;
        }
        r->cap_recent = src->n_recent;
    }
    return r;
}

size_t chat_room_bytes(const chat_room *r)
{
    return sizeof *r + (size_t)r->cap_recent * sizeof *r->recent +
           vigil_tlist_bytes(&r->recent_text);
}

/* The record's numbers are times taken from `now` and counters: one out
 * of range is damage and reads as absent, so that the next message's
 * count++ (and queued++, stopped++) cannot overflow (vigil_record_int). */
static int64_t get_i64(json_object *o, const char *k)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v))
        return 0;
    return vigil_record_int(v, 0);
}

static void get_str(json_object *o, const char *k, char *out, size_t outlen)
{
    json_object *v;
    out[0] = '\0';
    if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string))
        snprintf(out, outlen, "%s", json_object_get_string(v));
}

/* One entry of "id depth id depth ...", escaped as inside the JSON
 * string (message ids are plain text: escaped like any string). */
static void put_entry(vigil_jtext *t, const chat_recent *e)
{
    vigil_jtext_esc(t, e->id);
    vigil_jtext_put(t, " ", 1);
    vigil_jtext_i64(t, e->depth);
}

/* recent_text written again from every entry: after a read, or when it
 * could not follow (memory ran short). */
static void recent_text_rebuild(chat_room *r)
{
    vigil_tlist_reset(&r->recent_text, ' ');
    for (int i = 0; i < r->n_recent; i++) {
        put_entry(vigil_tlist_begin(&r->recent_text), recent_at(r, i));
        vigil_tlist_end(&r->recent_text);
    }
}

/* Reads "id depth id depth ..." into r->recent. */
static int parse_recent(chat_room *r, const char *s)
{
    int n = 0;
    for (const char *p = s; *p; p++)
        if (*p == ' ')
            n++;
    int pairs = (n + 1) / 2;
    if (pairs == 0)
        return 0;
    r->recent = calloc((size_t)pairs, sizeof *r->recent);
    if (!r->recent)
        return -1;
    r->cap_recent = pairs;
    const char *p = s;
    while (*p && r->n_recent < pairs) {
        const char *sp = strchr(p, ' ');
        if (!sp)
            break;
        size_t len = (size_t)(sp - p);
        char *end;
        long long d = strtoll(sp + 1, &end, 10);
        if (len >= 1 && len <= CHAT_EVID_MAX && end != sp + 1) {
            chat_recent *e = &r->recent[r->n_recent++];
            memcpy(e->id, p, len);
            e->id[len] = '\0';
            e->depth = d;
        }
        p = *end == ' ' ? end + 1 : end;
        if (end == sp + 1)
            break; /* malformed: keep what was read */
    }
    return 0;
}

/* `notified` and its positions in `notified_at`: a member that is not a
 * persona id with a depth is skipped; a position that is not one a
 * message of this record can have is unknown. */
static void parse_notified(chat_room *r, json_object *o)
{
    json_object *notified, *ats, *at;
    if (!json_object_object_get_ex(o, "notified", &notified) ||
        !json_object_is_type(notified, json_type_object))
        return;
    if (!json_object_object_get_ex(o, "notified_at", &ats) ||
        !json_object_is_type(ats, json_type_object))
        ats = NULL;
    json_object_object_foreach(notified, persona, depth)
    {
        if (!vigil_text_is_id(persona) || !json_object_is_type(depth, json_type_int) ||
            json_object_get_int64(depth) < 0)
            continue;
        int64_t pos = -1;
        if (ats && json_object_object_get_ex(ats, persona, &at) &&
            json_object_is_type(at, json_type_int))
            pos = vigil_record_int(at, -1);
        if (pos > r->remembered)
            pos = -1; /* at most the position the next message takes */
        chat_room_note_notified(r, persona, json_object_get_int64(depth), pos < 0 ? -1 : pos);
    }
}

chat_room *chat_room_from_json(const char *room, const char *json, char *err, size_t errlen)
{
    chat_room *r = chat_room_new(room);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!json)
        return r;
    json_object *o = json_tokener_parse(json);
    if (!o || !json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "room record is not a JSON object");
        json_object_put(o);
        chat_room_free(r);
        return NULL;
    }
    json_object *v;
    if (json_object_object_get_ex(o, "deleted", &v)) {
        json_object_put(o);
        r->deleted = true; /* tombstone: the room does not exist */
        return r;
    }
    r->exists = true;
    r->created = get_i64(o, "created");
    r->count = get_i64(o, "count");
    r->last_activity = get_i64(o, "last_activity");
    get_str(o, "last_sender", r->last_sender, sizeof r->last_sender);
    r->paused = json_object_object_get_ex(o, "paused", &v) && json_object_get_boolean(v);
    get_str(o, "paused_by", r->paused_by, sizeof r->paused_by);
    r->paused_at = get_i64(o, "paused_at");
    r->queued = get_i64(o, "queued");
    r->stopped = get_i64(o, "stopped");
    json_object *recent;
    if (json_object_object_get_ex(o, "recent", &recent) &&
        json_object_is_type(recent, json_type_string) &&
        parse_recent(r, json_object_get_string(recent)) != 0) {
        snprintf(err, errlen, "out of memory");
        json_object_put(o);
        chat_room_free(r);
        return NULL;
    }
    r->remembered = get_i64(o, "remembered");
    if (r->remembered < r->n_recent)
        r->remembered = r->n_recent; /* an earlier version's record (or damage) */
    parse_notified(r, o);
    json_object_put(o);
    recent_text_rebuild(r); /* stale when short of memory: written whole then */
    return r;
}

/* Adds a member with a new reference; returns -1 if the value is NULL
 * (allocation failure), after which the caller abandons the object. */
static int add(json_object *o, const char *k, json_object *v)
{
    if (!v)
        return -1;
    json_object_object_add(o, k, v);
    return 0;
}

static char *dump(json_object *o)
{
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE);
    return s ? strdup(s) : NULL;
}

/* "id depth id depth ..." as one JSON string: the kept text, or written
 * entry by entry when it is stale. */
static void put_recent(vigil_jtext *b, const chat_room *r)
{
    size_t len;
    const char *s = vigil_tlist_text(&r->recent_text, &len);
    vigil_jtext_put(b, "\"", 1);
    if (s && vigil_tlist_count(&r->recent_text) == r->n_recent) {
#ifndef NDEBUG
        /* debug builds (the tests' sanitizer build) check every kept text
         * against the entries written afresh */
        vigil_jtext whole = {0};
        for (int i = 0; i < r->n_recent; i++) {
            if (i)
                vigil_jtext_put(&whole, " ", 1);
            put_entry(&whole, recent_at(r, i));
        }
        assert(whole.oom || (whole.n == len && (len == 0 || memcmp(whole.s, s, len) == 0)));
        free(whole.s);
#endif
        vigil_jtext_put(b, s, len);
    } else {
        for (int i = 0; i < r->n_recent; i++) {
            if (i)
                vigil_jtext_put(b, " ", 1);
            put_entry(b, recent_at(r, i));
        }
    }
    vigil_jtext_put(b, "\"", 1);
}

/* ,"k": for a key named as a literal: one copy in place of a constant
 * length (vigil_jtext_put), not a call, a measure and an escaping pass */
#define put_key(b, k) vigil_jtext_lit((b), ",\"" k "\":")
#define put_i64(b, k, v) (put_key((b), k), vigil_jtext_i64((b), (v)))

/* Written as text, in the order and the bytes json-c printed it: the
 * record is rewritten on every message. */
char *chat_room_to_json(const chat_room *r)
{
    vigil_jtext b = {0};
    vigil_jtext_lit(&b, "{\"room\":");
    vigil_jtext_str(&b, r->room);
    put_i64(&b, "created", r->created);
    put_i64(&b, "count", r->count);
    put_i64(&b, "last_activity", r->last_activity);
    put_key(&b, "last_sender");
    vigil_jtext_str(&b, r->last_sender);
    put_key(&b, "paused");
    vigil_jtext_lit(&b, r->paused ? "true" : "false");
    if (r->paused) {
        put_key(&b, "paused_by");
        vigil_jtext_str(&b, r->paused_by);
        put_i64(&b, "paused_at", r->paused_at);
    }
    put_i64(&b, "queued", r->queued);
    put_i64(&b, "stopped", r->stopped);
    put_key(&b, "recent");
    put_recent(&b, r);
    put_i64(&b, "remembered", r->remembered);
    if (r->n_notified > 0) {
        put_key(&b, "notified");
        for (int i = 0; i < r->n_notified; i++) {
            vigil_jtext_ch(&b, i ? ',' : '{');
            vigil_jtext_str(&b, r->notified[i].persona);
            vigil_jtext_ch(&b, ':');
            vigil_jtext_i64(&b, r->notified[i].depth);
        }
        vigil_jtext_ch(&b, '}');
        int known = 0;
        for (int i = 0; i < r->n_notified; i++) {
            if (r->notified[i].at < 0)
                continue;
            if (known++ == 0)
                put_key(&b, "notified_at");
            vigil_jtext_ch(&b, known > 1 ? ',' : '{');
            vigil_jtext_str(&b, r->notified[i].persona);
            vigil_jtext_ch(&b, ':');
            vigil_jtext_i64(&b, r->notified[i].at);
        }
        if (known > 0)
            vigil_jtext_ch(&b, '}');
    }
    vigil_jtext_ch(&b, '}');
    return vigil_jtext_take(&b);
}

char *chat_tombstone_json(int64_t now, const char *by)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    int rc = add(o, "deleted", json_object_new_int64(now));
    if (by)
        rc |= add(o, "by", json_object_new_string(by));
    char *s = rc == 0 ? dump(o) : NULL;
    json_object_put(o);
    return s;
}

int64_t chat_room_recall_at(const chat_room *r, const char *id, int64_t *at)
{
    if (!id)
        return -1;
    /* newest first: a reply usually answers one of the last messages */
    for (int i = r->n_recent - 1; i >= 0; i--) {
        const chat_recent *e = recent_at(r, i);
        if (strcmp(e->id, id) == 0) {
            if (at)
                *at = r->remembered - r->n_recent + i;
            return e->depth;
        }
    }
    return -1;
}

int64_t chat_room_recall(const chat_room *r, const char *id)
{
    return chat_room_recall_at(r, id, NULL);
}

static int notified_index(const chat_room *r, const char *persona)
{
    for (int i = 0; i < r->n_notified; i++)
        if (strcasecmp(r->notified[i].persona, persona) == 0)
            return i;
    return -1;
}

const chat_notified *chat_room_notified(const chat_room *r, const char *persona)
{
    int i = persona ? notified_index(r, persona) : -1;
    return i >= 0 ? &r->notified[i] : NULL;
}

int64_t chat_room_notified_depth(const chat_room *r, const char *persona)
{
    const chat_notified *n = chat_room_notified(r, persona);
    return n ? n->depth : -1;
}

/* The list stays ordered by notification, oldest first: the entry noted
 * moves to the end, and a full list forgets its first (the persona
 * notified longest ago). */
void chat_room_note_notified(chat_room *r, const char *persona, int64_t depth, int64_t at)
{
    if (!persona || strlen(persona) > CHAT_ID_MAX)
        return;
    int i = notified_index(r, persona);
    if (i < 0 && r->n_notified == CHAT_NOTIFIED_MAX)
        i = 0;
    if (i >= 0) {
        memmove(&r->notified[i], &r->notified[i + 1],
                (size_t)(r->n_notified - i - 1) * sizeof r->notified[0]);
        r->n_notified--;
    }
    chat_notified *e = &r->notified[r->n_notified++];
    vigil_concat(e->persona, sizeof e->persona, persona, (const char *)NULL);
    e->depth = depth;
    e->at = at;
}

int chat_room_remember(chat_room *r, const char *id, int64_t depth, int memory)
{
    /* an id with a space (the envelope allows one, the contract does not)
     * cannot be kept in the space-separated list: its replies count as
     * answering nothing known */
    if (!id || memory <= 0 || strlen(id) > CHAT_EVID_MAX || strchr(id, ' '))
        return 0;
    /* drop the oldest entries beyond memory - 1, then append: the ring's
     * head moves on (a full room moved its 256 entries, 37 KB, each time) */
    int keep = r->n_recent < memory ? r->n_recent : memory - 1;
    int drop = r->n_recent - keep;
    if (drop > 0) {
        r->recent_head = (int)(((long)r->recent_head + drop) % r->cap_recent);
        r->n_recent = keep;
    }
    if (r->n_recent == r->cap_recent) {
        int cap = r->cap_recent ? r->cap_recent * 2 : 16;
        if (cap > memory)
            cap = memory;
        if (cap <= r->n_recent)
            cap = r->n_recent + 1;
        chat_recent *v = recent_linear(r, cap);
        if (!v)
            return -1;
        free(r->recent);
        r->recent = v;
        r->cap_recent = cap;
        r->recent_head = 0;
    }
    chat_recent *e = recent_at(r, r->n_recent++);
    r->remembered++;
    vigil_concat(e->id, sizeof e->id, id, (const char *)NULL);
    e->depth = depth;
    /* the text follows: the same drop, the same entry at the end */
    vigil_tlist *t = &r->recent_text;
    if (vigil_tlist_count(t) == r->n_recent - 1 + drop) {
        vigil_tlist_drop(t, drop);
        put_entry(vigil_tlist_begin(t), e);
        vigil_tlist_end(t);
    } else {
        recent_text_rebuild(r);
    }
    return 0;
}
