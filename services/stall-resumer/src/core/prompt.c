/* prompt.c - the resume prompt (the optimized stall resume prompt):
 * what state the agent was in and what to do from there, what it last
 * reported doing, the task claimed for it, the project priorities and its
 * own assigned tasks. It
 * starts with STALL_PROMPT_MARKER so an agent echoing it back is never
 * taken for activity. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <json-c/printbuf.h>
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

/* json-c's printbuf grows the prompt; a failed append (out of memory)
 * marks it failed and the caller gives up at the end. */
typedef struct sbuf {
    struct printbuf *pb;
    bool ok;
} sbuf;

#define sb_add(b, ...)                                          \
    do {                                                        \
        if ((b)->ok && sprintbuf((b)->pb, __VA_ARGS__) < 0)     \
            (b)->ok = false;                                    \
    } while (0)

/* The full stop after a sentence that ends in the agent's own text: none
 * when that text ends one already ("Mission: Harden the uploader." rather
 * than "...uploader.."). */
static const char *stop_after(const char *text)
{
    size_t n = strlen(text);
    return n > 0 && strchr(".!?", text[n - 1]) ? "" : ".";
}

char *stall_resume_prompt(const stall_agent *a, int64_t idle_ms, const stall_claimed *task,
                          const stall_task *const *priorities, int n_priorities)
{
    sbuf b = {printbuf_new(), true};
    if (!b.pb)
        return NULL;
    /* blank texts (a record stored before intake refused them) are left
     * out, never written as an empty item or an empty quote */
    const char *state = a->status.present && !stall_text_blank(a->status.fsm_state)
                            ? a->status.fsm_state
                            : "UNKNOWN";
    if (idle_ms >= STALL_MIN_MS)
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity for %" PRId64 " min (state %s).",
               a->agent, idle_ms / STALL_MIN_MS, state);
    else
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity for %" PRId64 " s (state %s).",
               a->agent, idle_ms / 1000, state);
    sb_add(&b, " Next: %s.", stall_fsm_actions(state));
    if (!stall_text_blank(a->progress))
        sb_add(&b, " Your last progress: \"%s\".", a->progress);
    if (a->status.present && !stall_text_blank(a->status.mission))
        sb_add(&b, " Mission: %s%s", a->status.mission, stop_after(a->status.mission));
    if (task && !stall_text_blank(task->title))
        sb_add(&b, " Claimed for you: %s \"%s\" (priority %" PRId64 ").", task->id, task->title,
               task->priority);
    else if (task)
        sb_add(&b, " Claimed for you: %s (priority %" PRId64 ").", task->id, task->priority);
    else
        sb_add(&b, " No planner task is open: continue your own tasks.");
    if (n_priorities > 0) {
        sb_add(&b, " Project priorities:");
        for (int i = 0; i < n_priorities; i++)
            sb_add(&b, "%s %s (%" PRId64 ")", i ? ";" : "",
                   stall_text_blank(priorities[i]->title) ? priorities[i]->id
                                                          : priorities[i]->title,
                   priorities[i]->priority);
        sb_add(&b, ".");
    }
    /* the agent's own assignments are part of every prompt, next to the
     * project priorities rather than instead of them */
    int listed = 0;
    const char *last = "";
    for (int i = 0; i < a->status.n_tasks; i++) {
        if (stall_text_blank(a->status.tasks[i]))
            continue;
        sb_add(&b, "%s %s", listed++ ? ";" : " Your tasks:", a->status.tasks[i]);
        last = a->status.tasks[i];
    }
    if (listed)
        sb_add(&b, "%s", stop_after(last));
    sb_add(&b, " Reply with progress, not an acknowledgement.");
    char *out = b.ok ? strdup(b.pb->buf) : NULL;
    printbuf_free(b.pb);
    return out;
}
