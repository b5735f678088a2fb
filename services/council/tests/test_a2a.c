/* test_a2a.c - A2A JSON-RPC 2.0 requests for both method names and the
 * responses of both protocol generations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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

static void parse(const char *body, council_a2a_reply *r, int want)
{
    assert_int_equal(council_a2a_parse(body, strlen(body), r), want);
}

static void response_seed_format(void **st)
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
    parse("{\"jsonrpc\":\"2.0\"}", &r, -1);
    assert_non_null(strstr(r.error, "no result"));
    parse("{\"result\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_FAILED\"}}}", &r, -1);
    assert_string_equal(r.state, "failed");
    /* truncated */
    parse("{\"result\":{\"id\":\"t\"", &r, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_message_send), cmocka_unit_test(request_send_message_v1),
        cmocka_unit_test(method_names),         cmocka_unit_test(response_seed_format),
        cmocka_unit_test(response_v1_wrapped_task), cmocka_unit_test(response_message_result),
        cmocka_unit_test(response_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
