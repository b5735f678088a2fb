/* fuzz_util.c - the fuzz targets' shared framing and checks (fuzz_util.h). */
#include "fuzz_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walks the input line by line: a line of exactly "---" closes the part
 * that began after the last separator (without the '\n' before it). */
int fuzz_split(const char *d, size_t n, fuzz_part *out, int max)
{
    int np = 0;
    size_t start = 0, i = 0;
    while (i <= n && np < max - 1) {
        size_t e = i;
        while (e < n && d[e] != '\n')
            e++;
        if (e - i == 3 && memcmp(d + i, "---", 3) == 0) {
            out[np++] = (fuzz_part){ d + start, i > start ? i - start - 1 : 0 };
            start = e + 1 < n ? e + 1 : n;
        }
        i = e + 1;
    }
    out[np++] = (fuzz_part){ d + start, start < n ? n - start : 0 };
    return np;
}

/* Each part ends on the '\n' before its separator, on a separator's own
 * byte (an empty part) or at the copy's end, so the NULs are written once
 * the whole copy is split and cut no other part. */
void fuzz_split_strs(const uint8_t *data, size_t size, int max, fuzz_strs *out)
{
    fuzz_part parts[FUZZ_MAX_PARTS];
    out->buf = fuzz_dup((const char *)data, size);
    out->n = fuzz_split(out->buf, size, parts, max);
    for (int i = 0; i < FUZZ_MAX_PARTS; i++) {
        size_t at = i < out->n ? (size_t)(parts[i].p - out->buf) : size;
        out->p[i] = out->buf + at;
        out->len[i] = i < out->n ? parts[i].n : 0;
    }
    for (int i = 0; i < out->n; i++)
        out->p[i][out->len[i]] = '\0';
}

void fuzz_strs_free(fuzz_strs *s)
{
    free(s->buf);
    s->buf = NULL;
}

char *fuzz_dup(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

char *fuzz_text_part(const fuzz_part *parts, int np, int i)
{
    if (i >= np || parts[i].n == 0 || !vigil_utf8_valid(parts[i].p, parts[i].n))
        return NULL;
    return fuzz_dup(parts[i].p, parts[i].n);
}

const char *fuzz_num(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end != s && x >= lo && x <= hi)
        *v = x;
    return end;
}

void fuzz_header(fuzz_part p, const fuzz_field *f, int n)
{
    char *head = fuzz_dup(p.p, p.n);
    const char *h = head;
    for (int i = 0; i < n; i++)
        h = fuzz_num(h, f[i].lo, f[i].hi, f[i].v);
    free(head);
}

bool fuzz_step_read(fuzz_part in, size_t line_max, int64_t *now, fuzz_step *st)
{
    const char *nl = in.n ? memchr(in.p, '\n', in.n) : NULL;
    size_t ll = nl ? (size_t)(nl - in.p) : in.n;
    char line[FUZZ_LINE_MAX];
    if (ll >= line_max || ll >= sizeof line)
        return false;
    memcpy(line, in.p, ll);
    line[ll] = '\0';
    st->dt = 0;
    const char *rest = fuzz_num(line, 0, FUZZ_DT_MAX, &st->dt);
    st->arg[0] = '\0';
    st->words = sscanf(rest, " %15s %79s", st->kind, st->arg);
    if (st->words < 1)
        return false;
    st->one_line = !nl;
    st->payload = nl ? nl + 1 : in.p + in.n;
    st->plen = (size_t)(in.p + in.n - st->payload);
    if (now)
        *now += st->dt;
    return true;
}

char *fuzz_verb(char *cmd, char verb[16], int64_t *now, bool all_space)
{
    long long dt = 0;
    int used = 0;
    if (sscanf(cmd, all_space ? "%15s %lld %n" : "%15s %lld%n", verb, &dt, &used) < 2)
        return NULL;
    if (dt > 0 && dt < 864000000LL)
        *now += dt;
    char *rest = cmd + used;
    if (!all_space && *rest == ' ')
        rest++;
    return rest;
}

int fuzz_fields(char *s, char **f, int max)
{
    int n = 0;
    while (n < max) {
        f[n++] = s;
        char *bar = strchr(s, '|');
        if (!bar)
            break;
        *bar = '\0';
        s = bar + 1;
    }
    for (int i = n; i < max; i++)
        f[i] = NULL;
    return n;
}

void fuzz_says_why(const vigil_error *err)
{
    if (err->reason == VIGIL_REJECT_NONE || err->detail[0] == '\0')
        abort();
}

bool fuzz_read_message(json_object *b, vigil_room_message *m)
{
    vigil_error err = {0};
    if (vigil_room_message_read(b, m, &err) < 0) {
        fuzz_says_why(&err);
        return false;
    }
    return true;
}

bool fuzz_read_meta(json_object *b, vigil_persona_meta *m)
{
    vigil_error err = {0};
    if (vigil_persona_meta_read(b, 64, m, &err) < 0) {
        fuzz_says_why(&err);
        return false;
    }
    return true;
}

void fuzz_json_check(const char *s)
{
    if (!s || !vigil_json_valid(s, strlen(s), true))
        abort(); /* every payload is a JSON object in valid UTF-8 */
}

void fuzz_json_check_free(char *s)
{
    fuzz_json_check(s);
    free(s);
}

const char *fuzz_json_render(json_object *o)
{
    if (!o)
        abort();
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    fuzz_json_check(s);
    return s;
}

void fuzz_json_check_obj(json_object *o)
{
    (void)fuzz_json_render(o);
    json_object_put(o);
}

void fuzz_json_reads(const char *s)
{
    json_object *o = s ? json_tokener_parse(s) : NULL;
    if (!o) {
        fprintf(stderr, "not JSON: %s\n", s ? s : "(null)");
        abort();
    }
    json_object_put(o);
}

void fuzz_same_text(const char *what, const char *a, const char *b)
{
    if (!a || !b || strcmp(a, b) != 0) {
        fprintf(stderr, "%s changed:\n%s\n%s\n", what, a ? a : "(null)", b ? b : "(null)");
        abort();
    }
}
