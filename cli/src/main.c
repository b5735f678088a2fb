/* main.c - `vigil`, the command-line client: dispatches to the chat
 * subcommands (chat_*.c). Every change goes to chat-router as an MQTT
 * message; reads (room list, log) come straight from Redis. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "help.h"
#include "ops.h"

typedef int (*chat_cmd)(cli *c, int argc, char **argv);

static const struct {
    const char *name;
    chat_cmd fn;
} CHAT_CMDS[] = {
    { "new", cli_chat_new },       { "join", cli_chat_join },     { "send", cli_chat_send },
    { "view", cli_chat_view },     { "pause", cli_chat_pause },   { "resume", cli_chat_resume },
    { "delete", cli_chat_delete }, { "cleanup", cli_chat_cleanup },
};

/* `vigil chat ...`: argv[0] is "chat". */
static int run_chat(int argc, char **argv)
{
    chat_cmd fn = cli_chat_list;
    const char *name = "chat";
    int sub = 0;
    if (argc > 1 && argv[1][0] != '-') {
        fn = NULL;
        for (size_t i = 0; i < sizeof CHAT_CMDS / sizeof CHAT_CMDS[0]; i++)
            if (strcmp(argv[1], CHAT_CMDS[i].name) == 0) {
                fn = CHAT_CMDS[i].fn;
                name = CHAT_CMDS[i].name;
            }
        if (!fn) {
            char msg[128];
            snprintf(msg, sizeof msg, "unknown chat command '%.60s'", argv[1]);
            return cli_usage_error("chat", msg);
        }
        sub = 1;
    }
    if (cli_wants_help(argc - sub, argv + sub)) {
        cli_help(name, stdout);
        return CLI_OK;
    }
    cli c;
    int rc = cli_init(&c);
    if (rc != CLI_OK)
        return rc;
    rc = fn(&c, argc - sub, argv + sub);
    cli_close(&c);
    return rc;
}

/* `vigil council ...`: argv[0] is "council". */
static int run_council(int argc, char **argv)
{
    static const struct {
        const char *name, *help;
        chat_cmd fn;
    } CMDS[] = {
        {"sessions", "council-sessions", cli_council_sessions},
        {"show", "council-show", cli_council_show},
        {"questions", "council-questions", cli_council_questions},
    };
    if (argc < 2)
        return cli_usage_error("council", "missing subcommand (sessions, show, questions)");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_help("council", stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) {
        if (strcmp(argv[1], CMDS[i].name) != 0)
            continue;
        if (cli_wants_help(argc - 1, argv + 1)) {
            cli_help(CMDS[i].help, stdout);
            return CLI_OK;
        }
        cli c;
        int rc = cli_init(&c);
        if (rc != CLI_OK)
            return rc;
        rc = CMDS[i].fn(&c, argc - 1, argv + 1);
        cli_close(&c);
        return rc;
    }
    char msg[128];
    snprintf(msg, sizeof msg, "unknown council command '%.60s'", argv[1]);
    return cli_usage_error("council", msg);
}

/* `vigil agents status ...`: argv[0] is "agents". */
static int run_agents(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        cli_help("agents", stdout);
        return CLI_OK;
    }
    if (argc < 2)
        return cli_usage_error("agents", "missing subcommand (status)");
    if (strcmp(argv[1], "status") != 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "unknown agents command '%.60s'", argv[1]);
        return cli_usage_error("agents", msg);
    }
    cli c;
    int rc = cli_init(&c);
    if (rc != CLI_OK)
        return rc;
    rc = cli_agents_status(&c, argc - 1, argv + 1);
    cli_close(&c);
    return rc;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* `vigil chat view r | head` */
    if (argc < 2)
        return cli_usage_error("vigil", "missing command");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        cli_help("vigil", stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("vigil %s\n", VIGIL_VERSION);
        return CLI_OK;
    }
    if (strcmp(argv[1], "chat") == 0)
        return run_chat(argc - 1, argv + 1);
    int ops = cli_ops_main(argc - 1, argv + 1); /* persona, status, errors */
    if (ops >= 0)
        return ops;
    if (strcmp(argv[1], "deadletter") == 0)
        return cli_deadletter(argc - 1, argv + 1);
    if (strcmp(argv[1], "council") == 0)
        return run_council(argc - 1, argv + 1);
    if (strcmp(argv[1], "agents") == 0)
        return run_agents(argc - 1, argv + 1);
    char msg[128];
    snprintf(msg, sizeof msg, "unknown command '%.60s'", argv[1]);
    return cli_usage_error("vigil", msg);
}
