/* flags.c - what route() reads from Redis: the global pause flag and the
 * rooms a resume-all must reach.
 *
 * The flag is read for every message, so it is cached: every replica sees
 * every control message (all subscribe to room/+/control) in broker order
 * and updates its copy when it routes a pause-all or resume-all, which
 * keeps one replica exact; the copy is re-read from Redis when older than
 * VIGIL_CHAT_FLAG_REFRESH_MS (at start, and to pick up a change made by
 * hand or missed while this replica was away). */
#include <string.h>
#include <vigil/clock.h>
#include <vigil/log.h>
#include <vigil/reads.h>
#include "adapter.h"

int chat_flag_paused_all(chat_service *svc, vigil_runtime *rt, bool *out)
{
    int64_t now = vigil_mono_ms();
    if (svc->paused_all_read_ms != 0 && now - svc->paused_all_read_ms < svc->flag_refresh_ms) {
        *out = svc->paused_all;
        return 0;
    }
    char key[VIGIL_KEY_MAX * 2];
    vigil_runtime_key(rt, CHAT_KEY_PAUSED_ALL, key, sizeof key);
    bool v;
    char why[160];
    vigil_read_result rc = vigil_read_flag(vigil_runtime_redis(rt), key, &v, why, sizeof why);
    if (rc == VIGIL_READ_UNREACHABLE)
        return VIGIL_ROUTE_RETRY;
    if (rc == VIGIL_READ_WRONG_TYPE)
        vigil_log_kv(VIGIL_LOG_WARN, "cannot read the global pause flag: taken as off", "key", key,
                     "error", why, NULL);
    chat_flag_note(svc, v);
    *out = v;
    return 0;
}

void chat_flag_note(chat_service *svc, bool paused_all)
{
    svc->paused_all = paused_all;
    int64_t now = vigil_mono_ms();
    svc->paused_all_read_ms = now != 0 ? now : 1;
}

int chat_held_rooms(vigil_runtime *rt, char keys[][VIGIL_KEY_MAX], int n, int max, bool *more)
{
    static const char *const SETS[] = { CHAT_KEY_PAUSED, CHAT_KEY_QUEUED };
    *more = false;
    for (size_t s = 0; s < sizeof SETS / sizeof SETS[0]; s++) {
        vigil_error err = { 0 };
        bool full = false;
        int r = vigil_runtime_route_members(rt, "SMEMBERS", SETS[s], keys, n, max, &full, &err);
        if (r == VIGIL_ROUTE_RETRY)
            return r;
        if (r < 0) /* the set holds another type: skip it, but say so */
            vigil_log_kv(VIGIL_LOG_WARN, "cannot list held rooms", "error", err.detail, NULL);
        else
            n = r;
        if (full) {
            *more = true;
            break;
        }
    }
    return n;
}
