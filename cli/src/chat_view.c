/* chat_view.c - `vigil chat view`: the room log, stateless and pipeable.
 * The log is the Redis stream P "chat-router:log:" room; its entry ids
 * (ms-seq) are the ids printed and accepted back as --since; a message's
 * own id (what `send` prints) is accepted too and found in the log. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

#define PAGE 1000

static void print_entry(const cli_entry *e, bool json)
{
    if (json) {
        json_object *o = json_object_new_object();
        if (e->msg) {
            json_object_object_foreach(e->msg, k, v)
            {
                if (strcmp(k, "log_id") != 0)
                    json_object_object_add(o, k, json_object_get(v));
            }
        }
        json_object_object_add(o, "log_id", json_object_new_string(e->log_id));
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return;
    }
    char when[40];
    cli_iso_time(cli_msg_ts(e), when, sizeof when);
    printf("%s|%s|%s|", e->log_id, when, cli_msg_str(e->msg, "sender"));
    cli_write_escaped(stdout, cli_msg_str(e->msg, "text"));
    putchar('\n');
}

/* Runs one XRANGE/XREVRANGE and decodes its entries. */
static int fetch(cli *c, const char *cmd, const char *key, const char *a, const char *b,
                 long long count, cli_entry **out, int *n)
{
    char cnt[32];
    snprintf(cnt, sizeof cnt, "%lld", count);
    const char *argv[] = { cmd, key, a, b, "COUNT", cnt };
    redisReply *r = vigil_redis_commandv(c->redis, 6, argv, NULL);
    *out = NULL;
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return cli_redis_failed(c, r);
    *out = calloc(r->elements + 1, sizeof **out);
    if (!*out) {
        vigil_redis_reply_free(r);
        return cli_fail(CLI_ERR_RUNTIME, "out of memory");
    }
    for (size_t i = 0; i < r->elements; i++)
        if (cli_entry_decode(r->element[i], &(*out)[*n]) == 0)
            (*n)++;
    vigil_redis_reply_free(r);
    return CLI_OK;
}

static void free_entries(cli_entry *v, int n)
{
    for (int i = 0; i < n; i++)
        cli_entry_free(&v[i]);
    free(v);
}

static void log_key(cli *c, const char *room, char *out, size_t outlen)
{
    char sfx[CHAT_ID_MAX + 16];
    chat_log_name(room, sfx, sizeof sfx);
    cli_key(c, sfx, out, outlen);
}

int cli_log_tail(cli *c, const char *room, int n, cli_entry **out, int *count)
{
    char key[256];
    log_key(c, room, key, sizeof key);
    *out = NULL;
    *count = 0;
    if (n <= 0)
        return CLI_OK;
    int rc = fetch(c, "XREVRANGE", key, "+", "-", n, out, count);
    if (rc != CLI_OK)
        return rc;
    for (int i = 0, j = *count - 1; i < j; i++, j--) {
        cli_entry t = (*out)[i];
        (*out)[i] = (*out)[j];
        (*out)[j] = t;
    }
    return CLI_OK;
}

/* Prints everything after `start` (exclusive when excl), at most limit
 * entries (0 = all), page by page. */
static int print_from(cli *c, const char *key, const char *start, bool excl, long long limit,
                      bool json)
{
    /* nothing follows the largest id (and Redis refuses "(" before it) */
    if (excl && strcmp(start, "18446744073709551615-18446744073709551615") == 0)
        return CLI_OK;
    char from[64];
    snprintf(from, sizeof from, "%s%s", excl ? "(" : "", start);
    long long printed = 0;
    for (;;) {
        long long want = PAGE;
        if (limit > 0 && limit - printed < want)
            want = limit - printed;
        if (want <= 0)
            return CLI_OK;
        cli_entry *v;
        int n;
        int rc = fetch(c, "XRANGE", key, from, "+", want, &v, &n);
        if (rc != CLI_OK)
            return rc;
        for (int i = 0; i < n; i++)
            print_entry(&v[i], json);
        if (n > 0)
            snprintf(from, sizeof from, "(%s", v[n - 1].log_id);
        free_entries(v, n);
        printed += n;
        if (fflush(stdout) != 0 || ferror(stdout))
            return CLI_OK; /* reader went away (| head) */
        if (n < want)
            return CLI_OK;
    }
}

/* Scans the log newest first for the entry holding message mid; its log
 * id goes to out. *found false when no entry holds it. */
