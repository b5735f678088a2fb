/* router.c - the action router: Sol's proposal matched by prefix
 * (starts-with on the trimmed, case-folded text, as specified), plus
 * the small readers of what follows a prefix: a question's [pN] priority
 * marker and a sleep duration (an exact grammar: what it does not read
 * refuses the sleep: as an unknown prefix is refused). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vigil/json.h>
#include <vigil/names.h>
#include "council.h"

static const char *const NAMES[COUNCIL_ACT__COUNT + 1] = {
    "search", "note", "ask user", "schedule", "research", "sleep", "reflect", NULL};
static const char *const PREFIXES[COUNCIL_ACT__COUNT] = {
    "search:", "note:", "ask user:", "schedule:", "research:", "sleep:", "reflect:"};

const char *council_action_name(council_action a)
{
    return a >= 0 && a < COUNCIL_ACT__COUNT ? NAMES[a] : "none";
}

const char *council_action_prefix(council_action a)
{
    return a >= 0 && a < COUNCIL_ACT__COUNT ? PREFIXES[a] : "";
}

council_action council_action_parse(const char *name)
{
    int i = vigil_name_index(NAMES, name);
    return i < 0 ? COUNCIL_ACT_NONE : (council_action)i;
}

static const char *skip_space(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return s;
}

/* An action that has an object (a query, a note, a question, a topic, a
 * duration) is only taken with one: a bare "ask user:" would queue an
 * empty question for the user, a bare "search:" an empty request, a bare
 * "sleep:" a wait of no stated length. A question's priority marker alone
 * ("ask user: [p3]") is no question either. reflect: stands on its own. */
static bool has_object(const council_routed *r)
{
    if (r->action == COUNCIL_ACT_REFLECT)
        return true;
    if (r->content_len == 0)
        return false;
    if (r->action != COUNCIL_ACT_ASK)
        return true;
    const char *rest; /* the content ends in spaces only past content_len */
    council_question_priority(r->content, &rest);
    return *rest != '\0';
}

/* Starts-with only: "note:" inside the content of another action never
 * routes there (starts-with is what prevents keyword false positives). */
void council_route(const char *text, council_routed *out)
{
    memset(out, 0, sizeof *out);
    out->refused = COUNCIL_ACT_NONE;
    out->sleep_ms = -1;
    const char *t = skip_space(text ? text : "");
    size_t len = strlen(t);
    while (len > 0 && isspace((unsigned char)t[len - 1]))
        len--;
    for (int i = 0; i < COUNCIL_ACT__COUNT; i++) {
        size_t pl = strlen(PREFIXES[i]);
        if (len >= pl && strncasecmp(t, PREFIXES[i], pl) == 0) {
            const char *c = skip_space(t + pl);
            if (c > t + len) /* only spaces after the prefix: they were trimmed */
                c = t + len;
            out->action = (council_action)i;
            out->content = c;
            out->content_len = len - (size_t)(c - t);
            if (!has_object(out)) {
                out->refused = out->action;
                out->action = COUNCIL_ACT_REFLECT;
                out->unknown = true;
                snprintf(out->warning, sizeof out->warning,
                         "'%s' with nothing to act on: recorded as reflect:", PREFIXES[i]);
                return;
            }
            if (out->action == COUNCIL_ACT_SLEEP) {
                /* the content ends in spaces only past content_len */
                out->sleep_ms = council_parse_duration(out->content);
                if (out->sleep_ms < 0) {
                    size_t n = vigil_utf8_cut(out->content, out->content_len < 48 ?
                                                                out->content_len : 48);
                    out->refused = COUNCIL_ACT_SLEEP;
                    out->action = COUNCIL_ACT_REFLECT;
                    out->unknown = true;
                    snprintf(out->warning, sizeof out->warning,
                             "'sleep:' with no duration understood in '%.*s%s' (say 10m, "
                             "30 seconds, 1h30m): recorded as reflect:",
                             (int)n, out->content, n < out->content_len ? "..." : "");
                }
            }
            return;
        }
    }
    out->action = COUNCIL_ACT_REFLECT;
    out->unknown = true;
    out->refused = COUNCIL_ACT_NONE;
    out->content = t;
    out->content_len = len;
    if (len == 0) {
        snprintf(out->warning, sizeof out->warning, "empty proposal: recorded as reflect:");
        return;
    }
    /* name what was found: the text up to a colon (bounded), or its start */
    size_t n = 0;
    while (n < len && n < 24 && t[n] != ':' && t[n] != '\n')
        n++;
    bool colon = n < len && t[n] == ':';
    n = vigil_utf8_cut(t, n); /* 24 bytes may end inside a character */
    snprintf(out->warning, sizeof out->warning, "unknown action %s'%.*s%s': recorded as reflect:",
             colon ? "prefix " : "", (int)n, t, colon ? ":" : (n < len ? "..." : ""));
}

