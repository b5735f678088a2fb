/* checklist_file.c - the checklist a config names by file (`checklist_file`,
 * below VIGIL_HEARTBEAT_CHECKLIST_DIR), read when the config arrives (a bad
 * or missing file refuses the config) and again just before each run, so
 * that editing the file steers the next run as HEARTBEAT.md does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include "adapter.h"

#define FILE_MAX (HB_CHECKLIST_MAX + 1) /* read one byte past the limit to see it */

vigil_reject_reason hb_checklist_read(const hb_service *svc, const char *name, char **text,
                                      char *why, size_t whylen)
{
    *text = NULL;
    if (!svc->checklist_dir[0]) {
        snprintf(why, whylen, "file checklists are off (VIGIL_HEARTBEAT_CHECKLIST_DIR is empty)");
        return VIGIL_REJECT_BAD_VALUE;
    }
    if (strlen(name) > HB_CHECKLIST_FILE_NAME_MAX) {
        snprintf(why, whylen, "longer than %d bytes", HB_CHECKLIST_FILE_NAME_MAX);
        return VIGIL_REJECT_BAD_VALUE;
    }
    if (!name[0] || name[0] == '/' || strstr(name, "..")) {
        snprintf(why, whylen, "a relative name without '..'");
        return VIGIL_REJECT_BAD_VALUE;
    }
    char path[HB_PATH_MAX + HB_CHECKLIST_FILE_NAME_MAX + 8];
    snprintf(path, sizeof path, "%s/%s", svc->checklist_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, whylen, "cannot read '%.*s'", (int)vigil_utf8_cut_max(name, 100), name);
        return VIGIL_REJECT_BAD_VALUE;
    }
    char *buf = malloc(FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, FILE_MAX, f) : 0;
    fclose(f);
    if (!buf) {
        snprintf(why, whylen, "out of memory");
        return VIGIL_REJECT_NO_MEMORY;
    }
    if (n >= FILE_MAX || !vigil_utf8_valid(buf, n)) {
        free(buf);
        if (n >= FILE_MAX)
            snprintf(why, whylen, "'%.*s' is larger than %d bytes", (int)vigil_utf8_cut_max(name, 100),
                     name, HB_CHECKLIST_MAX);
        else
            snprintf(why, whylen, "'%.*s' is not UTF-8 text", (int)vigil_utf8_cut_max(name, 100),
                     name);
        return VIGIL_REJECT_BAD_VALUE;
    }
    buf[n] = '\0';
    *text = buf;
    return VIGIL_REJECT_NONE;
}
