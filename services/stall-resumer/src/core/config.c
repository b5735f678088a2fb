/* config.c - the defaults of every VIGIL_STALL_* setting in one place, and
 * the noise pattern list. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "stall.h"

const char STALL_DEFAULT_NOISE[] = "resumer,stall-recovery,no-acknowledgments,inactivity detected,"
                                   "[c2a],#no-reply,#progress-only";

void stall_config_init(stall_config *c)
{
    memset(c, 0, sizeof *c);
    c->lookback_ms = 60 * STALL_MIN_MS;
    c->in_tool_ms = 2 * STALL_HOUR_MS;
    c->warning_ms = 2 * STALL_HOUR_MS;
    c->critical_ms = 6 * STALL_HOUR_MS;
    c->autoresume_ms = 12 * STALL_HOUR_MS;
    c->resume_interval_ms = STALL_HOUR_MS;
    c->scan_ms = STALL_MIN_MS;
    c->tier_window_ms[0] = 60 * STALL_MIN_MS;
    c->tier_window_ms[1] = 30 * STALL_MIN_MS;
    c->tier_window_ms[2] = 15 * STALL_MIN_MS;
    c->min_confidence_milli = 500;
    char err[8];
    (void)stall_config_set_noise(c, STALL_DEFAULT_NOISE, err, sizeof err);
}

int stall_config_check(const stall_config *c, char *err, size_t errlen)
{
    if (c->warning_ms <= c->critical_ms && c->critical_ms <= c->autoresume_ms)
        return 0;
    snprintf(err, errlen, "VIGIL_STALL_WARNING_MS <= VIGIL_STALL_CRITICAL_MS <= "
                          "VIGIL_STALL_AUTORESUME_MS is required");
    return -1;
}

int stall_config_set_noise(stall_config *c, const char *csv, char *err, size_t errlen)
{
    char pats[STALL_NOISE_MAX][STALL_NOISE_LEN];
    int n = 0;
    const char *p = csv ? csv : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        while (len > 0 && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len > 0 && isspace((unsigned char)s[len - 1]))
            len--;
        if (len > 0) {
            if (len >= STALL_NOISE_LEN) {
                snprintf(err, errlen, "noise pattern longer than %d bytes", STALL_NOISE_LEN - 1);
                return -1;
            }
            if (n == STALL_NOISE_MAX) {
                snprintf(err, errlen, "more than %d noise patterns", STALL_NOISE_MAX);
                return -1;
            }
            for (size_t i = 0; i < len; i++)
                pats[n][i] = (char)tolower((unsigned char)s[i]);
            pats[n][len] = '\0';
            n++;
        }
        if (!end)
            break;
        p = end + 1;
    }
    memcpy(c->noise, pats, sizeof pats);
    c->n_noise = n;
    return 0;
}
