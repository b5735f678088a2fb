/* skip.c - the reasons a due run is skipped before any model call, in the
 * order they are checked. Each answers the complaint it prevents: no
 * messages at night (quiet hours in the user's own time zone; `true` is the
 * night, 22:00-07:00), no barging into a live exchange,
 * nothing from a persona that was put to sleep or mention-only, no second
 * nudge while the first is unanswered, no model call with nothing to check
 * (an empty checklist, a checklist file that cannot be read) or no model. */
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/str.h>
#include "internal.h"

static bool blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\n' && *s != '\t' && *s != '\r')
            return false;
    return true;
}

bool hb_live_exchange(const hb_state *s, const hb_config *c, int64_t now, char *detail,
                      size_t len)
{
    if (s->last_user_msg <= 0 || now - s->last_user_msg >= c->live_ms)
        return false;
    snprintf(detail, len, "%s wrote %lld s ago: not barging into a conversation", s->cfg.user,
             (long long)((now - s->last_user_msg) / 1000));
    return true;
}

bool hb_skip_check(const hb_state *s, const hb_config *c, const hb_tz *tz, int64_t now,
                   hb_skip *out)
{
    memset(out, 0, sizeof *out);
    int64_t interval = hb_interval_ms(c, now, s->last_activity, s->consecutive_ok);
    out->next_in_ms = interval;
    char span[32];
    if (hb_idle(c, now, s->last_activity)) {
        out->reason = "idle-cap";
        out->stop = true;
        vigil_span_text(now - s->last_activity, span, sizeof span);
        snprintf(out->detail, sizeof out->detail,
                 "no activity from %s for %s: no runs until they are back", s->cfg.user, span);
        return true;
    }
    hb_local l = hb_local_time(tz, now);
    const hb_quiet *q = &s->cfg.quiet;
    if (hb_quiet_contains(q, l.hour * 60 + l.minute)) {
        out->reason = "quiet-hours";
        out->next_in_ms = hb_quiet_remaining_ms(q, &l);
        snprintf(out->detail, sizeof out->detail,
                 "%02d:%02d in %s is inside quiet hours %02d:%02d-%02d:%02d", l.hour, l.minute,
                 s->cfg.tz[0] ? s->cfg.tz : "UTC", q->start_min / 60, q->start_min % 60,
                 q->end_min / 60, q->end_min % 60);
        return true;
    }
    if (hb_live_exchange(s, c, now, out->detail, sizeof out->detail)) {
        out->reason = HB_REASON_LIVE;
        return true;
    }
    hb_level lv = hb_state_level(s, s->cfg.room);
    if (lv == HB_LEVEL_SLEEP || lv == HB_LEVEL_MENTION_ONLY) {
        out->reason = lv == HB_LEVEL_SLEEP ? "persona-asleep" : "persona-mention-only";
        snprintf(out->detail, sizeof out->detail, "%s is %s in %s", s->persona, hb_level_name(lv),
                 s->cfg.room);
        return true;
    }
    if (s->last_proactive > 0 && !s->answered && now - s->last_proactive < c->unanswered_ms) {
        out->reason = "unanswered";
        vigil_span_text(now - s->last_proactive, span, sizeof span);
        snprintf(out->detail, sizeof out->detail,
                 "the proactive message of %s ago is still unanswered", span);
        return true;
    }
    if (s->checklist_error[0]) {
        out->reason = "checklist-unreadable";
        snprintf(out->detail, sizeof out->detail, "checklist_file: %.*s: nothing to check",
                 (int)vigil_utf8_cut_max(s->checklist_error, 150), s->checklist_error);
        return true;
    }
    if (blank(s->cfg.checklist)) {
        out->reason = "empty-checklist";
        snprintf(out->detail, sizeof out->detail, "the checklist is empty: nothing to check");
        return true;
    }
    if (!c->llm_enabled) {
        out->reason = "no-llm";
        snprintf(out->detail, sizeof out->detail, "no LLM configured (VIGIL_LLM_URL)");
        return true;
    }
    return false;
}
