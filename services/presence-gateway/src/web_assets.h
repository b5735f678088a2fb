/* web_assets.h - the Theater page's files, compiled in from web/
 * (embed_web.cmake writes the table). */
#ifndef GATEWAY_WEB_ASSETS_H
#define GATEWAY_WEB_ASSETS_H
#include <stddef.h>

typedef struct gw_asset {
    const char *path; /* "/index.html" */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} gw_asset;

extern const gw_asset GW_ASSETS[];

#endif
