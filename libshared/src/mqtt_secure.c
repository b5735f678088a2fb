/* mqtt_secure.c - TLS options and refusal classification for the broker
 * connection (see mqtt_secure.h). */
#include "mqtt_secure.h"

#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tls_client.h"
#include "vigil/redact.h"

/* A file the client will read later must be readable now: a typo in a
 * mounted path should stop the start, not fail every connect. */
static int readable(const char *var, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read '%.200s': %s", var, path, strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

static bool set(const char *s)
{
    return s && s[0];
}

static bool tls_url(const char *url)
{
    return url && (strncmp(url, "ssl://", 6) == 0 || strncmp(url, "mqtts://", 8) == 0);
}

int vigil_mqtt_tls_check(const char *url, const char *ca_file, const char *cert_file,
                         const char *key_file, char *err, size_t errlen)
{
    if (!tls_url(url)) {
        const char *var = set(ca_file) ? "VIGIL_MQTT_CA_FILE"
                          : set(cert_file) ? "VIGIL_MQTT_CERT_FILE"
                          : set(key_file) ? "VIGIL_MQTT_KEY_FILE" : NULL;
        if (var) {
            snprintf(err, errlen,
                     "%s is set but VIGIL_MQTT_URL is not mqtts:// or ssl://: the connection "
                     "would not use TLS",
                     var);
            return -1;
        }
        return 0;
    }
    if (set(cert_file) != set(key_file)) {
        snprintf(err, errlen, "%s is set without %s: a client certificate needs its key",
                 set(cert_file) ? "VIGIL_MQTT_CERT_FILE" : "VIGIL_MQTT_KEY_FILE",
                 set(cert_file) ? "VIGIL_MQTT_KEY_FILE" : "VIGIL_MQTT_CERT_FILE");
        return -1;
    }
    if ((set(ca_file) && readable("VIGIL_MQTT_CA_FILE", ca_file, err, errlen) != 0) ||
        (set(cert_file) && readable("VIGIL_MQTT_CERT_FILE", cert_file, err, errlen) != 0) ||
        (set(key_file) && readable("VIGIL_MQTT_KEY_FILE", key_file, err, errlen) != 0))
        return -1;
    return 0;
}

/* paho hands OpenSSL's error queue to this callback (ERR_print_errors_cb)
 * on its own thread when a handshake fails; the last line is the one that
 * says why ("...:certificate verify failed"). */
static int on_ssl_error(const char *str, size_t len, void *u)
{
    vigil_mqtt_tls *t = u;
    while (len > 0 && (str[len - 1] == '\n' || str[len - 1] == '\r'))
        len--;
    pthread_mutex_lock(&t->mu);
    snprintf(t->error, sizeof t->error, "%.*s", (int)(len < 255 ? len : 255), str);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static char *dup_set(const char *s)
{
    return set(s) ? strdup(s) : NULL;
}

int vigil_mqtt_tls_init(vigil_mqtt_tls *t, const char *paho_url, const char *ca_file,
                        const char *cert_file, const char *key_file, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    if (vigil_mqtt_tls_check(paho_url, ca_file, cert_file, key_file, err, errlen) != 0)
        return -1;
    t->on = tls_url(paho_url);
    if (!t->on)
        return 0;
    t->ca_file = dup_set(ca_file);
    t->cert_file = dup_set(cert_file);
    t->key_file = dup_set(key_file);
    if ((set(ca_file) && !t->ca_file) || (set(cert_file) && !t->cert_file) ||
        (set(key_file) && !t->key_file)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    MQTTAsync_SSLOptions o = MQTTAsync_SSLOptions_initializer;
    o.trustStore = t->ca_file;
    o.keyStore = t->cert_file;
    o.privateKey = t->key_file;
    o.enableServerCertAuth = 1; /* the server's chain must verify ... */
    o.verify = 1;               /* ... and name the host we dialled */
    o.sslVersion = MQTT_SSL_VERSION_DEFAULT; /* the highest both sides speak */
    o.ssl_error_cb = on_ssl_error;
    o.ssl_error_context = t;
    t->opts = o;
    return 0;
}

void vigil_mqtt_tls_free(vigil_mqtt_tls *t)
{
    free(t->ca_file);
    free(t->cert_file);
    free(t->key_file);
    t->ca_file = t->cert_file = t->key_file = NULL;
    pthread_mutex_destroy(&t->mu);
}

MQTTAsync_SSLOptions *vigil_mqtt_tls_options(vigil_mqtt_tls *t)
{
    return t->on ? &t->opts : NULL;
}

void vigil_mqtt_tls_clear_error(vigil_mqtt_tls *t)
{
    pthread_mutex_lock(&t->mu);
    t->error[0] = '\0';
    pthread_mutex_unlock(&t->mu);
}

/* "host:port" of a URL in any of our forms, for messages. */
static void host_port(const char *url, char *out, size_t outlen)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = strrchr(p, '@'); /* never show credentials */
    if (at)
        p = at + 1;
    size_t n = strcspn(p, "/");
    snprintf(out, outlen, "%.*s", (int)(n < 200 ? n : 200), p);
}

/* OpenSSL's text says why in its last field: "error:0A000086:SSL
 * routines::certificate verify failed" -> "certificate verify failed". */
static const char *ssl_reason(const char *line)
{
    const char *colon = strrchr(line, ':');
    return colon && colon[1] ? colon + 1 : line;
}

#define PROBE_TIMEOUT_MS 5000

/* Splits "scheme://host:port" ("[v6]:port" too) into host and port. */
static bool split_host_port(const char *url, char *host, size_t hostlen, char *port,
                            size_t portlen)
{
    char hp[256];
    host_port(url, hp, sizeof hp);
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || (strchr(hp, ']') && colon < strchr(hp, ']')))
        return false;
    size_t hl = (size_t)(colon - hp);
    const char *h = hp;
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= hostlen)
        return false;
    snprintf(host, hostlen, "%.*s", (int)hl, h);
    snprintf(port, portlen, "%s", colon + 1);
    return port[0] != '\0';
}

