/* redact.h - credentials never reach a log line, a status topic, a metric
 * or --help output.
 *
 * Two layers: the password in any "scheme://user:password@host" URL is
 * replaced by "***" wherever it appears in a line, and secrets registered
 * at start (the MQTT password, the Redis password, the LLM API key) are
 * replaced by "***" wherever they appear at all. log.c applies both to
 * every line it writes; vigil_redact is there for any other text that
 * leaves the process. */
#ifndef VIGIL_REDACT_H
#define VIGIL_REDACT_H
#include <stddef.h>

/* Registers a secret (copied; at most 8 are kept; empty strings and
 * strings shorter than 3 bytes are ignored: masking "a" everywhere would
 * garble every line). Thread-safe. */
void vigil_redact_add_secret(const char *secret);

/* Forgets every registered secret (tests). */
void vigil_redact_clear(void);

/* Writes in with credentials masked into out (always NUL-terminated,
 * truncated to outlen - 1). Returns the length written. */
size_t vigil_redact(const char *in, char *out, size_t outlen);

/* A URL for display: "redis://:***@host:6379/0". Same contract. */
size_t vigil_redact_url(const char *url, char *out, size_t outlen);

#endif
