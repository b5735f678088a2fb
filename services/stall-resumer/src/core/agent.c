/* agent.c - one agent's record: intake of activity signals (newest 200,
 * 24 h) and of its status (itself a STATUS_UPDATE signal when it has
 * content), and the periodic scan that assesses it, asks the guard and
 * decides whether a resume is due. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include "stall.h"

void stall_agent_init(stall_agent *a, const char *agent)
{
    memset(a, 0, sizeof *a);
    snprintf(a->agent, sizeof a->agent, "%s", agent ? agent : "");
}

void stall_agent_replace(stall_agent *a, const char *agent, int64_t now)
{
    stall_agent_init(a, agent);
    a->resume_seq = now > 0 ? now : 0;
}

/* Our own resume prompts coming back (an agent echoing what it was sent
 * into its inbox or message queue) are not activity. */
static bool echoes_our_resume(const stall_agent *a, const char *id, const char *detail)
{
    for (int i = 0; i < a->n_recent; i++) {
        if (id && strcmp(id, a->recent[i]) == 0)
            return true;
        if (detail && strstr(detail, a->recent[i]))
            return true;
    }
    return false;
}

void stall_agent_expire(stall_agent *a, int64_t now)
{
    /* signals are sorted newest first: cut the tail */
    while (a->n_sig > 0 && now - a->sig[a->n_sig - 1].ts > STALL_SIGNAL_MAX_AGE_MS)
        a->n_sig--;
}

/* Keeps a signal in ts order (newest first), at most STALL_MAX_SIGNALS,
 * none older than 24 h, none twice by id: the bookkeeping shared by
 * activity inputs and status reports, after their own filters. */
static stall_signal_result keep_signal(stall_agent *a, const char *id, int source,
                                       const char *detail, bool in_tool, int64_t ts,
                                       int64_t now)
{
    if (ts > now)
        ts = now; /* a producer's clock ahead of ours: the work happened now at the latest */
    if (now - ts > STALL_SIGNAL_MAX_AGE_MS)
        return STALL_SIGNAL_EXPIRED;
    for (int i = 0; id && *id && i < a->n_sig; i++)
        if (strcmp(a->sig[i].id, id) == 0)
            return STALL_SIGNAL_DUPLICATE;
    int pos = 0;
    while (pos < a->n_sig && a->sig[pos].ts >= ts)
        pos++;
    if (pos == STALL_MAX_SIGNALS)
        return STALL_SIGNAL_EXPIRED; /* older than every one of 200 kept */
    int n = a->n_sig < STALL_MAX_SIGNALS ? a->n_sig : STALL_MAX_SIGNALS - 1;
    memmove(&a->sig[pos + 1], &a->sig[pos], (size_t)(n - pos) * sizeof a->sig[0]);
    a->n_sig = n + 1;
    stall_signal *s = &a->sig[pos];
    memset(s, 0, sizeof *s);
    s->source = source;
    s->ts = ts;
    s->in_tool = in_tool;
    vigil_utf8_copy(s->id, sizeof s->id, id);
    vigil_utf8_copy(s->detail, sizeof s->detail, detail);
    if (ts > a->last_seen)
        a->last_seen = ts;
    stall_agent_expire(a, now);
    return STALL_SIGNAL_ADDED;
}

stall_signal_result stall_agent_add_signal(stall_agent *a, const stall_config *c, const char *id,
                                           int source, const char *detail, bool in_tool,
                                           int64_t ts, int64_t now)
{
    if (stall_is_resumer_prompt(c, detail) || echoes_our_resume(a, id, detail))
        return STALL_SIGNAL_NOISE;
    if (stall_is_acknowledgement(detail))
        return STALL_SIGNAL_ACKNOWLEDGEMENT;
    stall_signal_result res = keep_signal(a, id, source, detail, in_tool, ts, now);
    if (res != STALL_SIGNAL_ADDED)
        return res;
    if (ts > now)
        ts = now;
    if (stall_is_meaningful_progress(detail) && ts >= a->progress_ts) {
        vigil_utf8_copy(a->progress, sizeof a->progress, detail);
        a->progress_ts = ts;
    }
    return STALL_SIGNAL_ADDED;
}

