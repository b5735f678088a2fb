/* topics.c - which Vigil topics the Theater stream carries, the topic
 * families a client names in ?topics=, MQTT filter matching, and the SSE
 * event name of each logged message. */
#include <stdio.h>
#include <string.h>
#include <vigil/json.h>
#include "gateway.h"

const char *const GATEWAY_SUBSCRIPTIONS[] = {
    "room/+/message",       "room/+/presence",    "room/+/state",       "room/+/control",
    "room/+/autopilot",     "room/+/economics",   "persona/+/dormancy", "persona/+/state",
    "persona/+/suggestion", "persona/+/wake",     "persona/+/meta",     "heartbeat/+/run",
    "agent/+/assessment",   "agent/+/resume",     "agent/+/status",     "council/+/event",
    "council/+/state",      "council/+/answer",   "sys/+/+/status",     "room/+/floor",
    NULL};

typedef struct family {
    const char *name;
    const char *filters[8];
} family;

static const family FAMILIES[] = {
    {"rooms", {"room/#", NULL}},
    {"personas", {"persona/+/dormancy", "persona/+/state", "persona/+/suggestion", "persona/+/meta", NULL}},
    {"wake", {"persona/+/wake", NULL}},
    /* floor-control's decisions: room/{r}/floor holds the whole decision
     * (granted, held, a reason for each persona); its copies per persona,
     * persona/{p}/floor, are not logged (one per persona of the room for
     * every human message would crowd the log for nothing new) */
    {"floor", {"room/+/floor", NULL}},
    {"heartbeat", {"heartbeat/#", NULL}},
    {"agents", {"agent/#", NULL}},
    {"council", {"council/#", NULL}},
    {"sys", {"sys/#", NULL}},
    {"all", {"#", NULL}},
};

static const char *const SNAPSHOT_TOPICS[] = {
    "room/+/state",     "room/+/economics", "persona/+/state", "persona/+/meta",
    "agent/+/status",   "agent/+/assessment", "council/+/state", "sys/+/+/status", NULL};

static const char *const COUNCIL_LIVE[] = {"deliberation", "phase", "action", "question",
                                           "session_paused", "session_ended", NULL};

bool gw_council_live_type(const char *event)
{
    for (int i = 0; event && COUNCIL_LIVE[i]; i++)
        if (strcmp(event, COUNCIL_LIVE[i]) == 0)
            return true;
    return false;
}

/* A filter is levels of id characters, '+' as a whole level, '#' only as
 * the whole last level (MQTT's rules, and ids as everywhere in Vigil). */
static bool filter_valid(const char *f)
{
    size_t n = strlen(f);
    if (n == 0 || n >= GW_TOPIC_MAX)
        return false;
    const char *p = f;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0)
            return false;
        if (len == 1 && *p == '#')
            return e == NULL;
        if (!(len == 1 && *p == '+')) {
            for (size_t i = 0; i < len; i++) {
                char ch = p[i];
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
                    return false;
            }
        }
        p += len + (e ? 1 : 0);
        if (e && !*p)
            return false;
    }
    return true;
}

/* Kept entries' own topics (kept.c): never published, but logged, so a
 * client's filter may name them. */
static const char *const KEPT_TOPICS[] = {"council/+/questions", "room/+/humans", NULL};

/* Could some topic match both filters? Level by level: '#' in either
 * takes the rest, '+' in either takes one level, else the levels must be
 * equal; "a/#" also matches "a". */
static bool filters_overlap(const char *a, const char *b)
{
    for (;;) {
        if ((a[0] == '#' && !a[1]) || (b[0] == '#' && !b[1]))
            return true;
        size_t al = strcspn(a, "/"), bl = strcspn(b, "/");
        bool any = (al == 1 && a[0] == '+') || (bl == 1 && b[0] == '+');
        if (!any && (al != bl || strncmp(a, b, al) != 0))
            return false;
        a += al;
        b += bl;
        if (!*a || !*b)
            return (!*a && !*b) || strcmp(*a ? a : b, "/#") == 0;
        a++;
        b++;
    }
}

/* A filter that matches nothing the gateway subscribes to or keeps would
 * give a stream that stays silent forever: refused rather than served. */
static bool filter_carried(const char *f)
{
    for (int i = 0; GATEWAY_SUBSCRIPTIONS[i]; i++)
        if (filters_overlap(f, GATEWAY_SUBSCRIPTIONS[i]))
            return true;
    for (int i = 0; KEPT_TOPICS[i]; i++)
        if (filters_overlap(f, KEPT_TOPICS[i]))
            return true;
    return false;
}

/* The first 64 bytes of the n at f for "%.*s", cut between characters:
 * the refusal is the JSON answer's detail. */
#define QUOTED(f, n) (int)vigil_utf8_cut((f), (n) > 64 ? 64 : (n)), (f)

