/* engine.c - chat_apply: load the room, decide, write the record back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"

int chat_decide(const chat_config *cfg, chat_room *r, const chat_input *in, int64_t now,
                chat_result *out, bool *deleted, char *err, size_t errlen)
{
    bool existed = r->exists;
    *deleted = false;
    int rc = in->kind == CHAT_IN_MESSAGE ? chat_on_message(cfg, r, in, now, out)
                                         : chat_on_control(cfg, r, in, now, out, deleted);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory deciding for room %s", r->room);
        return -1;
    }
    if (*deleted) {
        out->new_state = chat_tombstone_json(now, in->ctl.by);
        rc = out->new_state ? 0 : -1;
    } else if (r->exists || existed) {
        /* unchanged records are written too: cheaper than comparing, and
         * the commit happens anyway to record the input id */
        out->new_state = chat_room_to_json(r);
        rc = out->new_state ? 0 : -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "out of memory writing room %s", r->room);
        return -1;
    }
    return 0;
}

int chat_apply(const chat_config *cfg, const char *room, const char *state_json,
               const chat_input *in, int64_t now, chat_result *out, char *err, size_t errlen)
{
    int result = 0;
    chat_room *r = chat_room_from_json(room, state_json, err, errlen);
    if (!r) {
        /* An unreadable record is replaced: refusing every later input of
         * the room forever would be worse. The caller logs err. */
        r = chat_room_new(room);
        if (!r) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        result = 1;
    }
    bool deleted;
    int rc = chat_decide(cfg, r, in, now, out, &deleted, err, errlen);
    chat_room_free(r);
    return rc != 0 ? -1 : result;
}
