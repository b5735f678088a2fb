/* fuzz_heartbeat.c - heartbeat's decision core: the model's reply, time
 * zone rules, the job, and a persona's stored record with every event it
 * takes (its config payload, the HEARTBEAT.md checklist read before a run,
 * room messages, levels, the run timer, the run's result).
 *
 * Input: parts separated by a line holding only "---". The first byte of
 * the first part chooses what is driven:
 *  - 'R': part 1 a model reply (hb_reply_read, hb_is_ack, hb_strip_token);
 *  - 'Z': part 1 a POSIX TZ rule, then the same bytes as TZif data;
 *  - 'J': part 1 a job (hb_job_parse);
 *  - anything else: part 1 a stored record (empty: a new persona), then
 *    one event a part, at a clock that only moves forward:
 *    "config <+ms> <payload JSON>", "checklist <+ms> <text>" ("!" first: the
 *    file could not be read), "msg <+ms> room|sender|human|text",
 *    "levels <+ms> room=level,..." (none: the state cleared), "timer <+ms>",
 *    "result <+ms> <answer>" ("!" first: the call failed), "clear <+ms>"
 *    (the config cleared).
 * What must hold: a reply is an ack, a message without the token and at
 * most HB_MESSAGE_MAX bytes, or unusable with a reason; local times are
 * in range; a refusal says why; every payload published is JSON, a job
 * reads back; the record dumps to JSON that loads into the same dump; a
 * cleared config leaves no heartbeat (a run in flight only until it ends),
 * publishes and starts nothing, and cleared again changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "fuzz_util.h"
#include "heartbeat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 24
#define T0 1700000000000LL

static void check_local(const hb_local *l)
{
    if (l->month < 1 || l->month > 12 || l->day < 1 || l->day > 31 || l->hour < 0
        || l->hour > 23 || l->minute < 0 || l->minute > 59 || l->second < 0 || l->second > 60
        || l->wday < 0 || l->wday > 6)
        abort();
}

static void fuzz_reply(const char *t, size_t len)
{
    hb_reply r;
    hb_reply_read(t, len, &r);
    if (r.kind == HB_REPLY_MESSAGE) {
        if (!r.message || strlen(r.message) > HB_MESSAGE_MAX)
            abort();
        if (hb_is_ack(r.message, strlen(r.message)))
            abort(); /* never a message holding the token */
        if (r.priority < 0 || r.priority >= HB_PRIO__COUNT || r.category < 0
            || r.category >= HB_CAT__COUNT)
            abort();
    } else if (r.kind == HB_REPLY_UNUSABLE) {
        if (r.why[0] == '\0')
            abort();
    } else if (r.kind != HB_REPLY_ACK) {
        abort();
    }
    hb_reply_clear(&r);
    char *out = malloc(len + 1);
    if (!out)
        return;
    size_t n = hb_strip_token(t, len, out, len + 1);
    if (n > len || hb_is_ack(out, n))
        abort();
    free(out);
}

static void zone_times(const hb_tz *tz)
{
    static const int64_t at[] = { 0, T0, -2208988800000LL, 4102444800000LL, 1711846800000LL,
                                  1730000000000LL };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        bool dst;
        int off = hb_tz_offset(tz, at[i] / 1000, &dst);
        if (off < -25 * 3600 || off > 26 * 3600)
            abort();
        hb_local l = hb_local_time(tz, at[i]);
        check_local(&l);
    }
}

static void fuzz_tz(const char *t, size_t len)
{
    char err[200] = "";
    hb_tz *tz = hb_tz_from_posix(t, err, sizeof err);
    if (tz) {
        zone_times(tz);
        hb_tz_free(tz);
    } else if (err[0] == '\0') {
        abort();
    }
    err[0] = '\0';
    tz = hb_tz_from_tzif((const unsigned char *)t, len, err, sizeof err);
    if (tz) {
        zone_times(tz);
        hb_tz_free(tz);
    } else if (err[0] == '\0') {
        abort();
    }
}

