/* room_json.c - the room record as stored in Redis (short keys: it is
 * rewritten on every commit). A record that does not parse gives an empty
 * room: everything in it is rebuilt from retained topics and new traffic. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/times_text.h>
#include "jbuf.h"
#include "wake.h"

#define RECORD_VERSION 1

/* ---- reading ------------------------------------------------------- */

/* The record's numbers are times taken from `now`, durations and
 * counters: one out of range is damage and reads as absent (def), so that
 * no later count++, sum of tokens or time difference can overflow
 * (vigil_record_int). A persona's parameter count comes from its meta as
 * said and is only compared: get_i64_any. */
static int64_t get_i64_any(json_object *o, const char *k, int64_t def)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !v)
        return def;
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        return json_object_get_int64(v);
    return def;
}

static int64_t get_i64(json_object *o, const char *k, int64_t def)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !v)
        return def;
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        return vigil_record_int(v, def);
    return def;
}

static double get_dbl(json_object *o, const char *k, double def)
{
    json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !v)
        return def;
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        return json_object_get_double(v);
    return def;
}

static bool get_bool(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && v && json_object_get_boolean(v);
}

static void get_str(json_object *o, const char *k, char *out, size_t outlen)
{
    json_object *v;
    out[0] = '\0';
    if (json_object_object_get_ex(o, k, &v) && v && json_object_is_type(v, json_type_string))
        vigil_utf8_copy(out, outlen, json_object_get_string(v));
}

/* The times under key_d (the difference list) or, in records written
 * before it, the array under key_a. Returns how many (at most max). */
static int read_times(json_object *o, const char *key_d, const char *key_a, int64_t *t, int max)
{
    json_object *v;
    if (json_object_object_get_ex(o, key_d, &v) && json_object_is_type(v, json_type_string))
        return vigil_times_parse(json_object_get_string(v), t, max);
    if (!json_object_object_get_ex(o, key_a, &v) || !json_object_is_type(v, json_type_array))
        return -1;
    size_t n = json_object_array_length(v);
    if (n > (size_t)max)
        n = (size_t)max;
    for (size_t i = 0; i < n; i++)
        t[i] = vigil_record_int(json_object_array_get_idx(v, i), 0);
    return (int)n;
}

static void read_msg(json_object *o, wake_msg *m)
{
    get_str(o, "i", m->id, sizeof m->id);
    get_str(o, "s", m->sender, sizeof m->sender);
    m->type = (wake_sender)get_i64(o, "k", WAKE_SENDER_AI);
    if (m->type > WAKE_SENDER_SYSTEM)
        m->type = WAKE_SENDER_AI;
    m->ts = get_i64(o, "t", 0);
    get_str(o, "x", m->text, sizeof m->text);
}

