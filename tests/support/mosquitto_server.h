/* mosquitto_server.h - a throwaway mosquitto broker for tests, and small
 * helpers to talk to it from the outside.
 *
 * vt_mosq_start() runs `mosquitto -c FILE` (found on PATH; VT_MOSQUITTO
 * overrides) on a free loopback port in a fresh temporary directory with a
 * generated config: anonymous access, persistence in that directory saved
 * on every change, max_queued_messages 0 (no silent loss, see docs/architecture.md)
 * bounded by max_queued_bytes, max_packet_size 1100000. Run as root it adds
 * `user root` so the broker keeps write access to its directory. The child
 * gets SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG: start
 * brokers from the main thread). The broker's own log is DIR/mosquitto.log
 * (printed on stderr when it fails to start). Every wait is bounded.
 *
 * vt_mosq_pub / vt_mosq_get_retained run mosquitto_pub / mosquitto_sub
 * (MQTT 5), an independent client to check our own against.
 *
 * vt_msglog records messages from a vigil_mqtt on_message callback so a
 * test can wait for them. */
#ifndef VT_MOSQUITTO_SERVER_H
#define VT_MOSQUITTO_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct vt_mosq vt_mosq;

/* Starts a broker; NULL on failure (the reason is printed on stderr). */
vt_mosq *vt_mosq_start(void);
/* "mqtt://127.0.0.1:PORT" */
const char *vt_mosq_url(const vt_mosq *s);
int vt_mosq_port(const vt_mosq *s);
const char *vt_mosq_dir(const vt_mosq *s);
pid_t vt_mosq_pid(const vt_mosq *s);

/* Kills the broker with SIGKILL and reaps it (a crash: whatever was not
 * autosaved is lost). Returns 0, or -1 if it was not running. */
int vt_mosq_kill9(vt_mosq *s);
/* Deletes the persistence file while the broker is down, so the next start
 * remembers no session, subscription or retained message. -1 if running. */
int vt_mosq_wipe_db(vt_mosq *s);
/* Starts the broker again on the same port and directory (killing it first
 * if it runs). Returns 0 once the port accepts connections (at most 5 s). */
int vt_mosq_restart(vt_mosq *s);
/* Writes acl (mosquitto acl_file text; lines before any "user" apply to
 * anonymous clients) and names it in the config, or with NULL removes it
 * from the config. Takes effect at the next vt_mosq_restart. */
int vt_mosq_set_acl(vt_mosq *s, const char *acl);
/* Stops the broker (SIGTERM, then SIGKILL after 3 s), removes its
 * directory, frees s. NULL is ignored. */
void vt_mosq_stop(vt_mosq *s);

/* Publishes one message with mosquitto_pub (-V mqttv5). Returns 0 when the
 * tool succeeded (for QoS 1 this means the broker acknowledged it). An
 * empty payload with retain clears a retained message. */
int vt_mosq_pub(const vt_mosq *s, const char *topic, const char *payload, int qos, bool retain);
/* Reads the retained message of topic with mosquitto_sub --retained-only
 * (waiting at most timeout_s seconds). Returns 0 and the payload in out, or
 * -1 when there is none. */
int vt_mosq_get_retained(const vt_mosq *s, const char *topic, char *out, size_t outlen,
                         int timeout_s);
/* Polls the retained message of topic until it equals want (bounded by
 * timeout_ms). */
bool vt_mosq_wait_retained(const vt_mosq *s, const char *topic, const char *want, int timeout_ms);

/* Polls until vigil_mqtt_connected(m) is want (every 20 ms, bounded by
 * timeout_ms); false on timeout. */
struct vigil_mqtt;
bool vt_mqtt_wait_connected(struct vigil_mqtt *m, bool want, int timeout_ms);
/* The same for the outbox's own connection (vigil/mqtt_link.h). */
struct vigil_mqtt_link;
bool vt_link_wait_connected(struct vigil_mqtt_link *l, bool want, int timeout_ms);
/* The same for every connection of a vigil_mqtt_links (vigil/mqtt_links.h). */
struct vigil_mqtt_links;
bool vt_links_wait_connected(struct vigil_mqtt_links *s, bool want, int timeout_ms);

/* ---- message recorder ---------------------------------------------------- */

typedef struct vt_msglog vt_msglog;

vt_msglog *vt_msglog_new(void);
void vt_msglog_free(vt_msglog *l);
/* Has the signature of vigil_mqtt_on_message; ctx is the vt_msglog. */
void vt_msglog_on_message(void *ctx, const char *topic, const void *payload, size_t len,
                          bool retained);

/* A paho client (client id "<name>", status topic "sys/<name>") subscribed
 * to filter, recording into log; returns once the broker has its
 * subscription ("ready" follows the SUBSCRIBE). Stop it with
 * vigil_mqtt_stop. */
struct vigil_mqtt *vt_mqtt_observer(vt_mosq *b, const char *name, const char *filter,
                                    vt_msglog *log);
/* Messages recorded on topic (exact match; NULL = all topics). */
int vt_msglog_count(vt_msglog *l, const char *topic);
/* Waits until at least n messages on topic (NULL = any) were recorded. */
bool vt_msglog_wait_count(vt_msglog *l, const char *topic, int n, int timeout_ms);
/* Waits until a message on topic with exactly this payload (NULL = any)
 * and, if retained >= 0, that retain flag was recorded. */
bool vt_msglog_wait(vt_msglog *l, const char *topic, const char *payload, int retained,
                    int timeout_ms);
/* Copies the i-th (0-based) message on topic (NULL = any): its topic and
 * payload (NUL-terminated, truncated to fit) and retain flag. Returns 0,
 * or -1 if there is no such message. Any out pointer may be NULL. */
int vt_msglog_get(vt_msglog *l, const char *topic, int i, char *topic_out, size_t topic_len,
                  char *payload_out, size_t payload_len, bool *retained);
void vt_msglog_clear(vt_msglog *l);

#endif
