/* ops_inbox.c - what the operators' commands receive: the MQTT client's
 * thread parses each message and queues it; the command reads the queue
 * at its own pace (never work on the client's callback). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vigil/clock.h>
#include <vigil/json.h>
#include "ops.h"

#define OPS_MAX_PAYLOAD (1024 * 1024)

void ops_inbox_init(ops_inbox *in)
{
    memset(in, 0, sizeof *in);
    pthread_mutex_init(&in->mu, NULL);
}

void ops_inbox_free(ops_inbox *in)
{
    for (size_t i = 0; i < in->len; i++)
        ops_msg_free(&in->items[i]);
    free(in->items);
    pthread_mutex_destroy(&in->mu);
    memset(in, 0, sizeof *in);
}

static void on_message(void *ctx, const char *topic, const void *payload, size_t len, bool retained)
{
    ops_inbox *in = ctx;
    ops_msg m = { 0 };
    m.topic = strdup(topic);
    if (!m.topic)
        return;
    vigil_error err;
    m.json = vigil_json_parse_object(payload, len, OPS_MAX_PAYLOAD, &err);
    m.retained = retained;
    m.at_ms = vigil_now_ms();
    pthread_mutex_lock(&in->mu);
    if (in->len == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 64;
        ops_msg *n = realloc(in->items, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&in->mu);
            free(m.topic);
            if (m.json)
                json_object_put(m.json);
            return;
        }
        in->items = n;
        in->cap = cap;
    }
    m.seq = in->len;
    in->items[in->len++] = m;
    pthread_mutex_unlock(&in->mu);
}

int ops_subscribe(cli *c, const char *const *subs, ops_inbox *in)
{
    return cli_mqtt(c, subs, on_message, in);
}

bool ops_inbox_take(ops_inbox *in, ops_msg *out)
{
    bool got = false;
    pthread_mutex_lock(&in->mu);
    if (in->taken < in->len) {
        *out = in->items[in->taken];
        memset(&in->items[in->taken], 0, sizeof in->items[0]);
        in->taken++;
        got = true;
    }
    pthread_mutex_unlock(&in->mu);
    return got;
}

size_t ops_inbox_count(ops_inbox *in)
{
    pthread_mutex_lock(&in->mu);
    size_t n = in->len;
    pthread_mutex_unlock(&in->mu);
    return n;
}

void ops_msg_free(ops_msg *m)
{
    free(m->topic);
    if (m->json)
        json_object_put(m->json);
    memset(m, 0, sizeof *m);
}

const char *ops_str(json_object *o, const char *field)
{
    json_object *v;
    if (o && json_object_object_get_ex(o, field, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return "";
}

int64_t ops_int(json_object *o, const char *field, int64_t def)
{
    json_object *v;
    if (o && json_object_object_get_ex(o, field, &v) &&
        (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return json_object_get_int64(v);
    return def;
}

void ops_local_time(int64_t ms, char *out, size_t outlen)
{
    if (ms <= 0) {
        snprintf(out, outlen, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S", &tm);
}

void ops_print_json(json_object *o)
{
    /* "room/r/message", not "room\/r\/message": readable, and grep finds topics */
    fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                JSON_C_TO_STRING_NOSLASHESCAPE),
          stdout);
    fputc('\n', stdout);
}