int council_question_priority(const char *text, const char **rest)
{
    const char *t = skip_space(text ? text : "");
    *rest = t;
    if (t[0] != '[' || (t[1] != 'p' && t[1] != 'P') || !isdigit((unsigned char)t[2]))
        return COUNCIL_PRIORITY_DEFAULT;
    int v = t[2] - '0';
    const char *e = t + 3;
    if (isdigit((unsigned char)*e))
        v = v * 10 + (*e++ - '0');
    if (*e != ']' || v < 1 || v > 10)
        return COUNCIL_PRIORITY_DEFAULT;
    *rest = skip_space(e + 1);
    return v;
}

static const struct {
    const char *unit;
    int64_t ms;
} UNITS[] = {{"milliseconds", 1}, {"millisecond", 1}, {"ms", 1},        {"seconds", 1000},
             {"second", 1000},    {"secs", 1000},     {"sec", 1000},    {"s", 1000},
             {"minutes", 60000},  {"minute", 60000},  {"mins", 60000},  {"min", 60000},
             {"m", 60000},        {"hours", 3600000}, {"hour", 3600000}, {"hrs", 3600000},
             {"hr", 3600000},     {"h", 3600000}};

/* A number as an LLM writes one in a duration: digits, optionally a point
 * and more digits. No sign, exponent or hex (strtod's "1e3" or "0x10"
 * would be a duration nobody stated). NULL when *p is no such number or it
 * is above 1e9. */
static const char *read_number(const char *p, double *v)
{
    if (!isdigit((unsigned char)*p))
        return NULL;
    double x = 0;
    for (; isdigit((unsigned char)*p); p++) {
        x = x * 10 + (*p - '0');
        if (x > 1e9)
            return NULL;
    }
    if (*p == '.' && isdigit((unsigned char)p[1])) {
        double scale = 0.1;
        for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
            x += (*p - '0') * scale;
    }
    *v = x;
    return p;
}

/* The unit word at u (its letters, ul of them): its milliseconds, or 0. */
static int64_t unit_ms(const char *u, size_t ul)
{
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
        if (strlen(UNITS[i].unit) == ul && strncasecmp(u, UNITS[i].unit, ul) == 0)
            return UNITS[i].ms;
    return 0;
}

/* After one term: the next term's start when a separator (spaces, a comma,
 * "and") leads to a digit, else NULL. */
static const char *next_term(const char *p)
{
    const char *q = skip_space(p);
    if (*q == ',')
        q = skip_space(q + 1);
    if (strncasecmp(q, "and", 3) == 0 && isspace((unsigned char)q[3]))
        q = skip_space(q + 3);
    return isdigit((unsigned char)*q) ? q : NULL;
}

/* The grammar (README, "Action router and handlers"):
 *   [for] TERM {[,] [and] TERM} [TRAILER]  |  [for] NUMBER
 *   TERM = NUMBER [spaces] UNIT, the units strictly decreasing (2h30m, 1 hour
 *          and 30 minutes; never 30m 2h, 1h 1h)
 *   a bare NUMBER (minutes) stands alone;
 *   TRAILER: after spaces or punctuation, words that start with no digit
 *            ("10m while the user is in a meeting", "10m.").
 * Anything else is not a duration: -1. Exact rather than forgiving: "2h30"
 * or "10-20 minutes" would otherwise be read as some part of what was
 * written. */
int64_t council_parse_duration(const char *text)
{
    const char *t = skip_space(text ? text : "");
    /* "for 10 minutes": skip a leading "for" */
    if (strncasecmp(t, "for", 3) == 0 && isspace((unsigned char)t[3]))
        t = skip_space(t + 3);
    double v, ms = 0;
    const char *p = read_number(t, &v);
    if (!p)
        return -1;
    const char *u = skip_space(p);
    if (!isalpha((unsigned char)*u)) /* no unit: minutes, the council's unit, alone */
        return *u == '\0' ? (int64_t)(v * 60000) : -1;
    int64_t prev = INT64_MAX;
    for (;;) {
        size_t ul = 0;
        while (isalpha((unsigned char)u[ul]))
            ul++;
        int64_t mult = ul > 0 ? unit_ms(u, ul) : 0;
        if (mult == 0 || mult >= prev) /* no unit, an unknown one, or out of order */
            return -1;
        prev = mult;
        ms += v * (double)mult;
        p = u + ul;
        const char *n = next_term(p);
        if (!n)
            break;
        if (!(p = read_number(n, &v)))
            return -1;
        u = skip_space(p);
    }
    /* what follows the duration: nothing, or words after a break; a digit
     * there is a number this grammar did not read ("2h 30", "10m-20m") */
    const char *r = p;
    while (*r && !isalnum((unsigned char)*r))
        r++;
    if (isdigit((unsigned char)*r) ||
        (*p && !isspace((unsigned char)*p) && !ispunct((unsigned char)*p)))
        return -1;
    if (ms > 9e15)
        return -1;
    return (int64_t)ms;
}
