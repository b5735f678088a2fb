/* engine.c - the heartbeat's events. A run is: the timer comes due (a skip
 * with its reason, or a job for the model), the model answers (ok / sent /
 * voi-blocked / permission-blocked / skipped when the user spoke meanwhile /
 * error), the next run is scheduled.
 * The record says which run is waiting for the model, so a second run never
 * starts beside it and a late or repeated answer changes nothing. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/json.h>
#include <vigil/msg_room.h>
#include "internal.h"

#define VOI_NONE INT_MIN

void hb_out_init(hb_out *o)
{
    memset(o, 0, sizeof *o);
    o->timer = HB_TIMER_KEEP;
}

void hb_out_clear(hb_out *o)
{
    for (int i = 0; i < o->n_msg; i++)
        free(o->msg[i].payload);
    free(o->job);
    hb_out_init(o);
}

const hb_tz *hb_state_tz(const hb_state *s, const hb_config *c)
{
    if (!s->cfg.tz[0] || !c->tz.lookup)
        return NULL;
    return c->tz.lookup(c->tz.arg, s->cfg.tz);
}

/* Records that a bound refused or cut part of this decision's input; the
 * shell turns it into an error event or a log line and a count
 * (vigil/limits.h), so no bound of the core is silent. */
__attribute__((format(printf, 3, 4))) static void note_limit(hb_out *out, const char *limit,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->limit_detail, sizeof out->limit_detail, fmt, ap);
    va_end(ap);
    out->limit = limit;
}

static hb_result emit(hb_out *out, const char *topic, json_object *o)
{
    hb_result rc = HB_ERR_NOMEM;
    if (o && out->n_msg < HB_OUT_MAX) {
        const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        char *p = t ? strdup(t) : NULL;
        if (p) {
            snprintf(out->msg[out->n_msg].topic, sizeof out->msg[0].topic, "%s", topic);
            out->msg[out->n_msg++].payload = p;
            rc = HB_OK;
        }
    }
    json_object_put(o);
    return rc;
}

typedef struct run_report {
    const char *run;
    const char *outcome;
    const char *reason;      /* NULL none */
    const char *detail;      /* NULL none */
    int voi;                 /* VOI_NONE none */
    const hb_reply *reply;   /* priority/category when a message was judged */
    const char *message_id;  /* when sent */
    int64_t tokens;
    int64_t next;            /* absolute; 0 none */
    char text[200];          /* room for detail, when it is written here */
    char id[HB_ID_MAX + 48]; /* room for message_id */
} run_report;

/* The score as text with at most two decimals, as the run's detail shows
 * it ("0.4", "-0.08"), from thousandths rounded half away from zero. */
static void voi_text(int milli, char *buf, size_t len)
{
    int centi = (milli >= 0 ? milli + 5 : milli - 5) / 10, a = centi < 0 ? -centi : centi;
    int n = snprintf(buf, len, "%s%d.%02d", centi < 0 ? "-" : "", a / 100, a % 100);
    while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
        buf[--n] = '\0';
    if (n > 0 && (size_t)n < len && buf[n - 1] == '.')
        buf[--n] = '\0';
    if (strcmp(buf, "-0") == 0)
        snprintf(buf, len, "0");
}

/* The run's gist for the shell (hb_run_note): what it counts and logs. */
static void note_run(const hb_state *s, const run_report *r, const char *voi, hb_out *out)
{
    hb_run_note *n = &out->run;
    n->outcome = r->outcome;
    n->reason = r->reason;
    snprintf(n->run, sizeof n->run, "%s", r->run);
    n->consecutive_skips = s->consecutive_ok;
    snprintf(n->voi, sizeof n->voi, "%s", voi);
    const hb_reply *m = r->message_id ? r->reply : NULL;
    n->message_bytes = m && m->message ? strlen(m->message) : 0;
    snprintf(n->detail, sizeof n->detail, "%s", r->detail ? r->detail : "");
}

