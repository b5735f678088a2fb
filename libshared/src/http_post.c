/* http_post.c - a blocking JSON POST (see vigil/http_post.h). */
#include "vigil/http_post.h"
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vigil/config.h"
#include "vigil/json.h"

typedef struct sink {
    vigil_http_reply *r;
    size_t cap, max;
    int overflow;
} sink;

static size_t on_write(char *p, size_t size, size_t n, void *user)
{
    sink *s = user;
    size_t len = size * n;
    if (s->r->len + len > s->max) {
        s->overflow = 1;
        return 0; /* aborts the transfer */
    }
    if (s->r->len + len + 1 > s->cap) {
        size_t cap = (s->cap ? s->cap * 2 : 4096) + len;
        char *b = realloc(s->r->body, cap);
        if (!b)
            return 0;
        s->r->body = b;
        s->cap = cap;
    }
    memcpy(s->r->body + s->r->len, p, len);
    s->r->len += len;
    s->r->body[s->r->len] = '\0';
    return len;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CURLcode g_init_rc = CURLE_FAILED_INIT;

static void init_once(void)
{
    g_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int vigil_http_post_json(const char *url, const char *body, const char *bearer, int64_t timeout_ms,
                         size_t max_bytes, vigil_http_reply *out)
{
    memset(out, 0, sizeof *out);
    pthread_once(&g_once, init_once);
    if (g_init_rc != CURLE_OK) {
        snprintf(out->error, sizeof out->error, "curl_global_init failed");
        return -1;
    }
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL, *h2;
    char auth[600], cerr[CURL_ERROR_SIZE] = "";
    int rc = -1;
    if (!e) {
        snprintf(out->error, sizeof out->error, "curl_easy_init failed");
        return -1;
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    if (h && (h2 = curl_slist_append(h, "Accept: application/json")))
        h = h2;
    if (h && bearer && bearer[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", bearer);
        if ((h2 = curl_slist_append(h, auth)))
            h = h2;
    }
    sink s = {out, 0, max_bytes ? max_bytes : (4u << 20), 0};
    long tmo = timeout_ms > 0 ? (long)timeout_ms : 30000L;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body ? body : ""));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "vigil/" VIGIL_VERSION);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, tmo < 3000 ? tmo : 3000L);
    CURLcode cc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
    if (cc == CURLE_OK) {
        rc = 0;
    } else if (s.overflow) {
        snprintf(out->error, sizeof out->error, "answer larger than %zu bytes", s.max);
    } else {
        snprintf(out->error, sizeof out->error, "%s%s%.*s", curl_easy_strerror(cc),
                 cerr[0] ? ": " : "", (int)vigil_utf8_cut_max(cerr, 120), cerr);
        out->status = 0;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    return rc;
}

void vigil_http_reply_free(vigil_http_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}
