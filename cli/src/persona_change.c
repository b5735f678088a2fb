/* persona_change.c - `vigil persona sleep|wake|level PERSONA ROOM [LEVEL]
 * [--for D | --until T]`: a command on persona/{p}/command, then a wait for
 * what dormancy-monitor makes of it: the persona/{p}/dormancy event derived
 * from the command (its id starts with the command's id), or the
 * sys/dormancy-monitor/error event quoting it. Durations and clock times
 * are read with dormancy-monitor's own @self grammar, so both accept the
 * same words. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vigil/clock.h>
#include "dormancy.h"
#include "ops.h"

#define DORMANCY_SERVICE "dormancy-monitor"

/* What the operator asked for. */
typedef struct change {
    const char *persona, *room;
    dormancy_level level;
    int64_t until; /* 0 = no end */
    bool json;
} change;

/* Minutes east of UTC of this machine's local time now: "--until 17:00"
 * means 17:00 where the operator sits. */
static int local_offset_min(void)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    return (int)(tm.tm_gmtoff / 60);
}

/* --for/--until through the @self grammar ("@self dormant sleep for 1h"). */
static int parse_end(const char *word, const char *value, int64_t now, int64_t *until)
{
    char text[160];
    snprintf(text, sizeof text, "@self dormant sleep %s %.100s", word, value);
    dormancy_self_cmd cmd = dormancy_self_parse(text, now, local_offset_min());
    if (cmd.kind != DORMANCY_SELF_DORMANT || cmd.until <= 0)
        return -1;
    *until = cmd.until;
    return 0;
}

static int parse_args(const char *name, int argc, char **argv, change *ch)
{
    static const struct option LONG[] = { { "for", required_argument, NULL, 'f' },
                                          { "until", required_argument, NULL, 'u' },
                                          { "json", no_argument, NULL, 'j' },
                                          { 0, 0, 0, 0 } };
    char full[32];
    snprintf(full, sizeof full, "persona %s", name);
    const char *for_s = NULL, *until_s = NULL;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        if (opt == 'f')
            for_s = optarg;
        else if (opt == 'u')
            until_s = optarg;
        else if (opt == 'j')
            ch->json = true;
        else
            return ops_opt_error(full, opt, optopt, argv);
    }
    bool is_level = strcmp(name, "level") == 0;
    int want = is_level ? 3 : 2;
    int left = argc - optind;
    if (left != want)
        return ops_usage_error(full, left < want ? (is_level ? "missing PERSONA, ROOM or LEVEL"
                                                             : "missing PERSONA or ROOM")
                                                 : "too many arguments");
    ch->persona = argv[optind];
    ch->room = argv[optind + 1];
    if (!vigil_id_valid(ch->persona, strlen(ch->persona)))
        return ops_usage_error(full, "bad PERSONA: use 1-64 characters of A-Z a-z 0-9 . _ -");
    if (!vigil_id_valid(ch->room, strlen(ch->room)))
        return ops_usage_error(full, "bad ROOM: use 1-64 characters of A-Z a-z 0-9 . _ -");
    if (is_level) {
        if (dormancy_level_parse(argv[optind + 2], &ch->level) != 0)
            return ops_usage_error(full, "bad LEVEL: use active, mention-only, human-only or sleep");
    } else {
        ch->level = strcmp(name, "sleep") == 0 ? DORMANCY_SLEEP : DORMANCY_ACTIVE;
    }
    if (for_s && until_s)
        return ops_usage_error(full, "give either --for or --until, not both");
    if ((for_s || until_s) && ch->level == DORMANCY_ACTIVE)
        return ops_usage_error(full, "--for and --until end a dormancy: they do not go with active");
    int64_t now = vigil_now_ms();
    if (for_s && parse_end("for", for_s, now, &ch->until) != 0)
        return ops_usage_error(full, "bad --for: use a duration such as 90s, 30m, 1h30m, 1.5h, 2d");
    if (until_s && parse_end("until", until_s, now, &ch->until) != 0)
        return ops_usage_error(full, "bad --until: use a time of day such as 17:00, 9:30, 5pm");
    return CLI_OK;
}

