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

/* Does a room/{r}/state payload list the persona at the level asked for? */
static bool room_state_matches(json_object *rs, const change *ch)
{
    json_object *personas, *level;
    return rs && json_object_object_get_ex(rs, "personas", &personas) &&
           json_object_object_get_ex(personas, ch->persona, &level) &&
           json_object_is_type(level, json_type_string) &&
           strcmp(json_object_get_string(level), dormancy_level_name(ch->level)) == 0;
}

/* An answer read from a state rather than from a dormancy event. */
typedef enum {
    STATE_ALREADY, /* the state said so before: nothing sent */
    STATE_NOW,     /* same level, the new timed end applied */
    STATE_ADDED    /* the persona had no entry in the room: added at the level */
} state_answer;

/* Prints a state answer: "P is already|now L in R [until T]: ..." or
 * --json {persona, room, level, until?, unchanged|added: true, sent}. */
static void print_state_answer(const change *ch, state_answer a)
{
    const char *level = dormancy_level_name(ch->level);
    if (!ch->json) {
        static const char *const TAIL[] = { ": nothing sent", " (no level change)",
                                            " (added to the room)" };
        char until[48] = "";
        if (ch->until > 0) {
            char t[32];
            ops_local_time(ch->until, t, sizeof t);
            snprintf(until, sizeof until, " until %s", t);
        }
        printf("%s is %s %s in %s%s%s\n", ch->persona, a == STATE_ALREADY ? "already" : "now",
               level, ch->room, until, TAIL[a]);
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "persona", json_object_new_string(ch->persona));
    json_object_object_add(o, "room", json_object_new_string(ch->room));
    json_object_object_add(o, "level", json_object_new_string(level));
    if (ch->until > 0)
        json_object_object_add(o, "until", json_object_new_int64(ch->until));
    json_object_object_add(o, a == STATE_ADDED ? "added" : "unchanged",
                           json_object_new_boolean(true));
    json_object_object_add(o, "sent", json_object_new_boolean(a != STATE_ALREADY));
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

/* The topics of one command and what the state said before it was sent. */
typedef struct pending {
    char id[96];
    char t_dormancy[CHAT_ID_MAX + 32], t_state[CHAT_ID_MAX + 32], t_room[CHAT_ID_MAX + 32];
    char cmd_topic[CHAT_ID_MAX + 32];
    bool had_entry;  /* the persona had an entry in the room */
    bool same_level; /* ... at the level asked for (only the timed end changes) */
    size_t sent_seq; /* messages received before the command went out */
} pending;

/* Outcome of the wait. */
typedef enum { WAIT_APPLIED, WAIT_REFUSED, WAIT_TIMEOUT } wait_result;

/* Is this message, received after the command went out, a state that
 * answers it? When the level does not change, dormancy-monitor publishes no
 * dormancy event, only its new states: the timed end moves at the same
 * level, or the persona had no entry in the room and is added at the level
 * asked for. Then a persona/{p}/state showing the level and end asked for
 * (or, for an added persona, a room/{r}/state listing it at that level) is
 * the answer. A level change on an existing entry is answered by its event
 * only. */
static bool state_answers(const ops_msg *m, const change *ch, const pending *pd)
{
    if (m->seq < pd->sent_seq || (pd->had_entry && !pd->same_level))
        return false;
    if (strcmp(m->topic, pd->t_state) == 0)
        return state_matches(m->json, ch);
    return !pd->had_entry && strcmp(m->topic, pd->t_room) == 0 && room_state_matches(m->json, ch);
}

/* What one message says about the command: its dormancy event (the id
 * starts with the command's), dormancy-monitor's error event quoting it, a
 * state that answers it (state_answers), or nothing (WAIT_TIMEOUT). */
static wait_result judge(const ops_msg *m, const change *ch, const pending *pd)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s:", pd->id);
    if (!m->json)
        return WAIT_TIMEOUT; /* an empty retained payload clears a state: nothing to read */
    if (strcmp(m->topic, pd->t_dormancy) == 0 &&
        strncmp(ops_str(m->json, "id"), prefix, strlen(prefix)) == 0 &&
        strcmp(ops_str(m->json, "room"), ch->room) == 0) {
        print_dormancy(m->json, ch->json);
        return WAIT_APPLIED;
    }
    if (strcmp(m->topic, "sys/" DORMANCY_SERVICE "/error") == 0 &&
        strcmp(ops_str(m->json, "topic"), pd->cmd_topic) == 0 &&
        strstr(ops_str(m->json, "sample"), pd->id)) {
        if (ch->json)
            ops_print_json(m->json);
        else
            fprintf(stderr, "vigil: %s refused the command: %s (%s)\n", DORMANCY_SERVICE,
                    ops_str(m->json, "reason"), ops_str(m->json, "detail"));
        return WAIT_REFUSED;
    }
    if (state_answers(m, ch, pd)) {
        print_state_answer(ch, pd->had_entry ? STATE_NOW : STATE_ADDED);
        return WAIT_APPLIED;
    }
    return WAIT_TIMEOUT;
}

