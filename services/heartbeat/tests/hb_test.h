/* hb_test.h - helpers of the heartbeat core tests: an injected clock (plain
 * int64 instants built from UTC civil times), a time zone resolver over the
 * system's zoneinfo files (test data, read by the test, not the core) with
 * POSIX rules as a fallback, and a configured persona record. */
#ifndef HB_TEST_H
#define HB_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>
#include "heartbeat.h"

#define MIN_MS (60LL * 1000)
#define HOUR_MS (60 * MIN_MS)

/* UTC instant of a civil date and time, in ms. */
static inline int64_t utc_ms(int y, int mo, int d, int h, int mi)
{
    return (hb_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60) * 1000;
}

/* Zones the tests use: from /usr/share/zoneinfo when present, else the
 * POSIX rule of today's law (so the tests run without tzdata too). */
static const struct {
    const char *name, *posix;
} TEST_ZONES[] = {
    {"UTC", "UTC0"},
    {"Asia/Jakarta", "WIB-7"},
    {"America/New_York", "EST5EDT,M3.2.0,M11.1.0"},
    {"Europe/Berlin", "CET-1CEST,M3.5.0,M10.5.0/3"},
    {"Australia/Sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3"},
    {"Asia/Kolkata", "IST-5:30"},
};
#define N_TEST_ZONES (sizeof TEST_ZONES / sizeof TEST_ZONES[0])
static hb_tz *test_zone_cache[N_TEST_ZONES];

static inline hb_tz *load_zone_file(const char *name)
{
    char path[256], err[128];
    snprintf(path, sizeof path, "/usr/share/zoneinfo/%s", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = malloc(1 << 18);
    size_t n = buf ? fread(buf, 1, 1 << 18, f) : 0;
    fclose(f);
    hb_tz *tz = buf ? hb_tz_from_tzif(buf, n, err, sizeof err) : NULL;
    free(buf);
    return tz;
}

static inline const hb_tz *test_lookup(void *arg, const char *name)
{
    (void)arg;
    for (size_t i = 0; i < N_TEST_ZONES; i++) {
        if (strcmp(TEST_ZONES[i].name, name) != 0)
            continue;
        if (!test_zone_cache[i]) {
            char err[128];
            test_zone_cache[i] = load_zone_file(name);
            if (!test_zone_cache[i])
                test_zone_cache[i] = hb_tz_from_posix(TEST_ZONES[i].posix, err, sizeof err);
        }
        return test_zone_cache[i];
    }
    return NULL;
}

static inline void test_zones_free(void)
{
    for (size_t i = 0; i < N_TEST_ZONES; i++) {
        hb_tz_free(test_zone_cache[i]);
        test_zone_cache[i] = NULL;
    }
}

static inline void test_config(hb_config *c)
{
    hb_config_init(c);
    c->llm_enabled = true;
    c->run_guard_ms = 5 * MIN_MS;
    c->tz.lookup = test_lookup;
}

/* A config payload as JSON text -> cfg (asserts it is accepted). */
static inline void parse_cfg(const hb_config *c, const char *json, hb_persona_cfg *cfg)
{
    json_object *o = json_tokener_parse(json);
    assert_non_null(o);
    char err[200] = "";
    hb_cfg_status st = hb_config_payload(o, c, NULL, cfg, err, sizeof err);
    if (st != HB_CFG_OK)
        fail_msg("config refused: %s", err);
    json_object_put(o);
}

static inline hb_cfg_status parse_cfg_status(const hb_config *c, const char *json, char *err,
                                             size_t errlen)
{
    hb_persona_cfg cfg;
    json_object *o = json_tokener_parse(json);
    assert_non_null(o);
    hb_cfg_status st = hb_config_payload(o, c, NULL, &cfg, err, errlen);
    hb_persona_cfg_clear(&cfg);
    json_object_put(o);
    return st;
}

/* A new record for persona "helper" configured at `now` with extra JSON
 * members (e.g. "\"checklist\":\"x\","). */
static inline void configured(hb_state *s, const hb_config *c, const char *extra, int64_t now)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{%s\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\",\"enabled\":true}",
             extra ? extra : "");
    hb_persona_cfg cfg;
    parse_cfg(c, json, &cfg);
    char err[100];
    assert_int_equal(hb_state_load(s, "helper", NULL, err, sizeof err), 0);
    hb_out out;
    hb_out_init(&out);
    assert_int_equal(hb_on_config(s, c, &cfg, now, &out), HB_OK);
    hb_out_clear(&out);
}

/* The payload of the first output on a topic ending in suffix, parsed. */
static inline json_object *out_json(const hb_out *o, const char *suffix)
{
    for (int i = 0; i < o->n_msg; i++) {
        size_t tl = strlen(o->msg[i].topic), sl = strlen(suffix);
        if (tl >= sl && strcmp(o->msg[i].topic + tl - sl, suffix) == 0)
            return json_tokener_parse(o->msg[i].payload);
    }
    return NULL;
}

static inline const char *jstr(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static inline int64_t jint(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

/* Fires the timer at now, on time; returns the run event (or NULL) and leaves out. */
static inline json_object *fire(hb_state *s, const hb_config *c, int64_t now, hb_out *out)
{
    hb_out_clear(out);
    assert_int_equal(hb_on_timer(s, c, now, now, out), HB_OK);
    return out_json(out, "/run");
}

/* Hands the model's answer for the running run at now. */
static inline json_object *answer(hb_state *s, const hb_config *c, const char *text, int64_t now,
                                  hb_out *out)
{
    hb_out_clear(out);
    char run[128];
    snprintf(run, sizeof run, "%s", s->running);
    hb_run_result r = {run, true, text, strlen(text), NULL, 120};
    assert_int_equal(hb_on_result(s, c, &r, now, out), HB_OK);
    return out_json(out, "/run");
}

/* A persona configured at `at` (extra config members as in configured())
 * whose run started at t: where a test of the model's answer begins. */
typedef struct hb_fx {
    hb_config c;
    hb_state s;
    hb_out out;
} hb_fx;

static inline void started(hb_fx *f, const char *extra, int64_t at, int64_t t)
{
    test_config(&f->c);
    hb_out_init(&f->out);
    configured(&f->s, &f->c, extra, at);
    fire(&f->s, &f->c, t, &f->out);
    assert_non_null(f->out.job);
}

static inline void hb_fx_free(hb_fx *f)
{
    hb_out_clear(&f->out);
    hb_state_free(&f->s);
}

#endif
