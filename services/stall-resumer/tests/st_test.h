/* st_test.h - helpers for the stall core tests: a fixed epoch, an agent
 * fed signals at given ages, and a JSON round trip of the record (as the
 * service does between inputs). Header-only: each test links the core
 * alone. */
#ifndef ST_TEST_H
#define ST_TEST_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "stall.h"

#define MIN_MS STALL_MIN_MS
#define HOUR_MS STALL_HOUR_MS
#define T0 1700000000000LL /* a fixed "now" for every test */

static inline stall_agent *st_agent(const char *name)
{
    stall_agent *a = calloc(1, sizeof *a);
    assert_non_null(a);
    stall_agent_init(a, name);
    return a;
}

/* Adds a signal age_ms before T0 and checks it was kept. */
static inline void st_sig(stall_agent *a, const stall_config *c, int source, int64_t age_ms,
                          const char *detail, bool in_tool)
{
    static int seq;
    char id[32];
    snprintf(id, sizeof id, "s%d", ++seq);
    assert_int_equal(stall_agent_add_signal(a, c, id, source, detail, in_tool, T0 - age_ms, T0),
                     STALL_SIGNAL_ADDED);
}

static inline void st_status(stall_agent *a, const char *fsm, int64_t age_ms)
{
    stall_status st;
    memset(&st, 0, sizeof st);
    snprintf(st.fsm_state, sizeof st.fsm_state, "%s", fsm);
    st.ts = T0 - age_ms;
    stall_config c;
    stall_config_init(&c);
    stall_agent_set_status(a, &c, &st, T0);
}

/* The record through its JSON form and back. */
static inline stall_agent *st_roundtrip(stall_agent *a)
{
    char *json = stall_agent_to_json(a);
    assert_non_null(json);
    char err[160];
    stall_agent *b = stall_agent_from_json(json, a->agent, err, sizeof err);
    assert_non_null(b);
    free(json);
    free(a);
    return b;
}

static inline stall_assessment st_assess(stall_agent *a, const stall_config *c, int64_t now)
{
    stall_assessment as;
    char err[160];
    assert_int_equal(stall_assess(a, c, now, &as, err, sizeof err), 0);
    return as;
}

#endif
