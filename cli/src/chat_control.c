/* chat_control.c - `vigil chat pause|resume|delete`: a message on
 * room/{room}/control, then a wait until chat-router has applied it (its
 * processed-id record for the room), so a script can rely on the effect
 * once the command returns. The global pause/resume goes to
 * room/_all/control with "all": true. */
#include <string.h>
#include <vigil/clock.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

int cli_control(cli *c, const char *room, const char *action, bool all, int64_t if_inactive_since,
                char *id_out, size_t id_outlen)
{
    char id[96];
    cli_new_id(id, sizeof id, "cli");
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "action", json_object_new_string(action));
    if (all)
        json_object_object_add(o, "all", json_object_new_boolean(true));
    json_object_object_add(o, "by", json_object_new_string(c->user));
    if (if_inactive_since > 0)
        json_object_object_add(o, "if_inactive_since", json_object_new_int64(if_inactive_since));
    json_object_object_add(o, "ts", json_object_new_int64(cli_now_ms()));
    char topic[CHAT_ID_MAX + 32];
    snprintf(topic, sizeof topic, "room/%s/control", room);
    int rc = cli_publish(c, topic, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    if (id_out)
        snprintf(id_out, id_outlen, "%s", id);
    if (rc != CLI_OK)
        return rc;
    char what[96];
    snprintf(what, sizeof what, "the %s%s", action, all ? " --all" : "");
    return cli_wait_processed(c, room, id, what);
}

/* resume --all reaches the held rooms a moment after the flag: wait until
 * no room is paused or holds a queue. */
static int wait_all_resumed(cli *c)
{
    char paused[256], queued[256];
    cli_key(c, CHAT_KEY_PAUSED, paused, sizeof paused);
    cli_key(c, CHAT_KEY_QUEUED, queued, sizeof queued);
    int64_t deadline = vigil_mono_ms() + c->timeout_ms;
    for (;;) {
        redisReply *a = vigil_redis_command(c->redis, "SCARD %s", paused);
        redisReply *b = a ? vigil_redis_command(c->redis, "SCARD %s", queued) : NULL;
        bool done = a && b && a->type == REDIS_REPLY_INTEGER && b->type == REDIS_REPLY_INTEGER &&
                    a->integer == 0 && b->integer == 0;
        bool io = !a || !b;
        if (a)
            vigil_redis_reply_free(a);
        if (b)
            vigil_redis_reply_free(b);
        if (io)
            return cli_redis_failed(c, NULL);
        if (done)
            return CLI_OK;
        if (vigil_mono_ms() >= deadline)
            return cli_fail(CLI_ERR_RUNTIME, "chat-router did not resume every room within %lld ms",
                            (long long)c->timeout_ms);
        vigil_sleep_ms(10, NULL);
    }
}

/* pause/resume ROOM | --all */
static int pause_resume(cli *c, int argc, char **argv, const char *action)
{
    bool all = false;
    int bad = cli_flag_opt(argc, argv, "all", &all);
    if (bad)
        return cli_opt_error(action, bad, optopt, argv);
    int left = argc - optind;
    if (all && left > 0)
        return cli_usage_error(action, "give either ROOM or --all, not both");
    if (!all && left != 1)
        return cli_usage_error(action, left < 1 ? "missing ROOM (or --all)" : "too many arguments");
    const char *room = all ? CHAT_ALL_ROOM : argv[optind];
    int rc = all ? cli_redis(c) : cli_open_room(c, room);
    if (rc == CLI_OK)
        rc = cli_mqtt(c, NULL, NULL, NULL);
    if (rc == CLI_OK)
        rc = cli_control(c, room, action, all, 0, NULL, 0);
    bool resume = strcmp(action, "resume") == 0;
    if (rc == CLI_OK && all && resume)
        rc = wait_all_resumed(c);
    if (rc != CLI_OK)
        return rc;
    if (all)
        printf("%s every room\n", resume ? "resumed" : "paused");
    else
        printf("%s room %s\n", resume ? "resumed" : "paused", room);
    if (resume && !all && cli_paused_all(c))
        fprintf(stderr, "note: the global pause is still on: notifications stay queued until "
                        "vigil chat resume --all\n");
    return CLI_OK;
}

int cli_chat_pause(cli *c, int argc, char **argv)
{
    return pause_resume(c, argc, argv, "pause");
}

int cli_chat_resume(cli *c, int argc, char **argv)
{
    return pause_resume(c, argc, argv, "resume");
}

int cli_chat_delete(cli *c, int argc, char **argv)
{
    int bad = cli_flag_opt(argc, argv, NULL, NULL);
    if (bad)
        return cli_opt_error("delete", bad, optopt, argv);
    if (argc - optind != 1)
        return cli_usage_error("delete", argc - optind < 1 ? "missing ROOM" : "too many arguments");
    const char *room = argv[optind];
    int rc = cli_open_room(c, room);
    if (rc == CLI_OK)
        rc = cli_mqtt(c, NULL, NULL, NULL);
    if (rc == CLI_OK)
        rc = cli_control(c, room, "delete", false, 0, NULL, 0);
    if (rc == CLI_OK)
        printf("deleted room %s\n", room);
    return rc;
}
