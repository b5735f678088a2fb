/* origin.c - CORS: which browser origins may call the API with
 * credentials (VIGIL_GATEWAY_ORIGINS). */
#include <stdio.h>
#include <string.h>
#include "gateway.h"

bool gw_origin_allowed(const char *allow, const char *origin, const char *host)
{
    if (!origin || !*origin)
        return true; /* not a cross-origin browser request */
    if (host && *host) {
        char self[300];
        snprintf(self, sizeof self, "http://%s", host);
        if (strcmp(origin, self) == 0)
            return true;
        snprintf(self, sizeof self, "https://%s", host);
        if (strcmp(origin, self) == 0)
            return true;
    }
    size_t olen = strlen(origin);
    const char *p = allow ? allow : "";
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        size_t n = (size_t)(e - p);
        if (n == 1 && *p == '*')
            return true;
        if (n && n == olen && strncmp(p, origin, n) == 0)
            return true;
        p = e;
    }
    return false;
}
