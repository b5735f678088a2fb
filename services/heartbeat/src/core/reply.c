/* reply.c - what the model answered: HEARTBEAT_OK anywhere in it (ack.c),
 * the JSON the prompt asks for ({"message", "priority", "category"},
 * possibly in ``` fences or with prose around it), or plain text (what the
 * specified prompt asks for) taken as a normal-priority message of the
 * default category. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <vigil/json.h>
#include "heartbeat.h"

void hb_reply_clear(hb_reply *r)
{
    free(r->message);
    memset(r, 0, sizeof *r);
}

static bool space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The body of a ```json ... ``` block when the whole answer is one. */
static void unfence(const char **t, size_t *len)
{
    const char *s = *t;
    size_t n = *len;
    while (n && space(*s))
        s++, n--;
    while (n && space(s[n - 1]))
        n--;
    if (n >= 6 && memcmp(s, "```", 3) == 0 && memcmp(s + n - 3, "```", 3) == 0) {
        const char *nl = memchr(s, '\n', n);
        if (nl && nl < s + n - 3) {
            n = (size_t)(s + n - 3 - (nl + 1));
            s = nl + 1;
        }
    }
    *t = s;
    *len = n;
}

static bool has_message_key(const char *s, size_t n)
{
    static const char KEY[] = "\"message\"";
    for (size_t i = 0; i + sizeof KEY - 1 <= n; i++)
        if (memcmp(s + i, KEY, sizeof KEY - 1) == 0)
            return true;
    return false;
}

/* The message to send: trimmed of surrounding whitespace, cut to
 * HB_MESSAGE_MAX bytes (cut_from says so). A blank one is no message. */
static void set_message(hb_reply *out, const char *text, size_t len)
{
    while (len && space(*text))
        text++, len--;
    while (len && space(text[len - 1]))
        len--;
    if (len == 0) {
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why, "JSON answer with a blank \"message\"");
        return;
    }
    size_t keep = len > HB_MESSAGE_MAX ? HB_MESSAGE_MAX : len;
    char *m = malloc(keep + 1);
    if (!m) {
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why, "out of memory");
        return;
    }
    vigil_utf8_copy_n(m, keep + 1, text, len); /* cut between characters */
    if (len > HB_MESSAGE_MAX)
        out->cut_from = len; /* the run's detail says so (engine.c) */
    out->kind = HB_REPLY_MESSAGE;
    out->message = m;
}

/* Where the answer's JSON object would be: the whole (unfenced) answer
 * when it starts with '{'; otherwise from the first '{' to the last '}'
 * when a "message" key follows that brace (prose around the object, as
 * small models write), or to the end when no '}' follows (an object cut
 * short by max_tokens). False: plain text. */
static bool find_object(const char *body, size_t blen, const char **obj, size_t *olen)
{
    if (body[0] == '{') {
        *obj = body;
        *olen = blen;
        return true;
    }
    const char *a = memchr(body, '{', blen), *b = body + blen;
    if (!a || !has_message_key(a, (size_t)(b - a)))
        return false;
    while (b > a && b[-1] != '}')
        b--;
    *obj = a;
    *olen = (size_t)((b > a ? b : body + blen) - a);
    return true;
}

/* The object in s[0..n), strictly and wholly parsed, or NULL. */
static json_object *parse_json(const char *s, size_t n, json_type type)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = NULL;
    if (!tok)
        return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    o = json_tokener_parse_ex(tok, s, (int)n);
    if (json_tokener_get_error(tok) != json_tokener_success || tok->char_offset != (int)n ||
        !json_object_is_type(o, type)) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

/* {"message", "priority"?, "category"?}: unknown values keep the
 * defaults (normal, default). */
static void read_object(json_object *o, hb_reply *out)
{
    json_object *m, *p, *c;
    if (!json_object_object_get_ex(o, "message", &m) || !json_object_is_type(m, json_type_string)) {
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why, "JSON answer without a \"message\" string");
        return;
    }
    if (json_object_object_get_ex(o, "priority", &p) && json_object_is_type(p, json_type_string)) {
        int v = hb_priority_parse(json_object_get_string(p));
        if (v >= 0)
            out->priority = (hb_priority)v;
    }
    if (json_object_object_get_ex(o, "category", &c) && json_object_is_type(c, json_type_string)) {
        int v = hb_category_parse(json_object_get_string(c));
        if (v >= 0)
            out->category = (hb_category)v;
    }
    const char *ms = json_object_get_string(m);
    size_t ml = (size_t)json_object_get_string_len(m);
    if (hb_is_ack(ms, ml)) /* e.g. written with \u escapes the raw text hid */
        out->kind = HB_REPLY_ACK;
    else
        set_message(out, ms, ml);
}

/* An answer that is a JSON array: the one object it holds is the answer;
 * none or several is unusable, since a run sends one proactive message at
 * most (the model may not pick for us). False when body is no array. */
static bool read_array(const char *body, size_t blen, hb_reply *out)
{
    if (blen == 0 || *body != '[')
        return false;
    json_object *a = parse_json(body, blen, json_type_array);
    if (!a)
        return false;
    size_t n = json_object_array_length(a);
    json_object *one = n == 1 ? json_object_array_get_idx(a, 0) : NULL;
    if (one && json_object_is_type(one, json_type_object)) {
        read_object(one, out);
    } else {
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why,
                 "a JSON array of %zu answers where one object is expected (one proactive "
                 "message per run)", n);
    }
    json_object_put(a);
    return true;
}

void hb_reply_read(const char *text, size_t len, hb_reply *out)
{
    memset(out, 0, sizeof *out);
    out->priority = HB_PRIO_NORMAL;
    out->category = HB_CAT_DEFAULT;
    if (!text || len == 0) {
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why, "empty answer");
        return;
    }
    if (hb_is_ack(text, len)) { /* as specified: whatever else it says */
        out->kind = HB_REPLY_ACK;
        return;
    }
    const char *body = text, *obj;
    size_t blen = len, olen;
    unfence(&body, &blen);
    if (blen == 0) {
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why, "blank answer");
        return;
    }
    if (read_array(body, blen, out))
        return;
    if (!find_object(body, blen, &obj, &olen)) {
        set_message(out, text, len);
        return;
    }
    json_object *o = parse_json(obj, olen, json_type_object);
    if (o) {
        read_object(o, out);
        json_object_put(o);
    } else if (has_message_key(obj, olen)) {
        /* sending it as text would show the user half an object */
        out->kind = HB_REPLY_UNUSABLE;
        snprintf(out->why, sizeof out->why,
                 "JSON answer that does not parse (cut short by VIGIL_HEARTBEAT_MAX_TOKENS?)");
    } else {
        set_message(out, text, len); /* braces in a plain text */
    }
}
