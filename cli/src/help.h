/* help.h - --help texts and usage errors of the `vigil` command. */
#ifndef VIGIL_CLI_HELP_H
#define VIGIL_CLI_HELP_H
#include <stdio.h>

#include <stdbool.h>
#include <stddef.h>

/* One --help text: the command's name, its text and its exit statuses
 * (NULL: the table's own). */
typedef struct cli_help_entry {
    const char *name;
    const char *text;
    const char *exits;
} cli_help_entry;

/* Prints the entry of table (n entries) named name: its text, then env,
 * then its exit statuses (exits when it names none). False when no entry
 * has that name (nothing printed). */
bool cli_help_print(const cli_help_entry *table, size_t n, const char *name, const char *env,
                    const char *exits, FILE *f);

/* Prints the help of "vigil", "chat" or a chat subcommand. */
void cli_help(const char *name, FILE *f);
/* Prints msg and a hint to --help on stderr; returns the usage exit code. */
int cli_usage_error(const char *name, const char *msg);

#endif
