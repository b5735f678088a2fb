/* fuzz_chat.c - chat-router's decision core over a room's life: a stored
 * record (possibly damaged), then a run of room messages and controls read
 * as the service reads them (libshared's msg_room readers), each decided by
 * chat_decide on the room kept from the last input, as the service's record
 * cache does.
 *
 * Input: parts separated by lines holding only "---":
 *   1. "<now ms> <paused_all 0|1> <max_depth> <max_mentions> <depth_memory>"
 *      (missing or bad numbers keep the defaults; ranges as the service's
 *      configuration allows);
 *   2. the room's stored record (empty: no record);
 *   3... one input each: a first line "<dt ms> message|control <room>",
 *      the payload JSON after it; dt moves the clock on before it.
 * What must hold, whatever the bytes: a decision never fails; every payload
 * it publishes, queues or logs is a JSON object; the record it writes reads
 * back to the same text, and deciding from that text (chat_apply) gives the
 * same record and actions as deciding on the kept room. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/msg_room.h>
#include "chat.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 16

static void check_result(const chat_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const chat_action *a = &r->v[i];
        switch (a->kind) {
        case CHAT_ACT_LOG_APPEND:
            if (!a->name)
                abort();
            fuzz_json_check(a->value);
            break;
        case CHAT_ACT_PUBLISH:
        case CHAT_ACT_QUEUE_PUSH:
            if (!a->topic)
                abort();
            fuzz_json_check(a->value);
            break;
        case CHAT_ACT_QUEUE_FLUSH:
        case CHAT_ACT_KEY_SET:
        case CHAT_ACT_KEY_DELETE:
        case CHAT_ACT_SET_ADD:
        case CHAT_ACT_SET_REMOVE:
            if (!a->name)
                abort();
            break;
        default:
            abort();
        }
    }
}

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The same decisions, action for action. */
static void check_same(const chat_result *x, const chat_result *y)
{
    if (!same_text(x->new_state, y->new_state) || x->n != y->n || x->depth != y->depth ||
        x->notified != y->notified || x->queued != y->queued || x->stopped != y->stopped)
        abort();
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i].kind != y->v[i].kind || !same_text(x->v[i].name, y->v[i].name) ||
            !same_text(x->v[i].topic, y->v[i].topic) || !same_text(x->v[i].value, y->v[i].value))
            abort();
}

/* One input as the service's route reads it; false when it refuses it
 * (a refusal always says why). Strings point into body and bufs. */
static bool read_input(const char *kind, const char *room, json_object *body, const char *raw,
                       size_t raw_len, int64_t now, bool paused_all, chat_input *in,
                       vigil_room_message *m, char *id, char **log_json)
{
    vigil_error err = {0};
    memset(in, 0, sizeof *in);
    in->paused_all = paused_all;
    const char *pid = NULL, *proom = NULL;
    int64_t ts = now;
    if (vigil_json_string(body, "id", false, &pid, &err) < 0 ||
        vigil_json_int64(body, "ts", false, &ts, &err) < 0 ||
        vigil_json_string(body, "room", false, &proom, &err) < 0)
        goto refused;
    if (pid && !vigil_event_id_valid(pid, strlen(pid)))
        return false;
    if (proom && strcmp(proom, room) != 0)
        return false;
    if (ts < 0)
        ts = now;
    if (pid)
        snprintf(id, CHAT_EVID_MAX + 1, "%s", pid);
    else
        chat_derived_id(id, CHAT_EVID_MAX + 1, "h", room, raw);
    if (strcmp(kind, "message") == 0) {
        if (vigil_room_message_read(body, m, &err) < 0)
            goto refused;
        in->kind = CHAT_IN_MESSAGE;
        in->msg = (chat_message){ .id = id, .sender = m->sender,
                                  .sender_type = (chat_sender_type)m->sender_type,
                                  .text = m->text, .ts = ts, .reply_to = m->reply_to,
                                  .mentions = m->mentions, .n_mentions = m->n_mentions,
                                  .has_depth = m->has_depth, .depth = m->depth };
        *log_json = chat_log_entry_json(body, raw, raw_len, id, ts);
        fuzz_json_check(*log_json);
        in->msg.log_json = *log_json;
        return true;
    }
    vigil_room_control c;
    if (vigil_room_control_read(body, &c, &err) < 0)
        goto refused;
    if (c.action == VIGIL_CONTROL_WAKE)
        return false; /* dormancy-monitor's, never routed here */
    in->kind = CHAT_IN_CONTROL;
    in->ctl = (chat_control){ .id = id, .action = (chat_control_action)c.action, .all = c.all,
                              .by = c.by, .ts = ts, .if_inactive_since = c.if_inactive_since,
                              .topic_room = room };
    if (c.all)
        in->paused_all = c.action == VIGIL_CONTROL_PAUSE;
    return true;
refused:
    fuzz_says_why(&err);
    return false;
}

