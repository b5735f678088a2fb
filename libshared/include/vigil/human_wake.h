/* human_wake.h - which dormant personas a human message wakes (dormancy
 * rule 3), in one place: dormancy-monitor applies it, floor-control
 * predicts it to grant the floor to exactly the personas that will be able
 * to answer. Pure (libshared/pure, library vigil_text).
 *
 * The rule, for one human message over the personas of a room in their
 * arrival order:
 *  1. every dormant persona with auto-wake on whose dormancy came from human
 *     absence (cause absence; any cause with VIGIL_DORMANCY_HUMAN_WAKES=all)
 *     is woken, in room order;
 *  2. then, while fewer than min_awake personas are able to answer (active,
 *     human-only, or mentioned while mention-only or asleep), the persona
 *     that is not able, has auto-wake on and answered a human most recently
 *     is woken (ties: the first in room order). */
#ifndef VIGIL_HUMAN_WAKE_H
#define VIGIL_HUMAN_WAKE_H
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "names.h"

/* Why a persona is dormant: human absence (undone by the next human
 * message) or its own / a coordinator's choice (kept). persona/{p}/state
 * `cause` (vigil_cause_names; absent = NONE). */
typedef enum { VIGIL_CAUSE_NONE = 0, VIGIL_CAUSE_ABSENCE, VIGIL_CAUSE_CHOICE } vigil_cause;
/* {NULL, "absence", "choice", NULL}: index 0 has no name (never written). */
extern const char *const vigil_cause_names[];
/* The cause named s, or -1 (also for NULL and ""). */
int vigil_cause_parse(const char *s);

/* VIGIL_DORMANCY_AUTO_WAKE, VIGIL_DORMANCY_HUMAN_WAKES=all and
 * VIGIL_DORMANCY_MIN_AWAKE. */
typedef struct vigil_human_wake_config {
    bool auto_wake;       /* default true; a persona's meta may override it */
    bool human_wakes_all; /* default false ("absent") */
    int min_awake;        /* default 2 */
} vigil_human_wake_config;

/* The defaults above (dormancy-monitor's README configuration table). */
void vigil_human_wake_config_init(vigil_human_wake_config *c);

/* One persona as the rule sees it, at the moment it looks (a persona the
 * rule woke already reads as active). */
typedef struct vigil_wake_view {
    vigil_level level;
    vigil_cause cause;
    bool auto_wake;         /* in force for this persona (meta override or the variable) */
    bool mentioned;         /* the message @mentions it */
    int64_t answered_human; /* last time it answered a human message, 0 = never */
} vigil_wake_view;

/* Able to answer the message without being woken. */
bool vigil_wake_able(const vigil_wake_view *p);
/* Woken by step 1 (dormancy from absence, or any with human_wakes_all). */
bool vigil_wake_by_human(const vigil_wake_view *p, bool human_wakes_all);

typedef enum {
    VIGIL_WAKE_ABSENCE = 0, /* step 1 */
    VIGIL_WAKE_MIN_AWAKE    /* step 2 */
} vigil_wake_why;

/* The caller's room: view(ctx, i, out) describes persona i (0..n-1, room
 * order) as it stands now; wake(ctx, i, why) wakes it, after which view
 * must show it active (able). */
typedef struct vigil_wake_room {
    int n;
    void (*view)(void *ctx, int i, vigil_wake_view *out);
    void (*wake)(void *ctx, int i, vigil_wake_why why);
    void *ctx;
} vigil_wake_room;

/* Applies the rule: calls wake for every persona it wakes, step 1 in room
 * order, then step 2 best first. Returns how many it woke. */
int vigil_human_wake_apply(const vigil_wake_room *room, const vigil_human_wake_config *c);

/* In vigil_shared (the shell, not vigil_text): reads VIGIL_DORMANCY_AUTO_WAKE,
 * VIGIL_DORMANCY_HUMAN_WAKES and VIGIL_DORMANCY_MIN_AWAKE with
 * dormancy-monitor's defaults and bounds into c; -1 with err on a bad
 * value. VIGIL_HUMAN_WAKE_VARS lists them for --help. */
extern const vigil_config_var VIGIL_HUMAN_WAKE_VARS[];
int vigil_human_wake_config_load(vigil_human_wake_config *c, char *err, size_t errlen);

#endif