/* Appends one filter; a family counts as the filters it stands for. */
static int add_filter(gw_filter_set *out, const char *f, size_t n, const char **limit, char *err,
                      size_t errlen)
{
    if (out->n >= GW_FILTERS_MAX) {
        *limit = "topic_filters";
        snprintf(err, errlen, "topics: at most %d topic filters (a family counts as its filters: "
                 "personas is 4)", GW_FILTERS_MAX);
        return -1;
    }
    if (n >= GW_TOPIC_MAX) {
        *limit = "topic_filter_bytes";
        snprintf(err, errlen, "topics: a topic filter is at most %d bytes", GW_TOPIC_MAX - 1);
        return -1;
    }
    memcpy(out->f[out->n], f, n);
    out->f[out->n][n] = '\0';
    if (!filter_valid(out->f[out->n])) {
        snprintf(err, errlen, "'%.*s' is neither a topic family (rooms, personas, wake, floor, "
                 "heartbeat, agents, council, sys, all) nor a topic filter", QUOTED(f, n));
        return -1;
    }
    if (!filter_carried(out->f[out->n])) {
        snprintf(err, errlen, "topic filter '%.*s' matches no topic the gateway carries (room/+/..., "
                 "persona/+/..., heartbeat/+/run, agent/+/..., council/+/..., sys/+/+/status)",
                 QUOTED(f, n));
        return -1;
    }
    out->n++;
    return 0;
}

int gw_filters_parse(const char *spec, gw_filter_set *out, const char **limit, char *err,
                     size_t errlen)
{
    *limit = NULL;
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) {
        snprintf(err, errlen, "topics= is required (e.g. topics=rooms,personas)");
        return -1;
    }
    const char *p = spec;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        bool fam = false;
        for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
            if (strlen(FAMILIES[i].name) == n && strncmp(FAMILIES[i].name, p, n) == 0) {
                fam = true;
                for (int j = 0; FAMILIES[i].filters[j]; j++)
                    if (add_filter(out, FAMILIES[i].filters[j], strlen(FAMILIES[i].filters[j]),
                                   limit, err, errlen) != 0)
                        return -1;
            }
        }
        if (!fam && add_filter(out, p, n, limit, err, errlen) != 0)
            return -1;
        p += n + (e ? 1 : 0);
    }
    return 0;
}

void gw_filters_council_live(gw_filter_set *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->f[0], sizeof out->f[0], "council/+/event");
    out->n = 1;
    out->council_live = true;
}

bool gw_topic_match(const char *filter, const char *topic)
{
    const char *f = filter, *t = topic;
    for (;;) {
        if (f[0] == '#' && f[1] == '\0')
            return true;
        size_t fl = strcspn(f, "/"), tl = strcspn(t, "/");
        bool plus = fl == 1 && f[0] == '+';
        if (!plus && (fl != tl || strncmp(f, t, fl) != 0))
            return false;
        f += fl;
        t += tl;
        if (!*f && !*t)
            return true;
        if (!*f)
            return false; /* the topic has more levels */
        f++;
        if (!*t)
            return strcmp(f, "#") == 0; /* "a/#" matches "a" too */
        t++;
    }
}

/* The payload field named like each topic parameter, per first level
 * (topics/asyncapi.yaml: room/{room}/..., persona/{persona}/...,
 * heartbeat/{persona}/run, agent/{agent}/..., council/{session}/...,
 * sys/{service}/{instance}/status). */
static const struct {
    const char *first;
    const char *fields[2];
} PARAM_FIELDS[] = {
    {"room", {"room", NULL}},       {"persona", {"persona", NULL}},
    {"heartbeat", {"persona", NULL}}, {"agent", {"agent", NULL}},
    {"council", {"session", NULL}}, {"sys", {"service", "instance"}},
};

const char *gw_topic_param_field(const char *topic, int level)
{
    size_t fl = strcspn(topic, "/");
    if (level < 1 || level > 2)
        return NULL;
    for (size_t i = 0; i < sizeof PARAM_FIELDS / sizeof PARAM_FIELDS[0]; i++)
        if (strlen(PARAM_FIELDS[i].first) == fl && strncmp(PARAM_FIELDS[i].first, topic, fl) == 0)
            return PARAM_FIELDS[i].fields[level - 1];
    return NULL;
}

bool gw_topic_is_snapshot(const char *topic)
{
    for (int i = 0; SNAPSHOT_TOPICS[i]; i++)
        if (gw_topic_match(SNAPSHOT_TOPICS[i], topic))
            return true;
    return false;
}

bool gw_filters_match(const gw_filter_set *fs, const char *topic, const char *event)
{
    if (fs->council_live && !gw_council_live_type(event))
        return false;
    for (int i = 0; i < fs->n; i++)
        if (gw_topic_match(fs->f[i], topic))
            return true;
    return false;
}

void gw_event_name(const char *topic, json_object *payload, char *out, size_t outlen)
{
    char first[64] = "", last[64] = "";
    const char *slash = strchr(topic, '/');
    size_t fl = slash ? (size_t)(slash - topic) : strlen(topic);
    snprintf(first, sizeof first, "%.*s", (int)(fl < 63 ? fl : 63), topic);
    const char *ls = strrchr(topic, '/');
    snprintf(last, sizeof last, "%s", ls ? ls + 1 : topic);
    if (strcmp(first, "council") == 0 && strcmp(last, "event") == 0 && payload) {
        json_object *t;
        if (json_object_object_get_ex(payload, "type", &t) &&
            json_object_is_type(t, json_type_string) &&
            gw_council_live_type(json_object_get_string(t))) {
            snprintf(out, outlen, "%s", json_object_get_string(t));
            return;
        }
    }
    snprintf(out, outlen, "%s.%s", first, last);
}
