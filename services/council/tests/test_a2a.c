/* test_a2a.c - A2A JSON-RPC 2.0 requests for both method names and the
 * responses of both protocol generations; only a completed task answering
 * our request id is a delegation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "council.h"

static json_object *path(json_object *o, const char *a, const char *b, const char *c)
{
    json_object *v = o;
    const char *keys[] = {a, b, c};
    for (int i = 0; i < 3 && keys[i] && v; i++)
        if (!json_object_object_get_ex(v, keys[i], &v))
            return NULL;
    return v;
}

static void request_message_send(void **st)
{
    (void)st;
    char *body = council_a2a_request(COUNCIL_A2A_MESSAGE_SEND, "job-1", "dig into \"x\"");
    assert_non_null(body);
    json_object *o = json_tokener_parse(body);
    assert_string_equal(json_object_get_string(path(o, "jsonrpc", NULL, NULL)), "2.0");
    assert_string_equal(json_object_get_string(path(o, "id", NULL, NULL)), "job-1");
    assert_string_equal(json_object_get_string(path(o, "method", NULL, NULL)), "message/send");
    json_object *msg = path(o, "params", "message", NULL);
    assert_string_equal(json_object_get_string(path(msg, "role", NULL, NULL)), "user");
    assert_string_equal(json_object_get_string(path(msg, "messageId", NULL, NULL)), "job-1");
    json_object *part = json_object_array_get_idx(path(msg, "parts", NULL, NULL), 0);
    assert_string_equal(json_object_get_string(path(part, "text", NULL, NULL)), "dig into \"x\"");
    assert_string_equal(json_object_get_string(path(part, "kind", NULL, NULL)), "text");
    json_object_put(o);
    free(body);
}

static void request_send_message_v1(void **st)
{
    (void)st;
    char *body = council_a2a_request(COUNCIL_A2A_SEND_MESSAGE, "job-2", "topic");
    json_object *o = json_tokener_parse(body);
    assert_string_equal(json_object_get_string(path(o, "method", NULL, NULL)), "SendMessage");
    json_object *msg = path(o, "params", "message", NULL);
    assert_string_equal(json_object_get_string(path(msg, "role", NULL, NULL)), "ROLE_USER");
    json_object *part = json_object_array_get_idx(path(msg, "parts", NULL, NULL), 0);
    assert_string_equal(json_object_get_string(path(part, "text", NULL, NULL)), "topic");
    assert_null(path(part, "kind", NULL, NULL));
    json_object_put(o);
    free(body);
}

static void method_names(void **st)
{
    (void)st;
    council_a2a_method m;
    assert_int_equal(council_a2a_method_parse("SendMessage", &m), 0);
    assert_int_equal(m, COUNCIL_A2A_SEND_MESSAGE);
    assert_int_equal(council_a2a_method_parse("message/send", &m), 0);
    assert_int_equal(m, COUNCIL_A2A_MESSAGE_SEND);
    assert_int_equal(council_a2a_method_parse("tasks/send", &m), -1);
}

/* Every reply below answers the request with id "u". */
static void parse(const char *body, council_a2a_reply *r, int want)
{
    assert_int_equal(council_a2a_parse(body, strlen(body), "u", r), want);
}

static void response_sanhedrin_format(void **st)
{
    (void)st;
    council_a2a_reply r;
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"taskId\":\"t-1\",\"status\":{\"state\":"
          "\"completed\"},\"artifacts\":[{\"parts\":[{\"text\":\"response\"}]},{\"parts\":[{"
          "\"kind\":\"text\",\"text\":\"more\"}]}]}}",
          &r, 0);
    assert_true(r.ok);
    assert_string_equal(r.task_id, "t-1");
    assert_string_equal(r.state, "completed");
    assert_string_equal(r.text, "response\nmore");
}

static void response_v1_wrapped_task(void **st)
{
    (void)st;
    council_a2a_reply r;
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"task\":{\"id\":\"t-9\",\"status\":{"
          "\"state\":\"TASK_STATE_COMPLETED\"},\"artifacts\":[{\"artifactId\":\"a\",\"parts\":[{"
          "\"text\":\"v1 answer\"}]}]}}}",
          &r, 0);
    assert_string_equal(r.task_id, "t-9");
    assert_string_equal(r.state, "completed");
    assert_string_equal(r.text, "v1 answer");
}

