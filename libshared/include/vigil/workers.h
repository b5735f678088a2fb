/* workers.h - a service's pool of job worker threads: start makes n
 * workers and runs each on its own thread; stop (after the service set its
 * own stop flag) wakes each one out of a wait, joins the threads and frees
 * the workers. What a worker does stays the service's (the worker pattern
 * of wake-evaluator's worker.c); only the thread bookkeeping lives here. */
#ifndef VIGIL_WORKERS_H
#define VIGIL_WORKERS_H
#include <pthread.h>
#include <stdbool.h>
#include "runtime.h"

#define VIGIL_WORKERS_MAX 64

typedef struct vigil_worker_ops {
    void *(*make)(void *ctx, vigil_runtime *rt, int index); /* a worker, or NULL */
    void *(*run)(void *worker);  /* the thread's body; returns when stopping */
    void (*wake)(void *worker);  /* out of a blocking wait (NULL: none to wake) */
    void (*drop)(void *worker);  /* frees a worker, started or not */
} vigil_worker_ops;

typedef struct vigil_workers {
    vigil_worker_ops ops;
    void *w[VIGIL_WORKERS_MAX];
    pthread_t thread[VIGIL_WORKERS_MAX];
    bool started[VIGIL_WORKERS_MAX];
    int n;
} vigil_workers;

/* Makes and starts n workers (n is clamped to 1..VIGIL_WORKERS_MAX).
 * Returns 0, or -1 when one cannot be made or started; what did start is
 * still stopped by vigil_workers_stop(). */
int vigil_workers_start(vigil_workers *ws, const vigil_worker_ops *ops, int n, void *ctx,
                        vigil_runtime *rt);
/* Wakes every started worker, joins it, frees them all. Idempotent. */
void vigil_workers_stop(vigil_workers *ws);

#endif