/* Reads the inbox until a message answers the command (judge), or the
 * timeout. Nothing else is an answer: without one the command is not known
 * to have been applied (with dormancy-monitor down, the retained state
 * alone says nothing about it). */
static wait_result wait_outcome(cli *c, ops_inbox *in, const change *ch, const pending *pd)
{
    int64_t deadline = vigil_mono_ms() + c->timeout_ms;
    while (vigil_mono_ms() < deadline) {
        ops_msg m;
        if (!ops_inbox_take(in, &m)) {
            vigil_sleep_ms(5, NULL);
            continue;
        }
        wait_result r = judge(&m, ch, pd);
        ops_msg_free(&m);
        if (r != WAIT_TIMEOUT)
            return r;
    }
    return WAIT_TIMEOUT;
}

/* The newest retained persona/{p}/state among the messages queued so far
 * (a reference the caller puts), NULL when there is none. */
static json_object *retained_state(ops_inbox *in, const char *t_state)
{
    json_object *state = NULL;
    ops_msg m;
    while (ops_inbox_take(in, &m)) {
        if (m.json && strcmp(m.topic, t_state) == 0) {
            json_object_put(state);
            state = json_object_get(m.json);
        }
        ops_msg_free(&m);
    }
    return state;
}

/* Sends the command and waits for its answer: the exit status. A persona
 * that had no state at all (a typo, likely) has been added by the command:
 * the operator is told on stderr. */
static int send_and_wait(cli *c, ops_inbox *in, const change *ch, pending *pd, bool known)
{
    cli_new_id(pd->id, sizeof pd->id, "cli");
    char *payload = command_json(c, ch, pd->id);
    if (!payload)
        return cli_fail(CLI_ERR_RUNTIME, "out of memory");
    pd->sent_seq = ops_inbox_count(in);
    int rc = cli_publish(c, pd->cmd_topic, payload);
    free(payload);
    if (rc != CLI_OK)
        return rc;
    switch (wait_outcome(c, in, ch, pd)) {
    case WAIT_APPLIED:
        if (!known)
            fprintf(stderr,
                    "vigil: warning: persona '%s' was not known in room '%s' (no %s at all): "
                    "it has now been added to the room (a typo in PERSONA?)\n",
                    ch->persona, ch->room, pd->t_state);
        return CLI_OK;
    case WAIT_REFUSED:
        return OPS_EXIT_REFUSED;
    case WAIT_TIMEOUT:
        break;
    }
    bool level_change = pd->had_entry && !pd->same_level; /* no state answers it */
    return cli_fail(CLI_ERR_RUNTIME,
                    "%s did not answer the command within %lld ms: no dormancy event, "
                    "no error event%s (is it running?)",
                    DORMANCY_SERVICE, (long long)c->timeout_ms,
                    level_change ? "" : ", no new state");
}

int cli_persona_change(cli *c, int argc, char **argv)
{
    change ch = { 0 };
    int rc = parse_args(argv[0], argc, argv, &ch);
    if (rc != CLI_OK)
        return rc;
    pending pd = { 0 };
    snprintf(pd.t_dormancy, sizeof pd.t_dormancy, "persona/%s/dormancy", ch.persona);
    snprintf(pd.t_state, sizeof pd.t_state, "persona/%s/state", ch.persona);
    snprintf(pd.t_room, sizeof pd.t_room, "room/%s/state", ch.room);
    snprintf(pd.cmd_topic, sizeof pd.cmd_topic, "persona/%s/command", ch.persona);
    const char *subs[] = { pd.t_dormancy, pd.t_state, pd.t_room, "sys/" DORMANCY_SERVICE "/error",
                           NULL };
    ops_inbox in;
    ops_inbox_init(&in);
    json_object *state = NULL;
    rc = ops_subscribe(c, subs, &in);
    if (rc == CLI_OK) {
        /* the retained state is queued by now: already there? */
        state = retained_state(&in, pd.t_state);
        json_object *now = state_entry(state, ch.room);
        pd.had_entry = now != NULL;
        pd.same_level = now && strcmp(ops_str(now, "level"), dormancy_level_name(ch.level)) == 0;
        if (state_matches(state, &ch))
            print_state_answer(&ch, STATE_ALREADY);
        else
            rc = send_and_wait(c, &in, &ch, &pd, state != NULL);
    }
    cli_close(c);
    ops_inbox_free(&in);
    json_object_put(state);
    return rc;
}
