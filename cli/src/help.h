/* help.h - --help texts and usage errors of the `vigil` command. */
#ifndef VIGIL_CLI_HELP_H
#define VIGIL_CLI_HELP_H
#include <stdio.h>

/* Prints the help of "vigil", "chat" or a chat subcommand. */
void cli_help(const char *name, FILE *f);
/* Prints msg and a hint to --help on stderr; returns the usage exit code. */
int cli_usage_error(const char *name, const char *msg);

#endif
