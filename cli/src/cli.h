/* cli.h - what the `vigil` subcommands share: exit codes, the connection
 * to Redis and the broker, key names, ids, output formatting. */
#ifndef VIGIL_CLI_H
#define VIGIL_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <vigil/config.h>
#include <vigil/mqtt.h>
#include <vigil/reads.h>
#include <vigil/redis_raw.h>
#include <vigil/redis.h>
#include "chat.h"

/* Exit codes (documented in services/chat-router/README.md). */
enum {
    CLI_OK = 0,
    CLI_ERR_RUNTIME = 1,   /* broker or Redis unreachable, chat-router did not confirm */
    CLI_ERR_USAGE = 2,     /* bad arguments, bad room name */
    CLI_ERR_NOT_FOUND = 3, /* room not found */
    CLI_ERR_EXISTS = 4     /* chat new: room already exists */
};

#define CLI_DEFAULT_TIMEOUT_MS 5000

typedef struct cli {
    vigil_common_config cfg;
    int64_t timeout_ms;     /* VIGIL_CLI_TIMEOUT_MS */
    int64_t log_max_age_ms; /* VIGIL_CHAT_LOG_MAX_AGE_MS (cleanup) */
    char user[CHAT_ID_MAX + 1];
    vigil_redis *redis;
    vigil_mqtt *mqtt;
    char client_id[96];
} cli;

/* Prints "vigil: <message>" on stderr and returns code. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a Redis command that failed: "Redis at <url>: " and the error
 * reply's text when r is one, else why the connection failed. Frees r
 * (NULL allowed) and returns CLI_ERR_RUNTIME. */
int cli_redis_failed(cli *c, redisReply *r);

/* Loads the environment (common variables plus the CLI's own). */
int cli_init(cli *c);
void cli_close(cli *c);

/* Connects to Redis (bounded by the timeout). CLI_OK or CLI_ERR_RUNTIME. */
int cli_redis(cli *c);
/* Connects to the broker with a fresh client id and no persistent session,
 * subscribed to subs (NULL-terminated, may be NULL), and waits until the
 * subscriptions are active. CLI_OK or CLI_ERR_RUNTIME. */
int cli_mqtt(cli *c, const char *const *subs, vigil_mqtt_on_message on_message, void *ctx);
/* Publishes one QoS 1 message and waits for the broker's acknowledgement. */
int cli_publish(cli *c, const char *topic, const char *payload);

/* P "chat-router:" suffix. */
void cli_key(const cli *c, const char *suffix, char *out, size_t outlen);
/* CLI_OK for a valid room id, else CLI_ERR_USAGE with a message. */
int cli_check_room(const char *room);
/* CLI_OK when the room exists, CLI_ERR_NOT_FOUND (message printed) when
 * not, CLI_ERR_RUNTIME on a Redis error. */
int cli_require_room(cli *c, const char *room);
int cli_room_exists(cli *c, const char *room, bool *exists);
/* Connects to Redis and reads the set of rooms (SMEMBERS): the reply, for
 * the caller to check (NULL or not an array is a failed command), with
 * *rc CLI_OK; NULL with *rc the connect failure's code (reported). */
redisReply *cli_room_set(cli *c, int *rc);
/* What a command on an existing room checks first, in this order: the
 * name (cli_check_room), the connection to Redis, the room itself
 * (cli_require_room). CLI_OK or the first failure's code (reported). */
int cli_open_room(cli *c, const char *room);
/* Waits until chat-router has processed input `id` for key `room` (its
 * processed-id record), up to the timeout. */
int cli_wait_processed(cli *c, const char *room, const char *id, const char *what);
/* Waits up to the timeout for chat-router to record input id as processed
 * in room; *done says whether it did (CLI_OK either way, unless Redis
 * failed). cli_wait_processed is this with an error on the timeout. */
int cli_poll_processed(cli *c, const char *room, const char *id, bool *done);
/* True when the global pause flag is on (false on error). */
bool cli_paused_all(cli *c);

/* A fresh unique id "<tag>-<ms>-<pid>-<random>". */
void cli_new_id(char *out, size_t outlen, const char *tag);
int64_t cli_now_ms(void);