static void response_message_result(void **st)
{
    (void)st;
    council_a2a_reply r;
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"message\":{\"role\":\"ROLE_AGENT\","
          "\"parts\":[{\"text\":\"direct\"}]}}}",
          &r, 0);
    assert_string_equal(r.text, "direct");
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"kind\":\"message\",\"role\":\"agent\","
          "\"parts\":[{\"kind\":\"text\",\"text\":\"0.x message\"}]}}",
          &r, 0);
    assert_string_equal(r.text, "0.x message");
}

/* A string holding a NUL (\u0000) in what the reply is read for (its id,
 * task id, state, a text part) fails the reply: read as a C string the
 * research text would be stored cut at the NUL ("first\u0000second" as
 * "first"), and an id "u\u0000x" would pass for "u". */
static void a_reply_holding_a_nul_is_a_failure(void **st)
{
    (void)st;
    council_a2a_reply r;
    static const char *const BAD[] = {
        "{\"id\":\"u\",\"result\":{\"message\":{\"parts\":[{\"text\":\"first\\u0000second\"}]}}}",
        "{\"id\":\"u\",\"result\":{\"taskId\":\"t\",\"status\":{\"state\":\"completed\"},"
        "\"artifacts\":[{\"parts\":[{\"text\":\"ok\"},{\"text\":\"a\\u0000b\"}]}]}}",
        "{\"id\":\"u\",\"result\":{\"taskId\":\"t\\u0000x\",\"status\":{\"state\":\"completed\"},"
        "\"artifacts\":[{\"parts\":[{\"text\":\"ok\"}]}]}}",
        "{\"id\":\"u\",\"result\":{\"taskId\":\"t\",\"status\":{\"state\":\"completed\\u0000\"},"
        "\"artifacts\":[{\"parts\":[{\"text\":\"ok\"}]}]}}",
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        parse(BAD[i], &r, -1);
        assert_false(r.ok);
        if (!strstr(r.error, "NUL"))
            fail_msg("%zu: %s", i, r.error);
    }
    parse("{\"id\":\"u\\u0000x\",\"result\":{\"message\":{\"parts\":[{\"text\":\"ok\"}]}}}", &r,
          -1);
    assert_non_null(strstr(r.error, "A2A reply id holds a NUL"));
}

static void response_errors(void **st)
{
    (void)st;
    council_a2a_reply r;
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"error\":{\"code\":-32601,\"message\":\"Method not "
          "found\"}}",
          &r, -1);
    assert_false(r.ok);
    assert_non_null(strstr(r.error, "-32601"));
    assert_non_null(strstr(r.error, "Method not found"));
    parse("not json", &r, -1);
    parse("[1,2]", &r, -1);
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\"}", &r, -1);
    assert_non_null(strstr(r.error, "no result"));
    parse("{\"id\":\"u\",\"result\":{\"id\":\"t\",\"status\":{\"state\":"
          "\"TASK_STATE_FAILED\"}}}",
          &r, -1);
    assert_string_equal(r.state, "failed");
    assert_non_null(strstr(r.error, "'failed'"));
    /* truncated */
    parse("{\"result\":{\"id\":\"t\"", &r, -1);
    /* a complete answer followed by more bytes is a broken reply, not that answer */
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"message\":{\"role\":\"agent\","
          "\"parts\":[{\"text\":\"direct\"}]}}} {\"extra\":1}",
          &r, -1);
    assert_non_null(strstr(r.error, "not a JSON object"));
}

/* The audit's reply: another request's id and a task that waits for
 * input. Either alone is not a delegation. */