/* The persona's entry for the room in a persona/{p}/state payload, or
 * NULL. */
static json_object *state_entry(json_object *st, const char *room)
{
    json_object *rooms, *r;
    if (!st || !json_object_object_get_ex(st, "rooms", &rooms) ||
        !json_object_object_get_ex(rooms, room, &r) || !json_object_is_type(r, json_type_object))
        return NULL;
    return r;
}

/* Does the state already say what the command asks: the same level and the
 * same timed end (none for none)? A timed dormancy asked for without an end
 * (or with another end) is a change, even at the same level. */
static bool state_matches(json_object *st, const change *ch)
{
    json_object *e = state_entry(st, ch->room);
    return e && strcmp(ops_str(e, "level"), dormancy_level_name(ch->level)) == 0 &&
           ops_int(e, "until", 0) == ch->until;
}

/* The answer when the level does not change: nothing to send ("already"),
 * or the retained state now shows the new timed end ("now"). */
static void print_unchanged(const change *ch, const char *how)
{
    const char *level = dormancy_level_name(ch->level);
    if (!ch->json) {
        char until[48] = "";
        if (ch->until > 0) {
            char t[32];
            ops_local_time(ch->until, t, sizeof t);
            snprintf(until, sizeof until, " until %s", t);
        }
        printf("%s is %s %s in %s%s%s\n", ch->persona, how, level, ch->room, until,
               strcmp(how, "already") == 0 ? ": nothing sent" : " (no level change)");
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "persona", json_object_new_string(ch->persona));
    json_object_object_add(o, "room", json_object_new_string(ch->room));
    json_object_object_add(o, "level", json_object_new_string(level));
    if (ch->until > 0)
        json_object_object_add(o, "until", json_object_new_int64(ch->until));
    json_object_object_add(o, "unchanged", json_object_new_boolean(true));
    json_object_object_add(o, "sent", json_object_new_boolean(strcmp(how, "now") == 0));
    ops_print_json(o);
    json_object_put(o);
}

static char *command_json(cli *c, const change *ch, const char *id)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(id));
    bool awake = ch->level == DORMANCY_ACTIVE;
    json_object_object_add(o, "cmd", json_object_new_string(awake ? "awake" : "dormant"));
    if (!awake)
        json_object_object_add(o, "level", json_object_new_string(dormancy_level_name(ch->level)));
    if (ch->until > 0)
        json_object_object_add(o, "until", json_object_new_int64(ch->until));
    json_object_object_add(o, "room", json_object_new_string(ch->room));
    json_object_object_add(o, "by", json_object_new_string(c->user));
    json_object_object_add(o, "ts", json_object_new_int64(vigil_now_ms()));
    char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

static void print_dormancy(json_object *ev, bool json)
{
    if (json) {
        ops_print_json(ev);
        return;
    }
    printf("%s in %s: %s -> %s (%s: %s)\n", ops_str(ev, "persona"), ops_str(ev, "room"),
           ops_str(ev, "previous"), ops_str(ev, "level"), ops_str(ev, "trigger"),
           ops_str(ev, "reason"));
    const char *text = ops_str(ev, "text");
    if (*text)
        printf("  %s\n", text);
}

/* Outcome of the wait. */
typedef enum { WAIT_APPLIED, WAIT_REFUSED, WAIT_TIMEOUT } wait_result;

/* Reads the inbox until the command's dormancy event or error event comes,
 * or the timeout. When the level stays the same (only the timed end moves)
 * dormancy-monitor may publish no dormancy event, only its new state: then
 * a persona/{p}/state showing the level and end asked for is the answer.
 * Nothing else is: without an answer the command is not known to have been
 * applied. */
