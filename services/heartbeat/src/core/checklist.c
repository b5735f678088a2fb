/* checklist.c - a checklist kept in a file (config `checklist_file`) is
 * the user's HEARTBEAT.md: they control the heartbeat by editing it, and an
 * edit takes effect at the next run without publishing the config again.
 * The shell reads the file just before each timer decision (the core does
 * no I/O) and hands the text, or why it could not be read, here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heartbeat.h"

hb_result hb_checklist_file_read(hb_state *s, const char *text, const char *error, hb_out *out)
{
    s->checklist_error[0] = '\0';
    if (!s->cfg.set || !s->cfg.checklist_file[0])
        return HB_OK;
    if (!text) {
        /* no checklist to reason with: the run is skipped (skip.c), and
         * the last text read stays in the record */
        snprintf(s->checklist_error, sizeof s->checklist_error, "%s",
                 error && error[0] ? error : "unreadable");
        return HB_OK;
    }
    if (s->cfg.checklist && strcmp(s->cfg.checklist, text) == 0)
        return HB_OK;
    char *copy = strdup(text);
    if (!copy)
        return HB_ERR_NOMEM;
    free(s->cfg.checklist);
    s->cfg.checklist = copy;
    out->changed = true;
    return HB_OK;
}
