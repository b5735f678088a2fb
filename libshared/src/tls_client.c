/* tls_client.c - TCP and TLS client helpers (see tls_client.h). */
#include "tls_client.h"

#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int vigil_tcp_connect_bounded(const char *host, const char *port, int timeout_ms, char *why,
                              size_t whylen)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        snprintf(why, whylen, "cannot resolve %s: %s", host, gai_strerror(g));
        return -1;
    }
    int fd = -1;
    snprintf(why, whylen, "cannot connect to %s:%s", host, port);
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect too */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            snprintf(why, whylen, "cannot connect to %s:%s: %s", host, port, strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

const char *vigil_tls_queue_reason(const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r ? r : fallback;
}

static int asked_index = -1;
static pthread_once_t asked_once = PTHREAD_ONCE_INIT;

static void asked_index_init(void)
{
    asked_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* OpenSSL calls this when the server asks for a client certificate and
 * none is configured: the session remembers that it was asked, and goes on
 * without one (the server decides whether that is enough). */
static int cert_asked(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    (void)x509;
    (void)pkey;
    if (asked_index >= 0)
        SSL_set_ex_data(ssl, asked_index, (void *)(uintptr_t)1);
    return 0;
}

bool vigil_tls_cert_asked(const SSL *ssl)
{
    return ssl && asked_index >= 0 && SSL_get_ex_data(ssl, asked_index) != NULL;
}

SSL_CTX *vigil_tls_client_ctx(const char *ca_file, const char *cert_file, const char *key_file,
                              char *why, size_t whylen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(why, whylen, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1
                : SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(why, whylen, "cannot load the CA file: %s",
                 vigil_tls_queue_reason("unknown error"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (cert_file && (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1 ||
                      SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)) {
        snprintf(why, whylen, "cannot load the client certificate or key: %s",
                 vigil_tls_queue_reason("unknown error"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (!cert_file) {
        pthread_once(&asked_once, asked_index_init);
        SSL_CTX_set_client_cert_cb(ctx, cert_asked);
    }
    return ctx;
}

SSL *vigil_tls_client_session(SSL_CTX *ctx, int fd, const char *host)
{
    SSL *ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        if (ssl)
            SSL_free(ssl);
        return NULL;
    }
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1) { /* not an address: a name */
        SSL_set_tlsext_host_name(ssl, host);
        X509_VERIFY_PARAM_set1_host(param, host, 0);
    }
    return ssl;
}
