/* reads.c - typed reads of Redis values (reads.h). */
#include "vigil/reads.h"

#include <stdio.h>

#include "vigil/redis_raw.h"

vigil_read_result vigil_read_flag(vigil_redis *r, const char *key, bool *on, char *err,
                                  size_t errlen)
{
    *on = false;
    redisReply *rep = r ? vigil_redis_command(r, "GET %s", key) : NULL;
    if (!rep)
        return VIGIL_READ_UNREACHABLE;
    vigil_read_result rc = VIGIL_READ_OK;
    if (rep->type == REDIS_REPLY_STRING) {
        *on = rep->len == 1 && rep->str[0] == '1';
    } else if (rep->type == REDIS_REPLY_ERROR) {
        if (err && errlen)
            snprintf(err, errlen, "%s", rep->str);
        rc = VIGIL_READ_WRONG_TYPE;
    }
    freeReplyObject(rep);
    return rc;
}
