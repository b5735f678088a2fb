/* outbox_process.h - the outbox publisher as a child process
 * (VIGIL_OUTBOX_PROCESS=1).
 *
 * Why a process and not the publisher thread (outbox.h): paho runs every
 * message callback under its one library-wide lock, and intake holds it for
 * the whole commit of each input. The publisher thread needs that lock for
 * each publish, and so does paho's own send thread to write it, so while
 * intake is saturated they get it only now and then: outputs wait until
 * the backlog has been committed (measured with scripts/bench: a burst of
 * 20,000 inputs let about 150 of its outputs out until intake had drained).
 * A child process has its own paho, its own lock and its own broker
 * connection, so it publishes while the parent commits.
 *
 * The child is this executable again, started with this process's argv and
 * environment plus VIGIL_OUTBOX_CHILD=<parent pid>, with one end of a
 * SOCK_SEQPACKET socket pair on fd 3 and a shared page on fd 4. Records,
 * parent to child: 'k' new entries were committed, 'e' an ephemeral message
 * (error event), 's' drain and exit. Child to parent: each change of the
 * outbox's metrics (vigil_outbox_*, vigil_outputs_*), which the parent
 * serves on /metrics. The page holds a kick flag: a commit sends 'k' only
 * when it finds the flag clear, and the child's publisher clears it each
 * time before it reads the outbox, so while it is busy the commits cost it
 * no wake-up (vigil_outbox_set_kick_flag).
 *
 * The child dies with the parent (PR_SET_PDEATHSIG), so no orphan publishes
 * next to a restarted service; the parent starts a new child a second after
 * one exits unexpectedly (vigil_outbox_process_restarts_total; the delay
 * doubles, to 30 s, while children end within 10 s). Nothing is
 * lost either way: the outbox lives in Redis, and a new publisher starts
 * from its head (consumers dedupe by event id). */
#ifndef VIGIL_OUTBOX_PROCESS_H
#define VIGIL_OUTBOX_PROCESS_H
#include <stdbool.h>
#include <stddef.h>

#include "outbox.h"

typedef struct vigil_outbox_proc vigil_outbox_proc;

/* Parent: starts the thread that will start the child and serve its link
 * (metrics, restarts). argv is main's, kept by reference. NULL with err on
 * failure. */
vigil_outbox_proc *vigil_outbox_proc_start(char **argv, char *err, size_t errlen);
/* Parent: the service's own broker connection is up, so the configuration
 * works: the first child may start (a refused password or certificate is
 * then reported once, by the service, not twice). Idempotent. */
void vigil_outbox_proc_go(vigil_outbox_proc *p);
/* Parent: new entries were committed. Never blocks. */
void vigil_outbox_proc_kick(vigil_outbox_proc *p);
/* Parent: an in-memory message for the child to publish; dropped (and
 * counted in vigil_outbox_dropped_total) when no child runs or its queue
 * is full. Never blocks. */
void vigil_outbox_proc_push_ephemeral(vigil_outbox_proc *p, const char *topic,
                                      const char *payload, bool retain);
/* Parent: outputs the child reported published, over every child. */
unsigned long long vigil_outbox_proc_published(vigil_outbox_proc *p);
/* Parent: asks the child to publish what is pending for up to drain_ms and
 * exit; kills it if it has not exited 2 s after that. Frees p. */
void vigil_outbox_proc_stop(vigil_outbox_proc *p, int drain_ms);

/* True in the child (VIGIL_OUTBOX_CHILD is set). */
bool vigil_outbox_proc_is_child(void);
/* Child: dies with the parent from now on, checks the parent is still
 * there, fd 3 is the link and fd 4 the kick flag, and forwards the
 * outbox's metrics. */
int vigil_outbox_proc_child_init(char *err, size_t errlen);
/* Child: serves the link for the running outbox o until the parent says
 * stop (returns the drain time it asked for) or is gone (returns 0). */
int vigil_outbox_proc_child_serve(vigil_outbox *o);

#endif
