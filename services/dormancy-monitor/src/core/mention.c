/* mention.c - reading message text: @name mentions (vigil_text) and the
 * @self command language
 *   @self dormant mention-only|human-only|sleep [for 1h | until 17:00]
 *   @self awake
 *   @self status
 * Durations: a number and a unit, repeated ("1h30m", "90s", "2 hours",
 * "1.5h"); units ms, s/sec/second(s), m/min/minute(s), h/hr/hour(s),
 * d/day(s). Clock times: H:MM or HH:MM (24 h), optionally am/pm ("5pm",
 * "5:30 pm"), the next such moment at tz_offset_min east of UTC. */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>
#include "step.h"
#include "vigil/text.h"

#define DAY_MS 86400000LL
#define MAX_FOR_MS (365LL * DAY_MS)

/* Mentions follow libshared's vigil_text rules, shared by every service. */
bool dormancy_text_mentions(const char *text, const char *name)
{
    return vigil_text_mentions(text, name);
}

static const char *skip_space(const char *p)
{
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

/* Copies the next word (letters, digits, '-', ':', '.') lower-cased. */
static const char *next_word(const char *p, char *out, size_t outlen)
{
    size_t n = 0;
    p = skip_space(p);
    while (*p && (isalnum((unsigned char)*p) || *p == '-' || *p == ':' || *p == '.')) {
        if (n + 1 < outlen)
            out[n++] = (char)tolower((unsigned char)*p);
        p++;
    }
    out[n] = '\0';
    /* a trailing sentence dot is not part of the word */
    if (n > 0 && out[n - 1] == '.')
        out[n - 1] = '\0';
    return p;
}

static int64_t unit_ms(const char *u, size_t n)
{
    static const struct { const char *name; int64_t ms; } UNITS[] = {
        {"ms", 1}, {"s", 1000}, {"sec", 1000}, {"secs", 1000}, {"second", 1000},
        {"seconds", 1000}, {"m", 60000}, {"min", 60000}, {"mins", 60000},
        {"minute", 60000}, {"minutes", 60000}, {"h", 3600000}, {"hr", 3600000},
        {"hrs", 3600000}, {"hour", 3600000}, {"hours", 3600000}, {"d", DAY_MS},
        {"day", DAY_MS}, {"days", DAY_MS}};
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
        if (strlen(UNITS[i].name) == n && strncasecmp(u, UNITS[i].name, n) == 0)
            return UNITS[i].ms;
    return 0;
}

/* Parses "<n><unit>[<n><unit>...]" at p; returns the total in ms (> 0) or
 * -1, and where parsing stopped in *end. */
static int64_t parse_duration(const char *p, const char **end)
{
    double total = 0;
    int parts = 0;
    p = skip_space(p);
    while (isdigit((unsigned char)*p)) {
        char *after;
        double v = strtod(p, &after);
        const char *u = skip_space(after);
        size_t n = 0;
        while (isalpha((unsigned char)u[n]))
            n++;
        int64_t ms = unit_ms(u, n);
        if (ms == 0)
            return -1;
        total += v * (double)ms;
        parts++;
        p = skip_space(u + n);
    }
    *end = p;
    if (parts == 0 || !(total >= 1.0) || total > (double)MAX_FOR_MS)
        return -1;
    return (int64_t)llround(total);
}

/* "17:00", "9:30", "5pm", "5:30 pm" -> minutes after midnight, or -1. */
static int parse_clock(const char *p)
{
    p = skip_space(p);
    if (!isdigit((unsigned char)*p))
        return -1;
    int h = 0, m = 0, digits = 0;
    while (isdigit((unsigned char)*p) && digits < 2) {
        h = h * 10 + (*p++ - '0');
        digits++;
    }
    bool has_minutes = false;
    if (*p == ':') {
        p++;
        if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
            return -1;
        m = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
        has_minutes = true;
    }
    const char *q = skip_space(p);
    if (strncasecmp(q, "am", 2) == 0 || strncasecmp(q, "pm", 2) == 0) {
        if (h < 1 || h > 12)
            return -1;
        bool pm = tolower((unsigned char)q[0]) == 'p';
        h = (h % 12) + (pm ? 12 : 0);
        q += 2;
    } else if (!has_minutes) {
        return -1; /* a bare number is not a clock time */
    }
    if (isalnum((unsigned char)*q) || *q == '_') /* "5pmx" is no time */
        return -1;
    if (h > 23 || m > 59)
        return -1;
    return h * 60 + m;
}

static int64_t next_clock(int minutes, int64_t now, int tz_offset_min)
{
    int64_t off = (int64_t)tz_offset_min * 60000;
    int64_t local = now + off;
    int64_t day = local - (((local % DAY_MS) + DAY_MS) % DAY_MS);
    int64_t t = day + (int64_t)minutes * 60000;
    if (t <= local)
        t += DAY_MS;
    return t - off;
}

dormancy_self_cmd dormancy_self_parse(const char *text, int64_t now, int tz_offset_min)
{
    dormancy_self_cmd c = {DORMANCY_SELF_NONE, DORMANCY_ACTIVE, 0};
    const char *at = vigil_text_find_mention(text, "self");
    if (!at)
        return c;
    c.kind = DORMANCY_SELF_BAD;
    char w[32];
    const char *p = next_word(at + 5, w, sizeof w);
    if (strcmp(w, "awake") == 0) {
        c.kind = DORMANCY_SELF_AWAKE;
        return c;
    }
    if (strcmp(w, "status") == 0) {
        c.kind = DORMANCY_SELF_STATUS;
        return c;
    }
    if (strcmp(w, "dormant") != 0)
        return c;
    p = next_word(p, w, sizeof w);
    if (dormancy_level_parse(w, &c.level) != 0 || c.level == DORMANCY_ACTIVE)
        return c;
    const char *q = next_word(p, w, sizeof w);
    if (strcmp(w, "for") == 0) {
        const char *end;
        int64_t ms = parse_duration(q, &end);
        if (ms < 0)
            return c;
        c.until = now + ms;
    } else if (strcmp(w, "until") == 0) {
        int minutes = parse_clock(q);
        if (minutes < 0)
            return c;
        c.until = next_clock(minutes, now, tz_offset_min);
    }
    c.kind = DORMANCY_SELF_DORMANT;
    return c;
}