static wait_result wait_outcome(cli *c, ops_inbox *in, const change *ch, const char *id,
                                const char *cmd_topic, bool same_level)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s:", id);
    int64_t deadline = vigil_mono_ms() + c->timeout_ms;
    while (vigil_mono_ms() < deadline) {
        ops_msg m;
        if (!ops_inbox_take(in, &m)) {
            vigil_sleep_ms(5, NULL);
            continue;
        }
        wait_result r = WAIT_TIMEOUT;
        const char *ev_id = ops_str(m.json, "id");
        size_t tl = strlen(m.topic);
        if (!m.json) {
            /* an empty retained payload clears a state: nothing to read */
        } else if (tl > 9 && strcmp(m.topic + tl - 9, "/dormancy") == 0 &&
                   strncmp(ev_id, prefix, strlen(prefix)) == 0 &&
                   strcmp(ops_str(m.json, "room"), ch->room) == 0) {
            print_dormancy(m.json, ch->json);
            r = WAIT_APPLIED;
        } else if (strcmp(m.topic, "sys/" DORMANCY_SERVICE "/error") == 0 &&
                   strcmp(ops_str(m.json, "topic"), cmd_topic) == 0 &&
                   strstr(ops_str(m.json, "sample"), id)) {
            if (ch->json)
                ops_print_json(m.json);
            else
                fprintf(stderr, "vigil: %s refused the command: %s (%s)\n", DORMANCY_SERVICE,
                        ops_str(m.json, "reason"), ops_str(m.json, "detail"));
            r = WAIT_REFUSED;
        } else if (same_level && tl > 6 && strcmp(m.topic + tl - 6, "/state") == 0 &&
                   state_matches(m.json, ch)) {
            print_unchanged(ch, "now");
            r = WAIT_APPLIED;
        }
        ops_msg_free(&m);
        if (r != WAIT_TIMEOUT)
            return r;
    }
    return WAIT_TIMEOUT;
}

int cli_persona_change(cli *c, int argc, char **argv)
{
    change ch = { 0 };
    int rc = parse_args(argv[0], argc, argv, &ch);
    if (rc != CLI_OK)
        return rc;
    char t_dormancy[CHAT_ID_MAX + 32], t_state[CHAT_ID_MAX + 32], cmd_topic[CHAT_ID_MAX + 32];
    snprintf(t_dormancy, sizeof t_dormancy, "persona/%s/dormancy", ch.persona);
    snprintf(t_state, sizeof t_state, "persona/%s/state", ch.persona);
    snprintf(cmd_topic, sizeof cmd_topic, "persona/%s/command", ch.persona);
    const char *subs[] = { t_dormancy, t_state, "sys/" DORMANCY_SERVICE "/error", NULL };
    ops_inbox in;
    ops_inbox_init(&in);
    json_object *state = NULL;
    char *payload = NULL;
    rc = ops_subscribe(c, subs, &in);
    if (rc != CLI_OK)
        goto out;
    /* the retained state is queued by now: already there? */
    ops_msg m;
    while (ops_inbox_take(&in, &m)) {
        if (m.json && strcmp(m.topic, t_state) == 0) {
            if (state)
                json_object_put(state);
            state = json_object_get(m.json);
        }
        ops_msg_free(&m);
    }
    if (state_matches(state, &ch)) {
        print_unchanged(&ch, "already");
        goto out;
    }
    json_object *now = state_entry(state, ch.room);
    bool same_level = now && strcmp(ops_str(now, "level"), dormancy_level_name(ch.level)) == 0;
    char id[96];
    cli_new_id(id, sizeof id, "cli");
    payload = command_json(c, &ch, id);
    if (!payload) {
        rc = cli_fail(CLI_ERR_RUNTIME, "out of memory");
        goto out;
    }
    rc = cli_publish(c, cmd_topic, payload);
    if (rc != CLI_OK)
        goto out;
    switch (wait_outcome(c, &in, &ch, id, cmd_topic, same_level)) {
    case WAIT_APPLIED:
        rc = CLI_OK;
        break;
    case WAIT_REFUSED:
        rc = OPS_EXIT_REFUSED;
        break;
    case WAIT_TIMEOUT:
        rc = cli_fail(CLI_ERR_RUNTIME,
                      "%s did not answer the command within %lld ms: no dormancy event, "
                      "no error event%s (is it running?)",
                      DORMANCY_SERVICE, (long long)c->timeout_ms,
                      same_level ? ", no new state" : "");
        break;
    }
out:
    cli_close(c);
    ops_inbox_free(&in);
    if (state)
        json_object_put(state);
    free(payload);
    return rc;
}
