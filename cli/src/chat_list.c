/* chat_list.c - `vigil chat`: every room with its message count, paused
 * flag, queued notifications and last activity, read from Redis in one
 * pipelined round trip per room batch. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

typedef struct room_row {
    char room[CHAT_ID_MAX + 1];
    long long messages;
    bool paused;
    long long queued;
    long long last_activity;
    char last_sender[CHAT_ID_MAX + 1];
} room_row;

static int cmp_rows(const void *a, const void *b)
{
    return strcmp(((const room_row *)a)->room, ((const room_row *)b)->room);
}

/* Reads HGET state s + XLEN log for every row, pipelined. */
static int fill_rows(cli *c, room_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char state[256], log[256], sfx[CHAT_ID_MAX + 16];
        snprintf(sfx, sizeof sfx, "state:%s", rows[i].room);
        cli_key(c, sfx, state, sizeof state);
        chat_log_name(rows[i].room, sfx, sizeof sfx);
        cli_key(c, sfx, log, sizeof log);
        const char *a1[] = { "HGET", state, "s" };
        const char *a2[] = { "XLEN", log };
        if (vigil_redis_append(c->redis, 3, a1, NULL) != 0 ||
            vigil_redis_append(c->redis, 2, a2, NULL) != 0)
            return cli_redis_failed(c, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        redisReply *s = vigil_redis_pipeline_get(c->redis);
        redisReply *l = s ? vigil_redis_pipeline_get(c->redis) : NULL;
        if (!s || !l) {
            if (s)
                vigil_redis_reply_free(s);
            return cli_redis_failed(c, NULL);
        }
        if (s->type == REDIS_REPLY_STRING) {
            char err[100];
            chat_room *r = chat_room_from_json(rows[i].room, s->str, err, sizeof err);
            if (r) {
                rows[i].paused = r->paused;
                rows[i].queued = r->queued;
                rows[i].last_activity = r->last_activity;
                snprintf(rows[i].last_sender, sizeof rows[i].last_sender, "%s", r->last_sender);
                chat_room_free(r);
            }
        }
        rows[i].messages = l->type == REDIS_REPLY_INTEGER ? l->integer : 0;
        vigil_redis_reply_free(s);
        vigil_redis_reply_free(l);
    }
    return CLI_OK;
}

static void print_json(const room_row *r, bool paused_all)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "room", json_object_new_string(r->room));
    json_object_object_add(o, "messages", json_object_new_int64(r->messages));
    json_object_object_add(o, "paused", json_object_new_boolean(r->paused || paused_all));
    json_object_object_add(o, "paused_all", json_object_new_boolean(paused_all));
    json_object_object_add(o, "queued", json_object_new_int64(r->queued));
    json_object_object_add(o, "last_activity", json_object_new_int64(r->last_activity));
    json_object_object_add(o, "last_sender", json_object_new_string(r->last_sender));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

int cli_chat_list(cli *c, int argc, char **argv)
{
    bool json = false;
    int bad = cli_flag_opt(argc, argv, "json", &json);
    if (bad)
        return cli_opt_error("chat", bad, optopt, argv);
    if (optind < argc)
        return cli_usage_error("chat", "`vigil chat` lists rooms and takes no other argument");
    int rc;
    redisReply *m = cli_room_set(c, &rc);
    if (rc != CLI_OK)
        return rc;
    if (!m || m->type != REDIS_REPLY_ARRAY)
        return cli_redis_failed(c, m);
    size_t n = 0;
    room_row *rows = calloc(m->elements + 1, sizeof *rows);
    if (!rows) {
        vigil_redis_reply_free(m);
        return cli_fail(CLI_ERR_RUNTIME, "out of memory");
    }
    for (size_t i = 0; i < m->elements; i++)
        if (m->element[i]->type == REDIS_REPLY_STRING && m->element[i]->len <= CHAT_ID_MAX)
            snprintf(rows[n++].room, sizeof rows[0].room, "%s", m->element[i]->str);
    vigil_redis_reply_free(m);
    qsort(rows, n, sizeof *rows, cmp_rows);
    rc = fill_rows(c, rows, n);
    bool paused_all = rc == CLI_OK && cli_paused_all(c);
    if (rc == CLI_OK && !json) {
        if (paused_all)
            fprintf(stderr, "global pause is on (vigil chat resume --all lifts it)\n");
        if (n == 0)
            fprintf(stderr, "no rooms yet (vigil chat new NAME creates one)\n");
        else
            printf("%-24s %9s %-6s %7s  %s\n", "ROOM", "MESSAGES", "PAUSED", "QUEUED",
                   "LAST ACTIVITY");
    }
    for (size_t i = 0; rc == CLI_OK && i < n; i++) {
        if (json) {
            print_json(&rows[i], paused_all);
            continue;
        }
        char when[40];
        if (rows[i].last_activity > 0)
            cli_iso_time(rows[i].last_activity, when, sizeof when);
        else
            snprintf(when, sizeof when, "-");
        printf("%-24s %9lld %-6s %7lld  %s\n", rows[i].room, rows[i].messages,
               paused_all ? "all" : rows[i].paused ? "yes" : "no", rows[i].queued, when);
    }
    free(rows);
    return rc;
}