static hb_result emit_run(const hb_state *s, int64_t now, const run_report *r, hb_out *out)
{
    char voi[16] = "";
    if (r->voi != VOI_NONE)
        voi_text(r->voi, voi, sizeof voi);
    note_run(s, r, voi, out);
    json_object *o = json_object_new_object();
    if (!o)
        return HB_ERR_NOMEM;
    char topic[160];
    snprintf(topic, sizeof topic, "heartbeat/%s/run", s->persona);
    json_object_object_add(o, "id", json_object_new_string(r->run));
    json_object_object_add(o, "persona", json_object_new_string(s->persona));
    json_object_object_add(o, "user", json_object_new_string(s->cfg.user));
    json_object_object_add(o, "room", json_object_new_string(s->cfg.room));
    json_object_object_add(o, "run", json_object_new_int64(s->runs));
    json_object_object_add(o, "outcome", json_object_new_string(r->outcome));
    if (r->reason)
        json_object_object_add(o, "reason", json_object_new_string(r->reason));
    if (r->detail && r->detail[0])
        json_object_object_add(o, "detail", json_object_new_string(r->detail));
    if (voi[0]) /* written as the text: json-c would print 0.3 as 0.29999999999999999 */
        json_object_object_add(o, "voi", json_object_new_double_s(r->voi / 1000.0, voi));
    if (r->reply && r->reply->kind == HB_REPLY_MESSAGE) {
        json_object_object_add(o, "priority",
                               json_object_new_string(hb_priority_name(r->reply->priority)));
        json_object_object_add(o, "category",
                               json_object_new_string(hb_category_name(r->reply->category)));
    }
    if (r->message_id)
        json_object_object_add(o, "message_id", json_object_new_string(r->message_id));
    json_object_object_add(o, "consecutive_skips", json_object_new_int(s->consecutive_ok));
    json_object_object_add(o, "next_in_ms", json_object_new_int64(r->next > now ? r->next - now : 0));
    if (r->next > 0)
        json_object_object_add(o, "next_run_ts", json_object_new_int64(r->next));
    json_object_object_add(o, "tokens", json_object_new_int64(r->tokens > 0 ? r->tokens : 0));
    json_object_object_add(o, "ts", json_object_new_int64(now));
    return emit(out, topic, o);
}

static void schedule(hb_state *s, int64_t next, hb_out *out)
{
    s->next_run = next;
    out->timer = next > 0 ? next : HB_TIMER_CANCEL;
    out->changed = true;
}

static int64_t next_after(const hb_state *s, const hb_config *c, int64_t now)
{
    return now + hb_interval_ms(c, now, s->last_activity, s->consecutive_ok);
}

static bool same_cfg(const hb_persona_cfg *a, const hb_persona_cfg *b)
{
    return a->set == b->set && strcmp(a->user, b->user) == 0 && strcmp(a->room, b->room) == 0 &&
           strcmp(a->checklist ? a->checklist : "", b->checklist ? b->checklist : "") == 0 &&
           strcmp(a->checklist_file, b->checklist_file) == 0 &&
           strcmp(a->identity ? a->identity : "", b->identity ? b->identity : "") == 0 &&
           a->quiet.set == b->quiet.set && a->quiet.start_min == b->quiet.start_min &&
           a->quiet.end_min == b->quiet.end_min && strcmp(a->tz, b->tz) == 0 &&
           a->enabled == b->enabled && a->allow == b->allow && strcmp(a->model, b->model) == 0;
}

hb_result hb_on_config(hb_state *s, const hb_config *c, hb_persona_cfg *cfg, int64_t now,
                       hb_out *out)
{
    if (s->cfg.set && same_cfg(&s->cfg, cfg)) {
        hb_persona_cfg_clear(cfg);
        return HB_OK; /* republished as is: the schedule stands */
    }
    if (s->cfg.set && strcmp(s->cfg.room, cfg->room) != 0) {
        snprintf(out->index_remove, sizeof out->index_remove, "%s", s->cfg.room);
        s->n_recent = 0; /* another room: its context starts empty */
    }
    snprintf(out->index_add, sizeof out->index_add, "%s", cfg->room);
    hb_persona_cfg_clear(&s->cfg);
    s->cfg = *cfg;
    s->cfg_gen++; /* a run in flight was started under the old one: cancelled (hb_on_result) */
    memset(cfg, 0, sizeof *cfg);
    s->last_activity = now; /* configuring counts as activity */
    s->consecutive_ok = 0;
    out->changed = true;
    if (s->running[0])
        return HB_OK; /* the run in flight schedules the next when it ends */
    schedule(s, s->cfg.enabled ? next_after(s, c, now) : 0, out);
    return HB_OK;
}

