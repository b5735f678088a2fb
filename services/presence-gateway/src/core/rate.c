/* rate.c - the per-token rate limit (VIGIL_GATEWAY_RATE requests a
 * second): a token bucket of `rate` tokens refilled continuously, so a
 * burst up to the rate passes and a steady flood is held to it. */
#include "gateway.h"

bool gw_rate_take(gw_bucket *b, double rate, int64_t now, int64_t *retry_after_ms)
{
    if (rate <= 0)
        return true;
    if (!b->init) {
        b->tokens = rate;
        b->last_ms = now;
        b->init = true;
    }
    if (now > b->last_ms) {
        b->tokens += (double)(now - b->last_ms) * rate / 1000.0;
        if (b->tokens > rate)
            b->tokens = rate;
        b->last_ms = now;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return true;
    }
    if (retry_after_ms) {
        double need = (1.0 - b->tokens) * 1000.0 / rate;
        *retry_after_ms = (int64_t)need + 1;
    }
    return false;
}
