/* tasks.c - the planner's task pool as stall-resumer sees it: open tasks
 * offered on planner/task, and the tasks already claimed for resumed
 * agents (never offered again). The claim order: tasks meant for the
 * agent, then tasks for anyone; higher priority first, then the oldest,
 * then by id. A claim is keyed by the resume job that made it, so the
 * same job claiming again (a retry after a crash) gets the same task. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stall.h"

stall_tasks *stall_tasks_new(void)
{
    stall_tasks *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->open = calloc(STALL_MAX_OPEN_TASKS, sizeof *t->open);
    t->claimed = calloc(STALL_MAX_CLAIMED_TASKS, sizeof *t->claimed);
    if (!t->open || !t->claimed) {
        stall_tasks_free(t);
        return NULL;
    }
    return t;
}

void stall_tasks_free(stall_tasks *t)
{
    if (!t)
        return;
    free(t->open);
    free(t->claimed);
    free(t);
}

/* 0: meant for agent, 1: for anyone, 2: another agent's. */
static int rank(const stall_task *t, const char *agent)
{
    if (!t->agent[0])
        return 1;
    return agent && strcmp(t->agent, agent) == 0 ? 0 : 2;
}

int stall_task_order(const stall_task *a, const stall_task *b, const char *agent)
{
    int ra = rank(a, agent), rb = rank(b, agent);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return strcmp(a->id, b->id);
}

static int find_open(const stall_tasks *t, const char *id)
{
    for (int i = 0; i < t->n_open; i++)
        if (strcmp(t->open[i].id, id) == 0)
            return i;
    return -1;
}

static int find_claimed(const stall_tasks *t, const char *id)
{
    for (int i = 0; i < t->n_claimed; i++)
        if (strcmp(t->claimed[i].id, id) == 0)
            return i;
    return -1;
}

stall_task_result stall_tasks_offer(stall_tasks *t, const stall_task *task)
{
    if (find_claimed(t, task->id) >= 0)
        return STALL_TASK_ALREADY_CLAIMED;
    int i = find_open(t, task->id);
    if (i >= 0) {
        if (task->ts <= t->open[i].ts)
            return STALL_TASK_UNCHANGED;
        t->open[i] = *task;
        return STALL_TASK_UPDATED;
    }
    if (t->n_open == STALL_MAX_OPEN_TASKS) {
        /* keep the best: the new task replaces the last in general order */
        int worst = 0;
        for (int k = 1; k < t->n_open; k++)
            if (stall_task_order(&t->open[k], &t->open[worst], NULL) > 0)
                worst = k;
        if (stall_task_order(task, &t->open[worst], NULL) >= 0)
            return STALL_TASK_FULL;
        t->open[worst] = *task;
        return STALL_TASK_ADDED;
    }
    t->open[t->n_open++] = *task;
    return STALL_TASK_ADDED;
}

const stall_claim *stall_tasks_claim(stall_tasks *t, const char *agent, const char *claim,
                                     int64_t now, bool *changed)
{
    *changed = false;
    for (int i = 0; i < t->n_claimed; i++)
        if (strcmp(t->claimed[i].claim, claim) == 0)
            return &t->claimed[i];
    int best = -1;
    for (int i = 0; i < t->n_open; i++) {
        if (rank(&t->open[i], agent) == 2)
            continue;
        if (best < 0 || stall_task_order(&t->open[i], &t->open[best], agent) < 0)
            best = i;
    }
    if (best < 0)
        return NULL;
    if (t->n_claimed == STALL_MAX_CLAIMED_TASKS) { /* forget the oldest claim */
        memmove(&t->claimed[0], &t->claimed[1], (size_t)(t->n_claimed - 1) * sizeof t->claimed[0]);
        t->n_claimed--;
    }
    stall_claim *c = &t->claimed[t->n_claimed++];
    memset(c, 0, sizeof *c);
    memcpy(c->id, t->open[best].id, sizeof c->id);
    memcpy(c->title, t->open[best].title, sizeof c->title);
    c->priority = t->open[best].priority;
    snprintf(c->agent, sizeof c->agent, "%s", agent);
    snprintf(c->claim, sizeof c->claim, "%s", claim);
    c->at = now;
    memcpy(c->task_agent, t->open[best].agent, sizeof c->task_agent);
    c->ts = t->open[best].ts;
    t->open[best] = t->open[--t->n_open];
    *changed = true;
    return c;
}

bool stall_tasks_release(stall_tasks *t, const char *claim)
{
    int i = 0;
    while (i < t->n_claimed && strcmp(t->claimed[i].claim, claim) != 0)
        i++;
    if (i == t->n_claimed)
        return false;
    stall_task k;
    memset(&k, 0, sizeof k);
    memcpy(k.id, t->claimed[i].id, sizeof k.id);
    memcpy(k.title, t->claimed[i].title, sizeof k.title);
    k.priority = t->claimed[i].priority;
    memcpy(k.agent, t->claimed[i].task_agent, sizeof k.agent);
    k.ts = t->claimed[i].ts;
    memmove(&t->claimed[i], &t->claimed[i + 1], (size_t)(t->n_claimed - i - 1) * sizeof *t->claimed);
    t->n_claimed--;
    stall_tasks_offer(t, &k);
    return true;
}

int stall_tasks_top(const stall_tasks *t, const char *agent, const stall_task **out, int max)
{
    int n = 0;
    for (int i = 0; i < t->n_open; i++) {
        if (rank(&t->open[i], agent) == 2)
            continue;
        /* insertion into the sorted prefix out[0..n) */
        int pos = n;
        while (pos > 0 && stall_task_order(&t->open[i], out[pos - 1], agent) < 0)
            pos--;
        if (pos >= max)
            continue;
        int last = n < max ? n : max - 1;
        for (int k = last; k > pos; k--)
            out[k] = out[k - 1];
        out[pos] = &t->open[i];
        if (n < max)
            n++;
    }
    return n;
}