/* The record as a new one for this persona (hb_state_load without JSON,
 * so "new" is defined once), keeping what outlives a heartbeat: the
 * levels, which come from persona/{p}/state and are not delivered again,
 * and the run counter, since run and message ids ("hb:<p>:<n>",
 * "hb:<p>:<n>:msg") must never repeat: the commit of a run is deduplicated
 * by its id, and readers of room messages by theirs. */
static void forget_heartbeat(hb_state *s)
{
    hb_state fresh;
    char err[8];
    (void)hb_state_load(&fresh, s->persona, NULL, err, sizeof err); /* no JSON: cannot fail */
    fresh.runs = s->runs;
    fresh.cfg_gen = s->cfg_gen + 1;
    /* a run in flight stays marked until its answer or its guard: a config
     * published again meanwhile must wait for it (runs never overlap) */
    memcpy(fresh.running, s->running, sizeof fresh.running);
    fresh.run_started = s->run_started;
    fresh.run_gen = s->run_gen;
    memcpy(fresh.levels, s->levels, sizeof s->levels);
    fresh.n_levels = s->n_levels;
    hb_state_free(s);
    *s = fresh;
}

hb_result hb_on_config_cleared(hb_state *s, hb_out *out)
{
    if (!s->cfg.set)
        return HB_OK; /* never configured, or cleared already */
    snprintf(out->index_remove, sizeof out->index_remove, "%s", s->cfg.room);
    forget_heartbeat(s);
    /* a run in flight keeps its guard: it ends the run if the answer never
     * comes (hb_on_timer), so a later config is not held forever */
    out->timer = s->running[0] ? HB_TIMER_KEEP : HB_TIMER_CANCEL;
    out->changed = true;
    return HB_OK;
}

/* Appends a room message to the bounded context, cut to HB_RECENT_CHARS
 * characters (not bytes: a cut never splits a UTF-8 sequence). */
static void remember(hb_state *s, const hb_message *m)
{
    if (s->n_recent == HB_RECENT_MAX) {
        memmove(&s->recent[0], &s->recent[1], sizeof s->recent[0] * (HB_RECENT_MAX - 1));
        s->n_recent--;
    }
    hb_recent *r = &s->recent[s->n_recent++];
    snprintf(r->sender, sizeof r->sender, "%s", m->sender);
    r->human = m->human;
    size_t i = 0, chars = 0;
    const char *t = m->text ? m->text : "";
    while (t[i] && i < sizeof r->text - 1) {
        if (((unsigned char)t[i] & 0xC0) != 0x80) {
            if (chars == HB_RECENT_CHARS)
                break;
            chars++;
        }
        i++;
    }
    while (i > 0 && i < strlen(t) && ((unsigned char)t[i] & 0xC0) == 0x80)
        i--; /* never end inside a sequence */
    memcpy(r->text, t, i);
    r->text[i] = '\0';
    /* the token is never kept as context either */
    char tmp[sizeof r->text];
    hb_strip_token(r->text, strlen(r->text), tmp, sizeof tmp);
    if (strlen(tmp) != strlen(r->text))
        snprintf(r->text, sizeof r->text, "%s", tmp);
}

hb_result hb_on_message(hb_state *s, const hb_config *c, const hb_message *m, int64_t now,
                        hb_out *out)
{
    if (!s->cfg.set || strcmp(m->room, s->cfg.room) != 0)
        return HB_OK;
    remember(s, m);
    out->changed = true;
    if (!m->human || strcmp(m->sender, s->cfg.user) != 0)
        return HB_OK;
    int64_t ts = m->ts > 0 && m->ts < now ? m->ts : now;
    if (ts > s->last_user_msg)
        s->last_user_msg = ts;
    if (ts > s->last_activity)
        s->last_activity = ts;
    if (s->last_proactive > 0 && ts >= s->last_proactive)
        s->answered = true;
    s->consecutive_ok = 0;
    if (s->cfg.enabled && !s->running[0])
        schedule(s, next_after(s, c, now), out);
    return HB_OK;
}

/* The levels to remember, at most HB_LEVELS_MAX: the one of room (the
 * configured room, "" none) first, since it is the only one a run reads,
 * then the others in the order given. Returns how many did not fit. */