bool stall_status_is_meaningful(const stall_config *c, const stall_status *st)
{
    if (stall_is_resumer_prompt(c, st->fsm_state) || stall_is_resumer_prompt(c, st->mission))
        return false;
    return st->n_tasks > 0 || stall_is_meaningful_progress(st->mission);
}

/* The same report as the one held, whatever time each was taken at. */
static bool same_report(const stall_status *held, const stall_status *st)
{
    if (strcmp(held->fsm_state, st->fsm_state) != 0 || strcmp(held->mission, st->mission) != 0 ||
        held->n_tasks != st->n_tasks)
        return false;
    for (int i = 0; i < st->n_tasks; i++)
        if (strcmp(held->tasks[i], st->tasks[i]) != 0)
            return false;
    return true;
}

bool stall_agent_set_status(stall_agent *a, const stall_config *c, const stall_status *st,
                            int64_t now)
{
    if (a->status.present && (st->ts > now ? now : st->ts) < a->status.ts)
        return false;
    if (a->status.present && st->ts > now && a->status.claimed_ts == st->ts &&
        same_report(&a->status, st))
        return false; /* the future-dated report held, delivered again */
    stall_status next = *st;
    next.present = true;
    next.claimed_ts = 0;
    if (next.ts > now) {
        next.claimed_ts = next.ts;
        next.ts = now; /* a clock ahead of ours cannot make a status younger than new */
    }
    if (a->status.present && memcmp(&a->status, &next, sizeof next) == 0)
        return false;
    a->status = next;
    if (stall_status_is_meaningful(c, &next)) {
        /* the report is a tier-2 sign of life at its own time; it says
         * nothing about tool calls, so it keeps the newest signal's in_tool.
         * Its id ("status/<ts>") cannot be an input's (no '/' there): one
         * signal per report time, however often the report is redelivered. */
        char id[STALL_EVENT_ID_MAX + 1];
        snprintf(id, sizeof id, "status/%" PRId64, next.ts);
        bool in_tool = a->n_sig > 0 && a->sig[0].in_tool;
        keep_signal(a, id, STALL_SRC_STATUS_UPDATE, NULL, in_tool, next.ts, now);
    }
    return true;
}

uint64_t stall_assessment_key(const stall_assessment *as)
{
    /* the project's hash over the fields a reader acts on */
    int64_t v[] = {as->is_active, as->confidence_milli, as->validation_passed, as->category,
                   as->last_activity, as->n_counted, as->in_tool};
    return vigil_hash64(v, sizeof v);
}

bool stall_resume_due(const stall_agent *a, const stall_config *c, const stall_guard *g,
                      stall_category cat, int64_t now, char *why, size_t whylen)
{
    if (a->retired) {
        snprintf(why, whylen, "agent retired: its status was cleared");
        return false;
    }
    if (!g->send) {
        snprintf(why, whylen, "%s", g->reason);
        return false;
    }
    if (cat != STALL_CAT_AUTO_RESUME) {
        snprintf(why, whylen, "category %s: a resume comes at auto-resume", stall_category_name(cat));
        return false;
    }
    if (a->pending_seq && now - a->pending_since < c->resume_interval_ms) {
        snprintf(why, whylen, "resume %" PRId64 " already in flight", a->pending_seq);
        return false;
    }
    if (a->last_resume && now - a->last_resume < c->resume_interval_ms) {
        snprintf(why, whylen, "resumed %" PRId64 " s ago (one per %" PRId64 " s)",
                 (now - a->last_resume) / 1000, c->resume_interval_ms / 1000);
        return false;
    }
    snprintf(why, whylen, "due");
    return true;
}

/* A failed assessment fails open: the agent is categorised as if
 * inactive, so its status age still decides (a recent status holds a
 * resume back, an old one lets it through). The scan and the re-check
 * before a resume both decide this way. */
static void categorize_failed(const stall_agent *a, const stall_config *c, int64_t now,
                              stall_assessment *as)
{
    memset(as, 0, sizeof *as);
    as->last_activity = a->last_seen;
    stall_categorize(a, c, false, now, as);
}

