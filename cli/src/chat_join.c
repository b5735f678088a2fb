/* chat_join.c - `vigil chat join`: an interactive session in a room. New
 * messages are printed as they arrive (MQTT room/{room}/message, printed
 * by paho's thread); each typed line is sent as a human message. Joining
 * does not pause the room (--pause does, and resumes on the way out,
 * including on Ctrl-C, SIGTERM and SIGHUP - unless the room was paused
 * already when it joined: then it stays paused). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vigil/json.h>
#include "cli.h"
#include "help.h"
#include "opts.h"

#define SEEN_RING 256
#define EARLY_MAX 1024
#define LINE_MAX_BYTES 65536

/* What the paho thread and the main thread share. */
typedef struct join_state {
    pthread_mutex_t mu;
    bool history_done;          /* live messages print directly once set */
    json_object *early[EARLY_MAX]; /* arrived while the history was printed */
    int n_early;
    char seen[SEEN_RING][CHAT_EVID_MAX + 1]; /* ids printed lately (QoS 1 redelivery) */
    int seen_pos;
} join_state;

static join_state g_join = { .mu = PTHREAD_MUTEX_INITIALIZER };
static int g_sig_pipe[2] = { -1, -1 };

static bool seen_before(join_state *s, const char *id)
{
    if (!id || !*id)
        return false;
    for (int i = 0; i < SEEN_RING; i++)
        if (strcmp(s->seen[i], id) == 0)
            return true;
    snprintf(s->seen[s->seen_pos], sizeof s->seen[0], "%s", id);
    s->seen_pos = (s->seen_pos + 1) % SEEN_RING;
    return false;
}

/* Caller holds s->mu. */
static void print_live(join_state *s, json_object *m)
{
    if (seen_before(s, cli_msg_str(m, "id")))
        return;
    json_object *v;
    int64_t ts = json_object_object_get_ex(m, "ts", &v) ? json_object_get_int64(v) : cli_now_ms();
    cli_print_chat_line(stdout, m, ts);
}

static void on_message(void *ctx, const char *topic, const void *payload, size_t len,
                       bool retained)
{
    (void)topic;
    (void)retained;
    join_state *s = ctx;
    json_object *m = vigil_json_parse_object(payload, len, 1 << 20, &(vigil_error){ 0 });
    if (!m)
        return;
    pthread_mutex_lock(&s->mu);
    if (!s->history_done && s->n_early < EARLY_MAX) {
        s->early[s->n_early++] = m;
        m = NULL;
    } else if (s->history_done) {
        print_live(s, m);
    }
    pthread_mutex_unlock(&s->mu);
    json_object_put(m);
}

static void on_signal(int sig)
{
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(g_sig_pipe[1], &b, 1);
    (void)w;
}

static int setup_signals(void)
{
    if (pipe(g_sig_pipe) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return 0;
}

/* Prints the last `history` messages, then what arrived meanwhile. */
static int print_history(cli *c, const char *room, int history)
{
    cli_entry *v = NULL;
    int n = 0;
    int rc = cli_log_tail(c, room, history, &v, &n);
    join_state *s = &g_join;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; rc == CLI_OK && i < n; i++) {
        if (!v[i].msg || seen_before(s, cli_msg_str(v[i].msg, "id")))
            continue;
        cli_print_chat_line(stdout, v[i].msg, cli_msg_ts(&v[i]));
    }
    for (int i = 0; i < s->n_early; i++) {
        print_live(s, s->early[i]);
        json_object_put(s->early[i]);
    }
    s->n_early = 0;
    s->history_done = true;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++)
        cli_entry_free(&v[i]);
    free(v);
    return rc;
}

/* Sends one typed line; a failure is reported and the session goes on
 * (the client reconnects by itself). Returns false on /quit. */
static bool handle_line(cli *c, const char *room, char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
        line[--n] = '\0';
    if (n == 0)
        return true;
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0)
        return false;
    if (strcmp(line, "/help") == 0) {
        fprintf(stderr, "type a message and press Enter to send it; /quit or Ctrl-D leaves\n");
        return true;
    }
    if (!vigil_utf8_valid(line, n)) {
        fprintf(stderr, "vigil: not sent: the line is not valid UTF-8\n");
        return true;
    }
    char id[96];
    if (cli_post(c, room, c->user, "human", line, NULL, -1, NULL, id, sizeof id) != CLI_OK)
        fprintf(stderr, "vigil: not sent (will keep trying to reconnect): %s\n", line);
    return true;
}