static int pick_levels(const char *room, const hb_room_level *levels, int n,
                       hb_room_level *kept, int *n_kept)
{
    int k = 0, first = -1;
    for (int i = 0; room[0] && i < n && first < 0; i++)
        if (strcmp(levels[i].room, room) == 0)
            first = i;
    if (first >= 0)
        kept[k++] = levels[first];
    for (int i = 0; i < n && k < HB_LEVELS_MAX; i++)
        if (i != first)
            kept[k++] = levels[i];
    *n_kept = k;
    return n - k;
}

hb_result hb_on_levels(hb_state *s, const hb_room_level *levels, int n, int64_t now, hb_out *out)
{
    (void)now;
    hb_room_level kept[HB_LEVELS_MAX];
    const char *room = s->cfg.set ? s->cfg.room : "";
    int k, dropped = pick_levels(room, levels, n, kept, &k);
    if (dropped > 0)
        note_limit(out, HB_LIMIT_LEVELS,
                   "the retained state of persona %s lists %d rooms, more than the %d whose "
                   "level heartbeat remembers per persona (compile time): the levels of %d "
                   "rooms are not kept%s%s%s",
                   s->persona, n, HB_LEVELS_MAX, dropped, room[0] ? " (the configured room '" : "",
                   room, room[0] ? "' is kept first)" : "");
    bool same = k == s->n_levels;
    for (int i = 0; same && i < k; i++)
        same = strcmp(kept[i].room, s->levels[i].room) == 0 && kept[i].level == s->levels[i].level;
    if (same)
        return HB_OK;
    memcpy(s->levels, kept, sizeof *kept * (size_t)k);
    s->n_levels = k;
    out->changed = true;
    return HB_OK;
}

bool hb_config_joins_full_room(const hb_state *s, const hb_persona_cfg *cfg, int members, int max)
{
    bool serves = s->cfg.set && strcmp(s->cfg.room, cfg->room) == 0;
    return !serves && members >= max;
}

/* A message the model made longer than HB_MESSAGE_MAX went out cut: the
 * run's detail and a limit refusal say so. */
static void tell_cut(const hb_state *s, const char *run, const hb_reply *rep, char *detail,
                     size_t len, hb_out *out)
{
    if (!rep->cut_from)
        return;
    size_t used = strlen(detail);
    snprintf(detail + used, len - used, "; message cut to %zu of %zu bytes", strlen(rep->message),
             rep->cut_from);
    note_limit(out, HB_LIMIT_MESSAGE,
               "run %s of %s: the model's message of %zu bytes was cut to %zu (at most %d bytes, "
               "compile time) and sent cut",
               run, s->persona, rep->cut_from, strlen(rep->message), HB_MESSAGE_MAX);
}

static hb_result give_up(hb_state *s, const hb_config *c, int64_t now, hb_out *out)
{
    char run[sizeof s->running];
    snprintf(run, sizeof run, "%s", s->running);
    s->running[0] = '\0';
    if (!s->cfg.set) { /* a run of a heartbeat deleted since: nothing to report */
        schedule(s, 0, out);
        return HB_OK;
    }
    int64_t next = s->cfg.enabled ? next_after(s, c, now) : 0;
    schedule(s, next, out);
    run_report r = {.run = run, .outcome = "error", .reason = "run-lost",
                    .detail = "no answer within the run guard: its job was lost (e.g. trimmed "
                              "from the job stream past VIGIL_HEARTBEAT_JOBS_MAXLEN)",
                    .voi = VOI_NONE, .next = next};
    return emit_run(s, now, &r, out);
}

