/* persona_status.c - `vigil persona status [ROOM | PERSONA] [--json]`:
 * each persona's dormancy level per room, since when and why, the
 * suggestion pending, read from
 * the retained persona/+/state and room/+/state that dormancy-monitor
 * publishes (no Redis: the broker's retained messages are the source). */
#include <stdlib.h>
#include <string.h>
#include "help.h"
#include "opts.h"
#include "ops.h"

/* One (persona, room) entry of a persona/{p}/state. */
typedef struct entry {
    const char *persona, *room;
    json_object *o; /* {level, since, trigger, reason?, until?, snoozed_until?, pending?}, borrowed */
} entry;

typedef struct view {
    json_object *personas; /* persona -> state object (owned) */
    json_object *rooms;    /* room -> state object (owned) */
} view;

/* Reads every retained state queued in the inbox: persona/{p}/state and
 * room/{r}/state; the newest per topic wins. */
static void collect(ops_inbox *in, view *v)
{
    ops_msg m;
    while (ops_inbox_take(in, &m)) {
        char kind[16], id[CHAT_ID_MAX + 2], tail[16];
        if (m.json && sscanf(m.topic, "%15[^/]/%65[^/]/%15s", kind, id, tail) == 3 &&
            strcmp(tail, "state") == 0) {
            json_object *dst = strcmp(kind, "persona") == 0 ? v->personas
                               : strcmp(kind, "room") == 0  ? v->rooms
                                                            : NULL;
            if (dst) {
                json_object_object_add(dst, id, m.json);
                m.json = NULL;
            }
        }
        ops_msg_free(&m);
    }
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int r = strcmp(x->room, y->room);
    return r ? r : strcmp(x->persona, y->persona);
}

/* Every (persona, room) pair matching filter (NULL: all), sorted by room
 * then persona. */
static entry *entries(view *v, const char *filter, size_t *n)
{
    size_t cap = 16, len = 0;
    entry *e = malloc(cap * sizeof *e);
    if (!e)
        return NULL;
    json_object_object_foreach(v->personas, p, st)
    {
        json_object *rooms;
        if (!json_object_object_get_ex(st, "rooms", &rooms) ||
            !json_object_is_type(rooms, json_type_object))
            continue;
        json_object_object_foreach(rooms, r, ro)
        {
            if (!json_object_is_type(ro, json_type_object))
                continue;
            if (filter && strcmp(filter, p) != 0 && strcmp(filter, r) != 0)
                continue;
            if (len == cap) {
                entry *g = realloc(e, (cap *= 2) * sizeof *e);
                if (!g) {
                    free(e);
                    return NULL;
                }
                e = g;
            }
            e[len++] = (entry){ p, r, ro };
        }
    }
    qsort(e, len, sizeof *e, cmp_entry);
    *n = len;
    return e;
}

static void print_room_header(json_object *rs, const char *room)
{
    char last[32], since[32];
    ops_local_time(ops_int(rs, "last_human_ts", 0), last, sizeof last);
    ops_local_time(ops_int(rs, "ai_only_since", 0), since, sizeof since);
    printf("room %s", room);
    if (!rs) {
        printf("  (no room state)\n");
        return;
    }
    json_object *paused = NULL, *humans = NULL;
    json_object_object_get_ex(rs, "paused", &paused);
    printf("  paused=%s  last human message %s", json_object_get_boolean(paused) ? "yes" : "no",
           last);
    if (ops_int(rs, "ai_only_since", 0) > 0)
        printf("  AI-only since %s", since);
    printf("  humans present:");
    size_t nh = 0;
    if (json_object_object_get_ex(rs, "humans_present", &humans) &&
        json_object_is_type(humans, json_type_array))
        for (size_t i = 0; i < json_object_array_length(humans); i++, nh++)
            printf(" %s", json_object_get_string(json_object_array_get_idx(humans, i)));
    printf("%s\n", nh ? "" : " none");
}

/* The lines under a persona's row: why it is at its level, and the
 * suggestion waiting for its answer (with when the default applies). */
static void print_details(json_object *o)
{
    const char *reason = ops_str(o, "reason");
    if (reason[0])
        printf("      reason: %s\n", reason);
    json_object *pd = NULL;
    if (!json_object_object_get_ex(o, "pending", &pd) || !json_object_is_type(pd, json_type_object))
        return;
    char expires[32];
    ops_local_time(ops_int(pd, "expires", 0), expires, sizeof expires);
    printf("      pending: %s suggested (%s), default yes at %s", ops_str(pd, "level"),
           ops_str(pd, "trigger"), expires);
    const char *why = ops_str(pd, "reason");
    if (why[0])
        printf(": %s", why);
    putchar('\n');
}

