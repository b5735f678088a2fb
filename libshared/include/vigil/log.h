/* log.h - structured logging: one JSON object per line on stderr.
 *
 * Every line carries ts (ms since epoch), level, service, instance and msg.
 * Extra string fields may be attached as key/value pairs. Lines are written
 * with a single write() so lines from several threads never interleave. */
#ifndef VIGIL_LOG_H
#define VIGIL_LOG_H

typedef enum {
    VIGIL_LOG_DEBUG = 0,
    VIGIL_LOG_INFO = 1,
    VIGIL_LOG_WARN = 2,
    VIGIL_LOG_ERROR = 3
} vigil_log_level;

/* Sets the service/instance names stamped on every line and the minimum
 * level written. Safe to call again (e.g. in tests). */
void vigil_log_init(const char *service, const char *instance, vigil_log_level min);
/* The service name given to vigil_log_init ("vigil" before). */
const char *vigil_log_service(void);

/* Parses "debug" | "info" | "warn" | "error" (case-insensitive).
 * Returns 0 on success, -1 if the name is unknown (out untouched). */
int vigil_log_level_parse(const char *name, vigil_log_level *out);

/* printf-style message. */
void vigil_log(vigil_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Message plus extra string fields: a NULL-terminated list of key, value
 * pairs, e.g. vigil_log_kv(VIGIL_LOG_INFO, "committed", "room", r, NULL).
 * A NULL value is written as JSON null. */
void vigil_log_kv(vigil_log_level lvl, const char *msg, ...);

/* Renders one log line into buf (no trailing newline) without writing it;
 * exposed for unit tests. Returns the length, or -1 if it did not fit. */
int vigil_log_format(char *buf, int cap, long long ts_ms, vigil_log_level lvl,
                     const char *msg, const char *const *kv, int nkv);

#endif