hb_result hb_on_timer(hb_state *s, const hb_config *c, int64_t due, int64_t now, hb_out *out)
{
    if (!s->cfg.set && !s->running[0]) {
        out->timer = HB_TIMER_CANCEL;
        return HB_OK;
    }
    if (s->running[0]) {
        if (now - s->run_started >= c->run_guard_ms) {
            /* a guard that could not fire on time proves no loss: the
             * run's answer may be waiting for Redis to commit (hb_on_timer) */
            if (now - due > c->guard_late_ms) {
                out->timer = now + c->run_guard_ms;
                return HB_OK;
            }
            return give_up(s, c, now, out);
        }
        out->timer = s->run_started + c->run_guard_ms;
        return HB_OK;
    }
    if (!s->cfg.enabled) {
        schedule(s, 0, out);
        return HB_OK;
    }
    char run[sizeof s->running];
    s->runs++;
    snprintf(run, sizeof run, "hb:%s:%lld", s->persona, (long long)s->runs);
    const hb_tz *tz = hb_state_tz(s, c);
    hb_skip sk;
    if (hb_skip_check(s, c, tz, now, &sk)) {
        int64_t next = sk.stop ? 0 : now + sk.next_in_ms;
        schedule(s, next, out);
        run_report r = {.run = run, .outcome = "skipped", .reason = sk.reason,
                        .detail = sk.detail, .voi = VOI_NONE, .next = next};
        return emit_run(s, now, &r, out);
    }
    hb_local l = hb_local_time(tz, now);
    char *prompt = hb_prompt(s, &l, s->cfg.tz, now);
    char *job = prompt ? hb_job_make(s, c, run, prompt) : NULL;
    free(prompt);
    if (!job)
        return HB_ERR_NOMEM;
    out->job = job;
    snprintf(s->running, sizeof s->running, "%s", run);
    s->run_started = now;
    s->run_gen = s->cfg_gen;
    s->next_run = 0;
    out->timer = now + c->run_guard_ms; /* gives the run up if its job is lost */
    out->changed = true;
    return HB_OK;
}

static hb_disturbance disturbance(const hb_state *s, const hb_local *l)
{
    if (hb_quiet_contains(&s->cfg.quiet, l->hour * 60 + l->minute))
        return HB_DIST_QUIET;
    return hb_is_peak(l->hour) ? HB_DIST_PEAK : HB_DIST_OFF_PEAK;
}

/* The proactive message, written by libshared's one writer of
 * room/{r}/message, plus heartbeat's own fields (priority, category, the
 * run). */
static hb_result send_message(hb_state *s, const char *run, const hb_reply *rep, int64_t now,
                              char *msg_id, size_t idlen, hb_out *out)
{
    snprintf(msg_id, idlen, "%s:msg", run);
    vigil_room_message_out m = {.id = msg_id, .room = s->cfg.room, .sender = s->persona,
                                .sender_type = VIGIL_SENDER_AI, .text = rep->message,
                                .proactive = true, .ts = now};
    json_object *o = vigil_room_message_json(&m);
    if (!o)
        return HB_ERR_NOMEM;
    char topic[160];
    snprintf(topic, sizeof topic, "room/%s/message", s->cfg.room);
    json_object_object_add(o, "priority", json_object_new_string(hb_priority_name(rep->priority)));
    json_object_object_add(o, "category", json_object_new_string(hb_category_name(rep->category)));
    json_object_object_add(o, "heartbeat_run", json_object_new_string(run));
    return emit(out, topic, o);
}

/* A message the model composed, judged in the specified order: the VoI gate,
 * then the allow list; one that passes both is sent unless the user wrote
 * while the model was thinking (the live-exchange rule again, now). Sets
 * rep's outcome, score and detail, and sends when it may. */
static hb_result judge(hb_state *s, const hb_config *c, const hb_reply *reply, int64_t now,
                       run_report *rep, hb_out *out)
{
    hb_local l = hb_local_time(hb_state_tz(s, c), now);
    hb_disturbance d = disturbance(s, &l);
    char score[16], gate[16];
    rep->voi = hb_voi(reply->priority, reply->category, d);
    voi_text(rep->voi, score, sizeof score);
    voi_text(HB_VOI_THRESHOLD, gate, sizeof gate);
    snprintf(rep->text, sizeof rep->text, "%s %s at %02d:%02d local (%s): VoI %s %s %s",
             hb_priority_name(reply->priority), hb_category_name(reply->category), l.hour,
             l.minute, d == HB_DIST_QUIET ? "quiet hours" : d == HB_DIST_PEAK ? "peak" : "off-peak",
             score, hb_voi_send(rep->voi) ? ">" : "<=", gate);
    rep->detail = rep->text;
    if (!hb_voi_send(rep->voi)) {
        rep->outcome = "voi-blocked";
        return HB_OK;
    }
    if (!hb_permitted(s->cfg.allow, reply->category)) {
        rep->outcome = "permission-blocked";
        snprintf(rep->text, sizeof rep->text, "%s does not allow proactive %s messages",
                 s->cfg.user, hb_category_name(reply->category));
        return HB_OK;
    }
    if (hb_live_exchange(s, c, now, rep->text, sizeof rep->text)) {
        size_t used = strlen(rep->text);
        snprintf(rep->text + used, sizeof rep->text - used,
                 " (the model answered after that): not sent");
        rep->outcome = "skipped";
        rep->reason = HB_REASON_LIVE;
        return HB_OK;
    }
    hb_result rc = send_message(s, rep->run, reply, now, rep->id, sizeof rep->id, out);
    tell_cut(s, rep->run, reply, rep->text, sizeof rep->text, out);
    rep->outcome = "sent";
    rep->message_id = rep->id;
    s->last_proactive = now;
    s->answered = false;
    s->last_activity = now; /* a sent message counts as activity */
    return rc;
}

