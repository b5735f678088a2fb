/* chat_send.c - `vigil chat send` (one message, fire and forget) and
 * `vigil chat new` (create a room, then join it). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vigil/json.h>
#include <vigil/msg_room.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

int cli_post(cli *c, const char *room, const char *sender, const char *type, const char *text,
                const char *reply_to, int64_t depth, const char *event, char *id_out,
                size_t id_outlen)
{
    cli_new_id(id_out, id_outlen, "cli");
    int t = vigil_name_index(vigil_sender_type_names, type);
    vigil_room_message_out m = {.id = id_out, .room = room, .sender = sender,
                                .sender_type = t < 0 ? VIGIL_SENDER_HUMAN : (vigil_sender_type)t,
                                .text = text, .reply_to = reply_to, .event = event,
                                .has_depth = depth >= 0, .depth = depth, .ts = cli_now_ms()};
    json_object *o = vigil_room_message_json(&m); /* libshared's one writer */
    if (!o)
        return cli_fail(CLI_ERR_RUNTIME, "out of memory");
    const char *payload = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc;
    if (strlen(payload) > c->cfg.max_payload) {
        rc = cli_fail(CLI_ERR_USAGE, "message too long: %zu bytes, VIGIL_MAX_PAYLOAD is %zu",
                      strlen(payload), c->cfg.max_payload);
    } else {
        char topic[CHAT_ID_MAX + 32];
        snprintf(topic, sizeof topic, "room/%s/message", room);
        rc = cli_publish(c, topic, payload);
    }
    json_object_put(o);
    return rc;
}

/* Joins argv[from..argc) with single spaces (malloc'd). */
static char *join_words(int argc, char **argv, int from)
{
    size_t len = 1;
    for (int i = from; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = from; i < argc; i++) {
        if (i > from)
            strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

int cli_chat_send(cli *c, int argc, char **argv)
{
    static const struct option LONG[] = {
        { "as", required_argument, NULL, 'a' },
        { "ai", no_argument, NULL, 'i' },
        { "reply-to", required_argument, NULL, 'r' },
        { "depth", required_argument, NULL, 'd' },
        { 0, 0, 0, 0 },
    };
    const char *sender = c->user, *reply_to = NULL;
    bool ai = false;
    int64_t depth = -1;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        switch (opt) {
        case 'a':
            sender = optarg;
            if (!vigil_id_valid(sender, strlen(sender)))
                return cli_usage_error("send", "--as needs a name of 1-64 characters of "
                                               "A-Z a-z 0-9 . _ -");
            break;
        case 'i':
            ai = true;
            break;
        case 'r':
            reply_to = optarg;
            if (!*reply_to || strlen(reply_to) > VIGIL_EVENT_ID_MAX)
                return cli_usage_error("send", "--reply-to needs a message id (1-128 bytes)");
            break;
        case 'd':
            if (!cli_parse_int(optarg, 0, 1000000000, &depth))
                return cli_usage_error("send", "--depth needs a whole number >= 0");
            break;
        default:
            return cli_opt_error("send", opt, optopt, argv);
        }
    }
    if (argc - optind < 2)
        return cli_usage_error("send", argc - optind < 1 ? "missing ROOM and MESSAGE"
                                                         : "missing MESSAGE");
    /* a human message always starts a chain (depth 0): a depth given for one
     * would be dropped by chat-router without a word */
    if (depth >= 0 && !ai)
        return cli_usage_error("send", "--depth is for AI messages: add --ai");
    const char *room = argv[optind];
    int rc = cli_check_room(room);
    if (rc != CLI_OK)
        return rc;
    char *text = join_words(argc, argv, optind + 1);
    if (!text)
        return cli_fail(CLI_ERR_RUNTIME, "out of memory");
    if (!*text) {
        free(text);
        return cli_usage_error("send", "empty MESSAGE");
    }
    if (!vigil_utf8_valid(text, strlen(text))) {
        free(text);
        return cli_usage_error("send", "MESSAGE is not valid UTF-8");
    }
    char id[96];
    rc = cli_redis(c);
    if (rc == CLI_OK)
        rc = cli_require_room(c, room);
    if (rc == CLI_OK)
        rc = cli_mqtt(c, NULL, NULL, NULL);
    if (rc == CLI_OK)
        rc = cli_post(c, room, sender, ai ? "ai" : "human", text, reply_to, depth, NULL, id, sizeof id);
    if (rc == CLI_OK)
        printf("%s\n", id);
    free(text);
    return rc;
}

int cli_chat_new(cli *c, int argc, char **argv)
{
    bool no_join = false;
    int bad = cli_flag_opt(argc, argv, "no-join", &no_join);
    if (bad)
        return cli_opt_error("new", bad, optopt, argv);
    bool join = !no_join;
    if (argc - optind > 1)
        return cli_usage_error("new", "too many arguments");
    char room[CHAT_ID_MAX + 1];
    if (argc - optind == 1) {
        snprintf(room, sizeof room, "%s", argv[optind]);
        if (strlen(argv[optind]) > CHAT_ID_MAX)
            return cli_check_room(argv[optind]);
    } else {
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(room, sizeof room, "chat-%Y%m%d-%H%M%S", &tm);
    }
    int rc = cli_check_room(room);
    if (rc == CLI_OK)
        rc = cli_redis(c);
    bool exists = false;
    if (rc == CLI_OK)
        rc = cli_room_exists(c, room, &exists);
    if (rc != CLI_OK)
        return rc;
    if (exists)
        return cli_fail(CLI_ERR_EXISTS, "room '%s' already exists (vigil chat join %s)", room, room);
    rc = cli_mqtt(c, NULL, NULL, NULL);
    char text[CHAT_ID_MAX * 2 + 64], id[96];
    snprintf(text, sizeof text, "\xE2\x9C\xA8 room %s created by %s", room, c->user);
    if (rc == CLI_OK)
        rc = cli_post(c, room, c->user, "system", text, NULL, -1, "created", id, sizeof id);
    if (rc == CLI_OK)
        rc = cli_wait_processed(c, room, id, "the room creation");
    /* the broker connection of `new` is done; join makes its own */
    if (c->mqtt) {
        vigil_mqtt_stop(c->mqtt, NULL, 2000);
        c->mqtt = NULL;
    }
    if (rc != CLI_OK)
        return rc;
    if (!join) {
        printf("%s\n", room);
        return CLI_OK;
    }
    fprintf(stderr, "created room %s\n", room);
    return cli_join_room(c, room, false, 10);
}
