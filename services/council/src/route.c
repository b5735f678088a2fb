/* route.c - validates every input fully (a bad field is a reject with a
 * precise reason, never a crash, never a state change) and names the user
 * key it touches:
 *   council/{user}/control     -> user
 *   council/{session}/answer   -> the session's user (from council's own
 *                                 session record rec:<session>)
 *   room/{r}/message           -> the sender, for human senders (council's
 *                                 bounded view of the user's recent
 *                                 messages); others: nothing to do
 *   room/{r}/presence          -> the reporting user (whether the user is
 *                                 available, for SENSE and ACT) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/reads.h>
#include <vigil/log.h>
#include <vigil/msg_room.h>
#include <vigil/text.h>
#include "adapter.h"

static const char *const ACTIONS[] = {"start", "pause", "resume", "end", NULL};

/* The user a session belongs to, from its durable record. 1 found, 0 not,
 * VIGIL_ROUTE_RETRY when Redis is away. */
static int session_user(vigil_runtime *rt, const char *session, char *user, size_t cap,
                        vigil_error *err)
{
    char suffix[VIGIL_KEY_MAX], key[2 * VIGIL_KEY_MAX + 64];
    snprintf(suffix, sizeof suffix, "rec:%s", session);
    vigil_runtime_key(rt, suffix, key, sizeof key);
    char *rec = NULL;
    char why[128];
    vigil_read_result rc = vigil_read_string(vigil_runtime_redis(rt), key, &rec, NULL, why, sizeof why);
    if (rc == VIGIL_READ_UNREACHABLE)
        return VIGIL_ROUTE_RETRY;
    if (rc == VIGIL_READ_WRONG_TYPE)
        vigil_log(VIGIL_LOG_WARN, "session record %s unreadable: %s", key, why);
    if (!rec)
        return 0;
    json_object *o = vigil_json_parse_object(rec, strlen(rec), 1 << 24, err);
    free(rec);
    const char *u = NULL;
    int found = o && vigil_json_id(o, "user", true, &u, err) == 0;
    if (found)
        snprintf(user, cap, "%s", u);
    json_object_put(o);
    return found ? 1 : 0;
}

static int route_control(vigil_runtime *rt, const vigil_input *in, council_parsed *pp,
                         char keys[][VIGIL_KEY_MAX], vigil_error *err)
{
    const char *user;
    int action;
    pp->kind = COUNCIL_IN_CONTROL;
    if (vigil_input_topic_id(in, 1, "user", &user, err) < 0 ||
        vigil_json_enum(in->body, "action", true, ACTIONS, &action, err) < 0 ||
        vigil_json_id(in->body, "session", false, &pp->ctl.session, err) < 0 ||
        vigil_json_id(in->body, "room", false, &pp->ctl.room, err) < 0)
        return -1;
    pp->ctl.action = (council_ctl)action;
    if (pp->ctl.action == COUNCIL_CTL_START) {
        /* A session id is used once: its durable record rec:<id> (one GET,
         * kept as long as the session's history) says whether any session
         * had it. The core refuses a used id; another user's is refused
         * here, before the decision, as it names someone else's session. */
        char sid[COUNCIL_ID_MAX + 1], owner[VIGIL_ID_MAX + 1];
        council_start_session_id(&pp->ctl, user, in->id, sid, sizeof sid);
        int rc = session_user(rt, sid, owner, sizeof owner, err);
        if (rc == VIGIL_ROUTE_RETRY)
            return rc;
        if (rc == 1 && strcmp(owner, user) != 0)
            return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE,
                                   "session '%s' belongs to another user", sid);
        pp->ctl.used = rc == 1;
    }
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", user);
    return 1;
}

