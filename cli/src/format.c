/* format.c - how the CLI prints messages: the stable pipe format of
 * `view`, and the chat lines of `join`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

void cli_iso_time(int64_t ms, char *out, size_t outlen)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (ms < 0 || !gmtime_r(&s, &tm)) {
        snprintf(out, outlen, "-");
        return;
    }
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, outlen, "%s.%03dZ", base, (int)(ms % 1000));
}

void cli_clock_time(int64_t ms, char *out, size_t outlen)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (ms < 0 || !localtime_r(&s, &tm)) {
        snprintf(out, outlen, "--:--:--");
        return;
    }
    strftime(out, outlen, "%H:%M:%S", &tm);
}

/* Writes s with newline, CR, tab and other control characters escaped
 * C-style; a backslash doubled unless the text is escaped already. */
static void write_escaped(FILE *f, const char *s, bool escaped_already)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '\\': fputs(escaped_already ? "\\" : "\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\x%02x", *p);
            else
                fputc(*p, f);
        }
    }
}

void cli_write_escaped(FILE *f, const char *s)
{
    write_escaped(f, s, false);
}

void cli_write_sample(FILE *f, const char *s)
{
    write_escaped(f, s, true);
}

void cli_write_terminal(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '\n' || *p == '\t')
            fputc(*p, f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p); /* no escape sequences reach the terminal */
        else
            fputc(*p, f);
    }
}

int cli_entry_decode(const redisReply *e, cli_entry *out)
{
    memset(out, 0, sizeof *out);
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING)
        return -1;
    snprintf(out->log_id, sizeof out->log_id, "%s", e->element[0]->str);
    const redisReply *fields = e->element[1];
    if (fields->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i], *v = fields->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && strcmp(k->str, "m") == 0 &&
            v->type == REDIS_REPLY_STRING) {
            json_object *o = json_tokener_parse(v->str);
            if (o && json_object_is_type(o, json_type_object))
                out->msg = o;
            else
                json_object_put(o);
            break;
        }
    }
    return 0;
}

void cli_entry_free(cli_entry *e)
{
    if (e && e->msg) {
        json_object_put(e->msg);
        e->msg = NULL;
    }
}

const char *cli_msg_str(json_object *m, const char *field)
{
    json_object *v;
    if (m && json_object_object_get_ex(m, field, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return "";
}

/* The message's own ts, else the time Redis gave its log entry. */
int64_t cli_msg_ts(const cli_entry *e)
{
    json_object *v;
    if (e->msg && json_object_object_get_ex(e->msg, "ts", &v) &&
        (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return json_object_get_int64(v);
    return strtoll(e->log_id, NULL, 10);
}

void cli_print_chat_line(FILE *f, json_object *m, int64_t ts)
{
    char clock[16];
    cli_clock_time(ts, clock, sizeof clock);
    const char *type = cli_msg_str(m, "sender_type");
    if (strcmp(type, "system") == 0) {
        fprintf(f, "[%s] * ", clock);
    } else {
        fprintf(f, "[%s] %s%s: ", clock, cli_msg_str(m, "sender"),
                strcmp(type, "ai") == 0 ? " (ai)" : "");
    }
    cli_write_terminal(f, cli_msg_str(m, "text"));
    fputc('\n', f);
    fflush(f);
}
