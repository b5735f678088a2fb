/* http_body.h - the libcurl write callback of the HTTP unit tests: a
 * response body kept in the caller's fixed buffer, NUL-terminated, what
 * does not fit dropped (the transfer goes on). */
#ifndef VT_HTTP_BODY_H
#define VT_HTTP_BODY_H
#include <stddef.h>

typedef struct vt_body {
    char *buf;   /* cap bytes */
    size_t cap;
    size_t *len; /* bytes kept so far (start at 0) */
} vt_body;

/* CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA a vt_body *. */
size_t vt_body_write(char *p, size_t size, size_t n, void *body);

#endif