static int find_message(cli *c, const char *key, const char *mid, char *out, size_t outlen,
                        bool *found)
{
    *found = false;
    char end[64] = "+";
    for (;;) {
        cli_entry *v;
        int n;
        int rc = fetch(c, "XREVRANGE", key, end, "-", PAGE, &v, &n);
        if (rc != CLI_OK)
            return rc;
        for (int i = 0; i < n && !*found; i++) {
            if (strcmp(cli_msg_str(v[i].msg, "id"), mid) == 0) {
                snprintf(out, outlen, "%s", v[i].log_id);
                *found = true;
            }
        }
        if (n > 0)
            snprintf(end, sizeof end, "(%s", v[n - 1].log_id);
        free_entries(v, n);
        if (*found || n < PAGE)
            return CLI_OK;
    }
}

/* --since given a message id (what `vigil chat send` prints): the log id
 * of its entry. A message chat-router has not processed yet is waited for
 * (up to the timeout, polling its processed-id record, not the log), so
 * `view --since "$(vigil chat send ...)"` right after the send pages from
 * that message instead of failing. The log is scanned at most twice. */
static int since_message(cli *c, const char *room, const char *key, const char *mid, char *out,
                         size_t outlen)
{
    bool found = false;
    int rc = find_message(c, key, mid, out, outlen, &found);
    if (rc != CLI_OK || found)
        return rc;
    bool processed = false;
    rc = cli_poll_processed(c, room, mid, &processed);
    if (rc != CLI_OK)
        return rc;
    if (!processed)
        return cli_fail(CLI_ERR_NOT_FOUND, "no message '%s' in room '%s' (--since takes a log "
                                           "id or a message id)", mid, room);
    rc = find_message(c, key, mid, out, outlen, &found);
    if (rc != CLI_OK || found)
        return rc;
    return cli_fail(CLI_ERR_NOT_FOUND, "message '%s' is not in the log of room '%s' "
                                       "(trimmed by retention, or refused)", mid, room);
}

int cli_chat_view(cli *c, int argc, char **argv)
{
    static const struct option LONG[] = {
        { "limit", required_argument, NULL, 'l' },
        { "since", required_argument, NULL, 's' },
        { "json", no_argument, NULL, 'j' },
        { 0, 0, 0, 0 },
    };
    int64_t limit = 0;
    const char *since = NULL;
    bool json = false;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        switch (opt) {
        case 'l':
            if (!cli_parse_int(optarg, 1, 1000000000, &limit))
                return cli_usage_error("view", "--limit needs a whole number >= 1");
            break;
        case 's':
            since = optarg;
            if (chat_since_kind_of(since) == CHAT_SINCE_BAD)
                return cli_usage_error("view", "--since needs a log id as printed by view "
                                               "(e.g. 1763800000000-0) or a message id "
                                               "as printed by send");
            break;
        case 'j':
            json = true;
            break;
        default:
            return cli_opt_error("view", opt, optopt, argv);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("view", argc - optind < 1 ? "missing ROOM" : "too many arguments");
    const char *room = argv[optind];
    int rc = cli_check_room(room);
    if (rc == CLI_OK)
        rc = cli_redis(c);
    if (rc != CLI_OK)
        return rc;
    char key[256];
    log_key(c, room, key, sizeof key);
    bool exists = false;
    rc = cli_room_exists(c, room, &exists);
    if (rc != CLI_OK)
        return rc;
    if (!exists) {
        redisReply *r = vigil_redis_command(c->redis, "EXISTS %s", key);
        exists = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        if (r)
            vigil_redis_reply_free(r);
        if (!exists)
            return cli_require_room(c, room);
    }
    char found[48];
    if (since && chat_since_kind_of(since) == CHAT_SINCE_MESSAGE_ID) {
        rc = since_message(c, room, key, since, found, sizeof found);
        if (rc != CLI_OK)
            return rc;
        since = found;
    }
    if (since)
        return print_from(c, key, since, true, limit, json);
    if (limit > 0) {
        cli_entry *v;
        int n;
        rc = cli_log_tail(c, room, (int)limit, &v, &n);
        for (int i = 0; rc == CLI_OK && i < n; i++)
            print_entry(&v[i], json);
        free_entries(v, n);
        fflush(stdout);
        return rc;
    }
    return print_from(c, key, "-", false, 0, json);
}
