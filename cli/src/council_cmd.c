/* council_cmd.c - `vigil council sessions | show <id> | questions`: the
 * council's durable records (sessions, deliberations, questions), read
 * through council's reader library (services/council/src/reader), never
 * by council's key names. */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/json.h>
#include "cli.h"
#include "council_reader.h"
#include "help.h"
#include "opts.h"

static const char *str(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : "";
}

static int64_t num(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static void when(int64_t ms, char *out, size_t cap)
{
    if (ms > 0)
        cli_iso_time(ms, out, cap);
    else
        snprintf(out, cap, "-");
}

/* Options common to the three: --json, --limit N. */
static int options(const char *name, int argc, char **argv, bool *json, int64_t *limit,
                   bool *all)
{
    static const struct option LONG[] = {{"json", no_argument, NULL, 'j'},
                                         {"limit", required_argument, NULL, 'n'},
                                         {"all", no_argument, NULL, 'a'},
                                         {0, 0, 0, 0}};
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        if (opt == 'j')
            *json = true;
        else if (opt == 'a' && all)
            *all = true;
        else if (opt == 'n' && cli_parse_int(optarg, 1, 10000, limit))
            continue;
        else if (opt == 'n')
            return cli_usage_error(name, "--limit takes a number from 1 to 10000");
        else
            return cli_opt_error(name, opt, optopt, argv);
    }
    return CLI_OK;
}

typedef struct list_ctx {
    bool json;
    int rows;
} list_ctx;

static int print_session(void *arg, const char *rec, size_t len)
{
    (void)len;
    list_ctx *c = arg;
    if (c->json) {
        puts(rec);
        c->rows++;
        return 0;
    }
    json_object *o = json_tokener_parse(rec);
    if (!o)
        return 0;
    if (c->rows++ == 0)
        printf("%-22s %-16s %-10s %5s %7s  %-24s %s\n", "SESSION", "USER", "STATUS", "LOOPS",
               "ACTIONS", "STARTED", "REASON");
    char started[40];
    when(num(o, "started_at"), started, sizeof started);
    printf("%-22s %-16s %-10s %5lld %7lld  %-24s %s\n", str(o, "session"), str(o, "user"),
           str(o, "status"), (long long)num(o, "loop_count"), (long long)num(o, "actions"),
           started, str(o, "reason"));
    json_object_put(o);
    return 0;
}

int cli_council_sessions(cli *c, int argc, char **argv)
{
    bool json = false;
    int64_t limit = 20;
    int rc = options("council-sessions", argc, argv, &json, &limit, NULL);
    if (rc != CLI_OK)
        return rc;
    if (optind < argc)
        return cli_usage_error("council-sessions", "takes no argument");
    if ((rc = cli_redis(c)) != CLI_OK)
        return rc;
    list_ctx l = {json, 0};
    if (council_reader_sessions(c->redis, c->cfg.redis_prefix, (int)limit, print_session, &l) < 0)
        return cli_redis_failed(c, NULL);
    if (!json && l.rows == 0)
        fprintf(stderr, "no council sessions yet\n");
    return CLI_OK;
}

static int print_delib(void *arg, const char *rec, size_t len)
{
    (void)len;
    list_ctx *c = arg;
    if (c->json) {
        puts(rec);
        return 0;
    }
    json_object *o = json_tokener_parse(rec);
    if (!o)
        return 0;
    char t[40];
    when(num(o, "ts"), t, sizeof t);
    printf("\nloop %lld  %s\n", (long long)num(o, "loop"), t);
    static const char *const WHO[] = {"polaris", "aurora", "vega", "sol"};
    for (int i = 0; i < 4; i++) {
        printf("  %-8s ", WHO[i]);
        cli_write_escaped(stdout, str(o, WHO[i]));
        putchar('\n');
    }
    printf("  decision ");
    cli_write_escaped(stdout, str(o, "decision"));
    printf("\n  result   ");
    cli_write_escaped(stdout, str(o, "result"));
    putchar('\n');
    if (str(o, "warning")[0]) {
        printf("  warning  ");
        cli_write_escaped(stdout, str(o, "warning"));
        putchar('\n');
    }
    json_object_put(o);
    return 0;
}