/* Decides one input on the kept room and, the same input, from the
 * record's text; checks both agree, then keeps the new room. */
static void step(const chat_config *cfg, const char *room, chat_room **kept, char **state,
                 const chat_input *in, int64_t now)
{
    chat_result a, b;
    char err[256];
    bool deleted;
    chat_result_init(&a);
    chat_result_init(&b);
    if (chat_decide(cfg, *kept, in, now, &a, &deleted, err, sizeof err) != 0)
        abort();
    check_result(&a);
    if (chat_apply(cfg, room, *state, in, now, &b, err, sizeof err) < 0)
        abort();
    check_same(&a, &b);
    if (a.new_state) {
        chat_room *back = chat_room_from_json(room, a.new_state, err, sizeof err);
        if (!back)
            abort(); /* the core cannot read what it wrote */
        if (!deleted) {
            char *again = chat_room_to_json(back);
            fuzz_same_text("record", a.new_state, again); /* reads back as written */
            free(again);
        }
        free(*state);
        *state = strdup(a.new_state);
        if (deleted) {
            chat_room_free(*kept);
            *kept = back;
        } else {
            chat_room_free(back);
        }
    }
    chat_result_free(&a);
    chat_result_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[MAX_PARTS];
    int np = fuzz_split((const char *)data, size, parts, MAX_PARTS);
    chat_config cfg;
    chat_config_init(&cfg);
    int64_t now = 1700000000000, paused_all = 0, depth = cfg.max_depth;
    int64_t mentions = cfg.max_mentions, memory = cfg.depth_memory;
    const fuzz_field f[] = {
        { 0, INT64_MAX / 4, &now }, { 0, 1, &paused_all }, { 0, 1000000, &depth },
        { 1, 1000, &mentions },     { 1, 100000, &memory },
    };
    fuzz_header(parts[0], f, 5);
    cfg.max_depth = depth;
    cfg.max_mentions = (int)mentions;
    cfg.depth_memory = (int)memory;
    const char *room = "general";
    char *state = np > 1 && parts[1].n ? fuzz_dup(parts[1].p, parts[1].n) : NULL;
    char err[256];
    chat_room *kept = chat_room_from_json(room, state, err, sizeof err);
    if (!kept) {
        if (err[0] == '\0')
            abort();
        free(state);
        state = NULL; /* the service starts the room afresh */
        kept = chat_room_new(room);
        if (!kept)
            abort();
    }
    for (int i = 2; i < np; i++) {
        fuzz_step st;
        if (!fuzz_step_read(parts[i], 160, NULL, &st) || st.one_line || st.words != 2 ||
            (strcmp(st.kind, "message") != 0 && strcmp(st.kind, "control") != 0) ||
            strcmp(st.arg, room) != 0)
            continue; /* the route names one room: ours */
        now += st.dt;
        const char *raw = st.payload;
        size_t raw_len = st.plen;
        vigil_error perr = {0};
        json_object *body = vigil_json_parse_object(raw, raw_len, 65536, &perr);
        if (!body) {
            fuzz_says_why(&perr);
            continue;
        }
        chat_input in;
        vigil_room_message m = {0};
        char id[CHAT_EVID_MAX + 1];
        char *log_json = NULL;
        char *rawz = fuzz_dup(raw, raw_len);
        if (read_input(st.kind, room, body, rawz, raw_len, now, paused_all != 0, &in, &m, id,
                       &log_json))
            step(&cfg, room, &kept, &state, &in, now);
        vigil_room_message_release(&m);
        free(log_json);
        free(rawz);
        json_object_put(body);
    }
    chat_room_free(kept);
    free(state);
    return 0;
}
