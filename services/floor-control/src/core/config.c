/* config.c - floor control's defaults in one place, and the fallback
 * wake-trigger list read from its comma-separated form. */
#include <string.h>
#include "floor.h"

void floor_config_init(floor_config *c)
{
    memset(c, 0, sizeof *c);
    c->k = 2;
    c->max_personas = 256;
    vigil_human_wake_config_init(&c->wake);
    floor_config_set_wake_triggers(c, FLOOR_WAKE_TRIGGERS_DEFAULT);
}

int floor_config_set_wake_triggers(floor_config *c, const char *csv)
{
    int n = 0;
    const char *s = csv ? csv : "";
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        /* "no-human, ai-only": the spaces around an entry are no part of
         * it (kept, " ai-only" would never match a state's trigger) */
        const char *w = s;
        size_t wl = len;
        while (wl && *w == ' ')
            w++, wl--;
        while (wl && w[wl - 1] == ' ')
            wl--;
        if (wl == 0 || wl >= FLOOR_TRIGGER_MAX || n == FLOOR_MAX_WAKE_TRIGGERS)
            return -1;
        memcpy(c->wake_triggers[n], w, wl);
        c->wake_triggers[n][wl] = '\0';
        n++;
        s += len;
        if (*s == ',') {
            s++;
            if (!*s)
                return -1; /* trailing comma: an empty entry */
        }
    }
    c->n_wake_triggers = n;
    return 0;
}