static int route_answer(vigil_runtime *rt, const vigil_input *in, council_parsed *pp,
                        char keys[][VIGIL_KEY_MAX], vigil_error *err)
{
    const char *payload_session = NULL;
    pp->kind = COUNCIL_IN_ANSWER;
    /* the topic's session; a payload `session` must be a valid id and agree */
    if (vigil_json_id(in->body, "session", false, &payload_session, err) < 0 ||
        vigil_input_topic_id(in, 1, "session", &pp->session, err) < 0 ||
        vigil_json_string_bounded(in->body, "question_id", true, COUNCIL_EVID_MAX,
                                  &pp->question_id, err) < 0 ||
        vigil_json_string_bounded(in->body, "answer", true, SIZE_MAX, &pp->answer, err) < 0)
        return -1;
    /* Any length the payload limit lets through is an answer (its first
     * COUNCIL_TEXT_MAX bytes are kept): presence-gateway takes answers up
     * to that limit and answers 202, so a bound of council's own would
     * refuse answers the user was told were taken. An answer of spaces
     * says nothing: the question stays open for one (the gateway refuses
     * it by the same rule). */
    if (vigil_text_blank(pp->answer))
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'answer': blank");
    char user[VIGIL_ID_MAX + 1];
    int rc = session_user(rt, pp->session, user, sizeof user, err);
    if (rc == VIGIL_ROUTE_RETRY)
        return rc;
    if (rc != 1)
        return vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "unknown session '%s'", pp->session);
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", user);
    return 1;
}

/* room/{r}/message through libshared's reader (the same checks and
 * reasons as every other consumer); the topic names the room and
 * vigil_input_topic_id() refuses a payload `room` that disagrees. */
static int route_message(const vigil_input *in, council_parsed *pp, char keys[][VIGIL_KEY_MAX],
                         vigil_error *err)
{
    vigil_room_message m;
    pp->kind = COUNCIL_IN_MESSAGE;
    if (vigil_input_topic_id(in, 1, "room", &pp->room, err) < 0 ||
        vigil_room_message_read(in->body, &m, err) < 0)
        return -1;
    pp->text = m.text;
    vigil_room_message_release(&m); /* only the text and sender are kept */
    if (m.sender_type != VIGIL_SENDER_HUMAN)
        return 0; /* only the user's (human) messages are context */
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", m.sender);
    return 1;
}

/* room/{r}/presence through libshared's reader: the user's availability
 * (the key is the reporting user), ordered by the report's time. */
static int route_presence(const vigil_input *in, council_parsed *pp, char keys[][VIGIL_KEY_MAX],
                          vigil_error *err)
{
    vigil_room_presence p;
    pp->kind = COUNCIL_IN_PRESENCE;
    if (vigil_input_topic_id(in, 1, "room", &pp->room, err) < 0 ||
        vigil_room_presence_read(in->body, &p, err) < 0)
        return -1;
    pp->presence = p.status == VIGIL_PRESENCE_ACTIVE ? COUNCIL_PRESENCE_ACTIVE
                   : p.status == VIGIL_PRESENCE_IDLE ? COUNCIL_PRESENCE_IDLE
                                                     : COUNCIL_PRESENCE_AWAY;
    pp->presence_ts = in->ts;
    pp->presence_activity = p.has_last_activity ? p.last_activity : in->ts;
    snprintf(keys[0], VIGIL_KEY_MAX, "%s", p.user);
    return 1;
}

int council_route_input(void *ctx, vigil_runtime *rt, const vigil_input *in,
                        char keys[][VIGIL_KEY_MAX], int max_keys, void **parsed, vigil_error *err)
{
    (void)ctx;
    (void)max_keys;
    *parsed = NULL;
    bool council = in->nparts == 3 && strcmp(in->parts[0], "council") == 0;
    bool message = in->nparts == 3 && strcmp(in->parts[0], "room") == 0 &&
                   strcmp(in->parts[2], "message") == 0;
    bool presence = in->nparts == 3 && strcmp(in->parts[0], "room") == 0 &&
                    strcmp(in->parts[2], "presence") == 0;
    bool control = council && strcmp(in->parts[2], "control") == 0;
    bool answer = council && strcmp(in->parts[2], "answer") == 0;
    if (!message && !presence && !control && !answer)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "unknown topic '%s'", in->topic);
    council_parsed *pp = calloc(1, sizeof *pp);
    if (!pp)
        return vigil_error_set(err, VIGIL_REJECT_NO_MEMORY, "out of memory");
    int n = control  ? route_control(rt, in, pp, keys, err)
            : answer   ? route_answer(rt, in, pp, keys, err)
            : presence ? route_presence(in, pp, keys, err)
                       : route_message(in, pp, keys, err);
    if (n <= 0) {
        free(pp);
        return n;
    }
    *parsed = pp;
    return n;
}

void council_free_parsed(void *ctx, void *parsed)
{
    (void)ctx;
    free(parsed);
}