static void fuzz_job(const char *t, size_t len)
{
    hb_job j;
    char err[200] = "";
    memset(&j, 0, sizeof j);
    if (hb_job_parse(t, len, &j, err, sizeof err) == 0) {
        if (!j.prompt)
            abort();
    } else if (err[0] == '\0') {
        abort();
    }
    hb_job_clear(&j);
}

/* Zones by name for the config payloads: two rules. */
static hb_tz *zone_paris, *zone_ny;
static const hb_tz *lookup(void *arg, const char *name)
{
    (void)arg;
    if (!strcmp(name, "Europe/Paris"))
        return zone_paris;
    if (!strcmp(name, "America/New_York"))
        return zone_ny;
    return NULL;
}

static void check_state(const hb_state *s)
{
    char *d = hb_state_dump(s);
    if (!d)
        abort();
    hb_state *t = malloc(sizeof *t);
    if (!t)
        abort();
    char err[200] = "";
    if (hb_state_load(t, s->persona, d, err, sizeof err) != 0) {
        fprintf(stderr, "reload: %s\n%s\n", err, d);
        abort();
    }
    char *d2 = hb_state_dump(t);
    fuzz_same_text("dump", d, d2);
    free(d2);
    free(d);
    hb_state_free(t);
    free(t);
}

static void check_out(const hb_out *o)
{
    for (int i = 0; i < o->n_msg; i++) {
        if (!o->msg[i].topic[0])
            abort();
        fuzz_json_reads(o->msg[i].payload);
    }
    if (o->job) {
        hb_job j;
        char err[200] = "";
        memset(&j, 0, sizeof j);
        if (hb_job_parse(o->job, strlen(o->job), &j, err, sizeof err) != 0)
            abort();
        hb_job_clear(&j);
    }
}

/* The config cleared: no heartbeat left (nor its schedule, when there was
 * one; a run in flight stays marked, its guard timer kept, until it ends:
 * no run may start beside it), nothing published or started, and the same
 * clear again changes nothing (a redelivery). */
static hb_result clear_config(hb_state *s, hb_out *out)
{
    bool was_running = s->running[0] != '\0';
    hb_result r = hb_on_config_cleared(s, out);
    if (s->cfg.set || out->n_msg || out->job || out->index_add[0] ||
        (out->changed && (s->next_run || (s->running[0] != '\0') != was_running ||
                          out->timer != (was_running ? HB_TIMER_KEEP : HB_TIMER_CANCEL))))
        abort();
    char *before = hb_state_dump(s);
    hb_out again;
    hb_out_init(&again);
    if (!before || hb_on_config_cleared(s, &again) != HB_OK || again.changed ||
        again.timer != HB_TIMER_KEEP || again.index_remove[0])
        abort();
    char *after = hb_state_dump(s);
    fuzz_same_text("cleared twice", before, after);
    free(before);
    free(after);
    return r;
}

