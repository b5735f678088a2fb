/* ops_main.c - dispatch of the operators' commands: `vigil persona ...`,
 * `vigil status`, `vigil errors`. */
#include <string.h>
#include "ops.h"

typedef int (*ops_cmd)(cli *c, int argc, char **argv);

/* Runs fn with a fresh configuration, or prints help. */
static int run(const char *help_name, ops_cmd fn, int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        ops_help(help_name, stdout);
        return CLI_OK;
    }
    cli c;
    int rc = cli_init(&c);
    if (rc != CLI_OK)
        return rc;
    rc = fn(&c, argc, argv);
    cli_close(&c);
    return rc;
}

static int run_persona(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        if (cli_wants_help(argc, argv)) {
            ops_help("persona", stdout);
            return CLI_OK;
        }
        return ops_usage_error("persona", "missing subcommand (status, sleep, wake or level)");
    }
    const char *sub = argv[1];
    char name[32];
    snprintf(name, sizeof name, "persona %s", sub);
    if (strcmp(sub, "status") == 0)
        return run(name, cli_persona_status, argc - 1, argv + 1);
    if (strcmp(sub, "sleep") == 0 || strcmp(sub, "wake") == 0 || strcmp(sub, "level") == 0)
        return run(name, cli_persona_change, argc - 1, argv + 1);
    char msg[128];
    snprintf(msg, sizeof msg, "unknown persona command '%.60s'", sub);
    return ops_usage_error("persona", msg);
}

int cli_ops_main(int argc, char **argv)
{
    if (strcmp(argv[0], "persona") == 0)
        return run_persona(argc, argv);
    if (strcmp(argv[0], "status") == 0)
        return run("status", cli_status, argc, argv);
    if (strcmp(argv[0], "errors") == 0)
        return run("errors", cli_errors, argc, argv);
    return -1;
}
