/* http_body.c - see http_body.h. */
#include "http_body.h"

#include <string.h>

size_t vt_body_write(char *p, size_t size, size_t n, void *body)
{
    vt_body *b = body;
    size_t total = size * n, take = total;
    if (take > b->cap - 1 - *b->len)
        take = b->cap - 1 - *b->len;
    memcpy(b->buf + *b->len, p, take);
    *b->len += take;
    b->buf[*b->len] = '\0';
    return total;
}