int cli_council_show(cli *c, int argc, char **argv)
{
    bool json = false;
    int64_t limit = 1000;
    int rc = options("council-show", argc, argv, &json, &limit, NULL);
    if (rc != CLI_OK)
        return rc;
    if (optind + 1 != argc)
        return cli_usage_error("council-show", "expected one session id");
    const char *id = argv[optind];
    if (!vigil_id_valid(id, strlen(id)))
        return cli_usage_error("council-show", "a session id is 1-64 of A-Z a-z 0-9 . _ -");
    if ((rc = cli_redis(c)) != CLI_OK)
        return rc;
    char *rec = NULL;
    int found = council_reader_session(c->redis, c->cfg.redis_prefix, id, &rec);
    if (found < 0)
        return cli_redis_failed(c, NULL);
    if (found == 0)
        return cli_fail(CLI_ERR_NOT_FOUND, "no council session '%s'", id);
    list_ctx l = {json, 0};
    if (json) {
        puts(rec);
    } else {
        json_object *o = json_tokener_parse(rec);
        char started[40], ended[40];
        when(num(o, "started_at"), started, sizeof started);
        when(num(o, "ended_at"), ended, sizeof ended);
        printf("session %s  user %s  room %s\nstatus  %s  loops %lld  actions %lld\n"
               "started %s  ended %s\n",
               str(o, "session"), str(o, "user"), str(o, "room")[0] ? str(o, "room") : "-",
               str(o, "status"), (long long)num(o, "loop_count"), (long long)num(o, "actions"),
               started, ended);
        if (str(o, "reason")[0])
            printf("reason  %s\n", str(o, "reason"));
        json_object *qs = NULL, *ns = NULL;
        if (json_object_object_get_ex(o, "questions", &qs) && json_object_array_length(qs) > 0) {
            printf("\nquestions:\n");
            for (size_t i = 0; i < json_object_array_length(qs); i++) {
                json_object *q = json_object_array_get_idx(qs, i);
                printf("  [p%lld %s] %s", (long long)num(q, "priority"), str(q, "status"),
                       str(q, "question"));
                if (str(q, "answer")[0])
                    printf("  -> \"%s\"", str(q, "answer"));
                putchar('\n');
            }
        }
        if (json_object_object_get_ex(o, "notes", &ns) && json_object_array_length(ns) > 0) {
            printf("\nnotes:\n");
            for (size_t i = 0; i < json_object_array_length(ns); i++)
                printf("  - %s\n", str(json_object_array_get_idx(ns, i), "text"));
        }
        json_object_put(o);
    }
    free(rec);
    if (council_reader_deliberations(c->redis, c->cfg.redis_prefix, id, (int)limit, print_delib,
                                     &l) < 0)
        return cli_redis_failed(c, NULL);
    return CLI_OK;
}

typedef struct q_row {
    char *json;
    int priority;
    int64_t created;
} q_row;

typedef struct q_ctx {
    q_row *rows;
    size_t n, cap;
    bool all;
    int failed;
} q_ctx;

static int collect_questions(void *arg, const char *rec, size_t len)
{
    (void)len;
    q_ctx *c = arg;
    json_object *o = json_tokener_parse(rec), *qs = NULL;
    if (!o)
        return 0;
    if (json_object_object_get_ex(o, "questions", &qs) && json_object_is_type(qs, json_type_array))
        for (size_t i = 0; i < json_object_array_length(qs); i++) {
            json_object *q = json_object_array_get_idx(qs, i);
            if (!c->all && strcmp(str(q, "status"), "pending") != 0)
                continue;
            if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                q_row *r = realloc(c->rows, cap * sizeof *r);
                if (!r) {
                    c->failed = 1;
                    break;
                }
                c->rows = r;
                c->cap = cap;
            }
            json_object *row = json_object_new_object();
            json_object_object_add(row, "session", json_object_new_string(str(o, "session")));
            json_object_object_add(row, "user", json_object_new_string(str(o, "user")));
            json_object_object_foreach(q, k, v) json_object_object_add(row, k, json_object_get(v));
            c->rows[c->n].json = strdup(json_object_to_json_string_ext(
                row, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
            c->rows[c->n].priority = (int)num(q, "priority");
            c->rows[c->n].created = num(q, "created_at");
            c->n += c->rows[c->n].json != NULL;
            json_object_put(row);
        }
    json_object_put(o);
    return c->failed;
}

/* Highest priority first, then oldest (the order the council surfaces them). */
static int by_priority(const void *a, const void *b)
{
    const q_row *x = a, *y = b;
    if (x->priority != y->priority)
        return y->priority - x->priority;
    return x->created < y->created ? -1 : x->created > y->created;
}

int cli_council_questions(cli *c, int argc, char **argv)
{
    bool json = false, all = false;
    int64_t limit = 50;
    int rc = options("council-questions", argc, argv, &json, &limit, &all);
    if (rc != CLI_OK)
        return rc;
    if (optind < argc)
        return cli_usage_error("council-questions", "takes no argument");
    if ((rc = cli_redis(c)) != CLI_OK)
        return rc;
    q_ctx q = {0};
    q.all = all;
    if (council_reader_sessions(c->redis, c->cfg.redis_prefix, (int)limit, collect_questions, &q) <
        0)
        rc = cli_redis_failed(c, NULL);
    if (q.n > 1) /* none collected: rows is NULL, which qsort may not be given */
        qsort(q.rows, q.n, sizeof *q.rows, by_priority);
    if (rc == CLI_OK && !json && q.n == 0)
        fprintf(stderr, all ? "no questions\n" : "no pending questions\n");
    for (size_t i = 0; rc == CLI_OK && i < q.n; i++) {
        if (json) {
            puts(q.rows[i].json);
            continue;
        }
        json_object *o = json_tokener_parse(q.rows[i].json);
        char exp[40];
        when(num(o, "expires_at"), exp, sizeof exp);
        printf("p%-2d %-9s %-22s %-24s  expires %s\n    %s\n", q.rows[i].priority,
               str(o, "status"), str(o, "session"), str(o, "id"), exp, str(o, "question"));
        json_object_put(o);
    }
    for (size_t i = 0; i < q.n; i++)
        free(q.rows[i].json);
    free(q.rows);
    return rc;
}
