/* ops.h - the operators' commands (`vigil persona`, `vigil status`,
 * `vigil errors`): they read only topics (retained state, events), never
 * another service's Redis keys, so they work wherever the broker is
 * reachable. */
#ifndef VIGIL_CLI_OPS_H
#define VIGIL_CLI_OPS_H
#include <json-c/json.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <vigil/json.h>
#include "cli.h"

/* Exit codes beyond cli.h's 0 ok, 1 runtime, 2 usage, 3 not found. */
enum {
    OPS_EXIT_REFUSED = 5,   /* persona sleep|wake|level: the service refused the command */
    OPS_EXIT_NOT_READY = 6  /* status: an instance or a port is not ready */
};

/* One message received on a subscription. */
typedef struct ops_msg {
    char *topic;
    json_object *json; /* NULL when the payload was not a JSON object */
    bool retained;
    int64_t at_ms;     /* receive time (wall clock) */
    size_t seq;        /* its place in the inbox: 0 for the first received */
} ops_msg;

/* Messages queued by the MQTT client thread, taken by the command's
 * thread. */
typedef struct ops_inbox {
    pthread_mutex_t mu;
    ops_msg *items;
    size_t len, cap, taken;
} ops_inbox;

void ops_inbox_init(ops_inbox *in);
void ops_inbox_free(ops_inbox *in);
/* Subscribes to subs (NULL-terminated) into `in`; returns once every
 * subscription is active, so every retained message is already queued. */
int ops_subscribe(cli *c, const char *const *subs, ops_inbox *in);
/* Moves the next message not taken yet into *out (the caller frees it with
 * ops_msg_free); false when none waits (non-blocking). */
bool ops_inbox_take(ops_inbox *in, ops_msg *out);
/* How many messages were received so far: a message whose seq is at least
 * this number came after the call. */
size_t ops_inbox_count(ops_inbox *in);
void ops_msg_free(ops_msg *m);

/* Help and usage of the operators' commands (ops_help.c). */
bool ops_help(const char *name, FILE *f);
int ops_usage_error(const char *name, const char *msg);
/* A getopt error (unknown option, missing value) as a usage error. */
int ops_opt_error(const char *name, int opt, int optopt_value, char **argv);

/* A field as a string ("" when absent or not a string). */
const char *ops_str(json_object *o, const char *field);
/* A field as int64 (def when absent or not a number). */
int64_t ops_int(json_object *o, const char *field, int64_t def);
/* "2025-11-22 03:21:00" local time, or "-" for ms <= 0. */
void ops_local_time(int64_t ms, char *out, size_t outlen);
/* Prints o as one compact JSON line on stdout. */
void ops_print_json(json_object *o);

/* Readiness of one HTTP port: GET /readyz on host:port within timeout_ms.
 * Returns the HTTP status, 0 when nothing answers (refused, timeout). */
int ops_http_status(const char *host, int port, const char *path, int timeout_ms);

/* `vigil persona|status|errors ...` (argv[0] is the command): the exit
 * status, or -1 when argv[0] is none of these. */
int cli_ops_main(int argc, char **argv);

/* Subcommands (argv[0] is the subcommand). */
int cli_persona_status(cli *c, int argc, char **argv);
int cli_persona_change(cli *c, int argc, char **argv);
int cli_status(cli *c, int argc, char **argv);
int cli_errors(cli *c, int argc, char **argv);

#endif
