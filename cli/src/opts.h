/* opts.h - command-line option helpers shared by the subcommands. */
#ifndef VIGIL_CLI_OPTS_H
#define VIGIL_CLI_OPTS_H
#include <getopt.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* Parses a whole decimal integer in [min, max]. */
bool cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/* Parses the options of a subcommand whose only option is the switch
 * --<flag> (none when flag is NULL), from optind: *set becomes true when it
 * is given. Returns 0, or at the first bad option getopt's result, to hand
 * to cli_opt_error with optopt. */
int cli_flag_opt(int argc, char **argv, const char *flag, bool *set);

/* Reports a getopt error for subcommand `name` (unknown option, missing
 * value) and returns the usage exit code. */
int cli_opt_error(const char *name, int opt, int optopt_value, char **argv);

/* The message of a getopt error (what cli_opt_error prints). */
void cli_opt_message(int opt, int optopt_value, char **argv, char *msg, size_t msglen);

#endif