/* Output helpers (format.c). */
/* "2025-11-22T03:21:00.123Z" */
void cli_iso_time(int64_t ms, char *out, size_t outlen);
/* "03:21:00" in local time. */
void cli_clock_time(int64_t ms, char *out, size_t outlen);
/* Writes s with '\\', newline, CR, tab and other control characters
 * escaped C-style, so one message is one line. */
void cli_write_escaped(FILE *f, const char *s);
/* Writes an error event's sample, escaped already by the service (libshared's
 * vigil_json_sample: backslashes doubled, control characters and bytes that
 * are not UTF-8 as \xNN) as it is; only a control character still in it
 * (anyone may publish an error event) is escaped, so that one sample stays
 * one line and no escape sequence reaches the terminal. */
void cli_write_sample(FILE *f, const char *s);
/* Writes s for a terminal: newlines kept, other control characters
 * (escape sequences) escaped. */
void cli_write_terminal(FILE *f, const char *s);

/* One room log entry, decoded. */
typedef struct cli_entry {
    char log_id[48];
    json_object *msg; /* owned; NULL if the entry was unreadable */
} cli_entry;
/* Decodes one XRANGE reply element [id, [field, value...]]. */
int cli_entry_decode(const redisReply *e, cli_entry *out);
void cli_entry_free(cli_entry *e);
/* A message field as a string ("" if absent). */
const char *cli_msg_str(json_object *m, const char *field);
int64_t cli_msg_ts(const cli_entry *e);
/* "[03:21:00] joel: text" (or "[..] * text" for system messages). */
void cli_print_chat_line(FILE *f, json_object *m, int64_t ts);

/* Subcommands. argv[0] is the subcommand name. */
int cli_chat_list(cli *c, int argc, char **argv);
/* council_cmd.c: `vigil council ...` */
int cli_council_sessions(cli *c, int argc, char **argv);
int cli_council_show(cli *c, int argc, char **argv);
int cli_council_questions(cli *c, int argc, char **argv);
int cli_chat_new(cli *c, int argc, char **argv);
int cli_chat_join(cli *c, int argc, char **argv);
int cli_chat_send(cli *c, int argc, char **argv);
int cli_chat_view(cli *c, int argc, char **argv);
int cli_chat_pause(cli *c, int argc, char **argv);
int cli_chat_resume(cli *c, int argc, char **argv);
int cli_chat_delete(cli *c, int argc, char **argv);
int cli_chat_cleanup(cli *c, int argc, char **argv);

/* The services of a deployment (services.c): name and default HTTP port. */
typedef struct cli_service {
    const char *name;
    int port;
} cli_service;
extern const cli_service CLI_SERVICES[];
extern const size_t CLI_SERVICES_N;
/* True when name is one of CLI_SERVICES. */
bool cli_service_known(const char *name);
/* Their names, comma-separated ("dormancy-monitor, wake-evaluator, ..."),
 * for messages; cut short when out is too small. */
void cli_service_names(char *out, size_t outlen);

/* `vigil deadletter list|replay SERVICE` (deadletter.c); argv[0] is
 * "deadletter". */
int cli_deadletter(int argc, char **argv);
/* `vigil agents status` (agents_status.c). */
int cli_agents_status(cli *c, int argc, char **argv);

/* Publishes a room message (sender_type `type`; reply_to NULL and depth
 * < 0 leave those fields out; event: an extra "event" field or NULL) with
 * a fresh id written to id_out. */
int cli_post(cli *c, const char *room, const char *sender, const char *type, const char *text,
             const char *reply_to, int64_t depth, const char *event, char *id_out,
             size_t id_outlen);

/* Shared by join and new: the interactive session. */
int cli_join_room(cli *c, const char *room, bool pause, int history);
/* Publishes a control on room/<room>/control and waits until processed. */
int cli_control(cli *c, const char *room, const char *action, bool all, int64_t if_inactive_since,
                char *id_out, size_t id_outlen);
/* Reads the last n entries of a room log (n <= 0: none) oldest first. */
int cli_log_tail(cli *c, const char *room, int n, cli_entry **out, int *count);

/* True when argv[i] is -h/--help. */
bool cli_wants_help(int argc, char **argv);

#endif
