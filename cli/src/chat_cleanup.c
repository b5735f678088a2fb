/* chat_cleanup.c - `vigil chat cleanup`: trims every room log to
 * VIGIL_CHAT_LOG_MAX_AGE_MS (exact XTRIM MINID; chat-router trims the same
 * way as it appends, so this matters for rooms that went quiet), then
 * deletes the rooms left empty. The delete carries if_inactive_since, so
 * chat-router keeps a room that got a message after we looked, and a
 * paused room whose queued notifications are still owed. */
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

static long long redis_int(cli *c, redisReply *r, bool *ok)
{
    *ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!*ok) {
        cli_redis_failed(c, r);
        return 0;
    }
    long long v = r->integer;
    vigil_redis_reply_free(r);
    return v;
}

int cli_chat_cleanup(cli *c, int argc, char **argv)
{
    int bad = cli_flag_opt(argc, argv, NULL, NULL);
    if (bad)
        return cli_opt_error("cleanup", bad, optopt, argv);
    if (optind < argc)
        return cli_usage_error("cleanup", "cleanup takes no arguments");
    int rc;
    redisReply *m = cli_room_set(c, &rc);
    if (rc != CLI_OK)
        return rc;
    if (!m || m->type != REDIS_REPLY_ARRAY)
        return cli_redis_failed(c, m); /* an error reply's text, else the connection's error */
    int64_t now = cli_now_ms();
    int64_t cutoff = c->log_max_age_ms > 0 ? now - c->log_max_age_ms : now;
    long long removed = 0;
    int deleted = 0, kept = 0;
    char names[4096] = "";
    for (size_t i = 0; rc == CLI_OK && i < m->elements; i++) {
        const char *room = m->element[i]->str;
        if (m->element[i]->type != REDIS_REPLY_STRING || cli_check_room(room) != CLI_OK)
            continue;
        char sfx[CHAT_ID_MAX + 16], log[256], minid[32];
        chat_log_name(room, sfx, sizeof sfx);
        cli_key(c, sfx, log, sizeof log);
        bool ok = true;
        if (c->log_max_age_ms > 0) {
            snprintf(minid, sizeof minid, "%lld", (long long)cutoff);
            removed += redis_int(c, vigil_redis_command(c->redis, "XTRIM %s MINID %s", log, minid),
                                 &ok);
        }
        long long left = ok ? redis_int(c, vigil_redis_command(c->redis, "XLEN %s", log), &ok) : 0;
        if (!ok) {
            rc = CLI_ERR_RUNTIME;
            break;
        }
        if (left > 0)
            continue;
        if (!c->mqtt && (rc = cli_mqtt(c, NULL, NULL, NULL)) != CLI_OK)
            break;
        if ((rc = cli_control(c, room, "delete", false, cutoff, NULL, 0)) != CLI_OK)
            break;
        bool still = false;
        if ((rc = cli_room_exists(c, room, &still)) != CLI_OK)
            break;
        if (still) {
            kept++;
            continue;
        }
        deleted++;
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", deleted > 1 ? ", " : "", room);
    }
    vigil_redis_reply_free(m);
    if (rc != CLI_OK)
        return rc;
    printf("removed %lld expired message%s; deleted %d empty room%s%s%s\n", removed,
           removed == 1 ? "" : "s", deleted, deleted == 1 ? "" : "s", deleted ? ": " : "", names);
    if (kept)
        printf("kept %d room%s that received a message meanwhile or hold queued notifications "
               "(paused: `vigil chat resume` delivers them, `vigil chat delete` drops them)\n",
               kept, kept == 1 ? "" : "s");
    return CLI_OK;
}
