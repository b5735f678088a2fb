/* prompt.c - the four personas (the seed's roles, focus and questions)
 * and their prompts, each naming its persona and carrying the SENSE
 * context: the user's recent messages, open questions by priority,
 * answered questions with the answers quoted, and the session's notes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "council.h"

const council_persona_def COUNCIL_PERSONA_DEFS[COUNCIL_PERSONAS] = {
    {"polaris", "Polaris", "the Navigator", "Strategic direction and long-term thinking",
     "Goals, priorities, overall trajectory", "What serves the user's long-term interests?"},
    {"aurora", "Aurora", "the Empath", "Emotional intelligence and user wellbeing",
     "Feelings, relationships, support needs", "How is the user feeling and what do they need?"},
    {"vega", "Vega", "the Analyst", "Logic, reasoning, and evidence-based analysis",
     "Facts, patterns, data-driven insights", "What does the evidence tell us?"},
    {"sol", "Sol", "the Executor", "Practical action and implementation",
     "Concrete steps, feasibility, execution", "What specific action should we take now?"},
};

typedef struct buf {
    char *s;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->oom = true;
            return;
        }
        if (b->s && b->n + (size_t)w < b->cap) {
            b->n += (size_t)w;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)w;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static char *done(buf *b)
{
    if (b->oom) {
        free(b->s);
        return NULL;
    }
    return b->s;
}

char *council_sense_context(const council_user *u, const council_config *c, int64_t now)
{
    buf b = {0};
    const council_session *s = &u->s;
    put(&b, "User: %s\n", u->user);
    put(&b, "Session: %s, loop %d of at most %d%s%s\n", s->id, s->loop, c->max_loops,
        s->room[0] ? ", room " : "", s->room);

    put(&b, "\nThe user's recent messages (oldest first):\n");
    int shown = 0, from = u->n_msgs - c->context_messages;
    for (int i = from < 0 ? 0 : from; i < u->n_msgs; i++) {
        const council_msg *m = &u->msgs[i];
        if (s->room[0] && strcmp(m->room, s->room) != 0)
            continue;
        put(&b, "- [%s, %llds ago] \"%s\"\n", m->room,
            (long long)((now - m->ts) > 0 ? (now - m->ts) / 1000 : 0), m->text);
        shown++;
    }
    if (!shown)
        put(&b, "- (none)\n");

    int idx[COUNCIL_QUESTIONS_MAX];
    int n = council_questions_pending(&s->questions, idx, COUNCIL_QUESTIONS_MAX);
    put(&b, "\nOpen questions to the user (most urgent first):\n");
    for (int i = 0; i < n; i++) {
        const council_question *q = &s->questions.v[idx[i]];
        put(&b, "- [priority %d] %s\n", q->priority, q->text);
    }
    if (!n)
        put(&b, "- (none)\n");

    n = council_questions_answered(&s->questions, idx, COUNCIL_QUESTIONS_MAX);
    put(&b, "\nAnswered questions (most recent first):\n");
    for (int i = 0; i < n; i++) {
        const council_question *q = &s->questions.v[idx[i]];
        put(&b, "- Q: %s\n  A: \"%s\"\n", q->text, q->answer);
    }
    if (!n)
        put(&b, "- (none)\n");

    put(&b, "\nNotes so far:\n");
    for (int i = 0; i < s->n_notes; i++)
        put(&b, "- %s\n", s->notes[i].text);
    if (!s->n_notes)
        put(&b, "- (none)\n");
    return done(&b);
}

char *council_prompt(council_persona p, const char *context)
{
    if (p < 0 || p >= COUNCIL_PERSONAS)
        return NULL;
    const council_persona_def *d = &COUNCIL_PERSONA_DEFS[p];
    buf b = {0};
    put(&b,
        "You are %s, %s, one of the four members of an autonomous council (Polaris, Aurora, "
        "Vega, Sol) deliberating on behalf of a user.\nRole: %s.\nFocus: %s.\n"
        "Your question: \"%s\"\n\nCurrent context (SENSE):\n%s\n",
        d->name, d->title, d->role, d->focus, d->question, context ? context : "");
    if (p == COUNCIL_SOL)
        put(&b,
            "Propose exactly one action for now. Answer with one line that starts with one of "
            "these prefixes and nothing before it:\n"
            "search: <query>\nnote: <observation to record>\n"
            "ask user: [p1-p10 optional priority] <question>\n"
            "schedule: <calendar request>\nresearch: <topic for a deep dive>\n"
            "sleep: <duration, e.g. 10m>\nreflect: <internal thought>\n");
    else
        put(&b, "Answer your question in two or three sentences.\n");
    return done(&b);
}
