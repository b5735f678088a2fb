/* a2a.c - A2A (Agent2Agent) JSON-RPC 2.0 for `research:` delegation: the
 * request for `message/send` (A2A 0.x, as Sanhedrin servers speak it) or
 * `SendMessage` (A2A 1.0), and a reader of either response shape. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <vigil/json.h>
#include "council.h"

const char *council_a2a_method_name(council_a2a_method m)
{
    return m == COUNCIL_A2A_SEND_MESSAGE ? "SendMessage" : "message/send";
}

int council_a2a_method_parse(const char *s, council_a2a_method *out)
{
    if (s && strcmp(s, "message/send") == 0)
        *out = COUNCIL_A2A_MESSAGE_SEND;
    else if (s && strcmp(s, "SendMessage") == 0)
        *out = COUNCIL_A2A_SEND_MESSAGE;
    else
        return -1;
    return 0;
}

char *council_a2a_request(council_a2a_method m, const char *id, const char *prompt)
{
    json_object *req = json_object_new_object(), *params = json_object_new_object(),
                *msg = json_object_new_object(), *parts = json_object_new_array(),
                *part = json_object_new_object();
    char *out = NULL;
    if (!req || !params || !msg || !parts || !part) {
        json_object_put(req);
        json_object_put(params);
        json_object_put(msg);
        json_object_put(parts);
        json_object_put(part);
        return NULL;
    }
    bool v1 = m == COUNCIL_A2A_SEND_MESSAGE;
    if (!v1)
        json_object_object_add(part, "kind", json_object_new_string("text"));
    json_object_object_add(part, "text", json_object_new_string(prompt ? prompt : ""));
    json_object_array_add(parts, part);
    json_object_object_add(msg, "role", json_object_new_string(v1 ? "ROLE_USER" : "user"));
    json_object_object_add(msg, "parts", parts);
    json_object_object_add(msg, "messageId", json_object_new_string(id));
    if (!v1)
        json_object_object_add(msg, "kind", json_object_new_string("message"));
    json_object_object_add(params, "message", msg);
    json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(req, "id", json_object_new_string(id));
    json_object_object_add(req, "method", json_object_new_string(council_a2a_method_name(m)));
    json_object_object_add(req, "params", params);
    const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
    out = s ? strdup(s) : NULL;
    json_object_put(req);
    return out;
}

static json_object *member(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v))
        return NULL;
    return v;
}

/* The string o[k], NULL when absent or another type. One holding a NUL
 * (\u0000, vigil_json_str_check) is NULL too and sets *nul: read as a C
 * string it would be silently shorter (a research text cut at the NUL,
 * stored and published so), so the parse refuses the reply instead. */
static const char *str(json_object *o, const char *k, bool *nul)
{
    const char *s = NULL;
    if (vigil_json_str_check(member(o, k), &s) == VIGIL_JSON_STR_HAS_NUL)
        *nul = true;
    return s;
}

