/* prompt.c - the resume prompt (the seed's optimized stall resume prompt):
 * what state the agent was in and what to do from there, what it last
 * reported doing, the task claimed for it, and the project priorities. It
 * starts with STALL_PROMPT_MARKER so an agent echoing it back is never
 * taken for activity. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "stall.h"

typedef struct fsm_advice {
    const char *state;
    const char *actions;
} fsm_advice;

static const fsm_advice ADVICE[] = {
    {"idle", "pick up the claimed task below, post a status update, then start work"},
    {"start", "pick up the claimed task below, post a status update, then start work"},
    {"planning", "finish the plan in one pass, write down the next concrete step, then execute it"},
    {"executing", "check where you stopped, run the tests, commit what works, then continue"},
    {"active", "check where you stopped, run the tests, commit what works, then continue"},
    {"blocked", "state the blocker in one line, try the simplest workaround, or move to the claimed task"},
    {"waiting", "stop waiting: re-send the request once, then work on the claimed task meanwhile"},
    {"review", "finish the review you started, post its verdict, then take the claimed task"},
    {"validating", "re-run the validation, fix what fails, push the result"},
    {"testing", "re-run the failing tests, fix them, commit"},
    {"complete", "report completion with evidence (commit, test run), then take the claimed task"},
    {"done", "report completion with evidence (commit, test run), then take the claimed task"},
    {"error", "read the last error, fix or work around it, re-run, and report what happened"},
    {NULL, NULL}};

const char *stall_fsm_actions(const char *fsm_state)
{
    for (int i = 0; fsm_state && ADVICE[i].state; i++)
        if (strcasecmp(fsm_state, ADVICE[i].state) == 0)
            return ADVICE[i].actions;
    return "post a status update, then continue with your current task or the claimed one";
}

/* Appends printf output to a growing buffer; keeps going after a failure
 * (the caller checks ok at the end). */
typedef struct sbuf {
    char *s;
    size_t len, cap;
    bool ok;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...)
{
    if (!b->ok)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->ok = false;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->ok = false;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

char *stall_resume_prompt(const stall_agent *a, int64_t idle_ms, const stall_claimed *task,
                          const stall_task *const *priorities, int n_priorities)
{
    sbuf b = {malloc(512), 0, 512, true};
    if (!b.s)
        return NULL;
    b.s[0] = '\0';
    const char *state = a->status.present && a->status.fsm_state[0] ? a->status.fsm_state : "UNKNOWN";
    if (idle_ms >= STALL_MIN_MS)
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity for %" PRId64 " min (state %s).",
               a->agent, idle_ms / STALL_MIN_MS, state);
    else
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity for %" PRId64 " s (state %s).",
               a->agent, idle_ms / 1000, state);
    sb_add(&b, " Next: %s.", stall_fsm_actions(state));
    if (a->progress[0])
        sb_add(&b, " Your last progress: \"%s\".", a->progress);
    if (a->status.present && a->status.mission[0])
        sb_add(&b, " Mission: %s.", a->status.mission);
    if (task)
        sb_add(&b, " Claimed for you: %s \"%s\" (priority %" PRId64 ").", task->id, task->title,
               task->priority);
    else
        sb_add(&b, " No planner task is open: continue your own tasks.");
    if (n_priorities > 0) {
        sb_add(&b, " Project priorities:");
        for (int i = 0; i < n_priorities; i++)
            sb_add(&b, "%s %s (%" PRId64 ")", i ? ";" : "", priorities[i]->title,
                   priorities[i]->priority);
        sb_add(&b, ".");
    } else if (a->status.n_tasks > 0) {
        sb_add(&b, " Your tasks:");
        for (int i = 0; i < a->status.n_tasks; i++)
            sb_add(&b, "%s %s", i ? ";" : "", a->status.tasks[i]);
        sb_add(&b, ".");
    }
    sb_add(&b, " Reply with progress, not an acknowledgement.");
    if (!b.ok) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
