/* tls_client.h - private to libshared/src: the client side of a broker
 * connection made by our own code (the outbox's link, mqtt_link.c, and the
 * handshake that explains a refused paho connect, mqtt_secure.c): a TCP
 * connect bounded in time, and TLS with the broker's certificate and host
 * name verified as paho verifies them. */
#ifndef VIGIL_TLS_CLIENT_H
#define VIGIL_TLS_CLIENT_H
#include <stdbool.h>
#include <stddef.h>
#include <openssl/ssl.h>

/* A connected, blocking TCP socket to host:port whose sends and receives
 * (and the connect itself) give up after timeout_ms, or -1 with why. */
int vigil_tcp_connect_bounded(const char *host, const char *port, int timeout_ms, char *why,
                              size_t whylen);

/* A client context that verifies the peer against ca_file (NULL: the
 * system's trust store) and presents cert_file / key_file when given; NULL
 * with why ("cannot load the CA file: ..."). */
SSL_CTX *vigil_tls_client_ctx(const char *ca_file, const char *cert_file, const char *key_file,
                              char *why, size_t whylen);

/* A session on fd that checks host (a name, or an IP address) against the
 * certificate and sends it as SNI when it is a name; NULL on failure. */
SSL *vigil_tls_client_session(SSL_CTX *ctx, int fd, const char *host);

/* True when the server asked this session for a client certificate and the
 * context has none. With TLS 1.3 the server refuses a missing certificate
 * only after the client's handshake has finished, and its alert can be lost
 * to the connection's reset (the client's first bytes reached a socket the
 * server had already closed): this says what the refusal was. */
bool vigil_tls_cert_asked(const SSL *ssl);

/* Says why a connection the server asked for a client certificate ended
 * before the first answer. */
#define VIGIL_TLS_NO_CERT_REASON                                                                   \
    "the broker requires a client certificate (certificate required): set "                     \
    "VIGIL_MQTT_CERT_FILE and VIGIL_MQTT_KEY_FILE"

/* The reason text of OpenSSL's last queued error, or fallback. */
const char *vigil_tls_queue_reason(const char *fallback);

#endif
