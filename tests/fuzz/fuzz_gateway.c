/* fuzz_gateway.c - presence-gateway's decision core: what a browser's
 * HTTP requests carry (bodies, ?topics=, Last-Event-ID, the bearer token
 * and cookie, Origin) and the records the gateway keeps (presence per
 * user, pending questions and present humans beside the log).
 *
 * Input: parts separated by a line holding only "---". The first byte of
 * the first part chooses what is driven:
 *  - 'P': part 1 the user's stored presence record (empty: none), part 2
 *    a POST /api/presence body: gw_req_presence, then gw_presence_beat and
 *    gw_presence_tick on the record it wrote, later;
 *  - 'M': part 1 a POST body given to gw_req_message, gw_req_answer and
 *    gw_req_suggestion;
 *  - 'T': part 1 a ?topics= spec, part 2 a topic, part 3 its payload,
 *    part 4 a Last-Event-ID: filters, matching, event names, log entries,
 *    SSE frames and positions;
 *  - 'K': part 1 a kept record (empty: none), then topic and payload
 *    pairs applied in order (an empty payload: the record's timer);
 *  - 'A': part 1 a token file, part 2 an Authorization header, part 3 a
 *    cookie, part 4 an Origin, part 5 a Host.
 * The clock is the next 8 bytes of part 0 when present.
 * What must hold: a refusal says why (BAD with an error, a limit only
 * with BAD); everything written (states, payloads, kept entries) is JSON;
 * statuses are active, idle or away; a log entry splits back into its
 * topic; a position formats back to itself; filter matching agrees with
 * a plain level-by-level reference on every filter ?topics= accepts. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 16
#define T0 1700000000000LL

/* The body as the shell takes it: strict JSON, one object. */
static json_object *body_object(const char *s, size_t len)
{
    json_tokener *t = json_tokener_new();
    if (!t)
        return NULL;
    json_tokener_set_flags(t, JSON_TOKENER_STRICT);
    json_object *o = json_tokener_parse_ex(t, s, (int)len);
    bool whole = json_tokener_get_error(t) == json_tokener_success
                 && json_tokener_get_parse_end(t) == len;
    json_tokener_free(t);
    if (!o || !whole || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* A stored log entry "topic\nevent\ndata": data is JSON, topic the one named. */
static void must_be_entry(const char *e, const char *topic)
{
    char t[GW_TOPIC_MAX + 1], ev[128];
    const char *d;
    if (gw_log_entry_split(e, t, sizeof t, ev, sizeof ev, &d) != 0 || strcmp(t, topic) != 0)
        abort();
    fuzz_json_reads(d);
}

static void check_refusal(gw_req_result r, const char *limit, const char *err)
{
    if (r == GW_REQ_OK)
        return;
    if (r != GW_REQ_BAD && r != GW_REQ_FORBIDDEN)
        abort();
    if (err[0] == '\0')
        abort(); /* a refusal says why */
    if (limit && r != GW_REQ_BAD)
        abort();
}

static void check_presence(const gw_presence_out *o)
{
    fuzz_json_reads(o->new_state);
    for (int i = 0; i < o->nchanges; i++)
        if (o->changes[i].status < GW_ACTIVE || o->changes[i].status > GW_AWAY)
            abort();
    if (o->nforgotten < 0 || o->nforgotten > GW_MAX_SESSIONS)
        abort();
}

static void fuzz_presence(const fuzz_strs *ps, int64_t now)
{
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    json_object *body = body_object(ps->p[2], ps->len[2]);
    if (!body)
        return;
    const char *rooms[GW_MAX_ROOMS];
    gw_beat b;
    const char *limit = NULL;
    char err[200] = "";
    gw_req_result r = gw_req_presence(body, "alice", &c, now, &b, rooms, GW_MAX_ROOMS, &limit,
                                      err, sizeof err);
    check_refusal(r, limit, err);
    if (r == GW_REQ_OK) {
        if (b.nrooms < 0 || b.nrooms > GW_MAX_ROOMS || b.claimed < GW_ACTIVE
            || b.claimed > GW_AWAY)
            abort();
        const char *state = ps->len[1] ? ps->p[1] : NULL;
        gw_presence_out o;
        gw_presence_result pr = gw_presence_beat(&c, state, &b, now, &o);
        if (pr == GW_PRESENCE_OK) {
            check_presence(&o);
            int64_t due = o.next_due > now ? o.next_due : now + c.idle_ms;
            gw_presence_out t;
            if (gw_presence_tick(&c, "alice", o.new_state, due, &t) != GW_PRESENCE_OK)
                abort(); /* the record it wrote is ours */
            check_presence(&t);
            for (int i = 0; i < t.nchanges; i++) {
                json_object *p = gw_presence_payload("alice", &t.changes[i], due);
                fuzz_json_reads(json_object_to_json_string(p));
                json_object_put(p);
            }
            gw_presence_out_free(&t);
            /* the same tab beating again a refresh interval later */
            gw_presence_out again;
            int64_t later = now + gw_presence_refresh_ms(&c) + 1;
            if (gw_presence_beat(&c, o.new_state, &b, later, &again) != GW_PRESENCE_OK)
                abort();
            check_presence(&again);
            gw_presence_out_free(&again);
            gw_presence_out_free(&o);
        } else if (pr != GW_PRESENCE_BAD_STATE) {
            abort();
        }
        if (state) {
            gw_presence_out t;
            if (gw_presence_tick(&c, "alice", state, now, &t) == GW_PRESENCE_OK) {
                check_presence(&t);
                gw_presence_out_free(&t);
            }
        }
    }
    json_object_put(body);
}

static void check_payload(gw_req_result r, json_object *payload)
{
    if (r != GW_REQ_OK)
        return;
    if (!payload)
        abort();
    fuzz_json_reads(json_object_to_json_string(payload));
    json_object_put(payload);
}

static void fuzz_bodies(const fuzz_strs *ps, int64_t now)
{
    json_object *body = body_object(ps->p[1], ps->len[1]);
    if (!body)
        return;
    json_object *payload = NULL;
    const char *limit = NULL;
    char err[200] = "";
    gw_req_result r = gw_req_message(body, "general", "alice", "fresh1", now, 200, &payload,
                                     &limit, err, sizeof err);
    check_refusal(r, limit, err);
    check_payload(r, payload);
    payload = NULL;
    limit = NULL;
    err[0] = '\0';
    r = gw_req_answer(body, "alice", "fresh2", now, 200, &payload, &limit, err, sizeof err);
    check_refusal(r, limit, err);
    check_payload(r, payload);
    payload = NULL;
    err[0] = '\0';
    r = gw_req_suggestion(body, "alice", "fresh3", now, &payload, err, sizeof err);
    check_refusal(r, NULL, err);
    check_payload(r, payload);
    json_object_put(body);
}

/* MQTT filter matching level by level, the plain way: the reference
 * gw_topic_match must agree with on every filter gw_filters_parse took. */
static bool ref_match(const char *filter, const char *topic)
{
    const char *f = filter, *t = topic;
    bool t_done = false;
    for (;;) {
        size_t fl = strcspn(f, "/"), tl = strcspn(t, "/");
        if (fl == 1 && f[0] == '#' && f[1] == '\0')
            return true; /* this level and every one below, none too */
        if (t_done)
            return false;
        if (!(fl == 1 && f[0] == '+') && (fl != tl || memcmp(f, t, fl) != 0))
            return false;
        bool f_last = f[fl] == '\0', t_last = t[tl] == '\0';
        if (f_last)
            return t_last;
        f += fl + 1;
        if (t_last)
            t_done = true;
        else
            t += tl + 1;
    }
}

static void fuzz_topics(const fuzz_strs *ps)
{
    gw_filter_set fs;
    const char *limit = NULL;
    char err[200] = "";
    if (gw_filters_parse(ps->p[1], &fs, &limit, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort();
        gw_filters_council_live(&fs);
    } else if (fs.n < 0 || fs.n > GW_FILTERS_MAX) {
        abort();
    }
    const char *topic = ps->p[2];
    json_object *payload = body_object(ps->p[3], ps->len[3]);
    char event[128];
    gw_event_name(topic, payload, event, sizeof event);
    if (strlen(event) >= sizeof event)
        abort();
    bool plain = strpbrk(topic, "+#") == NULL;
    for (int i = 0; i < fs.n; i++)
        if (gw_topic_match(fs.f[i], topic) != ref_match(fs.f[i], topic) && plain) {
            fprintf(stderr, "filter '%s' topic '%s': %d\n", fs.f[i], topic,
                    gw_topic_match(fs.f[i], topic));
            abort();
        }
    (void)gw_filters_match(&fs, topic, event);
    (void)gw_council_live_type(event);
    (void)gw_topic_is_snapshot(topic);
    for (int l = 0; l < 8; l++)
        (void)gw_topic_param_field(topic, l);
    char key[128];
    (void)gw_kept_key(topic, payload, key, sizeof key);
    if (payload) {
        char *e = gw_log_entry(topic, payload);
        if (e) {
            char t[GW_TOPIC_MAX + 1], ev[128];
            const char *d;
            if (strchr(topic, '\n') == NULL && strlen(topic) < sizeof t
                && gw_log_entry_split(e, t, sizeof t, ev, sizeof ev, &d) == 0) {
                if (strcmp(t, topic) != 0)
                    abort();
                fuzz_json_reads(d);
                size_t len;
                gw_sse_style st = gw_filters_style(&fs);
                char *f = gw_sse_entry_frame(st, ps->p[4], ev, d, &len);
                if (f && strlen(f) != len)
                    abort();
                free(f);
            }
            free(e);
        }
        json_object_put(payload);
    }
    gw_pos p;
    if (gw_pos_parse(ps->p[4], &p) == 0) {
        char out[64];
        gw_pos_format(p, out, sizeof out);
        gw_pos q;
        if (gw_pos_parse(out, &q) != 0 || gw_pos_cmp(p, q) != 0)
            abort();
        gw_pos oldest = { p.ms + (p.seq & 1), p.seq + 1 };
        gw_log_state log = {.first = oldest, .top = oldest, .length = 1 + (p.ms & 3),
                            .added = (int64_t)(p.seq & 7) - 1};
        size_t len;
        if (gw_log_trimmed(p, &log)) {
            char *f = gw_sse_trimmed_frame(gw_filters_style(&fs), p, oldest, 1000, &len);
            free(f);
        }
        gw_log_state seen = log;
        seen.added = (int64_t)(p.ms & 7);
        if (gw_log_went_back(p, (p.seq & 2) ? &seen : NULL, &log)) {
            char *f = gw_sse_ahead_frame(gw_filters_style(&fs), p, log.top, GW_AHEAD_LIVE, &len);
            if (!f || strlen(f) != len)
                abort();
            free(f);
        }
    }
}

static void fuzz_kept(const fuzz_strs *ps, int64_t now)
{
    gw_presence_cfg c;
    gw_presence_cfg_init(&c);
    char *state = ps->len[1] ? strdup(ps->p[1]) : NULL;
    for (int i = 2; i < ps->n; i += 2) {
        const char *topic = ps->p[i];
        json_object *payload = NULL;
        if (i + 1 < ps->n && ps->len[i + 1]) {
            payload = body_object(ps->p[i + 1], ps->len[i + 1]);
            if (!payload)
                continue;
        }
        char key[128];
        if (!gw_kept_key(topic, payload, key, sizeof key)) {
            json_object_put(payload);
            continue;
        }
        gw_kept_out o;
        if (gw_kept_apply(&c, key, state, topic, payload, now, &o) == 0) {
            if (o.changed) {
                fuzz_json_reads(o.new_state);
                if (o.entry)
                    must_be_entry(o.entry, o.topic);
                free(state);
                state = strdup(o.new_state);
            }
            if (o.next_due > now && o.next_due - now < 864000000LL)
                now = o.next_due; /* the timer's turn next */
            gw_kept_out_free(&o);
        }
        json_object_put(payload);
        now += 1000;
    }
    free(state);
}

static void fuzz_access(const fuzz_strs *ps, int64_t now)
{
    gw_tokens t;
    char err[200] = "";
    if (gw_tokens_parse(ps->p[1], &t, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort();
        t.v = NULL;
        t.n = 0;
    }
    const char *auth = ps->n > 2 ? ps->p[2] : NULL;
    const char *cookie = ps->n > 3 ? ps->p[3] : NULL;
    int idx = -1;
    gw_auth_result r = gw_auth_decide(&t, auth, cookie, &idx);
    if (r == GW_AUTH_OK && (idx < 0 || idx >= t.n))
        abort();
    if (!gw_auth_reason(r))
        abort();
    (void)gw_origin_allowed(ps->p[4], ps->n > 4 ? ps->p[4] : NULL, ps->p[5]);
    (void)gw_origin_allowed("*", ps->p[4], ps->p[5]);
    (void)gw_id_valid(ps->p[1]);
    (void)vigil_answer_index(ps->p[2]);
    (void)gw_status_parse(ps->p[3]);
    gw_bucket b = { 0 };
    int64_t retry;
    for (int i = 0; i < 5; i++)
        (void)gw_rate_take(&b, 2.0, now + i, &retry);
    /* failed authentications from addresses taken from the token file's bytes */
    gw_fail_table ft;
    if (gw_fail_table_init(&ft, 4) == 0) {
        const char *a = ps->p[1];
        size_t alen = ps->len[1];
        for (size_t i = 0; i + 16 <= alen && i < 16 * 64; i += 16) {
            bool ok = gw_fail_take(&ft, (const unsigned char *)a + i, 0.5, now + (int64_t)i,
                                   &retry);
            if (!ok && retry <= 0)
                abort(); /* a 429 says when to come back */
            if (ft.n > ft.cap)
                abort();
        }
        gw_fail_table_free(&ft);
    }
    if (gw_stream_cap((int64_t)ps->len[0] - 3) < 1)
        abort();
    (void)gw_client_stalled(now, now - 5000, now - 3000, 2000);
    for (int st = 0; st < 2; st++) {
        size_t len;
        char *f = gw_sse_dropped_frame((gw_sse_style)st, 64, 2000, &len);
        free(f);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "detail", json_object_new_string(ps->p[2]));
        f = gw_sse_notice_frame((gw_sse_style)st, "ping", o, &len);
        if (f && strlen(f) != len)
            abort();
        free(f);
    }
    gw_tokens_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 65536)
        return 0;
    fuzz_strs ps;
    fuzz_split_strs(data, size, MAX_PARTS, &ps);
    int64_t now = T0;
    if (ps.len[0] >= 9) {
        uint64_t v = 0;
        memcpy(&v, ps.p[0] + 1, 8);
        now = (int64_t)(v % (uint64_t)(4 * T0)); /* 0 .. about 2183 */
    }
    switch (ps.p[0][0]) {
    case 'P':
        fuzz_presence(&ps, now);
        break;
    case 'M':
        fuzz_bodies(&ps, now);
        break;
    case 'T':
        fuzz_topics(&ps);
        break;
    case 'K':
        fuzz_kept(&ps, now);
        break;
    case 'A':
        fuzz_access(&ps, now);
        break;
    default:
        break;
    }
    fuzz_strs_free(&ps);
    return 0;
}
