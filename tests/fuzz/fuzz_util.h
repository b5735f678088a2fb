/* fuzz_util.h - what the fuzz targets of the services' decision cores
 * (tests/fuzz/fuzz_<name>.c) share: the framing of their inputs (parts
 * separated by lines holding only "---", numbers read from a header line,
 * a step's first line "<dt ms> <kind> [<arg>]" and the payload after it),
 * copies that abort when memory runs out, and the checks that what a core
 * writes is JSON and that a refusal says why. tests/fuzz/CMakeLists.txt
 * compiles fuzz_util.c into every target, with libFuzzer or standalone.c;
 * it needs only libshared's pure part (vigil_text). */
#ifndef VIGIL_FUZZ_UTIL_H
#define VIGIL_FUZZ_UTIL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vigil/json.h>
#include <vigil/msg_persona.h>
#include <vigil/msg_room.h>

/* The most parts an input splits into (a target may ask for fewer). */
#define FUZZ_MAX_PARTS 24

/* The longest first line of a step, its '\n' not counted, is one less. */
#define FUZZ_LINE_MAX 200

/* How far a step moves the clock at the most: 30 days. */
#define FUZZ_DT_MAX (30LL * 24 * 3600 * 1000)

/* One part of the input: n bytes at p, not NUL-terminated. */
typedef struct fuzz_part {
    const char *p;
    size_t n;
} fuzz_part;

/* Splits d[0..n) at lines holding only "---" into at most max parts
 * (max <= FUZZ_MAX_PARTS): a part ends before the '\n' that ends the line
 * before the separator, the next begins after the separator's own '\n'
 * (the input's first or last line may be one). The last part holds the
 * rest of the input, separators and all. Returns the count, at least 1. */
int fuzz_split(const char *d, size_t n, fuzz_part *out, int max);

/* The parts of an input as NUL-terminated strings (a part may hold NULs:
 * len is its length), in one copy of it; p[i] is "" and len[i] 0 for
 * every i from n up to FUZZ_MAX_PARTS. */
typedef struct fuzz_strs {
    char *buf;
    char *p[FUZZ_MAX_PARTS];
    size_t len[FUZZ_MAX_PARTS];
    int n;
} fuzz_strs;

/* fuzz_split over a copy of data, each part then NUL-terminated in place;
 * aborts when memory runs out. Free with fuzz_strs_free. */
void fuzz_split_strs(const uint8_t *data, size_t size, int max, fuzz_strs *out);
void fuzz_strs_free(fuzz_strs *s);

/* A NUL-terminated copy of p[0..n); aborts when memory runs out. */
char *fuzz_dup(const char *p, size_t n);

/* A copy of part i when there is one, not empty and in valid UTF-8 (what
 * a store holds: text the core wrote, though perhaps damaged); else NULL. */
char *fuzz_text_part(const fuzz_part *parts, int np, int i);

/* Reads the next number of s (strtoll's way) into *v when there is one
 * in [lo, hi], else leaves *v alone; returns where reading stopped. */
const char *fuzz_num(const char *s, int64_t lo, int64_t hi, int64_t *v);

/* A number of a header line: kept in *v when it is in [lo, hi]. */
typedef struct fuzz_field {
    int64_t lo, hi;
    int64_t *v;
} fuzz_field;

/* Reads the numbers of part p, in order, into the n fields (fuzz_num's
 * way: a missing or out-of-range number leaves its field alone). */
void fuzz_header(fuzz_part p, const fuzz_field *f, int n);

/* A step's part: a first line "<dt ms> <kind> [<arg>]", the payload after
 * it. */
typedef struct fuzz_step {
    int64_t dt;          /* 0..FUZZ_DT_MAX; 0 when missing or out of range */
    char kind[16];
    char arg[80];        /* "" when the line has no second word */
    int words;           /* 1 (kind only) or 2 (kind and arg) */
    const char *payload; /* after the first line's '\n' (the part's end: none) */
    size_t plen;
    bool one_line;       /* the part has no '\n', so no payload */
} fuzz_step;

/* Reads in's first line into st and, when now is given, moves the clock
 * *now on by st->dt; false, st unusable and the clock where it was, when
 * the line is line_max (at most FUZZ_LINE_MAX) bytes or longer or names
 * no kind. */
bool fuzz_step_read(fuzz_part in, size_t line_max, int64_t *now, fuzz_step *st);

/* "<verb> <+ms> <rest>" in cmd: the verb into verb, the clock *now moved
 * on by +ms when it is in 1..10 days - 1 ms; returns rest, after all the
 * white space that follows the number (all_space) or only one ' ', or
 * NULL when cmd holds no verb and number. */
char *fuzz_verb(char *cmd, char verb[16], int64_t *now, bool all_space);

/* Splits "a|b|c" in place into at most max fields, the last one cut at
 * the next '|' too; f[i] is NULL for every field past them. Returns the
 * count. */
int fuzz_fields(char *s, char **f, int max);

/* Aborts unless a refusal says why (a reason and a detail). */
void fuzz_says_why(const vigil_error *err);

/* A room message or a persona meta (up to 64 rooms) read from b as the
 * services' routes read them; false, after checking the refusal says
 * why, when refused. A message read is released with
 * vigil_room_message_release, a meta with vigil_persona_meta_release. */
bool fuzz_read_message(json_object *b, vigil_room_message *m);
bool fuzz_read_meta(json_object *b, vigil_persona_meta *m);

/* Aborts unless s is a JSON object in valid UTF-8 (vigil_json_valid). */
void fuzz_json_check(const char *s);

/* fuzz_json_check, then frees s. */
void fuzz_json_check_free(char *s);

/* o's plain rendering, checked by fuzz_json_check (NULL o aborts); the
 * text belongs to o. */
const char *fuzz_json_render(json_object *o);

/* fuzz_json_render, then drops o. */
void fuzz_json_check_obj(json_object *o);

/* Aborts unless json-c reads s back as JSON (a looser check than
 * fuzz_json_check: any value, json-c's own syntax); says what it was. */
void fuzz_json_reads(const char *s);

/* Aborts, showing both, unless a and b are the same text (a record
 * written, read back and written again; what names it). */
void fuzz_same_text(const char *what, const char *a, const char *b);

#endif
