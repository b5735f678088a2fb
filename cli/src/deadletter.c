/* deadletter.c - `vigil deadletter list|replay SERVICE`: the outputs a
 * service's outbox could not publish (libshared's deadletter.h). */
#include <stdlib.h>
#include <string.h>
#include <vigil/deadletter.h>
#include <vigil/json.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

/* Writes n bytes on one line: valid UTF-8 escaped like every CLI line
 * (cli_write_escaped), anything else byte by byte as \xNN. */
static void write_bytes(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        return;
    memcpy(s, p, n);
    s[n] = '\0';
    if (vigil_utf8_valid(s, n) && strlen(s) == n) {
        cli_write_escaped(stdout, s);
    } else {
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)p[i];
            if (ch == '\\')
                fputs("\\\\", stdout);
            else if (ch < 0x20 || ch >= 0x7f)
                printf("\\x%02x", ch);
            else
                fputc(ch, stdout);
        }
    }
    free(s);
}

/* Prints one dead letter on one line: index, topic, payload. */
static void print_one(void *ctx, long long index, const vigil_deadletter *d)
{
    (void)ctx;
    printf("%lld\t", index);
    if (d->topic && d->payload) {
        write_bytes(d->topic, strlen(d->topic));
        printf("%s\t", d->retain ? " (retained)" : "");
        write_bytes(d->payload, d->payload_len);
    } else {
        fputs("(undecodable)\t", stdout);
        write_bytes(d->raw, d->raw_len);
    }
    fputc('\n', stdout);
}

/* A SERVICE that is none of the deployment's: a typo would read an empty
 * list (or replay nothing) and look like "no dead letters". */
static int unknown_service(const char *service)
{
    char names[256], msg[400];
    cli_service_names(names, sizeof names);
    snprintf(msg, sizeof msg, "unknown service '%.64s': use one of %s", service, names);
    return cli_usage_error("deadletter", msg);
}

int cli_deadletter(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        cli_help("deadletter", stdout);
        return CLI_OK;
    }
    if (argc < 2)
        return cli_usage_error("deadletter", "missing subcommand (list or replay)");
    const char *what = argv[1];
    bool replay = strcmp(what, "replay") == 0;
    if (!replay && strcmp(what, "list") != 0)
        return cli_usage_error("deadletter", "expected list or replay");
    static const struct option LONG[] = { { "shard", required_argument, 0, 's' }, { 0, 0, 0, 0 } };
    int64_t shard = 0;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc - 1, argv + 1, ":", LONG, NULL)) != -1) {
        if (opt == 's' && replay && cli_parse_int(optarg, 0, 1023, &shard))
            continue;
        if (opt == 's')
            return cli_usage_error("deadletter", "--shard takes 0-1023, with replay only");
        return cli_opt_error("deadletter", opt, optopt, argv + 1);
    }
    if (optind + 1 != argc - 1)
        return cli_usage_error("deadletter", "expected one SERVICE");
    const char *service = argv[optind + 1];
    if (!cli_service_known(service))
        return unknown_service(service);

    cli c;
    int rc = cli_init(&c);
    if (rc != CLI_OK)
        return rc;
    if ((rc = cli_redis(&c)) == CLI_OK) {
        char key[320];
        vigil_deadletter_key(c.cfg.redis_prefix, service, key, sizeof key);
        long long n = replay ? vigil_deadletter_replay(c.redis, c.cfg.redis_prefix, service, (int)shard)
                             : vigil_deadletter_list(c.redis, c.cfg.redis_prefix, service, print_one,
                                                     NULL);
        if (n < 0)
            rc = cli_fail(CLI_ERR_RUNTIME, "Redis at %s: %s", c.cfg.redis_url,
                          *vigil_redis_last_error(c.redis) ? vigil_redis_last_error(c.redis)
                                                           : "unexpected reply");
        else if (replay)
            printf("replayed %lld dead letter%s of %s to %s%s:outbox:%d\n", n, n == 1 ? "" : "s",
                   service, c.cfg.redis_prefix, service, (int)shard);
        else
            fprintf(stderr, "%lld dead letter%s in %s\n", n, n == 1 ? "" : "s", key);
    }
    cli_close(&c);
    return rc;
}