static void read_persona(json_object *o, wake_persona *p)
{
    json_object *a;
    p->member = get_bool(o, "m");
    p->has_meta = get_bool(o, "hm");
    get_str(o, "n", p->name, sizeof p->name);
    get_str(o, "r", p->role, sizeof p->role);
    get_str(o, "mo", p->model, sizeof p->model);
    get_str(o, "md", p->mood, sizeof p->mood);
    get_str(o, "t", p->tier, sizeof p->tier);
    p->parameters = get_i64_any(o, "pa", -1);
    p->availability = get_dbl(o, "av", -1);
    if (json_object_object_get_ex(o, "d", &a) && json_object_is_type(a, json_type_array)) {
        size_t n = json_object_array_length(a);
        for (size_t i = 0; i < n && p->n_domains < WAKE_DOMAINS_MAX; i++) {
            json_object *s = json_object_array_get_idx(a, i);
            if (s && json_object_is_type(s, json_type_string))
                vigil_utf8_copy(p->domains[p->n_domains++], WAKE_SHORT_MAX + 1,
                                json_object_get_string(s));
        }
    }
    if (json_object_object_get_ex(o, "c", &a) && json_object_is_type(a, json_type_object)) {
        json_object_object_foreach(a, k, v) {
            if (p->n_conf >= WAKE_DOMAINS_MAX)
                break;
            vigil_utf8_copy(p->conf_domain[p->n_conf], WAKE_SHORT_MAX + 1, k);
            p->conf[p->n_conf++] = json_object_get_double(v);
        }
    }
    p->auto_wake_ov = (int)get_i64(o, "aw", -1);
    p->llm_wake_ov = (int)get_i64(o, "lw", -1);
    p->wake_conf_ov = get_dbl(o, "wc", -1);
    char lvl[32];
    get_str(o, "l", lvl, sizeof lvl);
    if (wake_level_parse(lvl, &p->level) != 0)
        p->level = WAKE_LEVEL_UNKNOWN;
    p->level_ts = get_i64(o, "lt", 0);
    get_str(o, "tr", p->trigger, sizeof p->trigger);
    json_object *mr;
    int nt = read_times(o, "mtd", "mt", p->msg_ts, WAKE_PMSG_MAX);
    if (nt >= 0 && json_object_object_get_ex(o, "mr", &mr) &&
        json_object_is_type(mr, json_type_array)) {
        size_t n = (size_t)nt;
        if (json_object_array_length(mr) < n)
            n = json_object_array_length(mr);
        for (size_t i = 0; i < n; i++)
            p->resp_ms[i] = vigil_record_int(json_object_array_get_idx(mr, i), -1);
        p->n_msgs = (int)n;
    }
    wake_persona_texts(p); /* stale when short of memory: written whole then */
    p->dormant_since = get_i64(o, "ds", 0);
    p->rate_per_hour = get_dbl(o, "rh", 0);
    p->sent_dormant = get_i64(o, "sd", 0);
}

static int read_room(wake_room *r, json_object *root)
{
    json_object *a;
    if (get_i64(root, "v", 0) != RECORD_VERSION)
        return -1;
    if (json_object_object_get_ex(root, "p", &a) && json_object_is_type(a, json_type_array)) {
        size_t n = json_object_array_length(a);
        if (n > 0 && wake_room_reserve(r, (int)n) != 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            json_object *po = json_object_array_get_idx(a, i);
            char id[WAKE_ID_MAX + 1];
            if (!po || !json_object_is_type(po, json_type_object))
                continue;
            get_str(po, "id", id, sizeof id);
            wake_persona *p = wake_room_add(r, id, 0);
            if (p)
                read_persona(po, p);
        }
    }
    json_object *tk;
    int nt = read_times(root, "td", "tt", r->times, WAKE_TIMES_MAX);
    if (nt >= 0 && json_object_object_get_ex(root, "tk", &tk) &&
        json_object_is_type(tk, json_type_string)) {
        size_t n = (size_t)nt;
        size_t kl = (size_t)json_object_get_string_len(tk);
        const char *ks = json_object_get_string(tk);
        if (kl < n)
            n = kl;
        for (size_t i = 0; i < n; i++)
            r->kinds[i] = ks[i] == 'h' ? WAKE_SENDER_HUMAN
                          : ks[i] == 's' ? WAKE_SENDER_SYSTEM : WAKE_SENDER_AI;
        r->n_times = (int)n;
    }
    if (json_object_object_get_ex(root, "tx", &a) && json_object_is_type(a, json_type_array)) {
        size_t n = json_object_array_length(a);
        r->texts_head = 0;
        for (size_t i = 0; i < n && r->n_texts < WAKE_TEXTS_MAX; i++) {
            json_object *m = json_object_array_get_idx(a, i);
            if (m && json_object_is_type(m, json_type_object))
                read_msg(m, &r->texts[r->n_texts++]);
        }
    }
    if (json_object_object_get_ex(root, "lh", &a) && json_object_is_type(a, json_type_object)) {
        r->has_human = true;
        read_msg(a, &r->last_human);
    }
    get_str(root, "ps", r->prev_sender, sizeof r->prev_sender);
    r->prev_ts = get_i64(root, "pt", 0);
    r->prev_other_ts = get_i64(root, "po", 0);
    r->msgs_total = get_i64(root, "mn", 0);
    r->ai_msgs = get_i64(root, "am", 0);
    r->ai_chars = get_i64(root, "ac", 0);
    r->tokens_wake = get_i64(root, "tw", 0);
    r->tokens_autopilot = get_i64(root, "ta", 0);
    r->evaluations = get_i64(root, "ev", 0);
    r->llm_evaluations = get_i64(root, "le", 0);
    r->autopilot_runs = get_i64(root, "ar", 0);
    r->saved_msgs = get_dbl(root, "sm", 0);
    r->ap_due = get_i64(root, "ad", 0);
    r->ap_last = get_i64(root, "al", 0);
    r->ap_seen = get_i64(root, "as", 0);
    r->ap_velocity = get_dbl(root, "avl", 0);
    r->ap_ratio = get_dbl(root, "art", 0);
    return 0;
}

