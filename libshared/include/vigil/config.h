/* config.h - configuration from environment variables, and the --help /
 * --version command line every daemon shares.
 *
 * Every variable has a default that works on one machine. Each service lists
 * its own variables as a table of vigil_config_var so --help can print them
 * beside the common ones (names are the public contract, see docs/contract.md). */
#ifndef VIGIL_CONFIG_H
#define VIGIL_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef VIGIL_VERSION
#define VIGIL_VERSION "0.1.0"
#endif

typedef struct vigil_config_var {
    const char *name;  /* e.g. "VIGIL_MQTT_URL"; NULL name ends a table */
    const char *def;   /* default, as text ("" = empty/unset) */
    const char *help;  /* one line */
} vigil_config_var;

/* The common variables (VIGIL_MQTT_URL ... VIGIL_TICK_MS), NULL-terminated. */
extern const vigil_config_var VIGIL_COMMON_VARS[];

typedef struct vigil_common_config {
    char mqtt_url[256];      /* as given: mqtt://host:port (tcp:// also ok) */
    char mqtt_user[128];
    char mqtt_password[128];
    char redis_url[256];     /* redis://[:password@]host:port/db */
    char redis_prefix[64];   /* "vigil:" */
    char http_addr[128];     /* "127.0.0.1:<service port>" or ":port" */
    char log_level[16];
    char instance[128];      /* hostname by default */
    size_t max_payload;      /* 65536 */
    int shard_index;         /* VIGIL_SHARD i/N */
    int shard_count;
    int64_t tick_ms;         /* 1000 */
    int64_t timer_lease_ms;  /* VIGIL_TIMER_LEASE_MS, 30000 */
    int64_t mqtt_session_expiry_s; /* VIGIL_MQTT_SESSION_EXPIRY_S, 604800 (7 days) */
    int64_t dedupe_ttl_s;    /* VIGIL_DEDUPE_TTL_S, 604800; 0 = processed ids kept for ever */
    int64_t liveness_ms;     /* VIGIL_LIVENESS_MS, 60000 */
    bool outbox_process;     /* VIGIL_OUTBOX_PROCESS: publish from a child process */
    int64_t outbox_connections; /* VIGIL_OUTBOX_CONNECTIONS, 4: publishing connections at most */
    bool mqtt_intake_link;   /* VIGIL_MQTT_INTAKE=link (default): mqtt_link.h, not paho */
    char mqtt_ca_file[256];   /* VIGIL_MQTT_CA_FILE (mqtts:// only), "" = system trust store */
    char mqtt_cert_file[256]; /* VIGIL_MQTT_CERT_FILE, client certificate, "" = none */
    char mqtt_key_file[256];  /* VIGIL_MQTT_KEY_FILE, its key */
    char topic_prefix[128];   /* VIGIL_TOPIC_PREFIX, "" = none (vigil/topic_prefix.h) */
} vigil_common_config;

/* Exit status of a daemon whose configuration cannot work: the broker or
 * Redis refused its credentials at startup, a TLS certificate did not
 * verify (EX_CONFIG of sysexits.h). 2 stays the status of a configuration
 * that does not parse. */
#define VIGIL_EXIT_CONFIG 78

/* Fills every field with its default; http_addr becomes
 * "127.0.0.1:<default_http_port>". */
void vigil_common_config_init(vigil_common_config *c, int default_http_port);

/* Reads the environment over the defaults. Returns 0, or -1 with a clear
 * message in err (e.g. "VIGIL_SHARD: expected i/N with 0 <= i < 1024 and 1 <= N <= 1024, got 3/0"). */
int vigil_common_config_load(vigil_common_config *c, char *err, size_t errlen);

/* Typed getters: return 0 and set *out (def when unset or empty), or -1
 * with a message naming the variable when the value does not parse or is
 * outside [min, max]. Booleans accept 1/0/true/false/yes/no/on/off. */
int vigil_env_int64(const char *name, int64_t def, int64_t min, int64_t max,
                    int64_t *out, char *err, size_t errlen);
/* The longest duration a setting in milliseconds may name: 30 days. */
#define VIGIL_ENV_MS_MAX (30LL * 24 * 3600 * 1000)
/* A duration in milliseconds: vigil_env_int64 in [min, VIGIL_ENV_MS_MAX],
 * the bound every service's *_MS setting shares. */
int vigil_env_ms(const char *name, int64_t def, int64_t min, int64_t *out, char *err,
                 size_t errlen);
/* vigil_env_int64 for an int setting ([min, max] within int's range), so
 * a service reads one without a temporary and a cast. */
int vigil_env_int(const char *name, int def, int min, int max, int *out, char *err,
                  size_t errlen);
int vigil_env_double(const char *name, double def, double min, double max,
                     double *out, char *err, size_t errlen);
int vigil_env_bool(const char *name, bool def, bool *out, char *err, size_t errlen);
/* Copies the value (or def) into out; -1 if it does not fit. */
int vigil_env_string(const char *name, const char *def, char *out, size_t outlen,
                     char *err, size_t errlen);
/* A secret from name or from the file named by name_FILE (a Kubernetes
 * Secret mounted as a file): the file's content with one trailing newline
 * ("\n" or "\r\n") stripped. Both set (and not empty) is an error; an
 * unreadable, empty, too long or NUL-holding file is an error naming the
 * variable and the path, never the content. Unset: def. A value read from
 * either place is registered with vigil_redact_add_secret, so it never
 * reaches a log line. */
int vigil_env_secret(const char *name, const char *def, char *out, size_t outlen, char *err,
                     size_t errlen);

/* One of choices (NULL-terminated, compared case-insensitively), default
 * choices[def]: *out is its index. Anything else: -1 with err listing the
 * choices (e.g. VIGIL_DORMANCY_HUMAN_WAKES with vigil_human_wakes_names). */
int vigil_env_choice(const char *name, const char *const *choices, int def, int *out, char *err,
                     size_t errlen);

/* Parses "i/N" (1 <= N <= 1024, 0 <= i < 1024; i >= N is a replica that
 * only drains while N shrinks, see shard_view.h). */
int vigil_shard_parse(const char *s, int *index, int *count);

/* The service's default HTTP port, shown by --help as VIGIL_HTTP_ADDR's
 * default (instead of the generic "127.0.0.1:<service port>"). */
void vigil_cli_set_http_port(int port);

/* Handles --help / -h and --version / -V. Prints usage (summary, every
 * common variable and every service variable with default and help) to
 * stdout. Returns 1 if the caller should exit 0, 0 to continue, -1 on an
 * unknown argument (message already printed to stderr; exit 2). */
int vigil_cli_handle(int argc, char **argv, const char *service, const char *summary,
                     const vigil_config_var *service_vars);

#endif
