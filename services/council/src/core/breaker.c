/* breaker.c - the circuit breaker (spin detection): three actions
 * of the same type in a row pause the session. */
#include <string.h>
#include "council.h"

void council_breaker_reset(council_breaker *b)
{
    memset(b, 0, sizeof *b);
}

bool council_breaker_record(council_breaker *b, council_action a)
{
    if (b->n == COUNCIL_BREAKER_REPEATS) {
        memmove(b->last, b->last + 1, sizeof b->last[0] * (COUNCIL_BREAKER_REPEATS - 1));
        b->n--;
    }
    b->last[b->n++] = (int)a;
    if (b->n < COUNCIL_BREAKER_REPEATS)
        return false;
    for (int i = 1; i < b->n; i++)
        if (b->last[i] != b->last[0])
            return false;
    return true;
}
