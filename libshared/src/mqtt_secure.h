/* mqtt_secure.h - the broker connection's security, apart from the rest
 * of mqtt.c: TLS options (mqtts:// / ssl:// with a CA, an optional client
 * certificate, server certificate and host name verification on), the
 * capture of OpenSSL's error text, and the classification of a failed
 * connect as a refusal of our credentials or certificate (a permanent
 * error, not an outage). libshared-internal: names paho types. */
#ifndef VIGIL_MQTT_SECURE_H
#define VIGIL_MQTT_SECURE_H
#include <MQTTAsync.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct vigil_mqtt_tls {
    bool on;          /* the URL is ssl:// (paho form) */
    char *ca_file;    /* NULL = the system's default trust store */
    char *cert_file;  /* client certificate, NULL = none */
    char *key_file;
    MQTTAsync_SSLOptions opts;
    pthread_mutex_t mu; /* guards error (written on paho's thread) */
    char error[256];    /* OpenSSL's last error text of the current attempt */
} vigil_mqtt_tls;

/* Checks the combination (files only with a TLS URL, a certificate needs
 * its key and the other way round, every file readable) and fills the
 * options. paho_url is the paho form (tcp:// or ssl://). Returns 0, or -1
 * with err naming the variable (VIGIL_MQTT_CA_FILE, ...). */
int vigil_mqtt_tls_init(vigil_mqtt_tls *t, const char *paho_url, const char *ca_file,
                        const char *cert_file, const char *key_file, char *err, size_t errlen);
void vigil_mqtt_tls_free(vigil_mqtt_tls *t);

/* The options for MQTTAsync_connectOptions.ssl; NULL for a plain URL. */
MQTTAsync_SSLOptions *vigil_mqtt_tls_options(vigil_mqtt_tls *t);

/* Forgets the error text of the previous attempt (before a connect). */
void vigil_mqtt_tls_clear_error(vigil_mqtt_tls *t);

/* Checks readable files for the TLS variables of the common
 * configuration; used by config.c so a bad combination stops the start
 * before anything connects. Same rules and messages as vigil_mqtt_tls_init. */
int vigil_mqtt_tls_check(const char *url, const char *ca_file, const char *cert_file,
                         const char *key_file, char *err, size_t errlen);

/* Decides whether a failed connect is a refusal that waiting will not fix:
 * the broker refused the user or password (MQTT 5 CONNACK 134, MQTT 3
 * return code 4), refused the client (135 / 5), or the TLS handshake
 * failed (a certificate that does not verify, a wrong host name). Writes
 * one line for the log into out: "MQTT broker mqtt://h:1883 refused user
 * 'u': bad user name or password" or "TLS handshake with h:8883 failed:
 * certificate verify failed". Never includes the password. */
bool vigil_mqtt_refusal(const MQTTAsync_failureData5 *resp, vigil_mqtt_tls *tls,
                        const char *url, const char *user, char *out, size_t outlen);

/* After a failed connect on a TLS URL that vigil_mqtt_refusal could not
 * explain (paho reports a failed host name check, and some alerts, only as
 * "TCP/TLS connect failure", without OpenSSL's text): makes a handshake of
 * its own with the same CA, client certificate and host name check, and
 * when TLS is what fails, writes "TLS handshake with h:p failed: <why>"
 * and returns true. False when the handshake works or the broker cannot
 * be reached at all. Blocks up to about 6 s: call it from our own thread,
 * never a paho callback. */
bool vigil_mqtt_tls_diagnose(vigil_mqtt_tls *tls, const char *url, char *out, size_t outlen);

#endif
