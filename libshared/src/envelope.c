/* envelope.c - the common part of every input: topic split and checked,
 * payload parsed, `id` and `ts` found or derived. */
#include "vigil/envelope.h"

#include <stdio.h>
#include <string.h>

#define TOPIC_QUOTE_BYTES 60 /* how much of a bad topic a detail quotes */

static void quote_topic(const char *topic, char *out, size_t outlen)
{
    size_t n = strlen(topic);
    vigil_json_sample(topic, n > TOPIC_QUOTE_BYTES ? TOPIC_QUOTE_BYTES : n, out, outlen);
}

/* Splits topic into in->parts. The rules keep anything a wildcard
 * subscription could not have delivered, or that would be ambiguous when a
 * part is used as a key, out of the cores. */
static int split_topic(const char *topic, vigil_input *in, vigil_error *err)
{
    /* The quote is made for an error only: made on every input, it cost
     * more than the checks. */
    char q[TOPIC_QUOTE_BYTES * 4 + 1];
#define QUOTED (quote_topic(topic, q, sizeof q), q)
    if (!topic || !*topic)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "empty topic");
    size_t n = strlen(topic);
    if (n >= VIGIL_TOPIC_MAX)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic '%s...' is longer than %d bytes",
                               QUOTED, VIGIL_TOPIC_MAX - 1);
    if (!vigil_utf8_valid(topic, n))
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic '%s' is not valid UTF-8", QUOTED);
    if (topic[0] == '$')
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic '%s' starts with '$'", QUOTED);
    if (strpbrk(topic, "+#"))
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic '%s' contains a wildcard",
                               QUOTED);

    memcpy(in->topic, topic, n + 1);
    int count = 0;
    const char *start = topic;
    for (;;) {
        const char *slash = strchr(start, '/');
        size_t len = slash ? (size_t)(slash - start) : strlen(start);
        if (len == 0)
            return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic '%s' has an empty level",
                                   QUOTED);
        if (count == VIGIL_TOPIC_PARTS)
            return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC,
                                   "topic '%s' has more than %d levels", QUOTED, VIGIL_TOPIC_PARTS);
        memcpy(in->parts[count], start, len); /* len < VIGIL_TOPIC_MAX: topic is */
        in->parts[count][len] = '\0';
        count++;
        if (!slash)
            break;
        start = slash + 1;
    }
#undef QUOTED
    in->nparts = count;
    return 0;
}

static int read_id(const char *topic, const void *payload, size_t len, vigil_input *in,
                   vigil_error *err)
{
    json_object *v = vigil_json_member(in->body, "id");
    if (!v) {
        uint64_t h = vigil_hash64_more(VIGIL_HASH64_INIT, topic, strlen(topic));
        h = vigil_hash64_more(h, "\n", 1);
        h = vigil_hash64_more(h, payload, len);
        snprintf(in->id, sizeof in->id, "h-%016llx", (unsigned long long)h);
        in->id_derived = true;
        return 0;
    }
    const char *s = NULL;
    vigil_json_str_status st = vigil_json_str_check(v, &s);
    if (st == VIGIL_JSON_STR_NOT_STRING)
        return vigil_error_set(err, VIGIL_REJECT_BAD_ID, "field 'id': expected string, got %s",
                               json_type_to_name(json_object_get_type(v)));
    /* A NUL (vigil_json_str_check's rule) is refused as any other
     * character an id may not hold, its sample showing it as \x00. */
    if (st == VIGIL_JSON_STR_HAS_NUL)
        s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (st != VIGIL_JSON_STR_OK || !vigil_event_id_valid(s, n)) {
        char q[48 * 4 + 1];
        vigil_json_sample(s, n > 48 ? 48 : n, q, sizeof q);
        return vigil_error_set(err, VIGIL_REJECT_BAD_ID,
                               "field 'id': '%s' is not 1-%d printable ASCII characters without / + #",
                               q, VIGIL_EVENT_ID_MAX);
    }
    memcpy(in->id, s, n + 1);
    return 0;
}