/* Why the run in flight may no longer speak, NULL when it may: its
 * heartbeat switched off, or configured anew since the run started (off
 * and on again, another room, another checklist): the user changed what
 * the run was asked under, and one proactive message per run is for the
 * heartbeat as it is when the run started. */
static const char *run_cancelled(const hb_state *s)
{
    if (!s->cfg.set || !s->cfg.enabled)
        return "disabled";
    if (s->run_gen != s->cfg_gen)
        return "reconfigured";
    return NULL;
}

bool hb_run_wanted(const hb_state *s, const char *run)
{
    return s->running[0] && strcmp(s->running, run) == 0 && !run_cancelled(s);
}

hb_result hb_on_result(hb_state *s, const hb_config *c, const hb_run_result *r, int64_t now,
                       hb_out *out)
{
    if (!s->running[0] || strcmp(s->running, r->run) != 0)
        return HB_OK; /* given up, or already finished: never a second send */
    char run[sizeof s->running];
    snprintf(run, sizeof run, "%s", s->running);
    s->running[0] = '\0';
    out->changed = true;
    run_report rep = {.run = run, .outcome = "error", .voi = VOI_NONE, .tokens = r->tokens};
    hb_reply reply;
    memset(&reply, 0, sizeof reply);
    hb_result rc = HB_OK;
    if (!s->cfg.set) { /* deleted during the run: its answer is dropped unreported */
        schedule(s, 0, out);
        return HB_OK;
    }
    const char *cancelled = run_cancelled(s);
    if (cancelled) {
        /* cancelled whatever the model said: nothing is sent */
        bool off = strcmp(cancelled, "disabled") == 0;
        rep.outcome = "skipped";
        rep.reason = cancelled;
        rep.detail = off ? "the heartbeat was switched off during the run: cancelled, nothing sent"
                         : "the heartbeat was configured anew during the run: cancelled, "
                           "nothing sent";
        rep.next = off ? 0 : next_after(s, c, now);
        schedule(s, rep.next, out);
        return emit_run(s, now, &rep, out);
    }
    if (!r->llm_ok) {
        rep.reason = "llm-error"; /* no answer: the count of oks stands */
        const char *why = r->error ? r->error : "the model call failed";
        snprintf(rep.text, sizeof rep.text, "%.*s", (int)vigil_utf8_cut_max(why, 190), why);
        rep.detail = rep.text;
    } else {
        hb_reply_read(r->content, r->len, &reply);
        rep.reply = &reply;
        if (reply.kind == HB_REPLY_ACK) {
            rep.outcome = "ok";
            s->consecutive_ok++;
        } else {
            /* as specified, any answer but HEARTBEAT_OK resets the skips,
             * before the gate: a blocked message is not a quiet run */
            s->consecutive_ok = 0;
            if (reply.kind == HB_REPLY_UNUSABLE) {
                rep.reason = "unusable-answer";
                rep.detail = reply.why;
            } else {
                rc = judge(s, c, &reply, now, &rep, out);
            }
        }
    }
    if (rc == HB_OK) {
        rep.next = next_after(s, c, now);
        schedule(s, rep.next, out);
        rc = emit_run(s, now, &rep, out);
    }
    hb_reply_clear(&reply);
    return rc;
}