/* Appends the text parts of parts[] to out (newline between pieces). */
static void add_parts(json_object *parts, char *out, size_t cap, bool *nul)
{
    if (!parts || !json_object_is_type(parts, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(parts); i++) {
        json_object *p = json_object_array_get_idx(parts, i);
        const char *t = str(p, "text", nul);
        if (!t) /* 0.2 shape: {type:"text", text}; 1.0 may nest {text:{...}} never: skip */
            continue;
        size_t have = strlen(out);
        if (have > 0 && have + 1 < cap) {
            out[have++] = '\n';
            out[have] = '\0';
        }
        if (have < cap)
            vigil_utf8_copy(out + have, cap - have, t);
    }
}

static bool blank(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* "TASK_STATE_INPUT_REQUIRED" (1.0) -> "input-required" (0.x); a task
 * without a state reads as "" (not completed). */
static void norm_state(const char *s, char *out, size_t cap)
{
    if (!s) {
        out[0] = '\0';
        return;
    }
    if (strncasecmp(s, "TASK_STATE_", 11) == 0)
        s += 11;
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
    out[vigil_utf8_cut(out, i)] = '\0'; /* an agent's state, published: never half a character */
}

int council_a2a_parse(const char *body, size_t len, const char *id, council_a2a_reply *out)
{
    memset(out, 0, sizeof *out);
    /* One strict JSON object and nothing after it: a reply with trailing
     * bytes is a broken agent, whatever its first object says. */
    vigil_error perr;
    json_object *root = vigil_json_parse_object(body, len, len, &perr);
    int rc = -1;
    if (!root) {
        snprintf(out->error, sizeof out->error, "A2A response is not a JSON object: %.150s",
                 perr.detail);
        goto done;
    }
    bool nul = false; /* a string read held a NUL: a broken reply */
    json_object *err = member(root, "error");
    if (err) {
        const char *m = str(err, "message", &nul);
        json_object *code = member(err, "code");
        if (!m)
            m = "(no message)";
        snprintf(out->error, sizeof out->error, "A2A error %d: %.*s",
                 code ? json_object_get_int(code) : 0, (int)vigil_utf8_cut_max(m, 180), m);
        goto done;
    }
    /* the answer to another request (a confused or shared agent) is not ours */
    const char *rid = str(root, "id", &nul);
    if (nul) {
        snprintf(out->error, sizeof out->error, "A2A reply id holds a NUL (\\u0000)");
        goto done;
    }
    if (!rid || !id || strcmp(rid, id) != 0) {
        snprintf(out->error, sizeof out->error,
                 "A2A reply id '%.*s' does not match the request's id '%.60s'",
                 (int)vigil_utf8_cut_max(rid ? rid : "(none)", 60), rid ? rid : "(none)",
                 id ? id : "");
        goto done;
    }
    json_object *res = member(root, "result");
    if (!res || !json_object_is_type(res, json_type_object)) {
        snprintf(out->error, sizeof out->error, "A2A response has no result object");
        goto done;
    }
    /* 1.0 wraps the Task or Message: {task:{...}} / {message:{...}} */
    json_object *task = member(res, "task"), *msg = member(res, "message");
    if (!task && !msg) {
        if (member(res, "parts") && !member(res, "artifacts"))
            msg = res;
        else
            task = res;
    }
    if (task) {
        const char *tid = str(task, "taskId", &nul);
        if (!tid)
            tid = str(task, "id", &nul);
        vigil_utf8_copy_n(out->task_id, COUNCIL_EVID_MAX + 1, tid, tid ? strlen(tid) : 0);
        json_object *status = member(task, "status");
        norm_state(str(status, "state", &nul), out->state, sizeof out->state);
        json_object *arts = member(task, "artifacts");
        if (arts && json_object_is_type(arts, json_type_array))
            for (size_t i = 0; i < json_object_array_length(arts); i++)
                add_parts(member(json_object_array_get_idx(arts, i), "parts"), out->text,
                          sizeof out->text, &nul);
        if (!out->text[0]) /* no artifact: the agent's status message, if any */
            add_parts(member(member(status, "message"), "parts"), out->text, sizeof out->text,
                      &nul);
    } else {
        snprintf(out->state, sizeof out->state, "completed");
        add_parts(member(msg, "parts"), out->text, sizeof out->text, &nul);
    }
    if (nul) {
        snprintf(out->error, sizeof out->error,
                 "A2A reply holds a NUL (\\u0000) in its task id, state or a text part: "
                 "a broken agent");
        goto done;
    }
    /* only a finished task carries the research: input-required, auth-
     * required, working, submitted, failed, ... are all not delegated */
    if (strcmp(out->state, "completed") != 0) {
        snprintf(out->error, sizeof out->error, "A2A task state '%s': not completed",
                 out->state[0] ? out->state : "(none)");
        goto done;
    }
    /* what research: brings back is the text: a finished task (or a
     * message) without any, or with spaces only, delegated nothing, and is
     * no empty result and no empty note */
    if (blank(out->text)) {
        if (task)
            snprintf(out->error, sizeof out->error,
                     "A2A task '%s' completed with no text (no text part in its artifacts "
                     "or status message): nothing delegated",
                     out->task_id[0] ? out->task_id : "(no id)");
        else
            snprintf(out->error, sizeof out->error,
                     "A2A message with no text (no text part): nothing delegated");
        goto done;
    }
    out->ok = true;
    rc = 0;
done:
    json_object_put(root);
    return rc;
}