int vigil_input_parse(const char *topic, const void *payload, size_t len, size_t max_payload,
                      int64_t now_ms, vigil_input *in, vigil_error *err)
{
    int64_t ts = now_ms;
    int r;
    if (!in)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "no input");
    memset(in, 0, sizeof *in);
    if (split_topic(topic, in, err) != 0)
        goto fail;
    in->body = vigil_json_parse_object(payload, len, max_payload, err);
    if (!in->body)
        goto fail;
    if (read_id(topic, payload, len, in, err) != 0)
        goto fail;

    r = vigil_json_int64(in->body, "ts", false, &ts, err);
    if (r < 0)
        goto fail;
    if (r == 0 && ts < 0) {
        vigil_error_set(err, VIGIL_REJECT_BAD_VALUE, "field 'ts': expected >= 0, got %lld",
                        (long long)ts);
        goto fail;
    }
    in->ts = ts;
    in->received_ms = now_ms;
    in->raw = payload;
    in->raw_len = len;
    return 0;

fail:
    vigil_input_clear(in);
    return -1;
}

void vigil_input_id_per_delivery(vigil_input *in)
{
    if (!in->id_derived || in->cleared)
        return;
    size_t n = strlen(in->id);
    snprintf(in->id + n, sizeof in->id - n, ".%lld", (long long)in->received_ms);
}

int vigil_input_parse_cleared(const char *topic, int64_t now_ms, vigil_input *in,
                              vigil_error *err)
{
    if (!in)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "no input");
    memset(in, 0, sizeof *in);
    if (split_topic(topic, in, err) != 0) {
        vigil_input_clear(in);
        return -1;
    }
    in->cleared = true;
    in->ts = now_ms;
    in->received_ms = now_ms;
    in->raw = "";
    return 0;
}

int vigil_input_topic_id(const vigil_input *in, int index, const char *field, const char **out,
                         vigil_error *err)
{
    if (!in || index < 0 || index >= in->nparts)
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic '%s' has no level %d",
                               in ? in->topic : "", index);
    const char *part = in->parts[index];
    if (!vigil_id_valid(part, strlen(part))) {
        char q[TOPIC_QUOTE_BYTES * 4 + 1];
        quote_topic(part, q, sizeof q);
        return vigil_error_set(err, VIGIL_REJECT_BAD_TOPIC, "topic id '%s' is not a valid id", q);
    }
    if (field && in->body) {
        const char *s = NULL;
        int r = vigil_json_string(in->body, field, false, &s, err);
        if (r < 0)
            return -1;
        if (r == 0 && strcmp(s, part) != 0) {
            char q[TOPIC_QUOTE_BYTES * 4 + 1];
            quote_topic(s, q, sizeof q);
            return vigil_error_set(err, VIGIL_REJECT_TOPIC_MISMATCH,
                                   "payload %s '%s' disagrees with topic '%s'", field, q, part);
        }
    }
    if (out)
        *out = part;
    return 0;
}

void vigil_input_clear(vigil_input *in)
{
    if (!in)
        return;
    if (in->body)
        json_object_put(in->body);
    memset(in, 0, sizeof *in);
}

bool vigil_topic_key_room_message(const char *topic, char *key, size_t key_size)
{
    static const char head[] = "room/", tail[] = "/message";
    if (!topic || strncmp(topic, head, sizeof head - 1) != 0)
        return false;
    const char *room = topic + sizeof head - 1;
    const char *slash = strchr(room, '/');
    if (!slash || strcmp(slash, tail) != 0)
        return false;
    size_t n = (size_t)(slash - room);
    if (n == 0 || n >= key_size || !vigil_id_valid(room, n))
        return false;
    memcpy(key, room, n);
    key[n] = '\0';
    return true;
}

bool vigil_topic_is_kind(const char *topic, const char *head, const char *tail)
{
    size_t n = strlen(topic), nh = strlen(head), nt = strlen(tail);
    if (n < nh + nt + 3 || strncmp(topic, head, nh) != 0 || topic[nh] != '/' ||
        strcmp(topic + n - nt, tail) != 0 || topic[n - nt - 1] != '/')
        return false;
    return memchr(topic + nh + 1, '/', n - nh - nt - 2) == NULL;
}
