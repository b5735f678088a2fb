/* help.h - --help texts and usage errors of the `vigil` command. */
#ifndef VIGIL_CLI_HELP_H
#define VIGIL_CLI_HELP_H
#include <stdio.h>

#include <stdbool.h>
#include <stddef.h>

/* The lines of the environment blocks, shared by the help tables so that
 * each command lists only what it reads, in the same words. */
#define CLI_HELP_ENV_HEAD "Environment (same as the services):\n"
#define CLI_HELP_ENV_MQTT \
  "  VIGIL_MQTT_URL             broker (mqtt://127.0.0.1:1883)\n" \
  "  VIGIL_MQTT_USER, VIGIL_MQTT_PASSWORD\n" \
  "  VIGIL_MQTT_PASSWORD_FILE   file holding the MQTT password (not with VIGIL_MQTT_PASSWORD)\n" \
  "  VIGIL_MQTT_CA_FILE, VIGIL_MQTT_CERT_FILE, VIGIL_MQTT_KEY_FILE\n" \
  "                             TLS to the broker (mqtts:// only): CA, client certificate, key\n" \
  "  VIGIL_TOPIC_PREFIX         the services' topic prefix, if they have one (none)\n"
#define CLI_HELP_ENV_REDIS \
  "  VIGIL_REDIS_URL            Redis (redis://[[user]:password@]host:port/db, default\n" \
  "                             redis://127.0.0.1:6379/0)\n" \
  "  VIGIL_REDIS_URL_FILE       file holding the Redis URL (not with VIGIL_REDIS_URL)\n" \
  "  VIGIL_REDIS_PREFIX         key prefix (vigil:)\n"
#define CLI_HELP_ENV_LOG "  VIGIL_CLI_LOG_LEVEL        library log lines on stderr (error)\n"

/* One --help text: the command's name, its text, its exit statuses and its
 * environment (NULL: the table's own). */
typedef struct cli_help_entry {
    const char *name;
    const char *text;
    const char *exits;
    const char *env;
} cli_help_entry;

/* Prints the entry of table (n entries) named name: its text, then its
 * environment (env when it names none), then its exit statuses (exits when
 * it names none). False when no entry has that name (nothing printed). */
bool cli_help_print(const cli_help_entry *table, size_t n, const char *name, const char *env,
                    const char *exits, FILE *f);

/* Prints the help of "vigil", "chat" or a chat subcommand. */
void cli_help(const char *name, FILE *f);
/* Prints msg and a hint to --help on stderr; returns the usage exit code. */
int cli_usage_error(const char *name, const char *msg);

#endif