static void response_of_another_request_or_unfinished_is_a_failure(void **st)
{
    (void)st;
    council_a2a_reply r;
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"other-id\",\"result\":{\"taskId\":\"t9\","
          "\"status\":{\"state\":\"input-required\"}}}",
          &r, -1);
    assert_false(r.ok);
    assert_non_null(strstr(r.error, "'other-id' does not match the request's id 'u'"));
    /* a completed task with another id: still not ours */
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"other-id\",\"result\":{\"taskId\":\"t9\","
          "\"status\":{\"state\":\"completed\"},\"artifacts\":[{\"parts\":[{\"text\":"
          "\"x\"}]}]}}",
          &r, -1);
    assert_non_null(strstr(r.error, "does not match"));
    /* no id at all, or a number */
    parse("{\"jsonrpc\":\"2.0\",\"result\":{\"parts\":[{\"text\":\"x\"}]}}", &r, -1);
    assert_non_null(strstr(r.error, "'(none)'"));
    parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"parts\":[{\"text\":\"x\"}]}}",
          &r, -1);
    /* our id, but the task is not completed: its state is kept and said */
    const char *states[] = {"input-required", "TASK_STATE_INPUT_REQUIRED", "working",
                            "submitted", "auth-required", "rejected", "canceled"};
    const char *norm[] = {"input-required", "input-required", "working", "submitted",
                          "auth-required", "rejected", "canceled"};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"taskId\":\"t9\","
                 "\"status\":{\"state\":\"%s\",\"message\":{\"parts\":[{\"text\":"
                 "\"which topic?\"}]}}}}",
                 states[i]);
        parse(body, &r, -1);
        assert_false(r.ok);
        assert_string_equal(r.state, norm[i]);
        char want[96];
        snprintf(want, sizeof want, "A2A task state '%s': not completed", norm[i]);
        assert_string_equal(r.error, want);
    }
    /* a task without a state is not a completed one */
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"taskId\":\"t9\","
          "\"artifacts\":[{\"parts\":[{\"text\":\"x\"}]}]}}",
          &r, -1);
    assert_non_null(strstr(r.error, "'(none)': not completed"));
    /* (a completed task of our id keeps its artifacts: response_sanhedrin_format) */
}

/* A completed task (or a message) with no text brought nothing back:
 * not a delegation with an empty result, a failure that says so. A status
 * message's text still counts when there is no artifact. */
static void a_completed_reply_without_text_is_a_failure(void **st)
{
    (void)st;
    council_a2a_reply r;
    const char *empty[] = {
        /* no artifacts */
        "{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"taskId\":\"t5\","
        "\"status\":{\"state\":\"completed\"}}}",
        /* artifacts without parts, or with no text part */
        "{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"taskId\":\"t5\","
        "\"status\":{\"state\":\"completed\"},\"artifacts\":[{},{\"parts\":[]},"
        "{\"parts\":[{\"kind\":\"file\",\"file\":{\"uri\":\"x\"}}]}]}}",
        /* text parts of spaces only (1.0 wrapped task) */
        "{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"task\":{\"id\":\"t5\","
        "\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},\"artifacts\":[{\"parts\":"
        "[{\"text\":\" \\n \"},{\"text\":\"\"}]}]}}}",
    };
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        parse(empty[i], &r, -1);
        assert_false(r.ok);
        assert_string_equal(r.state, "completed");
        assert_string_equal(r.task_id, "t5");
        assert_string_equal(r.error, "A2A task 't5' completed with no text (no text part in "
                                     "its artifacts or status message): nothing delegated");
    }
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"status\":{\"state\":"
          "\"completed\"}}}",
          &r, -1);
    assert_non_null(strstr(r.error, "A2A task '(no id)' completed with no text"));
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"message\":{\"role\":"
          "\"ROLE_AGENT\",\"parts\":[{\"data\":{}}]}}}",
          &r, -1);
    assert_string_equal(r.error, "A2A message with no text (no text part): nothing delegated");
    /* the status message's text when no artifact has any */
    parse("{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"result\":{\"taskId\":\"t5\","
          "\"status\":{\"state\":\"completed\",\"message\":{\"parts\":[{\"text\":"
          "\"done: see notes\"}]}},\"artifacts\":[]}}",
          &r, 0);
    assert_true(r.ok);
    assert_string_equal(r.text, "done: see notes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_message_send), cmocka_unit_test(request_send_message_v1),
        cmocka_unit_test(method_names),         cmocka_unit_test(response_sanhedrin_format),
        cmocka_unit_test(response_v1_wrapped_task), cmocka_unit_test(response_message_result),
        cmocka_unit_test(response_errors),
        cmocka_unit_test(a_reply_holding_a_nul_is_a_failure),
        cmocka_unit_test(response_of_another_request_or_unfinished_is_a_failure),
        cmocka_unit_test(a_completed_reply_without_text_is_a_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
