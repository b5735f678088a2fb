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

/* Each state's actions come in two wordings: one that hands the agent the
 * task claimed for it, and one for a resume without a task (the pool had
 * none for it), which must not send the agent to a "claimed task" that the
 * same prompt then says does not exist ("No planner task is open"). */
typedef struct fsm_advice {
    const char *state;
    const char *with_task;
    const char *without_task;
} fsm_advice;

static const fsm_advice ADVICE[] = {
    {"idle", "pick up the claimed task below, post a status update, then start work",
     "pick up your next task, post a status update, then start work"},
    {"start", "pick up the claimed task below, post a status update, then start work",
     "pick up your next task, post a status update, then start work"},
    {"planning", "finish the plan in one pass, write down the next concrete step, then execute it",
     "finish the plan in one pass, write down the next concrete step, then execute it"},
    {"executing", "check where you stopped, run the tests, commit what works, then continue",
     "check where you stopped, run the tests, commit what works, then continue"},
    {"active", "check where you stopped, run the tests, commit what works, then continue",
     "check where you stopped, run the tests, commit what works, then continue"},
    {"blocked", "state the blocker in one line, try the simplest workaround, or move to the claimed task",
     "state the blocker in one line, try the simplest workaround, or move to your next task"},
    {"waiting", "stop waiting: re-send the request once, then work on the claimed task meanwhile",
     "stop waiting: re-send the request once, then work on your next task meanwhile"},
    {"review", "finish the review you started, post its verdict, then take the claimed task",
     "finish the review you started, post its verdict, then take your next task"},
    {"validating", "re-run the validation, fix what fails, push the result",
     "re-run the validation, fix what fails, push the result"},
    {"testing", "re-run the failing tests, fix them, commit", "re-run the failing tests, fix them, commit"},
    {"complete", "report completion with evidence (commit, test run), then take the claimed task",
     "report completion with evidence (commit, test run), then take your next task"},
    {"done", "report completion with evidence (commit, test run), then take the claimed task",
     "report completion with evidence (commit, test run), then take your next task"},
    {"error", "read the last error, fix or work around it, re-run, and report what happened",
     "read the last error, fix or work around it, re-run, and report what happened"},
    {NULL, NULL, NULL}};

/* The advice for the state's n bytes at s (a state as the prompt prints
 * it, trimmed, need not end there), matched without regard to case; the
 * wording that points at the claimed task only when one was claimed. */
static const char *fsm_actions_n(const char *s, size_t n, bool claimed)
{
    for (int i = 0; s && ADVICE[i].state; i++)
        if (strlen(ADVICE[i].state) == n && strncasecmp(s, ADVICE[i].state, n) == 0)
            return claimed ? ADVICE[i].with_task : ADVICE[i].without_task;
    return claimed ? "post a status update, then continue with your current task or the claimed one"
                   : "post a status update, then continue with your current task";
}

const char *stall_fsm_actions(const char *fsm_state, bool claimed)
{
    return fsm_actions_n(fsm_state, fsm_state ? strlen(fsm_state) : 0, claimed);
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

/* A text as the prompt prints it ("%.*s", t.n, t.s): without its leading
 * and trailing white space (stall_text_trim), so a mission stored as
 * "x  " reads "Mission: x." and never "Mission: x  .", and a blank text
 * has n 0. Texts are at most STALL_DETAIL_MAX bytes, so n fits an int. */
typedef struct span {
    const char *s;
    int n;
} span;

static span trimmed(const char *text)
{
    span t;
    t.n = (int)stall_text_trim(text, &t.s);
    return t;
}

size_t stall_resume_state(const stall_agent *a, const char **start)
{
    size_t n = stall_text_trim(a->status.present ? a->status.fsm_state : NULL, start);
    if (n > 0)
        return n;
    *start = "UNKNOWN";
    return 7;
}

/* The full stop after a sentence that ends in the agent's own text: none
 * when that text ends one already ("Mission: Harden the uploader." rather
 * than "...uploader.."). */
static const char *stop_after(span t)
{
    return t.n > 0 && strchr(".!?", t.s[t.n - 1]) ? "" : ".";
}

char *stall_resume_prompt(const stall_agent *a, int64_t idle_ms, const stall_claimed *task,
                          const stall_task *const *priorities, int n_priorities)
{
    sbuf b = {printbuf_new(), true};
    if (!b.pb)
        return NULL;
    /* blank texts (a record stored before intake refused them) are left
     * out, never written as an empty item or an empty quote */
    span state;
    state.n = (int)stall_resume_state(a, &state.s);
    if (idle_ms < 0) /* never seen active: no idle time to give */
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity seen (state %.*s).", a->agent,
               state.n, state.s);
    else if (idle_ms >= STALL_MIN_MS)
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity for %" PRId64 " min (state %.*s).",
               a->agent, idle_ms / STALL_MIN_MS, state.n, state.s);
    else
        sb_add(&b, "🔄 " STALL_PROMPT_MARKER " %s: no activity for %" PRId64 " s (state %.*s).",
               a->agent, idle_ms / 1000, state.n, state.s);
    sb_add(&b, " Next: %s.", fsm_actions_n(state.s, (size_t)state.n, task != NULL));
    span t = trimmed(a->progress);
    if (t.n > 0)
        sb_add(&b, " Your last progress: \"%.*s\".", t.n, t.s);
    t = trimmed(a->status.present ? a->status.mission : NULL);
    if (t.n > 0)
        sb_add(&b, " Mission: %.*s%s", t.n, t.s, stop_after(t));
    t = trimmed(task ? task->title : NULL);
    if (task && t.n > 0)
        sb_add(&b, " Claimed for you: %s \"%.*s\" (priority %" PRId64 ").", task->id, t.n, t.s,
               task->priority);
    else if (task)
        sb_add(&b, " Claimed for you: %s (priority %" PRId64 ").", task->id, task->priority);
    else
        sb_add(&b, " No planner task is open: continue your own tasks.");
    if (n_priorities > 0) {
        sb_add(&b, " Project priorities:");
        for (int i = 0; i < n_priorities; i++) {
            t = trimmed(priorities[i]->title);
            if (t.n == 0)
                t = (span){priorities[i]->id, (int)strlen(priorities[i]->id)};
            sb_add(&b, "%s %.*s (%" PRId64 ")", i ? ";" : "", t.n, t.s, priorities[i]->priority);
        }
        sb_add(&b, ".");
    }
    /* the agent's own assignments are part of every prompt, next to the
     * project priorities rather than instead of them */
    int listed = 0;
    span last = {"", 0};
    for (int i = 0; i < a->status.n_tasks; i++) {
        t = trimmed(a->status.tasks[i]);
        if (t.n == 0)
            continue;
        sb_add(&b, "%s %.*s", listed++ ? ";" : " Your tasks:", t.n, t.s);
        last = t;
    }
    if (listed)
        sb_add(&b, "%s", stop_after(last));
    sb_add(&b, " Reply with progress, not an acknowledgement.");
    char *out = b.ok ? strdup(b.pb->buf) : NULL;
    printbuf_free(b.pb);
    return out;
}