wake_room *wake_room_from_json(const char *room_id, const char *json, bool *corrupt)
{
    if (corrupt)
        *corrupt = false;
    wake_room *r = wake_room_new(room_id);
    if (!r || !json || !json[0])
        return r;
    json_object *root = json_tokener_parse(json);
    if (!root || !json_object_is_type(root, json_type_object) || read_room(r, root) != 0) {
        wake_room_free(r);
        r = wake_room_new(room_id);
        if (corrupt)
            *corrupt = true;
    }
    json_object_put(root);
    if (r) { /* stale when short of memory: the record is then written whole */
        vigil_times_keep(&r->times_text, r->times, r->n_times);
        wake_room_texts_text(r);
    }
    return r;
}

/* ---- writing ------------------------------------------------------- */

/* "k":v unless v is empty or skip; k is a literal (JB_KEY), so these are
 * macros over inline functions that take it quoted. */
VIGIL_JTEXT_INLINE void w_str_q(jbuf *b, const char *q, size_t qlen, const char *v)
{
    if (v && v[0]) {
        jb_key_quoted(b, q, qlen);
        jb_str(b, v);
    }
}

VIGIL_JTEXT_INLINE void w_i64_q(jbuf *b, const char *q, size_t qlen, int64_t v, int64_t skip)
{
    if (v != skip) {
        jb_key_quoted(b, q, qlen);
        jb_i64(b, v);
    }
}

VIGIL_JTEXT_INLINE void w_dbl_q(jbuf *b, const char *q, size_t qlen, double v, double skip)
{
    if (v != skip) {
        jb_key_quoted(b, q, qlen);
        jb_dbl(b, v);
    }
}

#define w_str(b, k, v) w_str_q((b), JB_QUOTED(k), sizeof JB_QUOTED(k) - 1, (v))
#define w_i64(b, k, v, skip) w_i64_q((b), JB_QUOTED(k), sizeof JB_QUOTED(k) - 1, (v), (skip))
#define w_dbl(b, k, v, skip) w_dbl_q((b), JB_QUOTED(k), sizeof JB_QUOTED(k) - 1, (v), (skip))

/* n times as one string "t0,d1,d2,...": the first time, then each one's
 * difference to the one before (a few digits instead of thirteen, one
 * value instead of up to 2,000; records written before, with an array
 * under another key, still read); from the kept text of the differences
 * when there is one that follows t (vigil/times_text.h). */
static void w_times(jbuf *b, const char *k, const vigil_tlist *kept, const int64_t *t, int n)
{
    jb_key(b, k);
    vigil_jtext_ch(&b->t, '"');
    vigil_times_put(&b->t, kept, t, n);
    vigil_jtext_ch(&b->t, '"');
    b->comma = true; /* a value was written */
}

/* [v0,v1,...] written in place with one reservation: a persona's
 * response times (mr), one per message kept (up to WAKE_PMSG_MAX), when
 * their kept text is stale (w_responses), and in the debug check. */
static void w_i64_list(jbuf *b, const int64_t *v, int n)
{
    jb_open(b, '[');
    char *s = vigil_jtext_room(&b->t, (size_t)n * (VIGIL_I64_TEXT_MAX + 1));
    if (s) {
        char *p = s;
        for (int i = 0; i < n; i++) {
            if (i)
                *p++ = ',';
            p += vigil_i64_text(p, v[i]);
        }
        vigil_jtext_advance(&b->t, (size_t)(p - s));
    }
    jb_close(b, ']');
}

