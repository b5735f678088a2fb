/* router.c - the action router: Sol's proposal matched by prefix
 * (starts-with on the trimmed, case-folded text, as specified), plus
 * the small readers of what follows a prefix: a question's [pN] priority
 * marker and a sleep duration. */
#include <ctype.h>
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

/* An action that has an object (a query, a note, a question, a topic) is
 * only taken with one: a bare "ask user:" would queue an empty question
 * for the user, a bare "search:" an empty request. A question's priority
 * marker alone ("ask user: [p3]") is no question either. sleep: and
 * reflect: stand on their own. */
static bool has_object(const council_routed *r)
{
    if (r->action == COUNCIL_ACT_SLEEP || r->action == COUNCIL_ACT_REFLECT)
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
            if (has_object(out))
                return;
            out->action = COUNCIL_ACT_REFLECT;
            out->unknown = true;
            snprintf(out->warning, sizeof out->warning,
                     "'%s' with nothing to act on: recorded as reflect:", PREFIXES[i]);
            return;
        }
    }
    out->action = COUNCIL_ACT_REFLECT;
    out->unknown = true;
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

int64_t council_parse_duration(const char *text)
{
    const char *t = skip_space(text ? text : "");
    /* "for 10 minutes": skip a leading "for" */
    if (strncasecmp(t, "for", 3) == 0 && isspace((unsigned char)t[3]))
        t = skip_space(t + 3);
    if (!isdigit((unsigned char)*t))
        return -1;
    char *end = NULL;
    double v = strtod(t, &end);
    if (!end || end == t || !(v >= 0) || v > 1e9)
        return -1;
    const char *u = skip_space(end);
    size_t ul = 0;
    while (isalpha((unsigned char)u[ul]))
        ul++;
    int64_t mult = 60000; /* no unit: minutes, the council's unit of time */
    if (ul > 0) {
        mult = 0;
        for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
            if (strlen(UNITS[i].unit) == ul && strncasecmp(u, UNITS[i].unit, ul) == 0)
                mult = UNITS[i].ms;
        if (mult == 0)
            return -1;
    }
    double ms = v * (double)mult;
    if (ms > 9e15)
        return -1;
    return (int64_t)ms;
}

