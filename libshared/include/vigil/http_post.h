/* http_post.h - one blocking JSON POST over HTTP(S) with libcurl, for the
 * occasional call that is not a chat completion (e.g. an A2A JSON-RPC
 * request). Runs on the caller's thread (a worker, never an MQTT
 * callback), bounded by a total timeout and a connect timeout; no retries
 * (the caller decides). */
#ifndef VIGIL_HTTP_POST_H
#define VIGIL_HTTP_POST_H
#include <stddef.h>
#include <stdint.h>

typedef struct vigil_http_reply {
    long status;       /* HTTP status; 0 when no answer */
    char *body;        /* malloc'd, NUL-terminated (may be NULL) */
    size_t len;
    char error[200];   /* why the transfer failed ("" when an answer came) */
} vigil_http_reply;

/* POSTs body (Content-Type: application/json, Accept: application/json)
 * to url; bearer, when not NULL or "", is sent as Authorization: Bearer.
 * The answer is cut at max_bytes (error set, status kept). Returns 0 when
 * an HTTP answer arrived (any status), -1 otherwise (error filled).
 * vigil_http_reply_free releases the body. */
int vigil_http_post_json(const char *url, const char *body, const char *bearer, int64_t timeout_ms,
                         size_t max_bytes, vigil_http_reply *out);
void vigil_http_reply_free(vigil_http_reply *r);

#endif