static void write_msg(jbuf *b, const wake_msg *m)
{
    jb_open(b, '{');
    w_str(b, "i", m->id);
    w_str(b, "s", m->sender);
    w_i64(b, "k", (int64_t)m->type, -1);
    w_i64(b, "t", m->ts, -1);
    w_str(b, "x", m->text);
    jb_close(b, '}');
}

/* A message of tx written into t, as write_msg writes it in the record. */
static void msg_entry(vigil_jtext *t, const wake_msg *m)
{
    jbuf b = { .t = *t, .comma = false };
    write_msg(&b, m);
    *t = b.t;
}

void wake_room_texts_text(wake_room *r)
{
    vigil_tlist_reset(&r->texts_text, ',');
    for (int i = 0; i < r->n_texts; i++) {
        msg_entry(vigil_tlist_begin(&r->texts_text), wake_room_text(r, i));
        vigil_tlist_end(&r->texts_text);
    }
}

void wake_persona_texts(wake_persona *p)
{
    vigil_times_keep(&p->msg_text, p->msg_ts, p->n_msgs);
    vigil_tlist_reset(&p->resp_text, ',');
    for (int i = 0; i < p->n_msgs; i++) {
        vigil_jtext_i64(vigil_tlist_begin(&p->resp_text), p->resp_ms[i]);
        vigil_tlist_end(&p->resp_text);
    }
}

void wake_persona_texts_push(wake_persona *p)
{
    vigil_times_kept_push(&p->msg_text, p->msg_ts, p->n_msgs);
    vigil_jtext_i64(vigil_tlist_begin(&p->resp_text), p->resp_ms[p->n_msgs - 1]);
    vigil_tlist_end(&p->resp_text);
}

void wake_persona_texts_free(wake_persona *p)
{
    vigil_tlist_free(&p->msg_text);
    vigil_tlist_free(&p->resp_text);
}

void wake_room_texts_text_push(wake_room *r, const wake_msg *m)
{
    msg_entry(vigil_tlist_begin(&r->texts_text), m);
    vigil_tlist_end(&r->texts_text);
}

/* tx: the kept text of the messages; written message by message when
 * that text is stale. */
static void write_room_texts(jbuf *b, const wake_room *r)
{
    size_t len;
    const char *s = vigil_tlist_text(&r->texts_text, &len);
    JB_KEY(b, "tx");
    jb_open(b, '[');
    if (s && vigil_tlist_count(&r->texts_text) == r->n_texts) {
#ifndef NDEBUG
        /* debug builds (the tests' sanitizer build) check every kept text
         * against the messages written afresh */
        jbuf whole;
        jb_init(&whole);
        for (int i = 0; i < r->n_texts; i++)
            write_msg(&whole, wake_room_text(r, i));
        assert(whole.t.oom ||
               (whole.t.n == len && (len == 0 || memcmp(whole.t.s, s, len) == 0)));
        free(whole.t.s);
#endif
        vigil_jtext_put(&b->t, s, len);
    } else {
        for (int i = 0; i < r->n_texts; i++)
            write_msg(b, wake_room_text(r, i));
    }
    jb_close(b, ']');
}

/* mr: the kept text of the response times, or written number by number
 * when it is stale. */
static void w_responses(jbuf *b, const wake_persona *p)
{
    size_t len;
    const char *s = vigil_tlist_text(&p->resp_text, &len);
    if (!s || vigil_tlist_count(&p->resp_text) != p->n_msgs) {
        w_i64_list(b, p->resp_ms, p->n_msgs);
        return;
    }
#ifndef NDEBUG
    /* debug builds (the tests' sanitizer build) check the kept text */
    jbuf whole;
    jb_init(&whole);
    w_i64_list(&whole, p->resp_ms, p->n_msgs);
    assert(whole.t.oom ||
           (whole.t.n == len + 2 && memcmp(whole.t.s + 1, s, len) == 0));
    free(whole.t.s);
#endif
    jb_open(b, '[');
    vigil_jtext_put(&b->t, s, len);
    jb_close(b, ']');
}

