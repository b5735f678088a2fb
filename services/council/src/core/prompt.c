/* prompt.c - the four personas (their roles, focus and questions)
 * and their prompts, each naming its persona and carrying the SENSE
 * context: the user's recent messages, open questions by priority,
 * answered questions with the answers quoted, and the session's notes.
 * The loop is two stages: PLAN asks the three advisors (Polaris, Aurora,
 * Vega), then ACT asks Sol with that context plus what the advisors
 * answered and whether the user is available (council_sol_prompt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/jtext.h>
#include <vigil/json.h>
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

/* The room filter comes before the count: a session limited to a room
 * sees that room's last N messages however busy the user's other rooms
 * are (filtering the last N of all rooms could leave it none). Walks back
 * from the newest, so the cost is bounded by the messages kept. */
int council_sense_messages(const council_user *u, const council_config *c, int *idx, int max)
{
    const char *room = u->has_session ? u->s.room : "";
    int want = c->context_messages < max ? c->context_messages : max, n = 0;
    for (int i = u->n_msgs - 1; i >= 0 && n < want; i--)
        if (!room[0] || strcmp(u->msgs[i].room, room) == 0)
            idx[n++] = i;
    for (int i = 0; i < n / 2; i++) { /* newest first -> oldest first */
        int t = idx[i];
        idx[i] = idx[n - 1 - i];
        idx[n - 1 - i] = t;
    }
    return n;
}

char *council_sense_context(const council_user *u, const council_config *c, int64_t now)
{
    vigil_jtext b = {0};
    const council_session *s = &u->s;
    vigil_jtext_printf(&b, "User: %s\n", u->user);
    vigil_jtext_printf(&b, "Session: %s, loop %d of at most %d%s%s\n", s->id, s->loop, c->max_loops,
        s->room[0] ? ", room " : "", s->room);
    if (u->presence == COUNCIL_PRESENCE_UNKNOWN)
        vigil_jtext_printf(&b, "User available: unknown (no presence reported)\n");
    else
        vigil_jtext_printf(&b, "User available: %s (%s in room %s, last active %llds ago)\n",
            council_user_available(u, c, now) ? "yes" : "no",
            council_presence_name(u->presence), u->presence_room,
            (long long)((now - u->presence_activity) > 0 ? (now - u->presence_activity) / 1000
                                                         : 0));

    vigil_jtext_printf(&b, "\nThe user's recent messages (oldest first):\n");
    int msg[COUNCIL_MSGS_MAX];
    int shown = council_sense_messages(u, c, msg, COUNCIL_MSGS_MAX);
    for (int i = 0; i < shown; i++) {
        const council_msg *m = &u->msgs[msg[i]];
        vigil_jtext_printf(&b, "- [%s, %llds ago] \"%s\"\n", m->room,
            (long long)((now - m->ts) > 0 ? (now - m->ts) / 1000 : 0), m->text);
    }
    if (!shown)
        vigil_jtext_printf(&b, "- (none)\n");

    int idx[COUNCIL_QUESTIONS_MAX];
    int n = council_questions_pending(&s->questions, idx, COUNCIL_QUESTIONS_MAX);
    vigil_jtext_printf(&b, "\nOpen questions to the user (most urgent first):\n");
    for (int i = 0; i < n; i++) {
        const council_question *q = &s->questions.v[idx[i]];
        vigil_jtext_printf(&b, "- [priority %d] %s\n", q->priority, q->text);
    }
    if (!n)
        vigil_jtext_printf(&b, "- (none)\n");

    n = council_questions_answered(&s->questions, idx, COUNCIL_QUESTIONS_MAX);
    vigil_jtext_printf(&b, "\nAnswered questions (most recent first):\n");
    for (int i = 0; i < n; i++) {
        const council_question *q = &s->questions.v[idx[i]];
        vigil_jtext_printf(&b, "- Q: %s\n  A: \"%s\"\n", q->text, q->answer);
    }
    if (!n)
        vigil_jtext_printf(&b, "- (none)\n");

    vigil_jtext_printf(&b, "\nNotes so far:\n");
    for (int i = 0; i < s->n_notes; i++)
        vigil_jtext_printf(&b, "- %s\n", s->notes[i].text);
    if (!s->n_notes)
        vigil_jtext_printf(&b, "- (none)\n");
    return vigil_jtext_take(&b);
}

char *council_prompt(council_persona p, const char *context)
{
    if (p < 0 || p >= COUNCIL_PERSONAS)
        return NULL;
    const council_persona_def *d = &COUNCIL_PERSONA_DEFS[p];
    vigil_jtext b = {0};
    vigil_jtext_printf(&b,
        "You are %s, %s, one of the four members of an autonomous council (Polaris, Aurora, "
        "Vega, Sol) deliberating on behalf of a user.\nRole: %s.\nFocus: %s.\n"
        "Your question: \"%s\"\n\nCurrent context (SENSE):\n%s\n",
        d->name, d->title, d->role, d->focus, d->question, context ? context : "");
    if (p != COUNCIL_SOL)
        vigil_jtext_printf(&b, "Answer your question in two or three sentences. Sol, the "
                               "Executor, reads your answer before proposing the action.\n");
    return vigil_jtext_take(&b);
}

const char *council_answer_text(const char *answer, const char *error, char *buf, size_t cap)
{
    if (answer)
        return answer;
    const char *why = error && error[0] ? error : "LLM call failed";
    snprintf(buf, cap, "(no answer: %.*s)", (int)vigil_utf8_cut_max(why, 200), why);
    return buf;
}

/* Sol's question comes after the council's: the advisors' answers (each
 * cut as the deliberation event cuts it; a failed one as its "(no answer:
 * ...)" text) and the user's availability as SENSE found it are what the
 * action is to weigh, so they stand right before the instructions. */
char *council_sol_prompt(const char *base, const char *const answers[COUNCIL_PERSONAS],
                         const char *const errors[COUNCIL_PERSONAS], int available,
                         const char *presence)
{
    vigil_jtext b = {0};
    vigil_jtext_printf(&b, "%s\nThe council's deliberation (PLAN): what the advisors answered\n",
                       base ? base : "");
    for (int p = 0; p < COUNCIL_SOL; p++) {
        char failed[COUNCIL_REASON_MAX + 32];
        const char *a = council_answer_text(answers[p], errors[p], failed, sizeof failed);
        vigil_jtext_printf(&b, "- %s, %s: %.*s\n", COUNCIL_PERSONA_DEFS[p].name,
                           COUNCIL_PERSONA_DEFS[p].title,
                           (int)vigil_utf8_cut_max(a, COUNCIL_ANSWER_MAX), a);
    }
    if (available >= 0)
        vigil_jtext_printf(&b, "\nUser available now: %s (presence %s, as SENSE found it)\n",
                           available ? "yes" : "no", presence && presence[0] ? presence : "unknown");
    vigil_jtext_printf(&b,
        "\nPropose exactly one action for now, weighing what the council said. Answer with one "
        "line that starts with one of these prefixes and nothing before it:\n"
        "search: <query>\nnote: <observation to record>\n"
        "ask user: [p1-p10 optional priority] <question>\n"
        "schedule: <calendar request>\nresearch: <topic for a deep dive>\n"
        "sleep: <duration, e.g. 10m>\nreflect: <internal thought>\n"
        "Weigh whether the user is available (above): when not, a question waits until "
        "they come back, so prefer an action that needs no answer now.\n");
    return vigil_jtext_take(&b);
}
