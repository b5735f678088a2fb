/* render.c - the JSON the core emits: persona/{p}/notify, the system
 * message that stops a chain, and the room log entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/json.h>
#include <vigil/jtext.h>
#include <vigil/msg_room.h>
#include "chat.h"

static char *dump_put(json_object *o, int rc)
{
    char *s = rc == 0 ? vigil_json_dump(o) : NULL;
    json_object_put(o);
    return s;
}

static int add(json_object *o, const char *k, json_object *v)
{
    if (!v)
        return -1;
    json_object_object_add(o, k, v);
    return 0;
}

static const char *sender_type_name(chat_sender_type t)
{
    return vigil_sender_type_names[t];
}

/* The contract's fields {id, persona, room, message_id, from, depth, ts},
 * plus the message's text and sender_type so a persona can answer without
 * reading the log first (unknown fields are allowed by the contract). */
char *chat_notify_json(const char *id, const char *persona, const char *room,
                       const chat_message *m, int64_t depth, int64_t now)
{
    /* written as text, in the order and the bytes json-c printed it: one
     * is published per mentioned persona and message */
    vigil_jtext b = {0};
    vigil_jtext_lit(&b, "{\"id\":");
    vigil_jtext_str(&b, id);
    vigil_jtext_lit(&b, ",\"persona\":");
    vigil_jtext_str(&b, persona);
    vigil_jtext_lit(&b, ",\"room\":");
    vigil_jtext_str(&b, room);
    vigil_jtext_lit(&b, ",\"message_id\":");
    vigil_jtext_str(&b, m->id);
    vigil_jtext_lit(&b, ",\"from\":");
    vigil_jtext_str(&b, m->sender);
    vigil_jtext_lit(&b, ",\"sender_type\":");
    vigil_jtext_str(&b, sender_type_name(m->sender_type));
    vigil_jtext_lit(&b, ",\"depth\":");
    vigil_jtext_i64(&b, depth);
    vigil_jtext_lit(&b, ",\"text\":");
    vigil_jtext_str(&b, m->text ? m->text : "");
    vigil_jtext_lit(&b, ",\"ts\":");
    vigil_jtext_i64(&b, now);
    vigil_jtext_ch(&b, '}');
    return vigil_jtext_take(&b);
}

/* The stop message names who was not notified without '@' (an '@name'
 * would read as a mention to other services). */
char *chat_stop_message_json(const char *id, const char *room, const chat_message *m,
                             int64_t depth, int64_t max_depth, char (*who)[CHAT_ID_MAX + 1],
                             int n_who, int64_t now)
{
    char names[512] = "";
    size_t len = 0;
    for (int i = 0; i < n_who; i++) {
        int w = snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", who[i]);
        if (w < 0 || (size_t)w >= sizeof names - len) {
            snprintf(names + len, sizeof names - len, "%s...", i ? ", " : "");
            break;
        }
        len += (size_t)w;
    }
    char text[800];
    snprintf(text, sizeof text,
             "\xE2\x9B\x94 Chain stopped: this message is at depth %lld and the limit is %lld "
             "(VIGIL_CHAT_MAX_DEPTH), so %s %s not notified. A new message from a human starts "
             "a new chain.",
             (long long)depth, (long long)max_depth, names, n_who == 1 ? "was" : "were");
    vigil_room_message_out out = {.id = id, .room = room, .sender = CHAT_SYSTEM_SENDER,
                                  .sender_type = VIGIL_SENDER_SYSTEM, .text = text,
                                  .reply_to = m->id, .reason = "max_depth", .has_depth = true,
                                  .depth = depth, .ts = now};
    json_object *o = vigil_room_message_json(&out);
    return o ? dump_put(o, 0) : NULL;
}

/* A message that has its id and ts is logged as its own bytes (without the
 * whitespace around them): they are the object as received, valid JSON
 * already, and writing the parsed object again was 7 % of chat-router's
 * instructions per message. */
char *chat_log_entry_json(json_object *body, const char *raw, size_t raw_len, const char *id,
                          int64_t ts)
{
    json_object *v;
    bool has_id = body && json_object_object_get_ex(body, "id", &v) && v &&
                  json_object_is_type(v, json_type_string);
    bool has_ts = body && json_object_object_get_ex(body, "ts", &v) && v &&
                  (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
    if (body && has_id && has_ts && raw) {
        while (raw_len && vigil_json_space(*raw)) {
            raw++;
            raw_len--;
        }
        while (raw_len && vigil_json_space(raw[raw_len - 1]))
            raw_len--;
        return strndup(raw, raw_len);
    }
    if (body && has_id && has_ts)
        return vigil_json_dump(body);
    /* a shallow copy sharing the member values: the input stays untouched */
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    int rc = 0;
    if (!has_id)
        rc |= add(o, "id", json_object_new_string(id ? id : ""));
    if (body) {
        json_object_object_foreach(body, key, val)
        {
            if ((!has_id && strcmp(key, "id") == 0) || (!has_ts && strcmp(key, "ts") == 0))
                continue;
            json_object_object_add(o, key, json_object_get(val));
        }
    }
    if (!has_ts)
        rc |= add(o, "ts", json_object_new_int64(ts));
    return dump_put(o, rc);
}