static void write_persona(jbuf *b, const wake_persona *p)
{
    jb_open(b, '{');
    w_str(b, "id", p->id);
    if (p->member) {
        JB_KEY(b, "m");
        jb_bool(b, true);
    }
    if (p->has_meta) {
        JB_KEY(b, "hm");
        jb_bool(b, true);
    }
    w_str(b, "n", p->name);
    w_str(b, "r", p->role);
    w_str(b, "mo", p->model);
    w_str(b, "md", p->mood);
    w_str(b, "t", p->tier);
    w_i64(b, "pa", p->parameters, -1);
    w_dbl(b, "av", p->availability, -1);
    if (p->n_domains > 0) {
        JB_KEY(b, "d");
        jb_open(b, '[');
        for (int i = 0; i < p->n_domains; i++)
            jb_str(b, p->domains[i]);
        jb_close(b, ']');
    }
    if (p->n_conf > 0) {
        JB_KEY(b, "c");
        jb_open(b, '{');
        for (int i = 0; i < p->n_conf; i++) {
            jb_key(b, p->conf_domain[i]);
            jb_dbl(b, p->conf[i]);
        }
        jb_close(b, '}');
    }
    w_i64(b, "aw", p->auto_wake_ov, -1);
    w_i64(b, "lw", p->llm_wake_ov, -1);
    if (p->wake_conf_ov >= 0)
        w_dbl(b, "wc", p->wake_conf_ov, -2);
    if (p->level != WAKE_LEVEL_UNKNOWN)
        w_str(b, "l", wake_level_name(p->level));
    w_i64(b, "lt", p->level_ts, 0);
    w_str(b, "tr", p->trigger);
    if (p->n_msgs > 0) {
        w_times(b, "mtd", &p->msg_text, p->msg_ts, p->n_msgs);
        JB_KEY(b, "mr");
        w_responses(b, p);
    }
    w_i64(b, "ds", p->dormant_since, 0);
    w_dbl(b, "rh", p->rate_per_hour, 0);
    w_i64(b, "sd", p->sent_dormant, 0);
    jb_close(b, '}');
}

char *wake_room_to_json(const wake_room *r)
{
    jbuf b;
    jb_init(&b);
    jb_open(&b, '{');
    w_i64(&b, "v", RECORD_VERSION, -1);
    w_str(&b, "room", r->id);
    JB_KEY(&b, "p");
    jb_open(&b, '[');
    for (int i = 0; i < r->n_personas; i++)
        write_persona(&b, &r->personas[i]);
    jb_close(&b, ']');
    if (r->n_times > 0) {
        w_times(&b, "td", &r->times_text, r->times, r->n_times);
        JB_KEY(&b, "tk");
        char *tk = jb_str_room(&b, (size_t)r->n_times);
        if (tk) {
            for (int i = 0; i < r->n_times; i++)
                tk[i] = r->kinds[i] == WAKE_SENDER_HUMAN ? 'h'
                        : r->kinds[i] == WAKE_SENDER_SYSTEM ? 's' : 'a';
            jb_str_end(&b, tk, (size_t)r->n_times);
        }
    }
    if (r->n_texts > 0)
        write_room_texts(&b, r);
    if (r->has_human) {
        JB_KEY(&b, "lh");
        write_msg(&b, &r->last_human);
    }
    w_str(&b, "ps", r->prev_sender);
    w_i64(&b, "pt", r->prev_ts, 0);
    w_i64(&b, "po", r->prev_other_ts, 0);
    w_i64(&b, "mn", r->msgs_total, 0);
    w_i64(&b, "am", r->ai_msgs, 0);
    w_i64(&b, "ac", r->ai_chars, 0);
    w_i64(&b, "tw", r->tokens_wake, 0);
    w_i64(&b, "ta", r->tokens_autopilot, 0);
    w_i64(&b, "ev", r->evaluations, 0);
    w_i64(&b, "le", r->llm_evaluations, 0);
    w_i64(&b, "ar", r->autopilot_runs, 0);
    w_dbl(&b, "sm", r->saved_msgs, 0);
    w_i64(&b, "ad", r->ap_due, 0);
    w_i64(&b, "al", r->ap_last, 0);
    w_i64(&b, "as", r->ap_seen, 0);
    w_dbl(&b, "avl", r->ap_velocity, 0);
    w_dbl(&b, "art", r->ap_ratio, 0);
    jb_close(&b, '}');
    return jb_take(&b);
}
