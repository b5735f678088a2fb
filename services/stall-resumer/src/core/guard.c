/* guard.c - the stall resumer guard (should_send_resume): an active
 * agent never gets a resume; an inactive one does, and so does one whose
 * signals failed validation; and when the assessment itself failed, the
 * guard fails open (allows the resume) and says so, so a truly stalled
 * agent is never left alone because detection broke. */
#include <stdio.h>
#include "stall.h"

stall_guard stall_should_send_resume(int assess_rc, const char *assess_err,
                                     const stall_assessment *as)
{
    stall_guard g = {0};
    if (assess_rc != 0 || !as) {
        g.send = true;
        g.failed_open = true;
        snprintf(g.reason, sizeof g.reason, "activity check failed (%s): failing open, resume allowed",
                 assess_err && *assess_err ? assess_err : "unknown error");
        return g;
    }
    if (as->is_active) {
        snprintf(g.reason, sizeof g.reason, "agent active (confidence %.3f): no resume",
                 as->confidence_milli / 1000.0);
        return g;
    }
    g.send = true;
    if (!as->validation_passed)
        snprintf(g.reason, sizeof g.reason,
                 "validation failed (confidence %.3f): resume allowed", as->confidence_milli / 1000.0);
    else
        snprintf(g.reason, sizeof g.reason, "inactive: confidence %.3f < 0.5",
                 as->confidence_milli / 1000.0);
    return g;
}

void stall_resume_reason(const stall_guard *g, const stall_assessment *as, char *out,
                         size_t outlen)
{
    if (g->failed_open || !as || as->category_age_known)
        snprintf(out, outlen, "%s", g->reason);
    else
        snprintf(out, outlen, "%s; no status and no activity known: failing open", g->reason);
}