void stall_agent_scan(stall_agent *a, const stall_config *c, int64_t now,
                      const char *internal_error, stall_scan_result *r)
{
    memset(r, 0, sizeof *r);
    stall_agent_expire(a, now);
    if (internal_error) {
        r->assess_rc = -1;
        snprintf(r->assess_err, sizeof r->assess_err, "%s", internal_error);
    } else {
        r->assess_rc = stall_assess(a, c, now, &r->as, r->assess_err, sizeof r->assess_err);
    }
    if (r->assess_rc != 0)
        categorize_failed(a, c, now, &r->as);
    r->guard = stall_should_send_resume(r->assess_rc, r->assess_err, &r->as);
    r->resume = stall_resume_due(a, c, &r->guard, r->as.category, now, r->why_not, sizeof r->why_not);
    if (!r->resume)
        return;
    if (!a->pending_seq)
        a->pending_seq = ++a->resume_seq;
    a->pending_since = now;
    stall_resume_reason(&r->guard, &r->as, a->pending_reason, sizeof a->pending_reason);
    r->seq = a->pending_seq;
}

bool stall_agent_retire(stall_agent *a)
{
    if (a->retired)
        return false;
    a->n_sig = 0;
    memset(&a->status, 0, sizeof a->status);
    a->last_seen = 0;
    a->progress[0] = '\0';
    a->progress_ts = 0;
    a->pending_seq = 0;
    a->pending_since = 0;
    a->pending_reason[0] = '\0';
    a->published = 0;
    a->next_scan = 0;
    a->retired = true;
    return true;
}

void stall_agent_return(stall_agent *a)
{
    a->retired = false;
}

bool stall_resume_still_due(stall_agent *a, const stall_config *c, int64_t seq, int64_t now,
                            char *why, size_t whylen)
{
    if (a->retired) {
        snprintf(why, whylen, "agent retired: its status was cleared");
        return false;
    }
    if (a->sent_seq >= seq) {
        snprintf(why, whylen, "resume %" PRId64 " already sent", seq);
        return true;
    }
    stall_agent_expire(a, now);
    stall_assessment as;
    char err[160] = "";
    int rc = stall_assess(a, c, now, &as, err, sizeof err);
    if (rc != 0)
        categorize_failed(a, c, now, &as);
    stall_guard g = stall_should_send_resume(rc, err, &as);
    bool due = g.send && as.category == STALL_CAT_AUTO_RESUME;
    if (g.send && !due)
        snprintf(why, whylen, "category %s: a resume comes at auto-resume",
                 stall_category_name(as.category));
    else
        stall_resume_reason(&g, &as, why, whylen);
    /* only the pending resume: the scans decided afresh since another was
     * queued (the agent retired and came back, its record was replaced) */
    if (due && a->pending_seq != seq) {
        due = false;
        snprintf(why, whylen, "resume %" PRId64 " no longer pending: the agent's scans decided afresh",
                 seq);
    }
    if (!due && a->pending_seq == seq) {
        a->pending_seq = 0;
        a->pending_since = 0;
        a->pending_reason[0] = '\0';
    }
    return due;
}

bool stall_agent_resume_sent(stall_agent *a, int64_t seq, const char *event_id, int64_t now)
{
    if (seq <= a->sent_seq)
        return false;
    a->sent_seq = seq;
    if (seq > a->resume_seq)
        a->resume_seq = seq;
    a->last_resume = now;
    if (a->pending_seq == seq) {
        a->pending_seq = 0;
        a->pending_since = 0;
        a->pending_reason[0] = '\0';
    }
    int keep = a->n_recent < STALL_RECENT_RESUMES ? a->n_recent : STALL_RECENT_RESUMES - 1;
    memmove(&a->recent[1], &a->recent[0], (size_t)keep * sizeof a->recent[0]);
    vigil_utf8_copy(a->recent[0], sizeof a->recent[0], event_id);
    a->n_recent = keep + 1;
    return true;
}