static void event(hb_state *s, const hb_config *c, char *cmd, int64_t *now)
{
    char verb[16] = "";
    char *rest = fuzz_verb(cmd, verb, now, false); /* keeps the text's own spaces */
    if (!rest)
        return;
    hb_out out;
    hb_out_init(&out);
    hb_result r = HB_OK;
    if (!strcmp(verb, "config")) {
        json_object *body = json_tokener_parse(rest);
        if (!body || !json_object_is_type(body, json_type_object)) {
            json_object_put(body); /* the shell takes only an object */
            return;
        }
        hb_persona_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        char err[200] = "";
        hb_cfg_status st = hb_config_payload(body, c, NULL, &cfg, err, sizeof err);
        if (st == HB_CFG_OK) {
            (void)hb_config_joins_full_room(s, &cfg, 3, 4);
            r = hb_on_config(s, c, &cfg, *now, &out);
        } else if (err[0] == '\0') {
            abort(); /* a refusal says why */
        }
        hb_persona_cfg_clear(&cfg);
        json_object_put(body);
    } else if (!strcmp(verb, "checklist")) {
        bool bad = rest[0] == '!';
        r = hb_checklist_file_read(s, bad ? NULL : rest, bad ? rest + 1 : NULL, &out);
    } else if (!strcmp(verb, "msg")) {
        char *f[4] = { rest, NULL, NULL, NULL };
        for (int i = 1; i < 4; i++) {
            char *bar = strchr(f[i - 1], '|');
            if (!bar)
                break;
            *bar = '\0';
            f[i] = bar + 1;
        }
        hb_message m = { "m1", f[0], f[1] ? f[1] : "alice", f[3] ? f[3] : "",
                         f[2] && f[2][0] == '1', f[2] && f[2][0] == 'p', *now };
        r = hb_on_message(s, c, &m, *now, &out);
    } else if (!strcmp(verb, "levels")) {
        hb_room_level lv[40];
        int n = 0;
        for (char *tok = strtok(rest, ","); tok && n < 40; tok = strtok(NULL, ",")) {
            char *eq = strchr(tok, '=');
            if (!eq)
                continue;
            *eq = '\0';
            snprintf(lv[n].room, sizeof lv[n].room, "%s", tok);
            int l = hb_level_parse(eq + 1);
            lv[n++].level = l < 0 ? HB_LEVEL_UNKNOWN : (hb_level)l;
        }
        r = hb_on_levels(s, lv, n, *now, &out);
    } else if (!strcmp(verb, "timer")) {
        r = hb_on_timer(s, c, *now, *now, &out);
    } else if (!strcmp(verb, "clear")) {
        r = clear_config(s, &out);
    } else if (!strcmp(verb, "result")) {
        bool failed = rest[0] == '!';
        hb_run_result rr = { s->running, !failed, failed ? NULL : rest,
                             failed ? 0 : strlen(rest), failed ? rest + 1 : NULL, 42 };
        char run[sizeof s->running];
        snprintf(run, sizeof run, "%s", s->running);
        rr.run = run;
        r = hb_on_result(s, c, &rr, *now, &out);
    } else {
        return;
    }
    if (r != HB_OK && r != HB_ERR_STATE)
        abort();
    check_out(&out);
    hb_out_clear(&out);
    check_state(s);
}

static void fuzz_persona(fuzz_strs *ps, int64_t now)
{
    hb_config c;
    hb_config_init(&c);
    c.llm_enabled = ps->p[0][1] != 'n';
    c.run_guard_ms = 120000;
    c.tz.lookup = lookup;
    hb_state *s = malloc(sizeof *s);
    if (!s)
        return;
    char err[200] = "";
    const char *rec = ps->n > 1 && ps->len[1] ? ps->p[1] : NULL;
    if (hb_state_load(s, "sol", rec, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort();
        hb_state_free(s);
        free(s);
        return;
    }
    check_state(s);
    for (int i = 2; i < ps->n; i++)
        event(s, &c, ps->p[i], &now);
    hb_state_free(s);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 65536)
        return 0;
    if (!zone_paris) {
        char err[200];
        zone_paris = hb_tz_from_posix("CET-1CEST,M3.5.0,M10.5.0/3", err, sizeof err);
        zone_ny = hb_tz_from_posix("EST5EDT,M3.2.0,M11.1.0", err, sizeof err);
    }
    fuzz_strs ps;
    fuzz_split_strs(data, size, MAX_PARTS, &ps);
    const char *a = ps.n > 1 ? ps.p[1] : "";
    size_t alen = ps.n > 1 ? ps.len[1] : 0;
    switch (ps.p[0][0]) {
    case 'R':
        fuzz_reply(a, alen);
        break;
    case 'Z':
        fuzz_tz(a, alen);
        break;
    case 'J':
        fuzz_job(a, alen);
        break;
    default:
        fuzz_persona(&ps, T0);
        break;
    }
    fuzz_strs_free(&ps);
    return 0;
}
