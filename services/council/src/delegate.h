/* delegate.h - `research:` delegations made on a thread of their own (see
 * delegate.c). */
#ifndef COUNCIL_DELEGATE_H
#define COUNCIL_DELEGATE_H
#include <stdatomic.h>
#include "adapter.h"

typedef struct council_delegator council_delegator;

/* Starts the thread; cap bounds the queue (the worker's slots). wake is
 * called from that thread after each reply (it must be thread-safe). */
council_delegator *council_delegator_new(const council_service *svc, int cap,
                                         void (*wake)(void *), void *wake_ctx);
/* Stops and joins the thread (after the POST in flight, if any). */
void council_delegator_free(council_delegator *d);
/* Queues a POST of body (taken) to the configured endpoint; when it is
 * answered (or failed), *reply is filled and then *done set to 1. Returns 0,
 * or -1 when the queue is full (body not taken). */
int council_delegator_submit(council_delegator *d, const char *job, char *body,
                             council_a2a_reply *reply, atomic_int *done);

#endif
