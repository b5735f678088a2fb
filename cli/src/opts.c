/* opts.c - option parsing helpers (getopt_long with our own messages). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

bool cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

int cli_flag_opt(int argc, char **argv, const char *flag, bool *set)
{
    const struct option longs[] = { { flag, no_argument, NULL, 'f' }, { 0, 0, 0, 0 } };
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
        if (opt != 'f')
            return opt;
        *set = true;
    }
    return 0;
}

int cli_opt_error(const char *name, int opt, int optopt_value, char **argv)
{
    char msg[160];
    cli_opt_message(opt, optopt_value, argv, msg, sizeof msg);
    return cli_usage_error(name, msg);
}

void cli_opt_message(int opt, int optopt_value, char **argv, char *msg, size_t msglen)
{
    if (opt == ':')
        snprintf(msg, msglen, "option '%s' needs a value", argv[optind - 1]);
    else if (optopt_value)
        snprintf(msg, msglen, "unknown option '-%c'", optopt_value);
    else
        snprintf(msg, msglen, "unknown option '%s'", argv[optind - 1]);
}