/* Reads stdin line by line until EOF, /quit or a signal. */
static void input_loop(cli *c, const char *room)
{
    char *buf = malloc(LINE_MAX_BYTES + 1);
    size_t len = 0;
    if (!buf)
        return;
    for (;;) {
        struct pollfd fds[2] = { { STDIN_FILENO, POLLIN, 0 }, { g_sig_pipe[0], POLLIN, 0 } };
        int pr = poll(fds, 2, -1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0 || (fds[1].revents & POLLIN))
            break;
        if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = read(STDIN_FILENO, buf + len, LINE_MAX_BYTES - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            buf[len] = '\0';
            if (len > 0)
                handle_line(c, room, buf);
            break;
        }
        len += (size_t)r;
        buf[len] = '\0';
        char *start = buf, *nl;
        bool quit = false;
        while (!quit && (nl = memchr(start, '\n', len - (size_t)(start - buf))) != NULL) {
            *nl = '\0';
            quit = !handle_line(c, room, start);
            start = nl + 1;
        }
        if (quit)
            break;
        len -= (size_t)(start - buf);
        memmove(buf, start, len);
        if (len == LINE_MAX_BYTES) { /* an endless line: send what we have */
            buf[len] = '\0';
            handle_line(c, room, buf);
            len = 0;
        }
    }
    free(buf);
}

/* Whether the room's own pause flag is set now (its record; the global
 * pause does not count) and by whom: join --pause leaves such a room as
 * it found it. */
static int room_paused(cli *c, const char *room, bool *paused, char *by, size_t bylen)
{
    char key[256], sfx[CHAT_ID_MAX + 16];
    snprintf(sfx, sizeof sfx, "state:%s", room);
    cli_key(c, sfx, key, sizeof key);
    redisReply *r = vigil_redis_command(c->redis, "HGET %s s", key);
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL))
        return cli_redis_failed(c, r);
    *paused = false;
    by[0] = '\0';
    char err[100];
    chat_room *rr = r->type == REDIS_REPLY_STRING
                        ? chat_room_from_json(room, r->str, err, sizeof err) : NULL;
    if (rr) {
        *paused = rr->paused;
        snprintf(by, bylen, "%s", rr->paused_by);
        chat_room_free(rr);
    }
    vigil_redis_reply_free(r);
    return CLI_OK;
}

/* --pause: pauses the room unless it is paused already. *ours says whether
 * this join paused it (and so resumes it when leaving). */
static int pause_for_join(cli *c, const char *room, bool *ours)
{
    bool before = false;
    char by[CHAT_ID_MAX + 1];
    *ours = false;
    int rc = room_paused(c, room, &before, by, sizeof by);
    if (rc != CLI_OK)
        return rc;
    if (before) {
        fprintf(stderr, "room %s is already paused%s%s: it stays paused when you leave\n", room,
                by[0] ? " by " : "", by);
        return CLI_OK;
    }
    rc = cli_control(c, room, "pause", false, 0, NULL, 0);
    if (rc == CLI_OK) {
        *ours = true;
        fprintf(stderr, "paused room %s while you are here\n", room);
    }
    return rc;
}

int cli_join_room(cli *c, const char *room, bool pause, int history)
{
    char sub[CHAT_ID_MAX + 32];
    snprintf(sub, sizeof sub, "room/%s/message", room);
    const char *subs[] = { sub, NULL };
    if (setup_signals() != 0)
        return cli_fail(CLI_ERR_RUNTIME, "cannot set up signal handling");
    bool paused_here = false;
    int rc = cli_mqtt(c, subs, on_message, &g_join);
    if (rc == CLI_OK && pause)
        rc = pause_for_join(c, room, &paused_here);
    if (rc == CLI_OK)
        rc = print_history(c, room, history);
    if (rc != CLI_OK)
        return rc;
    fprintf(stderr, "joined room %s as %s%s; type a message and press Enter, /quit or Ctrl-D "
                    "leaves\n",
            room, c->user, pause ? " (the room is paused while you are here)" : "");
    input_loop(c, room);
    if (paused_here) {
        rc = cli_control(c, room, "resume", false, 0, NULL, 0);
        if (rc == CLI_OK)
            fprintf(stderr, "resumed room %s\n", room);
    } else if (pause) {
        fprintf(stderr, "left room %s paused, as it was when you joined\n", room);
    }
    return rc;
}

int cli_chat_join(cli *c, int argc, char **argv)
{
    static const struct option LONG[] = {
        { "pause", no_argument, NULL, 'p' },
        { "history", required_argument, NULL, 'H' },
        { 0, 0, 0, 0 },
    };
    bool pause = false;
    int64_t history = 10;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        switch (opt) {
        case 'p':
            pause = true;
            break;
        case 'H':
            if (!cli_parse_int(optarg, 0, 10000, &history))
                return cli_usage_error("join", "--history needs a whole number 0..10000");
            break;
        default:
            return cli_opt_error("join", opt, optopt, argv);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("join", argc - optind < 1 ? "missing ROOM" : "too many arguments");
    const char *room = argv[optind];
    int rc = cli_open_room(c, room);
    if (rc != CLI_OK)
        return rc;
    return cli_join_room(c, room, pause, (int)history);
}
