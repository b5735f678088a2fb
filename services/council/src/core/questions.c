/* questions.c - questions queued for the user (`ask user:`): priority
 * 1-10 (higher first), expiry after the configured time, answers kept for
 * the next SENSE. A bounded list per session. */
#include <string.h>
#include <vigil/json.h>
#include "council.h"

const char *council_qstatus_name(council_qstatus s)
{
    switch (s) {
    case COUNCIL_Q_PENDING: return "pending";
    case COUNCIL_Q_ANSWERED: return "answered";
    case COUNCIL_Q_EXPIRED: return "expired";
    }
    return "pending";
}

static void drop(council_questions *q, int i)
{
    memmove(&q->v[i], &q->v[i + 1], sizeof q->v[0] * (size_t)(q->n - i - 1));
    q->n--;
}

int council_questions_victim(const council_questions *q)
{
    if (q->n < COUNCIL_QUESTIONS_MAX)
        return -1;
    for (int i = 0; i < q->n; i++)
        if (q->v[i].status != COUNCIL_Q_PENDING)
            return i;
    return 0;
}

council_question *council_questions_add(council_questions *q, const char *id, const char *text,
                                        size_t len, int priority, int loop, int64_t now,
                                        int64_t ttl_ms)
{
    int victim = council_questions_victim(q);
    if (victim >= 0)
        drop(q, victim);
    council_question *x = &q->v[q->n++];
    memset(x, 0, sizeof *x);
    vigil_utf8_copy(x->id, COUNCIL_EVID_MAX + 1, id);
    vigil_utf8_copy_n(x->text, COUNCIL_TEXT_MAX + 1, text, len);
    x->priority = priority < 1 ? 1 : priority > 10 ? 10 : priority;
    x->status = COUNCIL_Q_PENDING;
    x->loop = loop;
    x->created_at = now;
    x->expires_at = now + ttl_ms;
    return x;
}

council_question *council_questions_find(council_questions *q, const char *id)
{
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->v[i].id, id) == 0)
            return &q->v[i];
    return NULL;
}

int council_questions_expire(council_questions *q, int64_t now)
{
    int n = 0;
    for (int i = 0; i < q->n; i++)
        if (q->v[i].status == COUNCIL_Q_PENDING && q->v[i].expires_at <= now) {
            q->v[i].status = COUNCIL_Q_EXPIRED;
            n++;
        }
    return n;
}

/* A session that ended closes its questions (README: they reach a final
 * state at the end): each pending one expires now, through the same
 * marking as a timer's expiry, so records and listings read the same. */
int council_questions_expire_all(council_questions *q, int64_t now)
{
    for (int i = 0; i < q->n; i++)
        if (q->v[i].status == COUNCIL_Q_PENDING && q->v[i].expires_at > now)
            q->v[i].expires_at = now;
    return council_questions_expire(q, now);
}

int64_t council_questions_next_expiry(const council_questions *q)
{
    int64_t best = 0;
    for (int i = 0; i < q->n; i++)
        if (q->v[i].status == COUNCIL_Q_PENDING && (best == 0 || q->v[i].expires_at < best))
            best = q->v[i].expires_at;
    return best;
}

/* Insertion sort of at most COUNCIL_QUESTIONS_MAX indexes. */
static int collect(const council_questions *q, council_qstatus st, int *idx, int max,
                   bool (*before)(const council_question *, const council_question *))
{
    int n = 0;
    for (int i = 0; i < q->n && n < max; i++) {
        if (q->v[i].status != st)
            continue;
        int j = n++;
        while (j > 0 && before(&q->v[i], &q->v[idx[j - 1]])) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return n;
}

static bool by_priority(const council_question *a, const council_question *b)
{
    return a->priority > b->priority || (a->priority == b->priority && a->created_at < b->created_at);
}

static bool by_answer(const council_question *a, const council_question *b)
{
    return a->answered_at > b->answered_at;
}

int council_questions_pending(const council_questions *q, int *idx, int max)
{
    return collect(q, COUNCIL_Q_PENDING, idx, max, by_priority);
}

int council_questions_answered(const council_questions *q, int *idx, int max)
{
    return collect(q, COUNCIL_Q_ANSWERED, idx, max, by_answer);
}