static void print_text(view *v, entry *e, size_t n)
{
    const char *room = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!room || strcmp(room, e[i].room) != 0) {
            room = e[i].room;
            json_object *rs = NULL;
            json_object_object_get_ex(v->rooms, room, &rs);
            if (i > 0)
                putchar('\n');
            print_room_header(rs, room);
            printf("  %-24s %-13s %-19s %s\n", "PERSONA", "LEVEL", "SINCE", "TRIGGER");
        }
        char since[32], snooze[32];
        ops_local_time(ops_int(e[i].o, "since", 0), since, sizeof since);
        printf("  %-24s %-13s %-19s %s", e[i].persona, ops_str(e[i].o, "level"), since,
               ops_str(e[i].o, "trigger"));
        int64_t su = ops_int(e[i].o, "snoozed_until", 0);
        if (su > 0) {
            ops_local_time(su, snooze, sizeof snooze);
            printf(" (suggestions snoozed until %s)", snooze);
        }
        int64_t until = ops_int(e[i].o, "until", 0);
        if (until > 0) {
            ops_local_time(until, snooze, sizeof snooze);
            printf(" (until %s)", snooze);
        }
        putchar('\n');
        print_details(e[i].o);
    }
}

/* {"personas":[{persona, room, level, since, trigger, reason?, pending?,
 * ...}], "rooms": [room state...]}: the entries as published plus persona
 * and room. */
static void print_json(view *v, entry *e, size_t n, const char *filter)
{
    json_object *out = json_object_new_object();
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *x = NULL;
        json_object_deep_copy(e[i].o, &x, NULL);
        if (!x)
            continue;
        json_object_object_add(x, "persona", json_object_new_string(e[i].persona));
        json_object_object_add(x, "room", json_object_new_string(e[i].room));
        json_object_array_add(arr, x);
    }
    json_object_object_add(out, "personas", arr);
    json_object *rooms = json_object_new_array();
    json_object_object_foreach(v->rooms, r, rs)
    {
        bool keep = !filter || strcmp(filter, r) == 0;
        for (size_t i = 0; !keep && i < n; i++)
            keep = strcmp(e[i].room, r) == 0;
        if (keep)
            json_object_array_add(rooms, json_object_get(rs));
    }
    json_object_object_add(out, "rooms", rooms);
    ops_print_json(out);
    json_object_put(out);
}

int cli_persona_status(cli *c, int argc, char **argv)
{
    bool json = false;
    optind = 1;
    int bad = cli_flag_opt(argc, argv, "json", &json);
    if (bad)
        return ops_opt_error("persona status", bad, optopt, argv);
    if (argc - optind > 1)
        return ops_usage_error("persona status", "too many arguments");
    const char *filter = argc - optind == 1 ? argv[optind] : NULL;
    if (filter && !vigil_id_valid(filter, strlen(filter)))
        return ops_usage_error("persona status",
                               "bad ROOM or PERSONA: use 1-64 characters of A-Z a-z 0-9 . _ -");
    ops_inbox in;
    ops_inbox_init(&in);
    static const char *const SUBS[] = { "persona/+/state", "room/+/state", NULL };
    int rc = ops_subscribe(c, SUBS, &in);
    cli_close(c); /* every retained message is queued once the subscription is confirmed */
    if (rc != CLI_OK) {
        ops_inbox_free(&in);
        return rc;
    }
    view v = { json_object_new_object(), json_object_new_object() };
    collect(&in, &v);
    ops_inbox_free(&in);
    size_t n = 0;
    entry *e = entries(&v, filter, &n);
    if (!e) {
        rc = cli_fail(CLI_ERR_RUNTIME, "out of memory");
    } else if (filter && n == 0 && !json_object_object_get_ex(v.rooms, filter, NULL)) {
        rc = cli_fail(CLI_ERR_NOT_FOUND,
                      "no persona or room '%s' in the retained states (is dormancy-monitor running?)",
                      filter);
    } else if (json) {
        print_json(&v, e, n, filter);
    } else if (n == 0 && filter) { /* a room known only by its room state */
        json_object *rs = NULL;
        json_object_object_get_ex(v.rooms, filter, &rs);
        print_room_header(rs, filter);
        printf("  no persona has a state in this room\n");
    } else if (n == 0) {
        printf("no persona state published yet\n");
    } else {
        print_text(&v, e, n);
    }
    free(e);
    json_object_put(v.personas);
    json_object_put(v.rooms);
    return rc;
}