/* Our own handshake with the broker, with the client's settings: the
 * configured CA (else the system's), the client certificate, and the host
 * name (or IP address) checked as paho checks it. Returns true with why
 * when TLS itself fails ("certificate verify failed: unable to get local
 * issuer certificate", "certificate verify failed: hostname mismatch", an
 * alert from the broker); false when it succeeds or the broker is not
 * reachable at all. Bounded by PROBE_TIMEOUT_MS (and half a second). */
static bool tls_probe(vigil_mqtt_tls *t, const char *url, char *why, size_t whylen)
{
    char host[256], port[16];
    if (!split_host_port(url, host, sizeof host, port, sizeof port))
        return false;
    char unused[160];
    int fd = vigil_tcp_connect_bounded(host, port, PROBE_TIMEOUT_MS, unused, sizeof unused);
    if (fd < 0)
        return false;
    bool refused = false;
    SSL_CTX *ctx = vigil_tls_client_ctx(t->ca_file, t->cert_file, t->key_file, why, whylen);
    SSL *ssl = NULL;
    if (!ctx) {
        refused = true;
        goto out;
    }
    ssl = vigil_tls_client_session(ctx, fd, host);
    if (!ssl)
        goto out;
    ERR_clear_error();
    if (SSL_connect(ssl) != 1) {
        long v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK)
            snprintf(why, whylen, "certificate verify failed: %s", X509_verify_cert_error_string(v));
        else
            snprintf(why, whylen, "%s", vigil_tls_queue_reason("handshake failed"));
        refused = true;
        goto out;
    }
    /* TLS 1.3: a broker that wants a client certificate says so after
     * the handshake; a read shows its alert (or times out: all well). A
     * broker that asked for a certificate we do not have and then closes
     * refused it, whether or not its alert arrived. */
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    if (poll(&pfd, 1, 500) == 1) {
        char b;
        ERR_clear_error();
        if (SSL_read(ssl, &b, 1) <= 0) {
            if (ERR_peek_last_error() != 0) {
                snprintf(why, whylen, "%s", vigil_tls_queue_reason("handshake failed"));
                refused = true;
            } else if (vigil_tls_cert_asked(ssl)) {
                snprintf(why, whylen, "%s", VIGIL_TLS_NO_CERT_REASON);
                refused = true;
            }
        }
    }
out:
    if (ssl)
        SSL_free(ssl);
    if (ctx)
        SSL_CTX_free(ctx);
    ERR_clear_error();
    close(fd);
    return refused;
}

bool vigil_mqtt_refusal(const MQTTAsync_failureData5 *resp, vigil_mqtt_tls *tls,
                        const char *url, const char *user, char *out, size_t outlen)
{
    char safe_url[300];
    vigil_redact_url(url, safe_url, sizeof safe_url);
    const char *who = set(user) ? user : "(anonymous)";
    int reason = resp ? (int)resp->reasonCode : 0;
    int code = resp ? resp->code : 0;
    /* MQTT 5 puts the CONNACK reason into reasonCode and, in some paho
     * versions, into code as well; MQTT 3.1.1 return codes arrive in code. */
    if (reason == MQTTREASONCODE_BAD_USER_NAME_OR_PASSWORD ||
        code == MQTTREASONCODE_BAD_USER_NAME_OR_PASSWORD || code == 4) {
        snprintf(out, outlen, "MQTT broker %s refused user '%s': bad user name or password",
                 safe_url, who);
        return true;
    }
    if (reason == MQTTREASONCODE_NOT_AUTHORIZED || code == MQTTREASONCODE_NOT_AUTHORIZED ||
        code == 5) {
        snprintf(out, outlen, "MQTT broker %s refused user '%s': not authorized", safe_url, who);
        return true;
    }
    if (!tls || !tls->on)
        return false;
    char ssl_err[256];
    pthread_mutex_lock(&tls->mu);
    snprintf(ssl_err, sizeof ssl_err, "%s", tls->error);
    pthread_mutex_unlock(&tls->mu);
    const char *msg = resp && resp->message ? resp->message : "";
    char hp[256];
    host_port(url, hp, sizeof hp);
    if (ssl_err[0]) {
        snprintf(out, outlen, "TLS handshake with %s failed: %s", hp, ssl_reason(ssl_err));
        return true;
    }
    (void)msg; /* "TCP/TLS connect failure" either way: vigil_mqtt_tls_diagnose */
    return false;
}

bool vigil_mqtt_tls_diagnose(vigil_mqtt_tls *tls, const char *url, char *out, size_t outlen)
{
    if (!tls || !tls->on)
        return false;
    char why[200], hp[256];
    if (!tls_probe(tls, url, why, sizeof why))
        return false;
    host_port(url, hp, sizeof hp);
    snprintf(out, outlen, "TLS handshake with %s failed: %s", hp, why);
    return true;
}
